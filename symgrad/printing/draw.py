"""A drawing of a graph with matplotlib (optional dependency): forward nodes, adjoint
nodes and the links between them."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import SymgradError
from ..ir.graph import Expr, Graph
from ..ir.text import adjoint_pairs, const_text, select
from ..ir.values import describe
from .dot import _clip

DRAW_LIMIT = 2_000  # nodes draw() will lay out


def draw(exprs: Graph | Expr | Sequence[Expr], path: str = "graph.png") -> str:
    """Draw the graph (forward and adjoint nodes) to an image file with matplotlib.

    Nodes are placed in layers by longest path from the inputs; adjoint nodes are drawn in
    a different colour and dotted lines join forward nodes to their adjoints.

    Parameters
    ----------
    exprs : Graph, Expr or list of Expr
        What to draw.
    path : str
        The output file; its suffix picks the format (``.png``, ``.svg``, ``.pdf``).

    Returns
    -------
    str
        ``path``.

    Examples
    --------
    >>> import symgrad as sg, tempfile, os
    >>> x = sg.var("x")
    >>> out = os.path.join(tempfile.mkdtemp(), "g.png")
    >>> draw(sg.grad(sg.exp(x) * x, x), out) == out  # doctest: +SKIP
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
    graph, ids, outputs = select(exprs)
    if len(ids) > DRAW_LIMIT:
        raise SymgradError(f"draw() lays out at most {DRAW_LIMIT} nodes; this graph has "
                           f"{len(ids)}: use sg.to_dot(exprs) with Graphviz instead")
    pos = _layered_positions(graph, ids)
    width = max((x for x, _ in pos.values()), default=1.0) + 1
    height = max((-y for _, y in pos.values()), default=1.0) + 1
    fig = Figure(figsize=(min(2 + 1.6 * width, 60), min(2 + 1.0 * height, 60)))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_axis_off()
    _draw_edges(ax, graph, ids, pos)
    _draw_nodes(ax, graph, ids, pos, set(outputs))
    ax.set_xlim(-1, width)
    ax.set_ylim(-height, 1)
    fig.savefig(path, bbox_inches="tight")
    return path


def _layered_positions(graph: Graph, ids: list[int]) -> dict[int, tuple[float, float]]:
    layer: dict[int, int] = {}
    for i in ids:  # ids ascend: a topological order
        args = graph.nodes[i].args
        layer[i] = 1 + max((layer[a] for a in args), default=-1)
    rows: dict[int, list[int]] = {}
    for i in ids:
        rows.setdefault(layer[i], []).append(i)
    widest = max(len(r) for r in rows.values())
    pos = {}
    for depth, row in rows.items():
        offset = (widest - len(row)) / 2
        for k, i in enumerate(row):
            pos[i] = (offset + k, -float(depth))
    return pos


def _draw_edges(ax, graph: Graph, ids: list[int], pos) -> None:
    for i in ids:
        for a in set(graph.nodes[i].args):
            ax.annotate("", xy=pos[i], xytext=pos[a],
                        arrowprops={"arrowstyle": "->", "color": "0.45", "lw": 0.8,
                                    "shrinkA": 12, "shrinkB": 12})
    chosen = set(ids)
    for f, a in sorted(adjoint_pairs(graph)):
        if f in chosen and a in chosen:
            ax.annotate("", xy=pos[a], xytext=pos[f],
                        arrowprops={"arrowstyle": "->", "color": "royalblue", "lw": 0.8,
                                    "linestyle": ":", "connectionstyle": "arc3,rad=0.25",
                                    "shrinkA": 12, "shrinkB": 12})


def _draw_nodes(ax, graph: Graph, ids: list[int], pos, outputs: set[int]) -> None:
    reserved = set(graph.variables)
    for i in ids:
        n = graph.nodes[i]
        if n.is_var:
            text = n.name
        elif n.is_const:
            text = _clip(const_text(n.attrs["value"], reserved)[1][0], 16)
        else:
            text = n.op
        colour = "#fde0dc" if n.role == "adjoint" else ("white" if n.is_var else "#dbe9f6")
        ax.text(*pos[i], f"{text}\nv{i}", ha="center", va="center", fontsize=8,
                bbox={"boxstyle": "round", "fc": colour, "ec": "black",
                      "lw": 2.0 if i in outputs else 0.8,
                      "ls": "--" if n.role == "adjoint" else "-"})
