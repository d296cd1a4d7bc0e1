"""What a picture of a graph shows, and where: the model every drawing renders.

A :class:`Scene` holds boxes and edges with their places. The matplotlib drawing
(:mod:`.draw`), the Graphviz text (:mod:`.dot`) and the HTML page (:mod:`.html`) all
render the same scene, so they agree on what a student sees:

* the forward graph on the left and the derivative subgraph B on the right, mirrored as in
  Goodfellow et al., Fig. 6.10: the adjoint ``P_i`` of forward node ``u_i`` sits in the same
  row as ``u_i``; forward values flow down, adjoints flow up;
* Collins' numbering, the same as ``sg.explain``: inputs ``u1 ... ul`` first, then the other
  forward nodes; ``P_i`` is the adjoint of ``u_i``; the other nodes of B are ``B1, B2, ...``;
* each box shows its definition in those labels (``u3 = u1 + u2``); constants are written
  into their user's definition instead of being drawn;
* a dotted link labelled ``∂f/∂u_i`` joins each forward node to its adjoint; when the adjoint
  *is* a forward node (hash-consing shares it: in ``sin(x) * y`` the adjoint of ``y`` is
  ``sin(x)``), B shows a "shared" box ``P_i = u_j`` that points at that node;
* forward mode's tangents sit on B's side too, each tangent ``T_i`` of ``u_i`` in ``u_i``'s
  row, joined to it by a dotted link labelled ``u̇_i`` (its directional derivative);
* big graphs are summarised: chains of single-input single-user nodes collapse into one box
  (and their part of B into another); a picture of more than :data:`SCENE_LIMIT` boxes is
  refused with a hint.

Lengths are in inches (the matplotlib figure's units; SVG multiplies them by 72).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..base.errors import ArgumentError, LimitError
from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.text import _type, infix, select, tangent_pairs
from ..ir.values import describe, exact, exact_str
from .explain import definition, numbering

COLLAPSE_AT = 60  # boxes above which collapse="auto" collapses chains
CHAIN_MIN = 3  # the shortest chain that becomes one box
SCENE_LIMIT = 400  # the most boxes a picture shows
TEXT_LIMIT = 30  # characters of a definition shown in a box

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


# -- building the scene ---------------------------------------------------------------------


def build_scene(exprs: Graph | Expr | Sequence[Expr], title: str | None = None,
                collapse: bool | str = "auto") -> Scene:
    """The laid-out picture of ``exprs`` (a Graph, an Expr or a list of Exprs).

    ``collapse``: True, False or ``"auto"`` (collapse chains when there are more than
    :data:`COLLAPSE_AT` boxes). Raises :class:`~symgrad.errors.LimitError` above
    :data:`SCENE_LIMIT` boxes.

    >>> import symgrad as sg
    >>> u1, u2 = sg.var("u1"), sg.var("u2")
    >>> u4 = u2 * (u1 + u2)
    >>> s = build_scene([u4, *sg.grad(u4, [u1, u2])])
    >>> sorted(b.label for b in s.boxes.values())
    ['P1', 'P2', 'P3', 'P4', 'u1', 'u2', 'u3', 'u4']
    >>> s.crossings()
    0
    """
    collapse = exact(collapse)
    if type(collapse) not in (bool, str) or collapse not in (True, False, "auto"):
        raise ArgumentError(f"collapse must be True, False or 'auto', got {describe(collapse)}")
    if title is not None:
        title = exact_str(title, "title")  # a str subclass's methods never run
    graph, ids, outputs = select(exprs)
    ids = _with_seeds(graph, ids)
    boxes, edges = _boxes(graph, ids, outputs)
    hidden = 0
    if collapse is True or (collapse == "auto" and len(boxes) > COLLAPSE_AT):
        boxes, edges, hidden = _collapse(boxes, edges)
    if len(boxes) > SCENE_LIMIT:
        raise LimitError(
            f"this graph has {len(ids):,} nodes, {len(boxes):,} boxes after collapsing chains; "
            f"a picture shows at most {SCENE_LIMIT}. Draw a part of it (a subexpression, or "
            "the gradient of one variable), or read it as text: sg.listing(exprs)"
        )
    head, sub = _titles(graph, outputs, boxes, title)
    scene = Scene(graph, boxes, edges, head, sub, hidden)
    _layout(scene)
    return scene


def _with_seeds(graph: Graph, ids: list[int]) -> list[int]:
    """``ids`` and the constant adjoints (seeds, zeros) of the forward nodes among them:
    ``P_n = 1`` is part of B even when no output uses it."""
    chosen = set(ids)
    nodes = graph.nodes
    extra = {a for _, table in _adjoint_tables(graph) for f, a in table.items()
             if f in chosen and a not in chosen and nodes[a].is_const
             and nodes[a].role == "adjoint"}
    return sorted(chosen | extra) if extra else ids


def _titles(graph: Graph, outputs: list[int], boxes: dict[str, Box], title: str | None
            ) -> tuple[str, str]:
    has_b = any(b.side == "B" for b in boxes.values())
    forward_outs = [o for o in outputs if graph.nodes[o].role == "forward"]
    if title is None:
        if forward_outs:
            text = infix(Expr(graph, forward_outs[0]))
            title = "f = " + (text if len(text) <= 70 else text[:67] + "...")
        else:
            title = "derivative graph"
    sub = ("forward graph (left, values flow down) and its derivative subgraph B "
           "(right, adjoints flow up)" if has_b else "forward graph (values flow down)")
    kinds = {b.kind for b in boxes.values()}
    if "tangent" in kinds and "adjoint" not in kinds:
        sub = ("forward graph (left, values flow down) and its tangents (right, forward "
               "mode: tangents flow down with the values)")
    return title, sub


def _clip(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _adjoint_tables(graph: Graph) -> list[tuple[int, dict[int, int]]]:
    """``(transform number, adjoint_of)`` for every transform, earliest first."""
    tables = [(k, t.adjoint_of) for k, t in enumerate(graph.transforms)]
    return tables or [(0, graph.adjoint_of)]


def _boxes(graph: Graph, ids: list[int], outputs: list[int]) -> tuple[dict, list]:
    nodes = graph.nodes
    chosen = set(ids)
    forward = [i for i in ids if nodes[i].role == "forward"]
    labels = numbering(graph, forward)
    # P labels: the adjoint of u_k is P_k (primes for later transforms of the same node).
    p_labels: dict[int, list[str]] = {}
    anchor_of: dict[int, list[int]] = {}  # adjoint node -> forward nodes it is the adjoint of
    seen: dict[int, int] = {}
    for _, table in _adjoint_tables(graph):
        for f, a in table.items():
            if f not in chosen or a not in chosen or anchor_of.get(a, []).count(f):
                continue
            base = labels.get(f)
            prime = "′" * seen.get(f, 0)
            seen[f] = seen.get(f, 0) + 1
            text = f"P{prime}{base[1:]}" if base else None
            anchor_of.setdefault(a, []).append(f)
            p_labels.setdefault(a, []).append(text or f"P[{f}]")
    t_of: dict[int, int] = {}  # tangent node -> the node it is the tangent of
    for f, t in tangent_pairs(graph):
        if f in chosen and t in chosen and nodes[t].role == "tangent":
            t_of.setdefault(t, f)
    drawn = [i for i in ids if not nodes[i].is_const or
             (i in p_labels and nodes[i].role == "adjoint") or i in t_of]
    b_count = 0
    names: dict[int, str] = dict(labels)
    for i in drawn:
        if i in names:
            continue
        if i in p_labels and nodes[i].role == "adjoint":
            names[i] = _primary(p_labels[i], anchor_of[i], labels)
        elif i in t_of:
            base = names.get(t_of[i], "")
            names[i] = f"T{base[1:]}" if base[:1] == "u" else f"T[{base or t_of[i]}]"
        else:
            b_count += 1
            names[i] = f"B{b_count}"
    for a, fs in anchor_of.items():  # P[...] labels of adjoints of B nodes, now named
        p_labels[a] = [p if not p.startswith("P[") else f"P[{names.get(f, f)}]"
                       for p, f in zip(p_labels[a], fs)]
    names_all = names
    names = {i: t for i, t in names.items() if not nodes[i].is_const}  # constants: literals
    outs = set(outputs)
    boxes: dict[str, Box] = {}
    for i in drawn:
        if i in t_of:
            boxes[f"n{i}"] = _tangent_box(graph, i, t_of[i], names, i in outs, names_all)
            continue
        boxes[f"n{i}"] = _node_box(graph, i, names, p_labels, anchor_of, i in outs,
                                   names_all)
    edges: list[Edge] = []
    for i in drawn:
        dst = boxes[f"n{i}"]
        for a in dict.fromkeys(nodes[i].args):
            src = boxes.get(f"n{a}")
            if src is None or nodes[a].is_const:
                continue  # a constant (even a seed): written into the definition
            kind = ("operand" if src.side == dst.side == "forward"
                    else "b-operand" if src.side == dst.side == "B" else "cross")
            edges.append(Edge(src.key, dst.key, kind))
    for t, f in t_of.items():
        if f"n{f}" in boxes:
            flabel = names_all.get(f, "?")  # u_i, as in the boxes (not the variable's name)
            edges.append(Edge(f"n{f}", f"n{t}", "link", f"{flabel[:1]}\u0307{flabel[1:]}"))
    for a, fs in anchor_of.items():
        shared = nodes[a].role == "forward"
        for f, p in zip(fs, p_labels[a]):
            src = boxes.get(f"n{f}")
            if src is None:
                continue
            if shared:  # the adjoint is a forward node (or a constant): a marker in B
                key = f"s{f}_{a}"
                what = names.get(a) or definition(graph, a, names)
                boxes[key] = Box(key, "shared", p, [f"{p} = {_clip(what)}",
                                                    "the same node" if a in names else
                                                    "a constant"], anchor=src.key)
                target = key
            else:
                target = f"n{a}"
            edges.append(Edge(src.key, target, "link", f"∂f/∂{names_all.get(f, '?')}"))
    edges += _chain_edges(graph, chosen, boxes, edges)
    _idiom_notes(graph, chosen, boxes, names_all)
    return boxes, edges


def _adjoint_key(graph: Graph, boxes: dict[str, Box], f: int, a: int) -> str | None:
    """The box showing ``a``, the adjoint of ``f``: its node's, or a shared marker."""
    key = f"s{f}_{a}" if graph.nodes[a].role == "forward" else f"n{a}"
    return key if key in boxes else None


