"""The backprop table: forward values and adjoints, in the style of Collins' course notes.

``explain(f, wrt, at)`` numbers the nodes of ``f``'s graph ``u1 ... un`` (input variables
first, as the notes do), lists each node's definition and value (the forward algorithm),
then runs the reverse-mode transform and lists, in reverse topological order, each
adjoint ``P_i = d u_n / d u_i`` as the sum over the consumers ``j`` of ``u_i`` of
``P_j J(i->j)``, with the local derivative values where the consumer is a scalar.

The transform runs on a private copy of the graph, so explaining does not add nodes to
the caller's graph.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..backends.interpreter import inputs_by_name, run
from ..base.describe import type_name
from ..base.errors import SymgradError
from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.nodeview import NodeView
from ..ir.op import REGISTRY, RESULT
from ..ir.shapes import fmt, is_float
from ..ir.text import ATOM, const_text, node_form
from ..ir.values import exact
from ..transforms.derivatives import Wrt, resolve_wrt
from ..transforms.reverse import adjoint_rewriting, backprop, sum_to_shape

_FORWARD_COLUMNS = ("node", "definition", "op", "shape", "value")
_ADJOINT_COLUMNS = ("adjoint", "sum over consumers", "local terms", "value")


class Table:
    """A backprop table: ``rows`` (list of dicts), aligned text by ``str()``, and HTML.

    Forward rows have ``section="forward"``, ``label`` (``u3``), ``id`` (node id),
    ``definition``, ``op``, ``shape`` and ``value``; adjoint rows have
    ``section="adjoint"``, ``label`` (``P3``), ``of`` (``u3``), ``id`` (the adjoint node),
    ``definition``, ``terms`` (one dict per consumer edge: ``consumer``, ``local``,
    ``contribution``), ``local terms`` and ``value``. Values are ``None`` without ``at``.
    """

    def __init__(self, rows: list[dict], title: str, at_text: str) -> None:
        self.rows = rows
        self.title = title
        self.at_text = at_text

    def section(self, name: str) -> list[dict]:
        """The rows of one section, ``"forward"`` or ``"adjoint"``."""
        return [r for r in self.rows if r["section"] == name]

    def _cells(self) -> list[tuple[str, tuple[str, ...], list[list[str]]]]:
        fwd = [[r["label"], r["definition"], r["op"], fmt(r["shape"]), value_text(r["value"])]
               for r in self.section("forward")]
        adj = [[r["label"], r["definition"], r["local terms"], value_text(r["value"])]
               for r in self.section("adjoint")]
        at = f" at {self.at_text}" if self.at_text else ""
        return [(f"Forward pass{at}", _FORWARD_COLUMNS, fwd),
                (f"Backward pass: {self.title}, in reverse topological order",
                 _ADJOINT_COLUMNS, adj)]

    def __str__(self) -> str:
        out = []
        for heading, columns, body in self._cells():
            out.append(heading)
            widths = [max(len(c), *(len(row[k]) for row in body)) if body else len(c)
                      for k, c in enumerate(columns)]
            for row in [list(columns), *body]:
                out.append("  " + "  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
            out.append("")
        return "\n".join(out).rstrip()

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        parts = []
        for heading, columns, body in self._cells():
            head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
            rows = "".join("<tr>" + "".join(f"<td><code>{html.escape(v)}</code></td>"
                                            for v in row) + "</tr>" for row in body)
            parts.append(f"<p><b>{html.escape(heading)}</b></p>"
                         f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        return "\n".join(parts)


def explain(
    f: Expr | str,
    wrt: Wrt | Sequence[Wrt] | None = None,
    at: Mapping[Any, Any] | None = None,
) -> Table:
    """The forward and backward (adjoint) table of ``f``, with values at ``at`` if given.

    ``wrt`` defaults to every float variable of ``f``. ``f`` may be expression text.

    >>> import symgrad as sg
    >>> u1, u2 = sg.var("u1"), sg.var("u2")
    >>> u3 = u1 + u2
    >>> print(sg.explain(u2 * u3, at={"u1": 2.0, "u2": 3.0}))
    Forward pass at u1=2, u2=3
      node  definition  op        shape  value
      u1    u1          var       ()     2
      u2    u2          var       ()     3
      u3    u1 + u2     add       ()     5
      u4    u2 * u3     multiply  ()     15
    <BLANKLINE>
    Backward pass: P_i = d u4 / d u_i, in reverse topological order
      adjoint  sum over consumers       local terms  value
      P4       1 (seed)                              1
      P3       P4 J(3->4)               1*3          3
      P2       P3 J(2->3) + P4 J(2->4)  3*1 + 1*5    8
      P1       P3 J(1->3)               3*1          3
    """
    if isinstance(f, str):
        from ..frontend.parse import parse

        f = parse(f)
    if not isinstance(f, Expr):
        raise SymgradError(f"explain needs a symgrad expression, got {type_name(f)}")
    if at is not None:  # exact values: a user's float subclass never runs its methods
        at = {k: v if isinstance(v, np.ndarray) else exact(v)
              for k, v in inputs_by_name(at).items()}
    graph = Graph()
    out = Expr(graph, graph.import_node(f.graph, f.node))
    forward = graph.ancestors([out.node])
    nodes = graph.nodes
    if nodes[out.node].is_const:
        raise SymgradError("explain needs an expression of variables; this one is a constant "
                           f"({value_text(nodes[out.node].attrs['value'])}): it has no forward "
                           "pass to number and no derivative to explain")
    if wrt is None:
        wrt = [nodes[i].name for i in forward if nodes[i].is_var and is_float(nodes[i].dtype)]
    many = isinstance(wrt, (list, tuple))
    targets = [resolve_wrt(out, w) for w in (wrt if many else [wrt])]
    labels = numbering(graph, forward)
    seed = np.eye(max(out.size, 1)).reshape(out.shape * 2) if out.shape else 1.0
    result = backprop(out, targets, Expr(graph, graph.const(seed)), idioms=False)
    adjoint = result.adjoint_of
    with adjoint_rewriting(graph):  # the rules again, as the transform built them
        terms = _terms(graph, forward, adjoint, result.batch)
    values = _values(graph, forward, adjoint, terms, at)
    order = sorted(labels, key=lambda i: int(labels[i][1:]))  # u1 ... un: topological
    rows = [_forward_row(graph, i, labels, values) for i in order]
    rows += [_adjoint_row(i, adjoint, labels, terms.get(i, []), values, out.node, out.shape)
             for i in reversed(order) if i in adjoint]
    n = labels[out.node]
    title = f"P_i = d {n} / d u_i" + ("" if not out.shape else f" (shape {fmt(out.shape)} + u_i)")
    at_text = ", ".join(at_item(k, v) for k, v in inputs_by_name(at or {}).items()
                        if k in graph.variables)
    return Table(rows, title, at_text)


def at_item(name: str, value: Any) -> str:
    """An input value in a title: ``y=1``, ``x=[1, 2, 3]`` (four numbers at most),
    ``b: array of 10``, ``W: 4×3 array``.

    >>> at_item("W", np.ones((4, 3))), at_item("x", [1, 2]), at_item("y", 1.5)
    ('W: 4×3 array', 'x=[1, 2]', 'y=1.5')
    >>> at_item("b", np.zeros(10))
    'b: array of 10'
    """
    v = np.asarray(value)
    if v.ndim == 0 or (v.ndim == 1 and v.size <= 4):
        return f"{name}={value_text(v)}"
    if v.ndim == 1:
        return f"{name}: array of {v.size}"
    return f"{name}: {'×'.join(map(str, v.shape))} array"


def numbering(graph: Graph, ids: Sequence[int]) -> dict[int, str]:
    """Collins' numbering ``u1 ... un`` of nodes ``ids`` (ascending): input variables first,
    in id order, then every other node but constants (written inline) and calls with
    several results (each result is numbered: ``eigh(u1)[1]``).

    The drawings (``sg.draw``, ``sg.to_dot``, ``sg.to_html``) number nodes the same way.

    >>> import symgrad as sg
    >>> x, y = sg.var("x"), sg.var("y")
    >>> f = sg.sin(x) * y + 2.0
    >>> sorted(numbering(f.graph, f.graph.ancestors([f.node])).values())
    ['u1', 'u2', 'u3', 'u4', 'u5']
    """
    nodes = graph.nodes
    leaves = [i for i in ids if nodes[i].is_var]
    rest = [i for i in ids if not (nodes[i].is_var or nodes[i].is_const or nodes[i].is_call)]
    return {i: f"u{k}" for k, i in enumerate(leaves + rest, start=1)}


def operand_text(graph: Graph, i: int, labels: dict[int, str]) -> tuple[int, str]:
    """``(precedence, text)`` of operand ``i``: its label, or a constant written inline."""
    if i in labels:
        return ATOM, labels[i]
    node = graph.nodes[i]
    if node.is_const:
        prec, pieces = const_text(node.attrs["value"], set(graph.variables))
        return prec, pieces[0]
    if node.is_call:  # written into its results' definitions
        return ATOM, definition(graph, i, labels)
    return ATOM, f"v{i}"


def definition(graph: Graph, i: int, labels: dict[int, str]) -> str:
    """Node ``i`` written with its operands' labels: ``u1 + u2``, ``sum(u3, axis=0)``,
    ``u7[y]`` (attributes only where they differ from the op's defaults).

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(3,))
    >>> f = sg.sum(sg.exp(x) * 2.0)
    >>> ids = f.graph.ancestors([f.node])
    >>> labels = numbering(f.graph, ids)
    >>> [definition(f.graph, i, labels) for i in ids if i in labels]
    ['x', 'exp(u1)', 'u2 * 2.0', 'sum(u3)']
    """
    node = graph.nodes[i]
    if node.is_var:
        return node.name
    if node.is_const:
        return operand_text(graph, i, {})[1]
    _, pieces = node_form(graph, node, set(graph.variables))
    if not REGISTRY[node.op].public:  # an internal op: its attributes are plumbing
        pieces = _without_keywords(pieces)
    out = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(piece)
            continue
        prec, text = operand_text(graph, node.args[piece[0]], labels)
        out.append(f"({text})" if prec < piece[1] else text)
    return "".join(out)


def _without_keywords(pieces: list) -> list:
    out: list = []
    for piece in pieces:
        if isinstance(piece, str) and re.match(r"\w+=", piece):
            if out and out[-1] == ", ":
                out.pop()
            continue
        out.append(piece)
    return out


def _terms(graph: Graph, forward: list[int], adjoint: dict[int, int], batch: int) -> dict:
    """For each forward node with an adjoint: one entry per (consumer, operand position),
    with the contribution Expr (the same hash-consed node the transform built) and, for a
    scalar consumer, the local derivative ``J(i->j)`` (the rule applied to a seed of 1)."""
    nodes = graph.nodes
    out: dict[int, list[dict]] = {}
    one = Expr(graph, graph.const(1.0))
    results: dict[int, dict[int, int]] = {}  # a call -> its results with adjoints, by index
    for j in forward:
        if nodes[j].op == RESULT and j in adjoint:
            results.setdefault(nodes[j].args[0], {})[nodes[j].attrs["index"]] = j
    for j in forward:
        if (j not in adjoint and j not in results) or not nodes[j].args:
            continue
        rule = REGISTRY[nodes[j].op].backprop
        if rule is None:
            continue
        # the operands with an adjoint only, as reverse mode asks (a shape parameter of
        # gammainc has none, and its rule refuses to build one)
        view = NodeView(graph, nodes[j], tuple([a in adjoint for a in nodes[j].args]))
        if nodes[j].is_call:  # the rule once, for the adjoints of all its results
            got = results[j]
            contribs = rule(view, tuple(None if k not in got else Expr(graph, adjoint[got[k]])
                                        for k in range(len(nodes[j].dtype))))
            local = [None] * len(nodes[j].args)
        else:
            contribs = rule(view, Expr(graph, adjoint[j]))
            local = rule(view, one) if nodes[j].shape == () else [None] * len(nodes[j].args)
        for a, c, jac in zip(nodes[j].args, contribs, local):
            if c is None or a not in adjoint:
                continue
            shape = nodes[a].shape
            out.setdefault(a, []).append({
                "consumer": j,
                "via": sorted(results[j].values()) if nodes[j].is_call else [j],
                "contribution": sum_to_shape(c, shape, batch).node,
                "local": None if jac is None else sum_to_shape(jac, shape, 0).node,
            })
    return out


def _values(graph, forward, adjoint, terms, at) -> dict[int, Any]:
    if at is None:
        return {}
    wanted = set(forward) | set(adjoint.values())
    for ts in terms.values():
        wanted.update(t["contribution"] for t in ts)
        wanted.update(t["local"] for t in ts if t["local"] is not None)
    inputs = inputs_by_name(at)
    return run(graph, sorted(wanted), inputs)


def _forward_row(graph, i, labels, values) -> dict:
    node = graph.nodes[i]
    return {"section": "forward", "label": labels[i], "id": i,
            "definition": definition(graph, i, labels), "op": node.op,
            "shape": node.shape, "value": _value(values, i)}


def _adjoint_row(i, adjoint, labels, terms, values, output, value_shape) -> dict:
    parts, nums = [], []
    for t in terms:
        j = t["consumer"]
        parts.append(" + ".join(f"P{labels[k][1:]} J({labels[i][1:]}->{labels[k][1:]})"
                                for k in t["via"]))
        if t["local"] is not None and values:
            nums.append(f"{value_text(values[adjoint[j]])}*{value_text(values[t['local']])}")
    if i == output:
        definition = "1 (seed)" if value_shape == () else "I (seed)"
    else:
        definition = " + ".join(parts)
    local = " + ".join(nums) if nums and len(nums) == len(parts) else ""
    rows_terms = [{"consumer": ", ".join(labels[k] for k in t["via"]),
                   "local": _value(values, t["local"]),
                   "contribution": _value(values, t["contribution"])} for t in terms]
    return {"section": "adjoint", "label": "P" + labels[i][1:], "of": labels[i], "id": adjoint[i],
            "definition": definition, "terms": rows_terms, "local terms": local,
            "value": _value(values, adjoint[i])}


def _value(values: dict, i: int | None) -> Any:
    if i is None or i not in values:
        return None
    v = np.asarray(values[i])
    return v.item() if v.ndim == 0 else v


def value_text(value: Any) -> str:
    """Short text for a value: ``15``, ``0.333333``, ``[1, 2, 3]``; empty for None."""
    if value is None:
        return ""
    v = np.asarray(value)
    if v.ndim == 0:
        x = v.item()
        return f"{x:.6g}" if isinstance(x, float) else str(x)
    return np.array2string(v, precision=4, separator=", ", threshold=8,
                           max_line_width=10**6).replace("\n", "")
