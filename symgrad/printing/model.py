"""What a picture of a graph is made of: boxes and edges with their places, the
:class:`Scene` that holds them (its kinds, extent and edge crossings), their sizes in inches
and the legends. :mod:`.scene` builds a scene from a graph, :mod:`.layout` places it, and
the drawings (:mod:`.draw`, :mod:`.dot`, :mod:`.html`) render it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..ir.graph import Graph

CHAR = 8 * 0.6 / 72  # inches per character: 8 pt DejaVu Sans Mono


LINE = 0.17  # inches per text line


ROW = 0.85  # inches between two levels


HGAP = 0.3  # inches between two boxes of a row


GAP = 1.2  # inches between the forward graph and B


# kind -> what the legend says
LEGEND = {
    "input": "input variable",
    "forward": "forward node u_i",
    "adjoint": "adjoint P_i = ∂f/∂u_i (in B)",
    "tangent": "tangent T_i = u̇_i = (∂u_i/∂x) v (forward mode)",
    "intermediate": "other node of B or of the tangents (a rule built it)",
    "shared": "P_i is a forward node itself (shared)",
    "group": "collapsed chain (repeated structure)",
    "note": "rows without adjoints: an idiom's rule covered them",
    "output": "bold border: an output (what was asked for)",
}


EDGE_LEGEND = {
    "operand": "operand → user",
    "b-operand": "in B: operand → user",
    "chain": "in B: chain rule P_j → P_i through a constant or a shared node",
    "cross": "forward value used in B",
    "link": "forward node ⇢ its adjoint (∂f/∂u_i) or tangent (u̇_i)",
}


@dataclass
class Box:
    """One box of the picture: a node, a "shared" marker or a collapsed group."""

    key: str
    kind: str  # input | forward | adjoint | tangent | intermediate | shared | group | note
    label: str  # u3, P2 = P5, B4, x
    lines: list[str]  # text shown in the box
    node: int | None = None  # the graph node (None for shared markers and groups)
    op: str = ""  # the node's op ("" for shared markers and groups)
    members: list[int] = field(default_factory=list)  # graph nodes a group stands for
    output: bool = False
    anchor: str | None = None  # B boxes: the forward box whose adjoint this is
    origin: str | None = None  # B intermediates: the box whose backprop rule built it
    level: int = 0
    x: float = 0.0
    y: float = 0.0

    @property
    def side(self) -> str:
        return "forward" if self.kind in ("input", "forward") or (
            self.kind == "group" and self.anchor is None) else "B"

    @property
    def width(self) -> float:
        return max(len(t) for t in self.lines) * CHAR + 0.16

    @property
    def height(self) -> float:
        return LINE * len(self.lines) + 0.1


@dataclass
class Edge:
    """An edge between two boxes; ``kind`` is one of :data:`EDGE_LEGEND`, or ``same``
    (a shared marker to the node it is)."""

    src: str
    dst: str
    kind: str
    label: str = ""
    points: list[tuple[float, float]] = field(default_factory=list)  # bends (forward edges)


@dataclass
class Scene:
    """Boxes (by key, in drawing order), edges, a title and what the legend needs."""

    graph: Graph
    boxes: dict[str, Box]
    edges: list[Edge]
    title: str
    subtitle: str
    collapsed: int = 0  # graph nodes hidden inside groups

    @property
    def kinds(self) -> list[str]:
        """The legend's kinds of box present ("output": a bold border)."""
        present = {b.kind for b in self.boxes.values()}
        if any(b.output for b in self.boxes.values()):
            present.add("output")
        return [k for k in LEGEND if k in present]

    @property
    def edge_kinds(self) -> list[str]:
        present = {e.kind for e in self.edges}
        return [k for k in EDGE_LEGEND if k in present]

    def extent(self) -> tuple[float, float, float, float]:
        """``(left, right, bottom, top)`` of the boxes."""
        bs = list(self.boxes.values())
        if not bs:
            return 0.0, 1.0, -1.0, 0.0
        return (min(b.x - b.width / 2 for b in bs), max(b.x + b.width / 2 for b in bs),
                min(b.y - b.height / 2 for b in bs), max(b.y + b.height / 2 for b in bs))

    def by_node(self) -> dict[int, Box]:
        """The box showing each graph node (groups: each member)."""
        out = {}
        for b in self.boxes.values():
            if b.node is not None:
                out[b.node] = b
            for m in b.members:
                out[m] = b
        return out

    def crossings(self, kinds: Sequence[str] = ("operand",)) -> int:
        """How many pairs of edges of ``kinds`` cross (a check of the layout)."""
        segments = []
        for k, e in enumerate(self.edges):
            if e.kind in kinds:
                pts = self.path(e)
                segments += [(k, pts[j], pts[j + 1]) for j in range(len(pts) - 1)]
        count = 0
        for a in range(len(segments)):
            for b in range(a + 1, len(segments)):
                ka, p1, p2 = segments[a]
                kb, q1, q2 = segments[b]
                if ka != kb and _cross(p1, p2, q1, q2):
                    count += 1
        return count

    def path(self, e: Edge) -> list[tuple[float, float]]:
        """The edge as a polyline from the centre of ``src`` to the centre of ``dst``."""
        a, b = self.boxes[e.src], self.boxes[e.dst]
        return [(a.x, a.y), *e.points, (b.x, b.y)]


def _cross(p1, p2, q1, q2) -> bool:
    """Whether segments p1p2 and q1q2 cross at a point inside both (shared ends do not
    count)."""
    if {p1, p2} & {q1, q2}:
        return False

    def orient(a, b, c):
        v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        return 0 if abs(v) < 1e-12 else (1 if v > 0 else -1)

    return (orient(p1, p2, q1) * orient(p1, p2, q2) < 0
            and orient(q1, q2, p1) * orient(q1, q2, p2) < 0)
