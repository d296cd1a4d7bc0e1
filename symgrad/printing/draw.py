"""A drawing of a graph with matplotlib (optional dependency): the forward graph and its
derivative subgraph B side by side, with a title and a legend (see :mod:`.scene`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..base.describe import describe
from ..base.errors import SymgradError
from ..base.progress import step
from ..ir.expr import Expr
from ..ir.graph import Graph
from .model import EDGE_LEGEND, LEGEND, Box, Edge, Scene
from .scene import build_scene

# kind -> (face colour, edge colour, line style, line width)
BOX_STYLE = {
    "input": ("#ffffff", "#33475b", "-", 1.0),
    "forward": ("#dbe9f6", "#33475b", "-", 1.0),
    "adjoint": ("#fbd3cd", "#a2322a", "--", 1.0),
    "tangent": ("#d6f0d9", "#2b7a3d", "--", 1.0),
    "intermediate": ("#fdeeeb", "#c0635b", "--", 0.8),
    "shared": ("#fff7d6", "#a07a00", ":", 1.2),
    "group": ("#eeeeee", "#555555", "-", 1.0),
    "note": ("#ffffff", "#888888", ":", 1.0),
    "output": ("#ffffff", "#33475b", "-", 2.2),  # the legend's sample of a bold border
}
# kind -> (colour, line style, line width)
EDGE_STYLE = {
    "operand": ("#33475b", "-", 1.0),
    "b-operand": ("#a2322a", "-", 1.0),
    "chain": ("#a2322a", "--", 1.0),
    "cross": ("#b8b8b8", "-", 0.6),
    "link": ("#2f6fd0", ":", 1.1),
}
FONT = {"family": "monospace", "size": 8}
LEGEND_FONT = 7.5  # points, monospace: 0.6 of it per character
LEGEND_ROW = 0.24  # inches
ARC_RISE = 0.3  # inches: the highest a link arcs over its row
MAX_PIXELS = 4_000  # the longer side of a PNG; larger pictures get fewer dots per inch


def draw(exprs: Graph | Expr | Sequence[Expr], path: str = "graph.png", *,
         title: str | None = None, collapse: bool | str = "auto", dpi: int = 110) -> str:
    """Draw the forward graph and its derivative subgraph B to an image file (matplotlib).

    The forward graph is on the left (inputs at the top, values flow down), B on the right,
    mirrored: the adjoint ``P_i`` of node ``u_i`` sits in ``u_i``'s row, and adjoints flow
    up. Nodes are numbered as in ``sg.explain`` (``u_i``, ``P_i``; other nodes of B are
    ``B1, B2, ...``) and show their definition; constants are written into their users.
    A dotted link labelled ``∂f/∂u_i`` joins each node to its adjoint; when the adjoint is
    a forward node itself (shared by hash-consing), B shows a yellow "shared" marker. A
    title and a legend say the rest. Long chains collapse into one box (``collapse``:
    ``"auto"`` above 60 boxes, True, False); pictures of more than 400 boxes are refused
    with a hint (:class:`~symgrad.errors.LimitError`).

    Parameters
    ----------
    exprs : Graph, Expr or list of Expr
        What to draw, e.g. ``[f, *sg.grad(f, [x, y])]``.
    path : str
        The output file; its suffix picks the format (``.png``, ``.svg``, ``.pdf``).
    title : str, optional
        The title (default: ``f = <the first output as text>``).

    Returns
    -------
    str
        ``path``.

    Examples
    --------
    >>> import symgrad as sg, tempfile, os
    >>> x, y = sg.var("x"), sg.var("y")
    >>> f = sg.sin(x) * y
    >>> out = os.path.join(tempfile.mkdtemp(), "g.png")
    >>> draw([f, *sg.grad(f, [x, y])], out) == out
    True
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise SymgradError(
            "draw() needs matplotlib (pip install 'symgrad[plot]'); "
            "or write DOT text with sg.to_dot(exprs) and render it with Graphviz"
        ) from None
    if not isinstance(path, str):
        raise SymgradError(f"draw() needs a file name, got {describe(path)}")
    path = str.__str__(path)
    with step("draw", unit="box") as s:
        scene = build_scene(exprs, title=title, collapse=collapse)
        s.update(len(scene.boxes))
        left, right, bottom, top = scene.extent()
        items = _legend_items(scene)
        columns = _legend_columns(items)
        inner = max(right - left, 7.0, sum(columns), len(scene.title) * 11 * 0.6 / 72 + 0.2)
        legend_h = 0.5 + LEGEND_ROW * math.ceil(len(items) / len(columns))
        width = inner + 0.6
        height = (top - bottom) + 1.0 + ARC_RISE + legend_h
        fig = Figure(figsize=(width, height))
        FigureCanvasAgg(fig)
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_axis_off()
        ax.set_xlim(left - 0.3, left - 0.3 + width)
        ax.set_ylim(bottom - legend_h, top + 1.0 + ARC_RISE)
        _title(ax, scene, left, top + ARC_RISE)
        _edges(ax, scene)
        _boxes(ax, scene)
        _legend(ax, items, left, bottom - 0.35, columns)
        try:
            fig.savefig(path, dpi=min(dpi, int(MAX_PIXELS / max(width, height))),
                        **({"pil_kwargs": {"compress_level": 1}} if path.endswith(".png")
                           else {}))
        except (OSError, ValueError) as e:  # an unwritable path or an unknown suffix
            raise SymgradError(f"draw() cannot write {path[:200]!r}: {e}") from None
    return path


