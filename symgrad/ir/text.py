"""The IR as text: readable infix for an expression and a jaxpr-style listing of a graph.

Everything here reads the op registry: an op with ``infix=(symbol, precedence)`` prints as
an operator (Python precedences; arity 1 means a prefix operator), every other op as a call
``name(args, keyword=value)`` with attributes that differ from their defaults. The infix text
of a forward graph of public ops parses back (:func:`symgrad.parse`) to the same graph.

All walks are iterative. Infix text of a DAG with sharing can be exponentially long, so its
size is computed first (linear, saturating); past :data:`INFIX_LIMIT` characters the text
becomes a ``let`` listing that names shared and large subexpressions.

Conventions (what does not round-trip through ``parse``): float32 constants print as plain
numbers; constants with more than :data:`ARRAY_LIMIT` elements print as ``const(f64[...])``;
internal ops (``index_add``, ...) print as calls the parser refuses; variables named ``pi``,
``e``, ``inf`` or ``nan`` need ``shapes``/``dtypes`` to be read back as variables.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from ..base.errors import SymgradError
from .op import REGISTRY, RESULT, Op
from .values import freeze

if TYPE_CHECKING:
    from .expr import Expr
    from .graph import Graph, Node

INFIX_LIMIT = 20_000  # characters of fully expanded infix text before the let fallback
LINE_LIMIT = 200  # characters per binding in the let fallback
ARRAY_LIMIT = 100  # elements of a constant printed inline
SHORT_ARRAY = 8  # elements of a constant printed inline by infix(..., short=True)

ATOM = 100  # precedence of names, literals, calls and subscripts
_UNARY = 13  # Python's unary minus: binds looser than ** on its left, tighter on its right
_COMPARE = 6  # Python's comparisons: non-associative (a < b < c is a chain)
_RIGHT_ASSOC = {"**"}
_NAMED_CONSTANTS = {"pi": math.pi, "e": math.e}
_SHORT_DTYPE = {"float64": "f64", "float32": "f32", "int64": "i64", "int32": "i32",
                "bool": "bool"}

# text, or (operand position, minimum precedence)
Piece = Union[str, tuple[int, int]]  # noqa: UP007 (a runtime alias on 3.10)
Form = tuple[int, list[Piece]]


# -- infix ------------------------------------------------------------------------------


def infix(expr: Expr, *, short: bool = False) -> str:
    """Readable infix text with minimal parentheses; parses back to the same graph.

    Parameters
    ----------
    expr : Expr
        The expression to print.
    short : bool
        Write constants of more than :data:`SHORT_ARRAY` elements as ``const(f64[5,5])``
        (a summary, as ``repr`` shows it; it does not parse back).

    Returns
    -------
    str
        Infix text, or a ``let ... in ...`` listing when the fully expanded text would be
        longer than :data:`INFIX_LIMIT` characters (shared subexpressions repeat in infix).

    Examples
    --------
    >>> import symgrad as sg
    >>> a, b, c = sg.var("a"), sg.var("b"), sg.var("c")
    >>> infix(a - (b - c))
    'a - (b - c)'
    >>> x = sg.var("x", shape=(3,))
    >>> infix(-a ** 2 + sg.sum(sg.exp(a * x), keepdims=True))
    '-a ** 2 + sum(exp(a * x), keepdims=True)'
    """
    graph, root = expr.graph, expr.node
    order = graph.ancestors([root])
    reserved = set(graph.variables)
    forms = {i: node_form(graph, graph.nodes[i], reserved) for i in order}
    if short:  # a summary (Expr's repr): big constants by their type only
        for i in order:
            n = graph.nodes[i]
            if n.is_const and n.attrs["value"].size > SHORT_ARRAY:
                forms[i] = (ATOM, [f"const({type_text(n.shape, n.dtype)})"])
    if _expanded_size(graph, forms, order) <= INFIX_LIMIT:
        return _emit(graph, forms, root, {})
    return _let(graph, forms, order, root)


def node_form(graph: Graph, n: Node, reserved: set[str] = frozenset()) -> Form:
    """How node ``n`` prints: its precedence and its pieces (text and operand slots).

    Examples
    --------
    >>> import symgrad as sg
    >>> a, b = sg.var("a"), sg.var("b")
    >>> f = a - b
    >>> node_form(f.graph, f.data)   # left operand at precedence >= 11, right > 11
    (11, [(0, 11), ' - ', (1, 12)])
    """
    if n.is_var:
        return ATOM, [n.name]
    if n.is_const:
        return const_text(n.attrs["value"], reserved)
    if n.op == RESULT:  # result k of a call: eigh(S)[1]; the call's one result: the call
        if len(graph.nodes[n.args[0]].dtype) == 1:
            return ATOM, [(0, ATOM)]
        return ATOM, [(0, ATOM), f"[{n.attrs['index']}]"]
    op = REGISTRY[n.op]
    infix_ = op.signature.infix
    if op.write is not None:
        return _written_form(n, op)
    if infix_ is not None and len(n.args) == 2 and not _reflected(graph, n, op):
        symbol, prec = infix_
        left, right = prec, prec + 1
        if symbol in _RIGHT_ASSOC:
            left, right = prec + 1, _UNARY
        elif prec == _COMPARE:
            left = right = prec + 1
        return prec, [(0, left), f" {symbol} ", (1, right)]
    if infix_ is not None and len(n.args) == 1:
        symbol, prec = infix_
        return prec, [symbol, (0, prec + 1)]  # -(-a), not --a
    return ATOM, _call_pieces(graph, n, op)


def _reflected(graph: Graph, n: Node, op: Op) -> bool:
    """``2 < x`` reads back as ``x > 2`` (Python reflects comparisons): print a call."""
    return op.signature.infix[1] == _COMPARE and graph.nodes[n.args[0]].is_const


def const_text(value: np.ndarray, reserved: Iterable[str] = ()) -> Form:
    """A constant as a literal the parser reads back: ``2.0``, ``-1``, ``pi``, ``[1.0, 2.0]``.

    Returns ``(precedence, [text])``: negative numbers bind like unary minus.

    Examples
    --------
    >>> import numpy as np
    >>> const_text(np.array(-2.5)), const_text(np.array(np.pi)), const_text(np.array([1, 2]))
    ((13, ['-2.5']), (100, ['pi']), (100, ['[1, 2]']))
    """
    if value.ndim == 0:
        v = value.item()
        if isinstance(v, float):
            for name, c in _NAMED_CONSTANTS.items():
                if v == c and name not in reserved:
                    return ATOM, [name]
            if math.isnan(v):
                return ATOM, ["nan"]
            if math.isinf(v):
                return (ATOM, ["inf"]) if v > 0 else (_UNARY, ["-inf"])
        text = repr(v)
        return (_UNARY if text.startswith("-") else ATOM), [text]
    if value.size > ARRAY_LIMIT:
        dims = ",".join(map(str, value.shape))
        return ATOM, [f"const({_SHORT_DTYPE.get(value.dtype.name, value.dtype.name)}[{dims}])"]
    return ATOM, [repr(value.tolist())]


def _call_pieces(graph: Graph, n: Node, op: Op) -> list[Piece]:
    """``name(operands, static, keyword=value)`` following the op's signature."""
    params = op.signature.params
    if not op.attrs and len(params) == len(n.args):  # the common case, fast
        return [f"{op.name}(", *_joined([(j, 0) for j in range(len(n.args))]), ")"]
    parts: list[list[Piece]] = []
    nargs, pos = len(n.args), 0
    shown: set[str] = set()
    for k, p in enumerate(params):
        later = sum(1 for q in params[k + 1:] if q.kind in ("operand", "optional"))
        if p.kind == "static":
            if any(q.kind != "static" for q in params[k + 1:]):
                parts.append([_value_text(n.attrs.get(p.name))])  # must stay positional
                shown.add(p.name)
        elif p.kind in ("operands", "list"):
            count = max(nargs - pos - later, 0)
            slots: list[Piece] = [(pos + j, 0) for j in range(count)]
            if p.kind == "operands":
                parts.extend([s] for s in slots)
            else:
                parts.append(["[", *_joined(slots), "]"])
            pos += count
        elif pos < nargs:
            parts.append([(pos, 0)])
            pos += 1
    parts.extend([(j, 0)] for j in range(pos, nargs))
    parts.extend([f"{k}={text}"] for k, text in keyword_attrs(graph, n, op, shown))
    return [f"{op.name}(", *_joined(parts, flat=True), ")"]


