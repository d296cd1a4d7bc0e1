"""Graphviz DOT text of a graph: the forward graph and its derivative subgraph B."""

from __future__ import annotations

from collections.abc import Sequence

from ..ir.expr import Expr
from ..ir.graph import Graph, Node
from ..ir.text import _type, _value_text, adjoint_pairs, const_text, select


def to_dot(exprs: Graph | Expr | Sequence[Expr]) -> str:
    """Graphviz DOT text of the forward graph and its derivative subgraph B.

    Forward nodes sit in a ``forward`` cluster; adjoint nodes in an ``adjoint`` cluster,
    filled and dashed. Operand edges are labelled with the operand position when a node has
    more than one operand, and a dotted edge joins each forward node to its adjoint
    (``graph.adjoint_of``). The text is deterministic.

    Examples
    --------
    >>> import symgrad as sg
    >>> x = sg.var("x")
    >>> f = sg.sin(x) * x
    >>> dot = to_dot([f, sg.grad(f, x)])
    >>> dot.startswith("digraph symgrad {")
    True
    >>> "style=dotted" in dot and 'label="adjoint' in dot
    True
    """
    graph, ids, outputs = select(exprs)
    nodes = graph.nodes
    chosen = set(ids)
    lines = ["digraph symgrad {", "  rankdir=TB;",
             '  node [shape=box, style=rounded, fontname="Helvetica", fontsize=11];',
             '  edge [fontname="Helvetica", fontsize=9];']
    for role, title, style in (("forward", "forward", "color=gray70"),
                               ("adjoint", "adjoint (B)", "style=dashed, color=firebrick")):
        members = [i for i in ids if nodes[i].role == role]
        if not members:
            continue
        lines.append(f"  subgraph cluster_{role} {{")
        lines.append(f'    label="{title}"; {style};')
        lines.extend(f"    {_dot_node(graph, nodes[i], i in outputs)}" for i in members)
        lines.append("  }")
    for i in ids:
        args = nodes[i].args
        for k, a in enumerate(args):
            label = f' [label="{k}"]' if len(args) > 1 else ""
            lines.append(f"  n{a} -> n{i}{label};")
    for f, a in sorted(adjoint_pairs(graph)):
        if f in chosen and a in chosen:
            lines.append(f"  n{f} -> n{a} [style=dotted, color=royalblue, constraint=false, "
                         'arrowhead=open, label="adjoint"];')
    lines.append("}")
    return "\n".join(lines)


def _dot_node(graph: Graph, n: Node, is_output: bool) -> str:
    if n.is_var:
        label, shape = n.name, "ellipse"
    elif n.is_const:
        label, shape = _clip(const_text(n.attrs["value"], set(graph.variables))[1][0]), "plain"
    else:
        attrs = ", ".join(f"{k}={_value_text(v)}" for k, v in n.attrs.items() if k != "batch")
        label, shape = n.op + (f"\n{_clip(attrs)}" if attrs else ""), "box"
    label += f"\nv{n.id}: {_type(n.shape, n.dtype)}"
    extra = ', style="filled,dashed", fillcolor="#fde0dc"' if n.role == "adjoint" else ""
    if is_output:
        extra += ", penwidth=2"
    return f'n{n.id} [label="{_escape(label)}", shape={shape}{extra}];'


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _escape(text: str) -> str:
    """Text safe inside a double-quoted DOT string."""
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return "".join(c if c.isprintable() else "?" for c in text)