def _chain_edges(graph: Graph, chosen: set[int], boxes: dict[str, Box],
                 edges: list[Edge]) -> list[Edge]:
    """``P_j → P_i`` for each step of the chain rule ``P_i = Σ_j P_j J(i→j)`` that the graph
    holds no edge for: ``P_j`` a constant (the seed ``1.0``, folded into its users) or a
    shared forward node. ``j`` runs over the users of ``u_i`` and the node whose rule built
    ``P_i`` (an idiom's root); not those that pass no gradient (``floor``)."""
    nodes = graph.nodes
    users: dict[int, list[int]] = {}
    for i in sorted(chosen):
        op = REGISTRY.get(nodes[i].op)
        if op is None or not op.differentiable:
            continue
        for a in dict.fromkeys(nodes[i].args):
            users.setdefault(a, []).append(i)
    have = {(e.src, e.dst) for e in edges}
    out: list[Edge] = []
    for _, table in _adjoint_tables(graph):
        for f, a in table.items():
            pi = _adjoint_key(graph, boxes, f, a) if f in chosen and a in chosen else None
            if pi is None:
                continue
            feeders = list(users.get(f, ()))
            if nodes[a].role == "adjoint" and nodes[a].origin not in (None, f):
                feeders.append(nodes[a].origin)
            for j in dict.fromkeys(feeders):
                b = table.get(j)
                pj = None if b is None or b not in chosen else _adjoint_key(graph, boxes, j, b)
                if pj is None or pj == pi or (pj, pi) in have:
                    continue
                if nodes[b].is_const or boxes[pj].kind == "shared":
                    have.add((pj, pi))
                    out.append(Edge(pj, pi, "chain"))
    return out


