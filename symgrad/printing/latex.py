r"""LaTeX of an expression (``sg.latex``): sympy's printer for the elementwise parts (through
the one sympy translator, :mod:`symgrad.frontend.sympy_io`) and matrix notation for the
rest: ``W x`` for ``W @ x``, ``A^{\top}``, ``\sum x``, ``x_{y}`` for ``x[y]``,
``\operatorname{log\_softmax}(z)`` for other functions. sympy is imported on first use.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..base.errors import LimitError, SymgradError
from ..frontend.sympy_forms import (
    check_tree,
    number,
    symbol,
    sympy_form,
    sympy_module,
    too_deep,
)
from ..ir.body import Body
from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.op import REGISTRY, RESULT, Op
from ..ir.text import keyword_attrs
from ..ops.loops import ScanParts

LATEX_LIMIT = 5_000  # nodes: larger expressions are not printed as LaTeX

# Matrix notation of ops without a sympy form: ``{0}``, ``{1}`` are operands, ``{attrs}``
# the non-default attributes. The LaTeX target's table (like each backend's table); an op
# missing here is written as a function, ``\operatorname{name}(...)``.
LATEX = {
    "transpose": (r"{0}^{{\top}}", "atom"),
    "sum": (r"\textstyle\sum {0}", "call"),
    "outer": (r"{0} {1}^{{\top}}", "mul"),
    "dot": (r"{0}^{{\top}} {1}", "mul"),
}
_INFIX = {"@": ("", "mul"), "<": ("<", "rel"), "<=": (r"\le", "rel"), ">": (">", "rel"),
          ">=": (r"\ge", "rel"), "==": ("=", "rel"), "!=": (r"\ne", "rel")}
_RANK = {"rel": 0, "mul": 1, "call": 2, "atom": 3}



def latex(expr: Expr) -> str:
    r"""LaTeX for an expression: sympy's printer for the elementwise parts, matrix notation
    for the rest (``W x``, ``A^{\top}``, ``\sum``, ``x_{y}``).

    Elementwise products of arrays are written ``\odot``.

    >>> import symgrad as sg
    >>> a = sg.var("a")
    >>> sg.latex(-1.0 * sg.sin(a) - 2.0 * sg.sin(a) + a ** 2)
    'a^{2} - 3 \\sin{\\left(a \\right)}'
    >>> f = sg.parse("-log_softmax(V @ tanh(W @ x + b) + g)[y]", dtypes={"y": "int64"},
    ...              shapes={"W": (4, 3), "x": (3,), "b": (4,), "V": (2, 4), "g": (2,)})
    >>> sg.latex(f)
    '- \\operatorname{log\\_softmax}\\left(V \\tanh{\\left(W x + b \\right)} + g\\right)_{y}'
    """
    sp = sympy_module()
    if not isinstance(expr, Expr):
        raise SymgradError(f"latex needs a symgrad expression, got {type(expr).__name__}")
    graph = expr.graph
    order = graph.ancestors([expr.node])
    if len(order) > LATEX_LIMIT:
        raise LimitError(f"latex: the expression has {len(order):,} nodes (more than "
                         f"{LATEX_LIMIT:,}); print a part of it, or use sg.listing(expr)")
    check_tree(graph, order, expr.node, "latex")
    try:
        return _latex(sp, graph, order, expr.node)
    except RecursionError:
        raise too_deep("latex") from None


def _latex(sp, graph: Graph, order: list[int], root: int) -> str:
    holes: dict[str, tuple[str, str]] = {}  # placeholder name -> (LaTeX, precedence rank)
    sym: dict[int, Any] = {}
    for i in order:
        n = graph.nodes[i]
        op = REGISTRY.get(n.op)
        if n.is_var:
            sym[i] = symbol(sp, n.name, n.dtype)
        elif n.is_const and n.attrs["value"].ndim == 0:
            sym[i] = number(sp, n.attrs["value"], i)
        elif not n.is_const and op.sympy is not None and not op.attrs:
            sym[i] = sympy_form(sp, op, [sym[a] for a in n.args], n.attrs, "latex")
        else:
            name = "SGPH" + _letters(len(holes))
            holes[name] = _matrix_form(sp, graph, i, sym, holes)
            sym[i] = sp.Symbol(name)
    return _render(sp, graph.nodes[root].shape, sym[root], holes, top=True)


def _letters(k: int) -> str:
    out = ""
    while True:
        out = chr(ord("a") + k % 26) + out
        k //= 26
        if not k:
            return out


def _render(sp, shape: tuple, e: Any, holes: dict, top: bool = False) -> str:
    """sympy's LaTeX of ``e`` with the placeholders filled in."""
    if top and isinstance(e, sp.Symbol) and e.name in holes:
        return holes[e.name][0]
    text = sp.latex(e, mul_symbol=r" \odot " if shape else None)

    def fill(m: re.Match) -> str:
        body, rank = holes[m.group(1)]
        after = text[m.end():m.end() + 1]
        wrap = rank == "rel" or (rank == "mul" and after == "^")
        return rf"\left({body}\right)" if wrap else body

    return re.sub(r"(SGPH[a-z]+)", fill, text)


def _operand(sp, graph: Graph, a: int, sym: dict, holes: dict, need: str) -> str:
    """LaTeX of operand ``a``, in parentheses when it binds looser than ``need``."""
    e = sym[a]
    if isinstance(e, sp.Symbol) and e.name in holes:
        body, rank = holes[e.name]
    else:
        body = _render(sp, graph.nodes[a].shape, e, holes)
        from sympy.printing.precedence import PRECEDENCE, precedence

        p = precedence(e)
        rank = "atom" if p >= PRECEDENCE["Func"] else "mul" if p >= PRECEDENCE["Mul"] else "rel"
        if e.is_Number and e < 0:
            rank = "rel"
    if _RANK[rank] < _RANK[need]:
        return rf"\left({body}\right)"
    return body