def _joined(items: list, flat: bool = False) -> list[Piece]:
    out: list[Piece] = []
    for k, item in enumerate(items):
        if k:
            out.append(", ")
        out.extend(item if flat else [item])
    return out


def keyword_attrs(graph: Graph, n: Node, op: Op, shown: set[str]) -> list[tuple[str, str]]:
    """Attributes printed as keywords: those whose value is not equivalent to the default."""
    if not op.attrs:
        return []
    shapes = tuple(graph.nodes[a].shape for a in n.args)
    dtypes = tuple(graph.nodes[a].dtype for a in n.args)
    out = []
    for k, default in op.attrs.items():
        if k in shown or k not in n.attrs:
            continue
        value = n.attrs[k]
        if _equivalent(op, shapes, dtypes, n.attrs, k, default):
            continue
        if (isinstance(value, tuple) and len(value) == 1
                and _equivalent(op, shapes, dtypes, n.attrs, k, value[0])):
            value = value[0]
        out.append((k, _value_text(value)))
    return out


def _equivalent(op: Op, shapes, dtypes, attrs: dict, key: str, value: Any) -> bool:
    """Whether setting ``attrs[key] = value`` gives the same node after ``prepare``."""
    if freeze(attrs[key]) == freeze(value):
        return True
    if op.prepare is None:
        return False
    try:
        again = op.prepare(shapes, dtypes, {**attrs, key: value})
    except Exception:  # the candidate is not valid for this node: not equivalent
        return False
    return freeze(again) == freeze(attrs)