def _idiom_notes(graph: Graph, chosen: set[int], boxes: dict[str, Box],
                 labels: dict[int, str]) -> None:
    """A note box in B beside the forward nodes inside an idiom (``1/(1+exp(-x))``): reverse
    mode differentiated the idiom's root by the idiom's rule, so they have no adjoint."""
    from ..passes.idioms import recognised

    nodes = graph.nodes
    for _, table in _adjoint_tables(graph):
        for o in table:
            if f"n{o}" not in boxes or f"note{o}" in boxes or nodes[o].role != "forward":
                continue
            covered, inputs = _inside(graph, o, table, chosen)
            name = recognised(graph, o) if covered and inputs else None
            if name is None:
                continue
            inner = sorted(covered)
            shown = [labels[i] for i in inner if i in labels]
            span = shown[0] if len(shown) == 1 else (
                f"{shown[0]} … {shown[-1]}" if len(shown) > 3 else ", ".join(shown))
            to = ", ".join("P" + labels[i][1:] for i in inputs if i in labels)
            lines = [f"{_clip(span, 22)}: no adjoint", f"{name} idiom at {labels[o]}:",
                     _clip(f"P{labels[o][1:]} → {to} in one step", 28)]
            boxes[f"note{o}"] = Box(f"note{o}", "note", f"{name} idiom", lines,
                                    anchor=f"n{inner[len(inner) // 2]}")