def _matrix_form(sp, graph: Graph, i: int, sym: dict, holes: dict) -> tuple[str, str]:
    n = graph.nodes[i]
    if n.is_const:
        value = n.attrs["value"]
        return (r"\mathrm{const}_{" + "\\times ".join(map(str, value.shape)) + "}", "atom") \
            if value.size > 9 else (_array_latex(value), "atom")
    op = REGISTRY[n.op]
    if n.op == RESULT:  # a loop's result: its recurrence; another call's: subscripted
        call = graph.nodes[n.args[0]]
        if isinstance(call.attrs.get("body"), Body):
            return _recurrence(sp, graph, call, n.attrs["index"], sym, holes), "call"
        base = _operand(sp, graph, call.id, sym, holes, "call")
        if len(call.dtype) == 1:
            return base, "call"
        return f"{{{base}_{{{n.attrs['index']}}}}}", "atom"
    if isinstance(n.attrs.get("body"), Body):
        return "", "atom"  # written by its results (the recurrence of each)
    form = LATEX.get(n.op)
    if form is not None:
        template, rank = form
        need = "atom" if "^" in template else "mul" if rank == "mul" else "rel"
        args = [_operand(sp, graph, a, sym, holes, need) for a in n.args]
        return template.format(*args), rank
    infix = op.signature.infix
    if infix is not None and len(n.args) == 2 and infix[0] in _INFIX:
        symbol, rank = _INFIX[infix[0]]
        left, right = (_operand(sp, graph, a, sym, holes, "mul" if rank == "mul" else "rel")
                       for a in n.args)
        return (f"{left} {right}" if not symbol else f"{left} {symbol} {right}"), rank
    if (op.write is not None and not n.is_call  # a call: its results are subscripted
            and op.write(["\0"] * len(n.args), n.attrs).startswith("\0")):
        return _subscript(sp, graph, n, op, sym, holes), "atom"  # x[...]: an index
    return _call(sp, graph, n, op, sym, holes), "call"


def _recurrence(sp, graph: Graph, n, out: int, sym: dict, holes: dict) -> str:
    r"""Result ``out`` of loop ``n`` as the recurrence the loop runs: ``c_{0} \leftarrow
    f(c_{0}, x_{1})`` repeated ``L`` times from the initial values, ``x_{1}`` the ``t``-th
    row of its array; then which result (a final carry ``c_{j}``, or per-step results or
    values stacked)."""
    body, attrs = n.attrs["body"], n.attrs
    nc, nx = attrs["carries"], attrs["xs"]
    names = [sp.latex(symbol(sp, body.graph.nodes[i].name, "float64")) for i in body.inputs]
    updates = [rf"{names[j]} \leftarrow {latex(Expr(body.graph, body.outputs[j]))}"
               for j in range(nc)]
    ys = [latex(Expr(body.graph, o)) for o in body.outputs[nc:]]
    given = [f"{names[k]} = {_operand(sp, graph, a, sym, holes, 'rel')}"
             + (r"_{t}" if nc <= k < nc + nx else "") for k, a in enumerate(n.args)]
    order = r"t = {L}, \dots, 1" if attrs["reverse"] else r"t = 1, \dots, {L}"
    order = order.replace("{L}", str(attrs["length"]))
    kind, j = ScanParts.of(attrs).kind(out)
    if kind == "carry":
        result = names[j]
    elif kind == "y":
        result = r"\left[" + ys[j] + r"\right]_{t}"
    elif kind == "stored":
        result = r"\left[" + names[j] + r"\right]_{t}"
    else:  # a residual: a value of the step, stacked
        result = r"\left[" + latex(Expr(body.graph, j)) + r"\right]_{t}"
    return (result + r"\ \text{after}\ " + r",\ ".join(updates) + r"\ \text{for}\ "
            + order + r"\ \text{from}\ " + r",\ ".join(given))


def _subscript(sp, graph: Graph, n, op: Op, sym: dict, holes: dict) -> str:
    marks = [f"\0{j}\0" for j in range(len(n.args))]
    written = op.write(marks, n.attrs)
    base = _operand(sp, graph, n.args[0], sym, holes, "call")
    inner = written.split(marks[0], 1)[1].strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1]
    parts = re.split("\0(\\d+)\0", inner)
    text = "".join(p if k % 2 == 0 else _operand(sp, graph, n.args[int(p)], sym, holes, "rel")
                   for k, p in enumerate(parts))
    return f"{base}_{{{text}}}"


def _call(sp, graph: Graph, n, op: Op, sym: dict, holes: dict) -> str:
    args = [_operand(sp, graph, a, sym, holes, "rel") for a in n.args]
    keywords = [f"\\text{{{k}}}={v}" for k, v in keyword_attrs(graph, n, op, set())] \
        if op.public else []
    name = op.name.replace("_", r"\_")
    return rf"\operatorname{{{name}}}\left(" + ", ".join(args + keywords) + r"\right)"


def _array_latex(value: np.ndarray) -> str:
    rows = value.reshape(-1, value.shape[-1]) if value.ndim > 1 else value.reshape(1, -1)
    body = r" \\ ".join(" & ".join(_num(v) for v in row) for row in rows)
    return r"\begin{bmatrix}" + body + r"\end{bmatrix}"


def _num(v: Any) -> str:
    v = v.item() if hasattr(v, "item") else v
    return str(int(v)) if isinstance(v, float) and v.is_integer() else repr(v)


__all__ = ["LATEX", "latex"]
