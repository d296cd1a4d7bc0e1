"""How an Expr shows itself in Jupyter: the formula as LaTeX (``_repr_latex_``) and, for a
derivative, its picture beside the forward graph as inline SVG (``_repr_html_``, which
Jupyter prefers to LaTeX).

``ir/`` imports nothing above it, so :func:`register` puts these functions into
:data:`symgrad.ir.expr.DISPLAY`, which the Expr methods call. Each has a budget and returns
None beyond it (or when sympy is missing), so Jupyter falls back to the text and a notebook
never waits on a huge graph. Neither needs Graphviz or matplotlib: the SVG is written as
text, as the interactive page's is.
"""

from __future__ import annotations

import html
import itertools

from ..base.errors import SymgradError
from ..ir import expr as ir_expr
from ..ir.expr import Expr
from ..ir.graph import Graph
from .draw import BOX_STYLE, EDGE_STYLE
from .html import PX, css_dash, scene_svg
from .model import EDGE_LEGEND, LEGEND, Scene
from .scene import build_scene

LATEX_TREE = 1_500  # nodes of the expression written out as a tree (shared parts repeated)
LATEX_CHARS = 5_000  # characters of LaTeX (MathJax is slow on more)
PICTURE_NODES = 3_000  # graph nodes behind a picture (the scene refuses above 400 boxes)
DERIVATIVE_ROLES = ("adjoint", "tangent")

_COUNTER = itertools.count()  # marker ids differ between the pictures of one notebook


def latex(expr: Expr) -> str | None:
    """``$...$``: the formula of ``expr`` as :func:`symgrad.latex` writes it, or None when
    written out it would be too long (a shared subexpression is written each time it is
    used, so a small graph can be a huge formula) or sympy is not installed.

    >>> import symgrad as sg
    >>> x = sg.var("x")
    >>> latex(sg.sin(x) ** 2) == "$" + sg.latex(sg.sin(x) ** 2) + "$"
    True
    >>> h = x
    >>> for _ in range(60):
    ...     h = h + sg.sin(h)     # 121 nodes, a formula of 2**60 terms
    >>> latex(h) is None
    True
    """
    if _tree_size(expr.graph, expr.node, LATEX_TREE) > LATEX_TREE:
        return None
    try:
        from .latex import latex as to_latex

        text = to_latex(expr)
    except (SymgradError, ImportError, RecursionError):
        return None
    return None if len(text) > LATEX_CHARS else f"${text}$"


def _tree_size(graph: Graph, root: int, cap: int) -> int:
    """The number of nodes of the expression tree of ``root`` (its DAG with every shared
    node repeated), counted up to ``cap``: linear in the graph."""
    nodes = graph.nodes
    size: dict[int, int] = {}
    for i in graph.ancestors([root]):
        size[i] = min(cap + 1, 1 + sum(size[a] for a in nodes[i].args))
    return size[root]


def picture(expr: Expr) -> str | None:
    """For a derivative (an expression with adjoint or tangent nodes): an HTML block with
    its picture as inline SVG, the forward graph it came from on the left and B on the
    right, as :func:`symgrad.draw` draws it, with a title and a legend. None for a forward
    expression, or one too big to draw (more than 400 boxes after collapsing chains).

    >>> import symgrad as sg
    >>> x, y = sg.var("x"), sg.var("y")
    >>> f = sg.sin(x) * y
    >>> picture(f) is None
    True
    >>> block = picture(sg.grad(f, x))
    >>> block.startswith("<div") and "<svg" in block and "∂f/∂u1" in block
    True
    """
    graph = expr.graph
    ids = graph.ancestors([expr.node])
    if len(ids) > PICTURE_NODES or not any(graph.nodes[i].role in DERIVATIVE_ROLES
                                           for i in ids):
        return None
    drawn = [expr]
    output = _forward_output(graph, set(ids))
    if output is not None and output != expr.node:
        drawn.insert(0, Expr(graph, output))
    try:
        scene = build_scene(drawn)
    except SymgradError:
        return None
    return ('<div style="max-width: 100%; overflow: auto">'
            f"{_standalone(scene, f'sg{next(_COUNTER)}-')}</div>")


def _forward_output(graph: Graph, ids: set[int]) -> int | None:
    """The forward output of the latest transform that built one of ``ids``."""
    for t in reversed(graph.transforms):
        if any(a in ids for a in t.adjoint_of.values()):
            return t.output
    return None


LEGEND_PX = 11.1 * 0.6  # pixels per character of the legend's monospace text
ROW_PX = 17.0


def _standalone(scene: Scene, prefix: str) -> str:
    """The scene as one SVG image with its title above and its legend below."""
    items = [("box", k, LEGEND[k]) for k in scene.kinds]
    items += [("edge", k, EDGE_LEGEND[k]) for k in scene.edge_kinds]
    columns = 2 if len(items) > 3 else 1
    widths = [40 + LEGEND_PX * max(len(t) for _, _, t in items[c::columns]) + 24
              for c in range(columns)]
    rows = -(-len(items) // columns)
    foot = (rows * ROW_PX + 16) / PX
    body = scene_svg(scene, prefix=prefix, page=False, head=0.45, foot=foot,
                      min_width=24 + sum(widths))
    height = float(body.split('height="', 1)[1].split('"', 1)[0])
    out = [body, f'<text x="12" y="22" font-size="14" font-weight="bold">'
                 f"{html.escape(scene.title)}</text>"]
    top = height - rows * ROW_PX - 8
    for n, (what, kind, text) in enumerate(items):
        x, y = 12 + sum(widths[: n % columns]), top + ROW_PX * (n // columns)
        if what == "box":
            face, edge, style, lw = BOX_STYLE[kind]
            dash = {"-": "", "--": ' stroke-dasharray="5 3"', ":": ' stroke-dasharray="2 2"'}
            out.append(f'<rect x="{x:.1f}" y="{y - 6:.1f}" width="28" height="12" rx="3" '
                       f'fill="{face}" stroke="{edge}" stroke-width="{1.2 * lw:.1f}"'
                       f"{dash[style]}/>")
        else:
            colour, style, lw = EDGE_STYLE[kind]
            dash = {"solid": "", "dashed": ' stroke-dasharray="6 3"',
                    "dotted": ' stroke-dasharray="2 3"'}[css_dash(style)]
            out.append(f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x + 28:.1f}" y2="{y:.1f}" '
                       f'stroke="{colour}" stroke-width="{1.3 * lw:.1f}"{dash}/>')
        out.append(f'<text x="{x + 36:.1f}" y="{y + 4:.1f}" font-size="11.1">'
                   f"{html.escape(text)}</text>")
    out.append("</svg>")
    return "\n".join(out)


def register() -> None:
    """Make Exprs show themselves in Jupyter with :func:`latex` and :func:`picture`."""
    ir_expr.DISPLAY.update(latex=latex, html=picture)


__all__ = ["latex", "picture", "register", "LATEX_TREE", "PICTURE_NODES"]