def _inside(graph: Graph, root: int, table: dict[int, int], chosen: set[int],
            limit: int = 64) -> tuple[set[int], list[int]]:
    """The forward nodes between ``root`` and the nodes with adjoints it reaches back to
    (those inputs), walking back through nodes without an adjoint (at most ``limit``)."""
    nodes = graph.nodes
    covered: set[int] = set()
    inputs: dict[int, None] = {}
    stack = [a for a in nodes[root].args]
    while stack and len(covered) < limit:
        i = stack.pop()
        n = nodes[i]
        if i not in chosen or n.is_const or n.role != "forward" or i in covered:
            continue
        if i in table:
            inputs[i] = None
        elif not n.is_var:
            covered.add(i)
            stack.extend(n.args)
    return covered, sorted(inputs)


def _tangent_box(graph: Graph, i: int, f: int, names, output: bool, names_all) -> Box:
    n = graph.nodes[i]
    text = "seed" if n.is_const else _clip(definition(graph, i, names))
    lines = [f"{names_all[i]} = {text}"]
    if n.shape:
        lines.append(_type(n.shape, n.dtype))
    return Box(f"n{i}", "tangent", names_all[i], lines, node=i, op=n.op, output=output,
               anchor=f"n{f}", origin=None if n.origin is None else f"n{n.origin}")


def _primary(ps: list[str], fs: list[int], labels: dict[int, str]) -> str:
    """The label an adjoint node goes by: that of the forward node computed last."""
    best = max(range(len(fs)), key=lambda k: fs[k])
    return ps[best]


def _node_box(graph: Graph, i: int, names, p_labels, anchor_of, output: bool,
              names_all: dict[int, str]) -> Box:
    n = graph.nodes[i]
    shape = _type(n.shape, n.dtype) if n.shape else ""
    if n.role == "forward":
        kind = "input" if n.is_var else "forward"
        text = n.name if n.is_var else _clip(definition(graph, i, names))
        lines = [text if text == names_all[i] else f"{names_all[i]} = {text}"]
        if shape:
            lines.append(shape)
        return Box(f"n{i}", kind, names_all[i], lines, node=i, op=n.op, output=output)
    if i in p_labels:
        label = " = ".join(dict.fromkeys(p_labels[i]))
        fwd = anchor_of[i][max(range(len(anchor_of[i])), key=lambda k: anchor_of[i][k])]
        text = _clip(definition(graph, i, names))
        if n.is_const and fwd == n.origin:
            text += " (seed)"
        lines = [f"{_clip(label, 24)} = {text}"]
        if shape:
            lines.append(shape)
        return Box(f"n{i}", "adjoint", label, lines, node=i, op=n.op, output=output,
                   anchor=f"n{fwd}",
                   origin=None if n.origin is None else f"n{n.origin}")
    lines = [f"{names_all[i]} = {_clip(definition(graph, i, names))}"]
    if shape:
        lines.append(shape)
    return Box(f"n{i}", "intermediate", names_all[i], lines, node=i, op=n.op, output=output,
               origin=None if n.origin is None else f"n{n.origin}")


# -- collapsing chains ----------------------------------------------------------------------