def _title(ax, scene: Scene, left: float, top: float) -> None:
    ax.text(left, top + 0.75, scene.title, ha="left", va="center", fontsize=11,
            fontweight="bold", family="monospace")
    extra = f"\n{scene.collapsed:,} nodes are inside collapsed chains (grey boxes)" \
        if scene.collapsed else ""
    ax.text(left, top + 0.42, scene.subtitle + extra, ha="left", va="top" if extra else "center",
            fontsize=8.5, color="#444444")


def _boxes(ax, scene: Scene) -> None:
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import FancyBboxPatch

    patches, faces, edges, styles, widths = [], [], [], [], []
    for b in scene.boxes.values():
        face, edge, style, lw = BOX_STYLE[b.kind]
        patches.append(FancyBboxPatch((b.x - b.width / 2, b.y - b.height / 2), b.width,
                                      b.height, boxstyle="round,pad=0,rounding_size=0.06"))
        faces.append(face)
        edges.append(edge)
        styles.append(style)
        widths.append(lw * (2.2 if b.output else 1.0))
        ax.text(b.x, b.y, "\n".join(b.lines), ha="center", va="center", fontdict=FONT,
                linespacing=1.15, zorder=4)
    ax.add_collection(PatchCollection(patches, facecolors=faces, edgecolors=edges,
                                      linestyles=styles, linewidths=widths, zorder=3))


def _edges(ax, scene: Scene) -> None:
    from matplotlib.collections import LineCollection, PolyCollection

    lines: dict[str, list] = {}
    heads: dict[str, list] = {}
    for e in scene.edges:
        pts = edge_points(scene, e)
        lines.setdefault(e.kind, []).append(pts)
        heads.setdefault(e.kind, []).append(_head(pts[-2], pts[-1]))
        if e.label:
            x, y = label_point(scene, e, pts)
            ax.text(x, y + 0.02, e.label, ha="center", va="bottom", fontsize=7,
                    color=EDGE_STYLE[e.kind][0], zorder=5)
    for kind, segs in lines.items():
        colour, style, lw = EDGE_STYLE[kind]
        z = 1 if kind == "cross" else 2
        ax.add_collection(LineCollection(segs, colors=colour, linestyles=style, linewidths=lw,
                                         zorder=z))
        ax.add_collection(PolyCollection(heads[kind], facecolors=colour, edgecolors="none",
                                         zorder=z))


def edge_points(scene: Scene, e: Edge) -> list[tuple[float, float]]:
    """The polyline drawn for edge ``e``: straight (through bends) for operand edges, an
    arc over the row for a link within a row (mirrored links nest without crossing), a
    gentle curve otherwise."""
    a, b = scene.boxes[e.src], scene.boxes[e.dst]
    if e.kind == "link" and a.level == b.level:
        p, q = (a.x, a.y + a.height / 2), (b.x, b.y + b.height / 2)
        rise = min(0.1 + 0.035 * abs(q[0] - p[0]), ARC_RISE)
        return _arc(p, q, rise)
    pts = _clipped(scene, e)
    if e.kind in ("cross", "link"):
        pts = _curve(pts[0], pts[-1], 0.15 if e.kind == "cross" else 0.1)
    elif e.kind == "b-operand" and abs(a.level - b.level) > 1:
        pts = _curve(pts[0], pts[-1], 0.12)  # bend around the boxes between
    elif e.kind == "chain" and abs(a.level - b.level) > 1:  # around the boxes between
        pts = min((_curve(pts[0], pts[-1], bend) for bend in (-0.15, 0.15, -0.3, 0.3)),
                  key=lambda c: _hits(scene, c, (e.src, e.dst)))
    return pts


