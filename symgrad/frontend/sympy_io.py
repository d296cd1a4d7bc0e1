"""The one translator between symgrad expressions and SymPy, both ways: ``sg.to_sympy``,
``sg.from_sympy``, and the pieces the sympy bridge of ``simplify(sympy=True)``
(:mod:`symgrad.passes.sympy_bridge`) and ``sg.latex`` (:mod:`symgrad.printing.latex`) build on.

Both directions read one table, built from each op's ``sympy`` field in the registry
(:func:`back_table`): an elementwise op whose field names a sympy function (``"sin"``,
``"Abs"``, ``"Max"``) translates both ways, also where sympy writes the function as another
class (``sqrt(t)`` is ``Pow(t, 1/2)``, ``digamma(t)`` is ``polygamma(0, t)``: matched as
patterns); an op whose field is a function (``subtract``, ``sigmoid``, user ops) translates
to sympy only, and comes back as the arithmetic sympy made of it; ops without one
(``matmul``, ``sum``, indexing...) do not translate, and the error names the op. Walks are
iterative and visit each node of the DAG once (sympy shares equal subexpressions too).

Array variables become plain symbols: the sympy expression of an elementwise function of
arrays describes each element, and ``from_sympy`` needs their shapes back (``shapes=``). A
loop (``scan``) is unrolled for its length (:mod:`.sympy_loops`). How one node reads in
sympy, and the guards every walk into sympy shares, are in :mod:`.sympy_forms`.
Constants that are whole numbers become sympy Integers (``2.0 * x`` prints as ``2 x``);
``from_sympy`` turns every number into a float64 constant except whole-number exponents
(``x**2`` stays an integer power, as NumPy computes it); ``a - b``, ``a / b`` and ``-a``
come back as subtract, divide and negative. sympy is imported on first use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..base.describe import type_name
from ..base.errors import SymgradError
from ..ir.body import Body
from ..ir.expr import Expr, call
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.values import exact, exact_str
from .sympy_forms import check_tree, number, symbol, sympy_form, sympy_module, too_deep
from .sympy_loops import unrolled

# -- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BackTable:
    """What sympy's classes mean as ops: ``names`` (sympy class name -> op name) and
    ``patterns`` (sympy class name -> ``[(pattern, wild, op name)]``) for ops whose sympy
    form is not a class of its own."""

    names: dict[str, str]
    patterns: dict[str, list[tuple[Any, Any, str]]]


def back_table(sp) -> BackTable:
    """The sympy -> op table of the registry's elementwise ops named by a sympy function
    (read from a snapshot of the registry: ``defop`` may register meanwhile).

    >>> import sympy
    >>> t = back_table(sympy)
    >>> t.names["sin"], [op for _, _, op in t.patterns["Pow"]]
    ('sin', ['sqrt'])
    """
    named = tuple((op.name, op.sympy, op.arity) for op in list(REGISTRY.values())
                  if op.elementwise and isinstance(op.sympy, str))
    table = _TABLES.get(named)
    if table is None:
        table = _TABLES[named] = _build_table(sp, named)
    return table


_TABLES: dict[tuple, BackTable] = {}  # by the registry's named forms: built once per set


def _build_table(sp, named: tuple[tuple[str, str, int | None], ...]) -> BackTable:
    names: dict[str, str] = {}
    patterns: dict[str, list[tuple[Any, Any, str]]] = {}
    t, w = sp.Dummy("t", real=True), sp.Wild("w")
    for name, form, arity in named:
        names.setdefault(form, name)
        if arity == 1:
            built = getattr(sp, form)(t)
            if type(built).__name__ != form:
                patterns.setdefault(type(built).__name__, []).append(
                    (built.xreplace({t: w}), w, name))
    return BackTable(names, patterns)


# -- to sympy ------------------------------------------------------------------------------------


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
    sp = sympy_module()
    if not isinstance(expr, Expr):
        raise SymgradError(f"to_sympy needs a symgrad expression, got {type(expr).__name__}")
    graph = expr.graph
    done: dict[int, Any] = {}
    order = graph.ancestors([expr.node])
    check_tree(graph, order, expr.node, "to_sympy")
    try:
        if any(isinstance(graph.nodes[i].attrs.get("body"), Body) for i in order):
            return unrolled(sp, graph, order, expr.node)
        for i in order:
            n = graph.nodes[i]
            if n.is_var:
                done[i] = symbol(sp, n.name, n.dtype)
            elif n.is_const:
                done[i] = number(sp, n.attrs["value"], i)
            else:
                done[i] = sympy_form(sp, REGISTRY[n.op], [done[a] for a in n.args], n.attrs)
    except RecursionError:
        raise too_deep("to_sympy") from None
    return done[expr.node]


# -- from sympy ----------------------------------------------------------------------------------


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
    sp = sympy_module()
    if isinstance(expr, (int, float)) and not isinstance(expr, bool):
        expr = sp.Float(expr) if isinstance(expr, float) else sp.Integer(expr)
    if not isinstance(expr, sp.Basic):
        raise SymgradError(f"from_sympy needs a sympy expression, got {type(expr).__name__}")
    for table, what in ((shapes, "shapes"), (dtypes, "dtypes")):
        if table is not None and not isinstance(table, Mapping):
            raise SymgradError(f"from_sympy: {what} must be a dict from symbol names, "
                               f"got {type_name(table)}")
    try:
        return FromSympy(sp, Graph(), shapes=shapes, dtypes=dtypes).tree(expr)
    except RecursionError:
        raise too_deep("from_sympy") from None


def _short(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:20]}...{text[-10:]} ({len(text)} characters)"


def _srepr(sym: Any) -> str:
    """``Symbol('a')``, ``Dummy('a')``, with assumptions if any (never a user repr)."""
    kind = type_name(sym)
    facts = getattr(sym, "assumptions0", {})
    extra = "".join(f", {k}={v}" for k, v in sorted(facts.items())
                    if k in ("positive", "negative", "real", "integer", "nonnegative"))
    return f"{kind}({str.__str__(sym.name)!r}{extra})"


class FromSympy:
    """One translation into ``graph``: every sympy subexpression translated once.

    Symbols in ``leaves`` stand for the given Exprs of ``graph`` (the sympy bridge's region
    inputs); any other symbol becomes a variable of its name, of the shape and dtype
    ``shapes``/``dtypes`` give it (float64 scalar by default).
    """

    def __init__(self, sp, graph: Graph, *, leaves: Mapping[Any, Expr] | None = None,
                 shapes: Mapping[str, Any] | None = None,
                 dtypes: Mapping[str, str] | None = None, table: BackTable | None = None,
                 what: str = "from_sympy") -> None:
        self.sp, self.graph, self.what = sp, graph, what
        self.shapes, self.dtypes = exact(dict(shapes or {})), exact(dict(dtypes or {}))
        self.done: dict[Any, Expr] = dict(leaves or {})
        self.symbols: dict[str, Any] = {}
        self.table = table if table is not None else back_table(sp)

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
        if e.is_Add or e.is_Mul or e.is_Pow or kind in self.table.names:
            return
        if self._pattern(e) is not None:
            return
        known = ", ".join(sorted(self.table.names))
        raise SymgradError(f"{self.what}: sympy's {kind} has no symgrad op (translatable: "
                           f"numbers, symbols, +, -, *, /, **, {known})")

    def _pattern(self, e: Any) -> tuple[str, Any] | None:
        """``(op, argument)`` if ``e`` is the sympy form of a unary op that sympy writes as
        another class (``Pow(t, 1/2)`` is ``sqrt(t)``)."""
        for pattern, w, op in self.table.patterns.get(type(e).__name__, ()):
            m = e.match(pattern)
            if m and w in m:
                return op, m[w]
        return None

    def _children(self, e: Any) -> list:
        found = self._pattern(e)
        if found is not None:
            return [found[1]]
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
                f"{self.what}: two different sympy symbols are named {name!r} "
                f"({_srepr(seen)} and {_srepr(e)}); symgrad names variables by name: rename "
                "one (expr.subs(old, sympy.Symbol(new_name)))")
        return Expr(self.graph, self.graph.var(name, self.shapes.get(name, ()),
                                               self.dtypes.get(name, "float64")))

    def _float(self, e: Any) -> float:
        if e is self.sp.zoo or e is self.sp.nan or (e.is_number and e.is_real is False):
            if e is self.sp.nan:
                return math.nan
            raise SymgradError(f"{self.what}: {e} is not a real number")
        try:
            value = float(e)
        except OverflowError:
            value = math.inf
        except TypeError:  # a number sympy cannot evaluate (an unevaluated function of one)
            raise SymgradError(f"{self.what}: {_short(str(e))} is not a real number") from None
        if math.isinf(value) and e.is_finite is not False:
            raise SymgradError(f"{self.what}: the number {_short(str(e))} does not fit a "
                               "float64 (it would become inf)")
        return value

    def _build(self, e: Any) -> Expr:
        done = self.done
        found = self._pattern(e)
        if found is not None:
            return call(found[0], done[found[1]])
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
        op = self.table.names[kind]
        args = [self.done[a] for a in e.args]
        arity = REGISTRY[op].arity
        if arity == 2 and len(args) > 2:  # Max(a, b, c)
            out = args[0]
            for a in args[1:]:
                out = call(op, out, a)
            return out
        if arity is not None and len(args) != arity:
            raise SymgradError(f"{self.what}: {kind} has {len(args)} arguments; "
                               f"'{op}' takes {arity}")
        return call(op, *args)


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


__all__ = ["BackTable", "FromSympy", "back_table", "from_sympy", "to_sympy"]