def _collapse(boxes: dict[str, Box], edges: list[Edge]) -> tuple[dict, list, int]:
    """Chains of forward boxes with one forward operand and one forward user become one
    group box; the B boxes made for them become one B group box."""
    preds: dict[str, list[str]] = {k: [] for k in boxes}
    succs: dict[str, list[str]] = {k: [] for k in boxes}
    for e in edges:
        if e.kind == "operand":
            preds[e.dst].append(e.src)
            succs[e.src].append(e.dst)

    def inner(k: str) -> bool:
        b = boxes[k]
        return (b.kind == "forward" and not b.output and len(preds[k]) == 1
                and len(succs[k]) == 1)

    group_of: dict[str, str] = {}
    groups: list[list[str]] = []
    for k in boxes:  # keys are in id order: a chain is met at its first member
        if not inner(k) or k in group_of or (preds[k] and inner(preds[k][0])
                                             and succs[preds[k][0]] == [k]):
            continue
        chain = [k]
        while succs[chain[-1]] and inner(succs[chain[-1]][0]) and \
                preds[succs[chain[-1]][0]] == [chain[-1]]:
            chain.append(succs[chain[-1]][0])
        if len(chain) >= CHAIN_MIN:
            g = f"g{len(groups)}"
            groups.append(chain)
            group_of.update((m, g) for m in chain)
    if not groups:
        return boxes, edges, 0
    members_b: dict[str, list[str]] = {}
    for k, b in boxes.items():
        if b.side != "B" or b.kind in ("group", "note"):
            continue
        home = group_of.get(b.anchor or "") or group_of.get(b.origin or "")
        if home is None or (b.anchor and b.anchor not in group_of):
            continue
        members_b.setdefault(home, []).append(k)
    out: dict[str, Box] = {}
    hidden = 0
    remap: dict[str, str] = {}
    for k, b in boxes.items():
        g = group_of.get(k)
        if g is None:
            bg = next((h for h, ms in members_b.items() if k in ms), None) \
                if b.side == "B" else None
            if bg is None:
                out[k] = b
                continue
            g = "b" + bg
        remap[k] = g
        if g not in out:
            out[g] = _group_box(g, boxes, groups, group_of, members_b)
            hidden += len(out[g].members)
    for b in out.values():  # a note beside a collapsed chain: beside its group
        if b.kind == "note":
            b.anchor = remap.get(b.anchor or "", b.anchor)
    new_edges: dict[tuple[str, str, str], Edge] = {}
    for e in edges:
        src, dst = remap.get(e.src, e.src), remap.get(e.dst, e.dst)
        if src == dst:
            continue
        key = (src, dst, e.kind)
        if key not in new_edges:
            label = e.label if src == e.src and dst == e.dst else ""
            new_edges[key] = Edge(src, dst, e.kind, label)
    return out, list(new_edges.values()), hidden


def _group_box(g: str, boxes, groups, group_of, members_b) -> Box:
    if g.startswith("b"):
        keys = members_b[g[1:]]
        anchor = g[1:]
    else:
        keys = groups[int(g[1:])]
        anchor = None
    inner = [boxes[k] for k in keys]
    ops = Counter(b.op or b.kind for b in inner)
    top = ", ".join(f"{op} ×{n}" for op, n in ops.most_common(3))
    named = [b.label for b in inner if b.kind != "intermediate"] or [inner[0].label]
    span = named[0] if len(named) == 1 else f"{named[0]} … {named[-1]}"
    nodes = [b.node for b in inner if b.node is not None]
    lines = [_clip(span, 28), _clip(f"{len(nodes)} nodes: {top}", 34)]
    return Box(g, "group", span, lines, members=nodes, anchor=anchor)


# -- layout ---------------------------------------------------------------------------------


def _layout(scene: Scene) -> None:
    boxes = scene.boxes
    fwd = [k for k, b in boxes.items() if b.side == "forward"]
    back = [k for k, b in boxes.items() if b.side == "B"]
    rows = _forward_rows(boxes, fwd, scene.edges)
    levels, depth = _levels(scene, back, rows)
    for k in fwd:
        boxes[k].level = levels[rows[k]]
    ordering, dummies = _order(boxes, fwd, rows, scene.edges)
    xs = _coordinates(ordering, boxes)
    for k in fwd:
        boxes[k].x = xs[k]
    right = max((xs[k] + boxes[k].width / 2 for k in fwd), default=0.0)
    _place_b(scene, back, depth, right)
    for b in boxes.values():
        b.y = -b.level * ROW
    for e in scene.edges:  # forward edges bend through their dummy points
        if e.kind == "operand":
            e.points = [(xs[d], -levels[int(d.rsplit("@", 1)[1])] * ROW)
                        for d in dummies.get((e.src, e.dst), [])]