def _hits(scene: Scene, pts: list, ends: tuple[str, str]) -> int:
    """How many points of a polyline lie inside boxes other than its ends."""
    return sum(1 for b in scene.boxes.values() if b.key not in ends for x, y in pts
               if abs(x - b.x) < b.width / 2 + 0.05 and abs(y - b.y) < b.height / 2 + 0.05)


def label_point(scene: Scene, e: Edge, pts: list) -> tuple[float, float]:
    """Where an edge's label goes: near the end of an arc within a row (the ends of nested
    arcs are apart), near the start of a link between rows (several may end in one box)."""
    same = scene.boxes[e.src].level == scene.boxes[e.dst].level
    return pts[(3 * len(pts)) // 4] if same else pts[len(pts) // 4]


def _arc(p, q, rise: float, n: int = 16) -> list[tuple[float, float]]:
    return [(p[0] + (q[0] - p[0]) * t, p[1] + 4 * rise * t * (1 - t))
            for t in (k / n for k in range(n + 1))]


def _clipped(scene: Scene, e: Edge) -> list[tuple[float, float]]:
    """The edge's polyline, its ends moved from the box centres to the box borders."""
    pts = scene.path(e)
    a, b = scene.boxes[e.src], scene.boxes[e.dst]
    pts[0] = _border(a, pts[1])
    pts[-1] = _border(b, pts[-2])
    return pts


def _border(b: Box, toward: tuple[float, float]) -> tuple[float, float]:
    dx, dy = toward[0] - b.x, toward[1] - b.y
    if dx == 0 and dy == 0:
        return b.x, b.y
    t = min(b.width / 2 / abs(dx) if dx else math.inf, b.height / 2 / abs(dy) if dy else math.inf)
    t = min(t, 1.0)
    return b.x + dx * t, b.y + dy * t


def _curve(p, q, bend: float, n: int = 12) -> list[tuple[float, float]]:
    """A gentle arc from p to q (a quadratic Bézier), so links do not hide straight edges."""
    mx, my = (p[0] + q[0]) / 2, (p[1] + q[1]) / 2
    dx, dy = q[0] - p[0], q[1] - p[1]
    cx, cy = mx - dy * bend, my + dx * bend
    return [((1 - t) ** 2 * p[0] + 2 * (1 - t) * t * cx + t * t * q[0],
             (1 - t) ** 2 * p[1] + 2 * (1 - t) * t * cy + t * t * q[1])
            for t in (k / n for k in range(n + 1))]


def _head(p, q, size: float = 0.09) -> list[tuple[float, float]]:
    dx, dy = q[0] - p[0], q[1] - p[1]
    norm = math.hypot(dx, dy) or 1.0
    ux, uy = dx / norm, dy / norm
    bx, by = q[0] - ux * size, q[1] - uy * size
    return [q, (bx - uy * size * 0.45, by + ux * size * 0.45),
            (bx + uy * size * 0.45, by - ux * size * 0.45)]


def _legend_items(scene: Scene) -> list[tuple[str, str, str]]:
    return ([("box", k, LEGEND[k]) for k in scene.kinds]
            + [("edge", k, EDGE_LEGEND[k]) for k in scene.edge_kinds])


def _legend_columns(items: list[tuple[str, str, str]], count: int = 2) -> list[float]:
    """The widths in inches of the legend's columns (filled row by row): each the sample,
    its longest text (monospace: exact) and a gap. The figure is made wide enough."""
    count = max(1, min(count, len(items)))
    widths = []
    for c in range(count):
        chars = max((len(text) for _, _, text in items[c::count]), default=0)
        widths.append(0.45 + chars * LEGEND_FONT * 0.6 / 72 + 0.3)
    return widths


def _legend(ax, items: list[tuple[str, str, str]], left: float, y: float,
            columns: list[float]) -> None:
    """The legend in ``len(columns)`` columns, filled row by row, under the picture."""
    from matplotlib.patches import FancyBboxPatch

    starts = [left + sum(columns[:c]) for c in range(len(columns))]
    for n, (what, kind, text) in enumerate(items):
        x, yy = starts[n % len(columns)], y - LEGEND_ROW * (n // len(columns))
        if what == "box":
            face, edge, style, lw = BOX_STYLE[kind]
            ax.add_patch(FancyBboxPatch((x, yy - 0.07), 0.34, 0.14,
                                        boxstyle="round,pad=0,rounding_size=0.03",
                                        facecolor=face, edgecolor=edge, linestyle=style, lw=lw))
        else:
            colour, style, lw = EDGE_STYLE[kind]
            ax.plot([x, x + 0.34], [yy, yy], color=colour, linestyle=style, lw=lw)
        ax.text(x + 0.45, yy, text, ha="left", va="center", fontsize=LEGEND_FONT,
                family="monospace")