def _value_text(v: Any) -> str:
    """An attribute value as source text (einsum specs in double quotes)."""
    if isinstance(v, str) and '"' not in v and "\\" not in v and v.isprintable():
        return f'"{v}"'
    if isinstance(v, np.ndarray):
        return f"<{type_text(v.shape, v.dtype.name)} array>"
    if isinstance(v, slice):
        return _slice_text(v)
    if isinstance(v, tuple) and any(isinstance(e, slice) for e in v):
        return "(" + ", ".join(_slice_text(e) if isinstance(e, slice) else repr(e)
                               for e in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def _slice_text(s: slice) -> str:
    text = ":".join("" if p is None else str(p) for p in (s.start, s.stop))
    return text if s.step is None else f"{text}:{s.step}"


def _written_form(n: Node, op: Op) -> Form:
    """An op with its own notation (``x[1:, y]``): the op writes it around operand marks."""
    marks = [f"\0{j}\0" for j in range(len(n.args))]
    pieces: list[Piece] = []
    for k, part in enumerate(op.write(marks, n.attrs).split("\0")):
        if k % 2:
            pieces.append((int(part), ATOM if int(part) == 0 else 0))
        elif part:
            pieces.append(part)
    return ATOM, pieces


def _expanded_size(graph: Graph, forms: dict[int, Form], order: list[int]) -> int:
    """Length of the fully expanded text (saturating at ``INFIX_LIMIT + 1``)."""
    cap = INFIX_LIMIT + 1
    size: dict[int, int] = {}
    for i in order:
        args = graph.nodes[i].args
        total = 2
        for piece in forms[i][1]:
            total += len(piece) if isinstance(piece, str) else size[args[piece[0]]]
            if total >= cap:
                total = cap
                break
        size[i] = total
    return size[order[-1]] if order else 0


def _emit(graph: Graph, forms: dict[int, Form], root: int, names: dict[int, str]) -> str:
    """Expand ``root`` into text; nodes in ``names`` (other than root) print as names."""
    out: list[str] = []
    stack: list[Any] = [(root, 0)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        i, min_prec = item
        if i in names and i != root:
            out.append(names[i])
            continue
        prec, pieces = forms[i]
        args = graph.nodes[i].args
        paren = prec < min_prec
        if paren:
            stack.append(")")
        for piece in reversed(pieces):
            stack.append(piece if isinstance(piece, str) else (args[piece[0]], piece[1]))
        if paren:
            stack.append("(")
    return "".join(out)


def _let(graph: Graph, forms: dict[int, Form], order: list[int], root: int) -> str:
    """``let %1 = ...; ... in ...``: names shared subexpressions and long ones."""
    uses: Counter[int] = Counter()
    for i in order:
        args = graph.nodes[i].args
        uses.update(args[p[0]] for p in forms[i][1] if not isinstance(p, str))
    names: dict[int, str] = {}
    local: dict[int, int] = {}
    for i in order:
        args = graph.nodes[i].args
        size = sum(len(p) if isinstance(p, str) else local[args[p[0]]] for p in forms[i][1])
        if i != root and args and (uses[i] > 1 or size > LINE_LIMIT):
            names[i] = f"%{len(names) + 1}"
            size = len(names[i])
        local[i] = size + 2
    lines = ["let"]
    lines.extend(f"  {names[i]} = {_emit(graph, forms, i, names)}" for i in order if i in names)
    lines.append(f"in {_emit(graph, forms, root, names)}")
    return "\n".join(lines)


# -- listing ------------------------------------------------------------------------------


def listing(graph_or_exprs: Graph | Expr | Sequence[Expr]) -> str:
    """A jaxpr-style text listing: one line per node, adjoint nodes marked, outputs last.

    Variables appear by name and small constants inline; each line is
    ``v7:f64[4,3] = op operands attr=value``. Lines of the derivative subgraph end with
    ``# adjoint of v3`` (the adjoint of forward node ``v3``) or ``# backprop of v3`` (an
    intermediate built by ``v3``'s backprop rule); lines of forward mode with ``# tangent of
    v3`` or ``# jvp of v3``. Given a Graph, every node is listed and the outputs are the
    nodes nothing uses.

    Examples
    --------
    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(3,))
    >>> print(listing(sg.sum(sg.exp(x) * 2.0)))
    inputs  x:f64[3]
    v1:f64[3] = exp x
    v3:f64[3] = multiply v1 2.0
    v4:f64[] = sum v3
    outputs  v4
    """
    graph, ids, outputs = select(graph_or_exprs)
    nodes = graph.nodes
    reserved = set(graph.variables)
    made_for: dict[int, list[int]] = {}
    for f, a in sorted(adjoint_pairs(graph)):
        made_for.setdefault(a, []).append(f)
    tangent_for: dict[int, list[int]] = {}
    for f, t in sorted(tangent_pairs(graph)):
        if t != f:
            tangent_for.setdefault(t, []).append(f)
    inline = {i: _inline(nodes[i], reserved) for i in ids
              if nodes[i].is_var or (nodes[i].is_const and i not in made_for)}
    inline = {i: t for i, t in inline.items() if t is not None}
    lines = []
    inputs = [f"{nodes[i].name}:{type_text(nodes[i].shape, nodes[i].dtype)}"
              for i in ids if nodes[i].is_var]
    if inputs:
        lines.append("inputs  " + "  ".join(inputs))
    results: dict[int, dict[int, int]] = {}  # a call's projections listed, by index
    for i in ids:
        if nodes[i].op == RESULT:
            results.setdefault(nodes[i].args[0], {})[nodes[i].attrs["index"]] = i

    def ref(f: int) -> str:  # a call by the results its line names
        found = results.get(f) if nodes[f].is_call else None
        return f"({', '.join(f'v{j}' for j in found.values())})" if found else _ref(nodes, f)

    for i in ids:
        if i in inline or nodes[i].op == RESULT:  # a projection: named by its call's line
            continue
        n = nodes[i]
        operands = " ".join(inline.get(a, f"v{a}") for a in n.args)
        op = REGISTRY.get(n.op)
        if n.is_const:
            attrs = _inline(n, reserved) or f"<{n.attrs['value'].size} values>"
        elif op is not None and op.write is not None:  # x[1:, y]: as written, no internals
            operands = op.write([inline.get(a, f"v{a}") for a in n.args], n.attrs)
            attrs = ""
        else:  # attributes that differ from the op's defaults, as the infix text shows them
            attrs = " ".join(f"{k}={text}" for k, text in keyword_attrs(graph, n, op, set())) \
                if op is not None else ""
        if n.is_call:  # one line for the call: v3:f64[3], v4:f64[3,3] = eigh A
            found = results.get(i, {})
            head = ", ".join(f"v{found[k]}:{type_text(*aval)}" if k in found else "_"
                             for k, aval in enumerate(n.dtype))
        else:
            head = f"v{i}:{type_text(n.shape, n.dtype)}"
        line = f"{head} = {n.op}"
        line += "".join(f" {part}" for part in (operands, attrs) if part)
        mine = list(results.get(i, {}).values()) if n.is_call else [i]
        adjoint = [f for j in mine for f in made_for.get(j, ())]
        tangent = [f for j in mine for f in tangent_for.get(j, ())]
        if adjoint:
            line += "  # adjoint of " + ", ".join(ref(f) for f in adjoint)
        elif tangent:
            line += "  # tangent of " + ", ".join(ref(f) for f in tangent)
        elif n.role == "adjoint" and n.origin is not None:
            line += f"  # backprop of {ref(n.origin)}"
        elif n.role == "tangent" and n.origin is not None:
            line += f"  # jvp of {ref(n.origin)}"
        lines.append(line)
    lines.append("outputs  " + "  ".join(inline.get(i, f"v{i}") for i in outputs))
    return "\n".join(lines)


def _inline(n: Node, reserved: set[str]) -> str | None:
    if n.is_var:
        return n.name
    value = n.attrs["value"]
    return const_text(value, reserved)[1][0] if value.size <= 8 else None


def _ref(nodes: list[Node], i: int) -> str:
    return nodes[i].name if nodes[i].is_var else f"v{i}"


def type_text(shape: tuple[int, ...], dtype: str) -> str:
    return f"{_SHORT_DTYPE.get(dtype, dtype)}[{','.join(map(str, shape))}]"


def select(obj: Graph | Expr | Sequence[Expr]) -> tuple[Graph, list[int], list[int]]:
    """(graph, node ids to show in order, output ids) for a Graph or some Exprs."""
    if _is_expr(obj):
        obj = [obj]
    elif not isinstance(obj, (list, tuple)):  # a Graph: every node; outputs = unused nodes
        if type(obj).__name__ != "Graph" or not hasattr(obj, "nodes"):  # ir.graph imports us
            raise SymgradError("expected a Graph, an Expr or a non-empty list of Exprs")
        used = {a for n in obj.nodes for a in n.args}
        outs = [n.id for n in obj.nodes if n.id not in used and not (n.is_var or n.is_const)]
        return obj, list(range(len(obj.nodes))), outs
    exprs = list(obj)
    if not exprs or not all(_is_expr(e) for e in exprs):
        raise SymgradError("expected a Graph, an Expr or a non-empty list of Exprs")
    graph = max((e.graph for e in exprs), key=len)
    outs = [graph.find(e) for e in exprs]
    return graph, graph.ancestors(outs), outs


def _is_expr(obj: Any) -> bool:
    return hasattr(obj, "graph") and hasattr(obj, "node")


def adjoint_pairs(graph: Graph) -> list[tuple[int, int]]:
    """Every ``(forward node, adjoint node)`` pair of every transform of ``graph``, the
    earliest transform first, each pair once."""
    seen: set[tuple[int, int]] = set()
    out = []
    tables = [t.adjoint_of for t in graph.transforms] + [graph.adjoint_of]
    for table in tables:
        for pair in table.items():
            if pair not in seen:
                seen.add(pair)
                out.append(pair)
    return out


def tangent_pairs(graph: Graph) -> list[tuple[int, int]]:
    """Every ``(node, tangent node)`` pair of every forward-mode transform of ``graph``, the
    earliest transform first, each pair once."""
    seen: set[tuple[int, int]] = set()
    out = []
    for t in graph.transforms:
        for pair in getattr(t, "tangent_of", {}).items():
            if pair not in seen:
                seen.add(pair)
                out.append(pair)
    return out


__all__ = ["infix", "listing", "node_form", "const_text", "select", "adjoint_pairs",
           "tangent_pairs"]