def _forward_rows(boxes, fwd: list[str], edges: list[Edge]) -> dict[str, int]:
    preds: dict[str, list[str]] = {k: [] for k in fwd}
    users: dict[str, list[str]] = {k: [] for k in fwd}
    for e in edges:
        if e.kind == "operand":
            preds[e.dst].append(e.src)
            users[e.src].append(e.dst)
    row: dict[str, int] = {}
    for k in fwd:  # keys in id order: topological
        if boxes[k].kind == "input":
            row[k] = 0
        else:
            row[k] = 1 + max((row[p] for p in preds[k]), default=-1)
    for k in reversed(fwd):  # then as late as possible: each node just above its first user
        if users[k] and not boxes[k].output:
            row[k] = max(row[k], min(row[u] for u in users[k]) - 1)
    return row


def _levels(scene: Scene, back: list[str], rows: dict[str, int]) -> tuple[dict, dict]:
    """Levels (rows of the picture, top down) of the forward rows, and the depth of each B
    intermediate: forward row ``r`` is at ``levels[r]``; an intermediate of depth ``d``
    built by the rule of a node at row ``r`` goes ``d`` levels above it, into extra levels
    kept free for it (adjoints flow up, so B reads bottom to top)."""
    boxes = scene.boxes
    preds: dict[str, list[str]] = {k: [] for k in back}
    for e in scene.edges:
        if e.kind == "b-operand" and e.dst in preds:
            preds[e.dst].append(e.src)
    depth: dict[str, int] = {}
    extra: dict[int, int] = {}
    for k in back:  # keys in id order: operands first
        b = boxes[k]
        if b.anchor is not None:
            continue
        same = [p for p in preds[k] if p in depth and boxes[p].origin == b.origin]
        depth[k] = 1 + max((depth[p] for p in same), default=0)
        r = rows.get(b.origin or "")
        if r is not None:
            extra[r] = max(extra.get(r, 0), depth[k])
    levels: dict[int, int] = {}
    level = 0
    for r in range(max(rows.values(), default=0) + 1):
        level += extra.get(r, 0)
        levels[r] = level
        level += 1
    return levels, depth


def _place_b(scene: Scene, back: list[str], depth: dict[str, int], right: float) -> None:
    """Adjoints and shared markers mirror their forward node across the gap, in its row;
    intermediates go above the row of the node whose rule built them, under their users."""
    boxes = scene.boxes
    mirror = 2 * right + GAP
    nbrs: dict[str, list[str]] = {k: [] for k in back}
    for e in scene.edges:
        if e.kind == "b-operand" and e.dst in nbrs and e.src in nbrs:
            nbrs[e.dst].append(e.src)
            nbrs[e.src].append(e.dst)
    placed: dict[str, list] = {}  # key -> [level, x]
    for k in back:
        a = boxes.get(boxes[k].anchor or "")
        if a is not None and a.side == "forward":
            placed[k] = [a.level, mirror - a.x]
    rest = [k for k in back if k not in placed]
    for k in rest:
        b = boxes[k]
        o = boxes.get(b.origin or "")
        if o is not None and (o.side == "forward" or o.key in placed):
            base = o.level if o.side == "forward" else placed[o.key][0]
        else:
            base = 1 + min((placed[p][0] for p in nbrs[k] if p in placed), default=0)
        x = mirror - o.x if o is not None and o.side == "forward" else right + GAP
        placed[k] = [max(base - depth.get(k, 1), 0), x]
    for _ in range(3):  # intermediates: between their neighbours in B
        for k in rest:
            xs = [placed[p][1] for p in nbrs[k]]
            if xs:
                placed[k][1] = sum(xs) / len(xs)
    by_level: dict[int, list[str]] = {}
    for k, (level, _) in placed.items():
        by_level.setdefault(level, []).append(k)
    for level, keys in by_level.items():
        keys.sort(key=lambda k: placed[k][1])
        widths = [boxes[k].width for k in keys]
        xs = _pav([placed[k][1] for k in keys], widths)
        shift = max(0.0, right + GAP / 2 - (xs[0] - widths[0] / 2))
        for k, x in zip(keys, xs):
            boxes[k].x, boxes[k].level = x + shift, level


# -- ordering and coordinates of the forward graph (Sugiyama-style) -----------------------


