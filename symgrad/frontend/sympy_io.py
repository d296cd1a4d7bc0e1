"""Expressions to and from SymPy, and LaTeX: ``sg.to_sympy``, ``sg.from_sympy``, ``sg.latex``.

The translations read each op's ``sympy`` field in the registry: an op whose field names a
sympy function (``"sin"``, ``"Abs"``, ``"Max"``) translates both ways; an op whose field is a
function (``subtract``, ``sigmoid``, user ops) translates to sympy only; ops without one
(``matmul``, ``sum``, indexing...) do not translate, and ``to_sympy`` says so. Walks are
iterative and visit each node of the DAG once (sympy shares equal subexpressions too).

Array variables become plain symbols: the sympy expression of an elementwise function of
arrays describes each element, and ``from_sympy`` needs their shapes back (``shapes=``).
Constants that are whole numbers become sympy Integers (``2.0 * x`` prints as ``2 x``);
``from_sympy`` turns every number into a float64 constant except whole-number exponents
(``x**2`` stays an integer power, as NumPy computes it).

``latex`` prints the elementwise parts with sympy's printer and everything else in matrix
notation: ``W x`` for ``W @ x``, ``A^{\\top}``, ``\\sum x``, ``x_{y}`` for ``x[y]``,
``\\operatorname{log\\_softmax}(z)`` for other functions. sympy is imported on first use.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import LimitError, SymgradError
from ..ir.body import Body
from ..ir.expr import Expr, call
from ..ir.graph import Graph
from ..ir.limits import exceeded, limits
from ..ir.op import REGISTRY, Op
from ..ir.shapes import is_float
from ..ir.text import _keywords
from ..ir.values import exact, exact_str, type_name

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


def _sympy():
    try:
        import sympy
    except ImportError:  # pragma: no cover - sympy is a dependency
        raise SymgradError("this needs sympy (pip install sympy)") from None
    return sympy


# -- to sympy -------------------------------------------------------------------------------


def to_sympy(expr: Expr) -> Any:
    """The sympy expression of an elementwise symgrad expression.

    Variables become real sympy Symbols of the same name (integer ones for integer
    variables); an array variable stands for its elements.

    >>> import symgrad as sg
    >>> x, y = sg.var("x"), sg.var("y")
    >>> sg.to_sympy(sg.grad(sg.sin(x) * y, x))
    y*cos(x)
    >>> sg.to_sympy(2.0 * sg.exp(x) - x / 3)
    -x/3 + 2*exp(x)
    """
    sp = _sympy()
    if not isinstance(expr, Expr):
        raise SymgradError(f"to_sympy needs a symgrad expression, got {type(expr).__name__}")
    graph = expr.graph
    done: dict[int, Any] = {}
    order = graph.ancestors([expr.node])
    _check_tree(graph, order, expr.node, "to_sympy")
    try:
        for i in order:
            n = graph.nodes[i]
            if n.is_var:
                done[i] = _symbol(sp, n.name, n.dtype)
            elif n.is_const:
                done[i] = _number(sp, n.attrs["value"], i)
            else:
                done[i] = _apply(sp, REGISTRY[n.op], [done[a] for a in n.args], n.attrs)
    except RecursionError:
        raise _too_deep("to_sympy") from None
    return done[expr.node]


def _too_deep(what: str) -> LimitError:
    """sympy walks its trees recursively: a chain nested thousands deep exhausts Python's
    recursion limit inside sympy."""
    return LimitError(f"{what}: the expression is nested too deeply for sympy (Python's "
                      "recursion limit was reached inside it); translate a part of it")


def _check_tree(graph: Graph, order: list[int], root: int, what: str) -> None:
    """A printed formula writes a shared subexpression once per use: the tree a DAG of 37
    nodes unfolds into can have 10^12 nodes. Its size (counted in one pass, capped) must
    fit ``sg.limits.print_tree_nodes``."""
    cap = limits.print_tree_nodes
    size: dict[int, int] = {}
    nodes = graph.nodes
    for i in order:
        size[i] = min(cap + 1, 1 + sum(size[a] for a in nodes[i].args))
    if size[root] > cap:
        raise exceeded("print_tree_nodes", f"{what}: written out as a formula, the "
                       f"expression has more than {cap:,} nodes (its {len(order):,} nodes "
                       "share subexpressions); print a part of it, or use sg.listing(expr)")


def _symbol(sp, name: str, dtype: str):
    if is_float(dtype):
        return sp.Symbol(name, real=True)
    if dtype == "bool":
        return sp.Symbol(name)
    return sp.Symbol(name, integer=True)


def _number(sp, value: np.ndarray, node: int):
    if value.ndim:
        raise SymgradError(f"to_sympy: the constant array of node {node} (shape "
                           f"{value.shape}) has no sympy form; only scalar constants translate")
    v = value.item()
    if isinstance(v, bool):
        return sp.true if v else sp.false
    if isinstance(v, int):
        return sp.Integer(v)
    if math.isnan(v):
        return sp.nan
    if math.isinf(v):
        return sp.oo if v > 0 else -sp.oo
    if v == math.pi:
        return sp.pi
    if v == math.e:
        return sp.E
    return sp.Integer(int(v)) if v.is_integer() and abs(v) < 2**53 else sp.Float(v)


def _apply(sp, op: Op, args: list, attrs: dict):
    if op.sympy is None or (op.attrs and any(attrs.get(k) != d for k, d in op.attrs.items())):
        raise SymgradError(
            f"to_sympy: op '{op.name}' has no sympy form (only elementwise ops translate); "
            "sg.latex(expr) writes such expressions in matrix notation"
        )
    if isinstance(op.sympy, str):
        return getattr(sp, op.sympy)(*args)
    return op.sympy(sp, *args)


# -- from sympy ------------------------------------------------------------------------------


def from_sympy(expr: Any, shapes: Mapping[str, Any] | None = None,
               dtypes: Mapping[str, str] | None = None) -> Expr:
    """A symgrad expression from a sympy expression.

    Symbols become variables (float64 scalars unless ``shapes``/``dtypes`` say otherwise);
    sympy functions map back to the ops whose ``sympy`` field names them; ``a - b``,
    ``a / b``, ``-a`` and ``sqrt(a)`` come back as subtract, divide, negative and sqrt.
    Anything else (``Piecewise``, ``Derivative``, complex numbers...) is a
    :class:`~symgrad.errors.SymgradError` that names it.

    >>> import sympy, symgrad as sg
    >>> x, y = sympy.symbols("x y")
    >>> f = sg.from_sympy(sympy.sin(x) * y - sympy.sqrt(x) / 2, shapes={"x": (3,)})
    >>> f
    <Expr y * sin(x) - 0.5 * sqrt(x) : float64[3]>
    >>> sg.evaluate(f, {"x": [0.0, 1.0, 4.0], "y": 1.0}).round(4)
    array([ 0.    ,  0.3415, -1.7568])
    """
    sp = _sympy()
    if isinstance(expr, (int, float)) and not isinstance(expr, bool):
        expr = sp.Float(expr) if isinstance(expr, float) else sp.Integer(expr)
    if not isinstance(expr, sp.Basic):
        raise SymgradError(f"from_sympy needs a sympy expression, got {type(expr).__name__}")
    try:
        return _FromSympy(sp, shapes, dtypes).tree(expr)
    except RecursionError:
        raise _too_deep("from_sympy") from None


def _short(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:20]}...{text[-10:]} ({len(text)} characters)"


def _srepr(symbol: Any) -> str:
    """``Symbol('a')``, ``Dummy('a')``, with assumptions if any (never a user repr)."""
    kind = type_name(symbol)
    facts = getattr(symbol, "assumptions0", {})
    extra = "".join(f", {k}={v}" for k, v in sorted(facts.items())
                    if k in ("positive", "negative", "real", "integer", "nonnegative"))
    return f"{kind}({str.__str__(symbol.name)!r}{extra})"


class _FromSympy:
    """One translation: a fresh graph, and every sympy subexpression translated once."""

    def __init__(self, sp, shapes, dtypes) -> None:
        self.sp = sp
        for table, what in ((shapes, "shapes"), (dtypes, "dtypes")):
            if table is not None and not isinstance(table, Mapping):
                raise SymgradError(f"from_sympy: {what} must be a dict from symbol names, "
                                   f"got {type_name(table)}")
        self.shapes, self.dtypes = exact(dict(shapes or {})), exact(dict(dtypes or {}))
        self.graph = Graph()
        self.done: dict[Any, Expr] = {}
        self.symbols: dict[str, Any] = {}
        self.names, self.patterns = _back_table(sp)

    def tree(self, root: Any) -> Expr:
        """Translate ``root`` (iteratively, children first)."""
        done = self.done
        stack: list[tuple[Any, bool]] = [(root, False)]
        while stack:
            e, ready = stack.pop()
            if e in done:
                continue
            if e.is_Symbol:
                done[e] = self._symbol(e)
            elif e.is_number or e in (self.sp.oo, -self.sp.oo, self.sp.nan):
                done[e] = Expr(self.graph, self.graph.const(self._float(e)))
            elif not ready:
                self._known(e)
                stack.append((e, True))
                stack.extend((a, False) for a in self._children(e))
            else:
                done[e] = self._build(e)
        return done[root]

    def _known(self, e: Any) -> None:
        """Refuse what has no op before translating its arguments (name the outer kind)."""
        kind = type(e).__name__
        if e.is_Add or e.is_Mul or e.is_Pow or kind in self.names:
            return
        if any(e.match(p) for p, _, _ in self.patterns):
            return
        known = ", ".join(sorted(self.names))
        raise SymgradError(f"from_sympy: sympy's {kind} has no symgrad op (translatable: "
                           f"numbers, symbols, +, -, *, /, **, {known})")

    def _children(self, e: Any) -> list:
        if e.is_Pow and e.exp.is_Integer:
            return [e.base]  # a whole exponent stays a Python int
        if e.is_Add:  # -t is built as a subtraction of t
            return [t if _negated(t) is None else _negated(t) for t in e.args]
        if e.is_Mul:  # t**-k is built as a division by t**k
            coeff, rest = e.as_coeff_Mul()
            if coeff == -1:
                return [rest]
            return [f if _inverse(f) is None else _inverse(f) for f in e.args]
        return list(e.args)

    def _symbol(self, e: Any) -> Expr:
        """A variable named as the symbol; two different symbols of one name (``a`` and
        ``Dummy("a")``) are refused: as variables they would be merged into one."""
        name = exact_str(e.name, "a sympy symbol's name")
        seen = self.symbols.setdefault(name, e)
        if seen != e:
            raise SymgradError(
                f"from_sympy: two different sympy symbols are named {name!r} ({_srepr(seen)}"
                f" and {_srepr(e)}); symgrad names variables by name: rename one "
                "(expr.subs(old, sympy.Symbol(new_name)))")
        return Expr(self.graph, self.graph.var(name, self.shapes.get(name, ()),
                                               self.dtypes.get(name, "float64")))

    def _float(self, e: Any) -> float:
        if e is self.sp.zoo or e is self.sp.nan or (e.is_number and e.is_real is False):
            if e is self.sp.nan:
                return math.nan
            raise SymgradError(f"from_sympy: {e} is not a real number")
        try:
            value = float(e)
        except OverflowError:
            value = math.inf
        if math.isinf(value) and e.is_finite is not False:
            raise SymgradError(f"from_sympy: the number {_short(str(e))} does not fit a "
                               "float64 (it would become inf)")
        return value

    def _build(self, e: Any) -> Expr:
        done = self.done
        for pattern, w, op in self.patterns:
            m = e.match(pattern)
            if m and w in m and m[w] in done:
                return call(op, done[m[w]])
        if e.is_Add:
            terms = [(False, done[t]) if _negated(t) is None else (True, done[_negated(t)])
                     for t in e.args]
            terms.sort(key=lambda t: t[0])  # a + b - c
            out = terms[0][1] if not terms[0][0] else -terms[0][1]
            for neg, t in terms[1:]:
                out = out - t if neg else out + t
            return out
        if e.is_Mul:
            coeff, rest = e.as_coeff_Mul()
            if coeff == -1:
                return -done[rest]
            num = [done[f] for f in e.args if _inverse(f) is None]
            den = [done[_inverse(f)] for f in e.args if _inverse(f) is not None]
            out = num[0] if num else Expr(self.graph, self.graph.const(1.0))
            for f in num[1:]:
                out = out * f
            for f in den:
                out = out / f
            return out
        if e.is_Pow:
            return done[e.base] ** (int(e.exp) if e.exp.is_Integer else done[e.exp])
        return self._function(e)

    def _function(self, e: Any) -> Expr:
        kind = type(e).__name__
        op = self.names[kind]
        args = [self.done[a] for a in e.args]
        arity = REGISTRY[op].arity
        if arity == 2 and len(args) > 2:  # Max(a, b, c)
            out = args[0]
            for a in args[1:]:
                out = call(op, out, a)
            return out
        if arity is not None and len(args) != arity:
            raise SymgradError(f"from_sympy: {kind} has {len(args)} arguments; "
                               f"'{op}' takes {arity}")
        return call(op, *args)


def _back_table(sp) -> tuple[dict[str, str], list[tuple[Any, Any, str]]]:
    """sympy class name -> op name, and ``(pattern, wild, op)`` for ops whose sympy form is
    not a class of its own (``sqrt(t)`` is ``Pow(t, 1/2)``)."""
    names: dict[str, str] = {}
    patterns = []
    t, w = sp.Dummy("t"), sp.Wild("w")
    for op in list(REGISTRY.values()):  # a snapshot: defop may register meanwhile
        if not (op.elementwise and isinstance(op.sympy, str)):
            continue
        names.setdefault(op.sympy, op.name)
        if op.arity == 1:
            built = getattr(sp, op.sympy)(t)
            if type(built).__name__ != op.sympy:
                patterns.append((built.xreplace({t: w}), w, op.name))
    return names, patterns


def _negated(term: Any) -> Any | None:
    """``t`` if ``term`` is ``-t`` (a product with a negative number in front), else None."""
    coeff, rest = term.as_coeff_Mul()
    if coeff.is_Number and coeff.is_negative and not term.is_Number:
        return rest if coeff == -1 else -coeff * rest
    return None


def _inverse(factor: Any) -> Any | None:
    """``t**k`` if ``factor`` is ``t**-k`` for a whole ``k``, else None."""
    if factor.is_Pow and factor.exp.is_Integer and factor.exp < 0:
        return factor.base if factor.exp == -1 else factor.base ** -factor.exp
    return None


# -- LaTeX --------------------------------------------------------------------------------


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
    sp = _sympy()
    if not isinstance(expr, Expr):
        raise SymgradError(f"latex needs a symgrad expression, got {type(expr).__name__}")
    graph = expr.graph
    order = graph.ancestors([expr.node])
    if len(order) > LATEX_LIMIT:
        raise LimitError(f"latex: the expression has {len(order):,} nodes (more than "
                         f"{LATEX_LIMIT:,}); print a part of it, or use sg.listing(expr)")
    _check_tree(graph, order, expr.node, "latex")
    try:
        return _latex(sp, graph, order, expr.node)
    except RecursionError:
        raise _too_deep("latex") from None


def _latex(sp, graph: Graph, order: list[int], root: int) -> str:
    holes: dict[str, tuple[str, str]] = {}  # placeholder name -> (LaTeX, precedence rank)
    sym: dict[int, Any] = {}
    for i in order:
        n = graph.nodes[i]
        op = REGISTRY.get(n.op)
        if n.is_var:
            sym[i] = _symbol(sp, n.name, n.dtype)
        elif n.is_const and n.attrs["value"].ndim == 0:
            sym[i] = _number(sp, n.attrs["value"], i)
        elif not n.is_const and op.sympy is not None and not op.attrs:
            sym[i] = _apply(sp, op, [sym[a] for a in n.args], n.attrs)
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
    if isinstance(n.attrs.get("body"), Body):
        return _recurrence(sp, graph, n, sym, holes), "call"
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
    if op.write is not None:
        return _subscript(sp, graph, n, op, sym, holes), "atom"
    return _call(sp, graph, n, op, sym, holes), "call"


def _recurrence(sp, graph: Graph, n, sym: dict, holes: dict) -> str:
    r"""A loop as the recurrence it runs: ``c_{0} \leftarrow f(c_{0}, x_{1})`` repeated
    ``L`` times from the initial values, ``x_{1}`` the ``t``-th row of its array; then
    which result (a final carry ``c_{j}``, or per-step results stacked)."""
    body, attrs = n.attrs["body"], n.attrs
    nc, nx, out = attrs["carries"], attrs["xs"], attrs["out"]
    names = [sp.latex(_symbol(sp, body.graph.nodes[i].name, "float64")) for i in body.inputs]
    updates = [rf"{names[j]} \leftarrow {latex(Expr(body.graph, body.outputs[j]))}"
               for j in range(nc)]
    ys = [latex(Expr(body.graph, o)) for o in body.outputs[nc:]]
    given = [f"{names[k]} = {_operand(sp, graph, a, sym, holes, 'rel')}"
             + (r"_{t}" if nc <= k < nc + nx else "") for k, a in enumerate(n.args)]
    order = r"t = {L}, \dots, 1" if attrs["reverse"] else r"t = 1, \dots, {L}"
    order = order.replace("{L}", str(attrs["length"]))
    if out < nc:
        result = names[out]
    elif out < nc + len(ys):
        result = r"\left[" + ys[out - nc] + r"\right]_{t}"
    else:
        result = r"\left[" + names[out - nc - len(ys)] + r"\right]_{t}"
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
    keywords = [f"\\text{{{k}}}={v}" for k, v in _keywords(graph, n, op, set())] \
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


__all__ = ["to_sympy", "from_sympy", "latex", "LATEX"]
