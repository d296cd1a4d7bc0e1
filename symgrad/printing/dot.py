"""Graphviz DOT text of a graph: the forward graph and its derivative subgraph B, side by
side, with a title and a legend (the same picture as ``sg.draw``: see :mod:`.scene`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..ir.expr import Expr
from ..ir.graph import Graph
from .model import EDGE_LEGEND, LEGEND, Box, Edge, Scene
from .scene import build_scene

# kind -> DOT node attributes
NODE_ATTRS = {
    "input": 'shape=box, style="rounded", color="#33475b", fillcolor="#ffffff"',
    "forward": 'shape=box, style="rounded,filled", color="#33475b", fillcolor="#dbe9f6"',
    "adjoint": 'shape=box, style="rounded,filled,dashed", color="#a2322a", '
               'fillcolor="#fbd3cd"',
    "tangent": 'shape=box, style="rounded,filled,dashed", color="#2b7a3d", '
               'fillcolor="#d6f0d9"',
    "intermediate": 'shape=box, style="rounded,filled,dashed", color="#c0635b", '
                    'fillcolor="#fdeeeb"',
    "shared": 'shape=note, style="filled,dotted", color="#a07a00", fillcolor="#fff7d6"',
    "group": 'shape=box3d, style="filled", color="#555555", fillcolor="#eeeeee"',
    "note": 'shape=note, style="filled,dotted", color="#888888", fillcolor="#ffffff"',
    "output": 'shape=box, style="rounded", color="#33475b", fillcolor="#ffffff", penwidth=2.5',
}
EDGE_ATTRS = {
    "operand": 'color="#33475b"',
    "b-operand": 'color="#a2322a"',
    "chain": 'style=dashed, color="#a2322a", constraint=false',
    "cross": 'color="#b8b8b8", constraint=false',
    "link": 'style=dotted, color="#2f6fd0", fontcolor="#2f6fd0", constraint=false',
}


def to_dot(exprs: Graph | Expr | Sequence[Expr], *, title: str | None = None,
           collapse: bool | str = "auto") -> str:
    """Graphviz DOT text of the forward graph and its derivative subgraph B.

    The picture of :func:`symgrad.draw` for Graphviz: the forward graph (cluster
    ``forward``, values flow down) beside B (cluster ``B``, adjoints flow up), each adjoint
    ``P_i`` in the same rank as its node ``u_i`` (``newrank``), nodes numbered as in
    ``sg.explain``, dotted links labelled ``∂f/∂u_i``, a title and a legend. Render it with
    ``dot -Tpng graph.dot > graph.png``. The text is deterministic.

    Examples
    --------
    >>> import symgrad as sg
    >>> x = sg.var("x")
    >>> f = sg.sin(x) * x
    >>> dot = to_dot([f, sg.grad(f, x)])
    >>> dot.startswith("digraph symgrad {")
    True
    >>> "∂f/∂u1" in dot and "cluster_B" in dot and "legend" in dot
    True
    """
    scene = build_scene(exprs, title=title, collapse=collapse)
    return render(scene)


def render(scene: Scene) -> str:
    """The DOT text of a laid-out :class:`~.scene.Scene`."""
    title = scene.title + "\n" + scene.subtitle
    if scene.collapsed:
        title += f"\n{scene.collapsed:,} nodes are inside collapsed chains (grey boxes)"
    lines = ["digraph symgrad {",
             f"  graph [rankdir=TB, newrank=true, labelloc=t, labeljust=l, fontsize=14, "
             f'fontname="Helvetica", nodesep=0.3, ranksep=0.35, label="{_escape(title)}"];',
             '  node [fontname="DejaVu Sans Mono", fontsize=10, margin="0.08,0.04"];',
             '  edge [fontname="Helvetica", fontsize=9, arrowsize=0.7];']
    for side, label in (("forward", "forward graph"), ("B", "derivative subgraph B")):
        members = [b for b in scene.boxes.values() if b.side == side]
        if not members:
            continue
        lines.append(f"  subgraph cluster_{side} {{")
        lines.append(f'    label="{label}"; style="rounded,dashed"; color="#bbbbbb";')
        lines.extend(f"    {_node(b)}" for b in members)
        lines.append("  }")
    levels: dict[int, list[str]] = {}
    for b in scene.boxes.values():
        levels.setdefault(b.level, []).append(b.key)
    for level in sorted(levels):
        if len(levels[level]) > 1:
            lines.append("  { rank=same; " + " ".join(f"{k};" for k in levels[level]) + " }")
    lines.extend(f"  {_edge(scene, e)}" for e in scene.edges)
    lines.extend(_legend(scene))
    lines.append("}")
    return "\n".join(lines)


def _node(b: Box) -> str:
    label = _escape("\n".join(b.lines))
    extra = ", penwidth=2.5" if b.output else ""
    return f'{b.key} [label="{label}", {NODE_ATTRS[b.kind]}{extra}];'


def _edge(scene: Scene, e: Edge) -> str:
    attrs = EDGE_ATTRS[e.kind]
    if e.label:  # xlabel: Graphviz 2.43 crashes on labels of constraint=false edges
        attrs += f', xlabel="{_escape(e.label)}"'
    a, b = scene.boxes[e.src], scene.boxes[e.dst]
    if e.kind == "b-operand":
        # B flows up: written user -> operand so that the operand ranks below its user
        if a.level > b.level:
            return f"{e.dst} -> {e.src} [{attrs}, dir=back];"
        return f"{e.src} -> {e.dst} [{attrs}, constraint=false];"
    if e.kind == "operand" and a.level >= b.level:
        attrs += ", constraint=false"
    return f"{e.src} -> {e.dst} [{attrs}];"


def _legend(scene: Scene) -> list[str]:
    """One table node at the bottom: a sample of each kind of box and edge present."""
    rows = []
    for kind in scene.kinds:
        colour, fill, style = _legend_colours(kind)
        border = 3 if kind == "output" else 1
        sample = f'<td bgcolor="{fill}" color="{colour}" border="{border}" style="{style}" ' \
                 'width="28"> </td>'
        rows.append(f"<tr>{sample}<td align=\"left\">{_html(LEGEND[kind])}</td></tr>")
    for kind in scene.edge_kinds:
        colour = EDGE_ATTRS[kind].split('color="')[1].split('"')[0]
        arrow = "⇢" if kind in ("link", "chain") else "→"
        rows.append(f'<tr><td><font color="{colour}" point-size="14">{arrow}</font></td>'
                    f'<td align="left">{_html(EDGE_LEGEND[kind])}</td></tr>')
    table = ('<<table border="0" cellborder="0" cellspacing="3" cellpadding="2">'
             '<tr><td colspan="2" align="left"><b>legend</b></td></tr>'
             + "".join(rows) + "</table>>")
    return [f'  legend [shape=box, style="rounded", color="#bbbbbb", fontname="Helvetica", '
            f"fontsize=9, label={table}];", "  { rank=sink; legend; }"]


def _legend_colours(kind: str) -> tuple[str, str, str]:
    attrs = NODE_ATTRS[kind]
    colour = attrs.split('color="')[1].split('"')[0]
    fill = attrs.split('fillcolor="')[1].split('"')[0]
    style = "dashed" if "dashed" in attrs else "dotted" if "dotted" in attrs else "rounded"
    return colour, fill, style


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _escape(text: str) -> str:
    """Text safe inside a double-quoted DOT string (lines end with ``\\l``: left-aligned
    would need every line to; centred ``\\n`` reads best in boxes)."""
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return "".join(c if c.isprintable() else "?" for c in text)