def _order(boxes, fwd: list[str], rows: dict[str, int], edges: list[Edge]):
    """The boxes of each forward row in left-to-right order (with dummy points for edges
    that span rows), after barycentre sweeps."""
    layer: dict[int, list[str]] = {}
    up: dict[str, list[str]] = {}
    down: dict[str, list[str]] = {}
    dummies: dict[tuple[str, str], list[str]] = {}
    for k in fwd:
        layer.setdefault(rows[k], []).append(k)
        up.setdefault(k, [])
        down.setdefault(k, [])
    for e in edges:
        if e.kind != "operand":
            continue
        chain = [e.src]
        for r in range(rows[e.src] + 1, rows[e.dst]):
            d = f"{e.src}>{e.dst}@{r}"
            layer.setdefault(r, []).append(d)
            up[d], down[d] = [], []
            chain.append(d)
            dummies.setdefault((e.src, e.dst), []).append(d)
        chain.append(e.dst)
        for a, b in zip(chain, chain[1:]):
            down[a].append(b)
            up[b].append(a)
    order = [layer.get(r, []) for r in range(max(layer, default=-1) + 1)]
    best, best_cross = [list(r) for r in order], _count(order, down)
    for sweep in range(8):
        rng = range(1, len(order)) if sweep % 2 == 0 else range(len(order) - 2, -1, -1)
        nbrs = up if sweep % 2 == 0 else down
        for r in rng:
            pos = {k: j for j, k in enumerate(order[r - 1 if sweep % 2 == 0 else r + 1])}
            keyed = []
            for j, k in enumerate(order[r]):
                ps = [pos[n] for n in nbrs[k] if n in pos]
                keyed.append((sum(ps) / len(ps) if ps else j, j, k))
            order[r] = [k for _, _, k in sorted(keyed)]
        cross = _count(order, down)
        if cross < best_cross:
            best, best_cross = [list(r) for r in order], cross
    return (best, up, down), dummies


def _count(order: list[list[str]], down: dict[str, list[str]]) -> int:
    """Crossings between consecutive rows (the usual inversion count)."""
    total = 0
    for r in range(len(order) - 1):
        pos = {k: j for j, k in enumerate(order[r + 1])}
        ends = [(j, pos[b]) for j, a in enumerate(order[r]) for b in down[a] if b in pos]
        ends.sort()
        for x in range(len(ends)):
            for y in range(x + 1, len(ends)):
                if ends[x][0] != ends[y][0] and ends[y][1] < ends[x][1]:
                    total += 1
        if total > 10_000:
            break
    return total


def _coordinates(ordering, boxes) -> dict[str, float]:
    order, up, down = ordering
    width = {k: (boxes[k].width if k in boxes else 0.1) for row in order for k in row}
    x: dict[str, float] = {}
    for row in order:
        pos = 0.0
        for k in row:
            x[k] = pos + width[k] / 2
            pos += width[k] + HGAP
    for sweep in range(6):
        rows = order if sweep % 2 == 0 else order[::-1]
        nbrs = up if sweep % 2 == 0 else down
        for row in rows:
            want = []
            for k in row:
                ps = [x[n] for n in nbrs[k]] or [x[n] for n in (down if sweep % 2 == 0
                                                                 else up)[k]]
                # the lower median, not the mean: a node lines up with one operand, so
                # long chains (h = h + t) stand straight instead of drifting sideways
                want.append(sorted(ps)[(len(ps) - 1) // 2] if ps else x[k])
            for k, v in zip(row, _pav(want, [width[k] for k in row])):
                x[k] = v
    left = min((x[k] - width[k] / 2 for k in x), default=0.0)
    return {k: v - left for k, v in x.items()}


def _pav(want: list[float], widths: list[float]) -> list[float]:
    """Places closest (least squares) to ``want`` keeping the order and no overlap:
    isotonic regression by pool-adjacent-violators on the shifted targets."""
    if not want:
        return []
    offsets = [0.0]
    for j in range(1, len(want)):
        offsets.append(offsets[-1] + (widths[j - 1] + widths[j]) / 2 + HGAP)
    blocks: list[list[float]] = []  # [sum, count]
    for w, o in zip(want, offsets):
        blocks.append([w - o, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    fitted = []
    for s, c in blocks:
        fitted += [s / c] * c
    return [f + o for f, o in zip(fitted, offsets)]


__all__ = ["Box", "Edge", "Scene", "build_scene", "LEGEND", "EDGE_LEGEND", "SCENE_LIMIT",
           "COLLAPSE_AT"]
