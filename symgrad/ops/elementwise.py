"""Elementwise ops with NumPy broadcasting: arithmetic, functions, comparisons, ``where``.

Each stanza is one call to :func:`unary`, :func:`binary` or :func:`register`. Backprop rules
return contributions with the *output's* shape (plus leading batch axes); the reverse pass
sums them back to each operand's shape.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import ShapeError
from ..shapes import broadcast, float_dtype, result_dtype
from .registry import F, Op, first_fold, register


def _same(shapes, dtypes, attrs):
    return shapes[0], dtypes[0]


def _floating(shapes, dtypes, attrs):
    return shapes[0], float_dtype(dtypes[0])


def _arith(name: str) -> Callable:
    def infer(shapes, dtypes, attrs):
        return broadcast(name, *shapes), result_dtype(*dtypes)

    return infer


def _true_div(shapes, dtypes, attrs):
    return broadcast("divide", *shapes), float_dtype(result_dtype(*dtypes))


def _compare(name: str) -> Callable:
    def infer(shapes, dtypes, attrs):
        return broadcast(name, *shapes), "bool"

    return infer


def unary(name, impl, source, backprop, *, sympy=None, domain=(-2.0, 2.0), keep_dtype=False,
          differentiable=True, aliases=(), doc="", infix=None, fold=None, scalar=None):
    """Register a one-operand elementwise op (``infix`` makes it a prefix operator)."""
    return register(Op(
        name=name, arity=1, infer=_same if keep_dtype else _floating, impl=impl, source=source,
        backprop=backprop, sympy=sympy, domain=domain, differentiable=differentiable,
        aliases=aliases, doc=doc, params=("x",), elementwise=True, infix=infix, fold=fold,
        scalar_source=scalar if scalar is not None else _math_call(source),
    ))


def binary(name, impl, source, backprop, *, infer=None, infix=None, sympy=None,
           domain=(-2.0, 2.0), differentiable=True, fold=None, aliases=(), doc="", scalar=None):
    """Register a two-operand broadcasting op."""
    return register(Op(
        name=name, arity=2, infer=infer or _arith(name), impl=impl, source=source,
        backprop=backprop, infix=infix, sympy=sympy, domain=domain, fold=fold,
        differentiable=differentiable, aliases=aliases, doc=doc, params=("x", "y"),
        elementwise=True, scalar_source=scalar if scalar is not None else _math_call(source),
    ))


_MATH = ("exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh")


def _math_call(source: str) -> str | None:
    """The Python-float form of a template: operators stay, ``np.sin`` becomes ``math.sin``;
    None when there is no exact ``math`` counterpart."""
    if "np." not in source:
        return source
    name = source.removeprefix("np.").split("(")[0]
    return f"math.{name}({{0}})" if name in _MATH and source == f"np.{name}({{0}})" else None


def _is_const(graph, i, value) -> bool:
    """Whether node ``i`` is ``value`` everywhere: a uniform constant, maybe broadcast."""
    n = graph.nodes[i]
    if n.op == "broadcast_to":
        n = graph.nodes[n.args[0]]
    if n.op != "const":
        return False
    v = n.attrs["value"]
    return v.size > 0 and bool(v.flat[0] == value) and (v.size == 1 or bool(np.all(v == value)))


def _identity(value, positions=(1,)) -> Callable:
    """Fold ``op(x, value)`` to ``x`` (the constant at any of ``positions``) when exact."""

    def fold(graph, args, attrs, shape, dtype):
        for p in positions:
            x = graph.nodes[args[1 - p]]
            if _is_const(graph, args[p], value) and x.shape == shape and x.dtype == dtype:
                return x.id
        return None

    return fold


def _masked(name: str, positions: tuple[int, ...]) -> Callable:
    """Fold for ``multiply``/``divide``/``negative`` inside B, e.g.
    ``where(c, g, 0) * d -> where(c, g * d, 0)``.

    A ``where`` rule hands its unselected branch an exact-zero adjoint; the next rule would
    multiply that zero by a local derivative that may be inf or NaN there (``sqrt'(0)``,
    ``exp(1000)``). Re-applying the mask after the product keeps the zero exact. Forward
    nodes are never rewritten.
    """

    def fold(graph, args, attrs, shape, dtype):
        if graph._role != "adjoint":
            return None
        for p in positions:
            w = graph.nodes[args[p]]
            if w.op != "where":
                continue
            c, a, b = (graph.expr(i) for i in w.args)
            operands = [graph.expr(i) for i in args]

            def apply(v, p=p, operands=operands):
                operands[p] = v
                return F.__getattr__(name)(*operands)

            if _is_const(graph, b.node, 0.0):
                out = F.where(c, apply(a), b)
            elif _is_const(graph, a.node, 0.0):
                out = F.where(c, a, apply(b))
            else:
                continue
            if out.shape == shape and out.dtype == dtype:
                return out.node
        return None

    return fold


def _masked_sum(graph, args, attrs, shape, dtype):
    """Inside B: ``where(c, a, 0) + where(c, b, 0) -> where(c, a + b, 0)`` keeps the mask
    visible to the next rule when a masked node's contributions are summed."""
    if graph._role != "adjoint":
        return None
    u, v = (graph.nodes[i] for i in args)
    if u.op != "where" or v.op != "where" or u.args[0] != v.args[0]:
        return None
    for k in (1, 2):
        if _is_const(graph, u.args[k], 0.0) and _is_const(graph, v.args[k], 0.0):
            c, live = graph.expr(u.args[0]), 3 - k
            total = graph.expr(u.args[live]) + graph.expr(v.args[live])
            zero = graph.expr(u.args[k])
            out = F.where(c, total, zero) if k == 2 else F.where(c, zero, total)
            return out.node if out.shape == shape and out.dtype == dtype else None
    return None


def _merged_scatters(*args):
    from .indexing import merge_scatters  # indexing builds on this module's ops

    return merge_scatters(*args)


def _negations(name: str) -> Callable:
    """Inside B, fold negations that the rules leave behind, bitwise exactly:
    ``a + (-b) -> a - b``, ``(-a) + b -> b - a``, ``a - (-b) -> a + b``, ``-(-a) -> a``, and
    move them outward through products (``(-a) * b -> -(a * b)``) so the next sum absorbs
    them."""

    def fold(graph, args, attrs, shape, dtype):
        if graph._role != "adjoint":
            return None
        nodes = graph.nodes
        neg = [nodes[a].op == "negative" for a in args]
        inner = [graph.expr(nodes[a].args[0]) if k else graph.expr(a)
                 for a, k in zip(args, neg)]
        if name == "negative" and neg[0]:
            out = inner[0]
        elif name == "add" and neg[1]:
            out = graph.expr(args[0]) - inner[1]
        elif name == "add" and neg[0]:
            out = graph.expr(args[1]) - inner[0]
        elif name == "subtract" and neg[1]:
            out = graph.expr(args[0]) + inner[1]
        elif name in ("multiply", "divide") and neg[0] != neg[1]:
            out = -F.__getattr__(name)(*inner)
        else:
            return None
        return out.node if out.shape == shape and out.dtype == dtype else None

    return fold


def _zero_at_origin(x, y, value):
    """``value``, but exactly 0 where ``x == 0`` and ``y == 0`` (``d/dx x**0`` at 0 is 0).

    Nested so that a constant exponent folds the guard away (``x**2`` gets no ``where``).
    """
    return F.where(y == 0, _where_zero(x == 0, value), value)


def _where_zero(cond, value):
    """``value`` where ``cond`` is false, exact zero where it is true (for kinks/poles)."""
    return F.where(cond, 0.0, value)


# -- arithmetic ---------------------------------------------------------------------------

binary("add", np.add, "{0} + {1}", lambda n, g: (g, g),
       infix=("+", 11), sympy="Add",
       fold=first_fold(_masked_sum, _merged_scatters, _negations("add")))
binary("subtract", np.subtract, "{0} - {1}", lambda n, g: (g, -g),
       infix=("-", 11), sympy=lambda sp, x, y: x - y, fold=_negations("subtract"),
       aliases=("sub",))
binary("multiply", np.multiply, "{0} * {1}",
       lambda n, g: (g * n.args[1], g * n.args[0]),
       infix=("*", 12), sympy="Mul",
       fold=first_fold(_identity(1.0, (0, 1)), _masked("multiply", (0, 1)),
                   _negations("multiply")),
       aliases=("mul",))
binary("divide", np.true_divide, "{0} / {1}",
       lambda n, g: (g / n.args[1], -(g * (n.out / n.args[1]))),
       infer=_true_div, infix=("/", 12), sympy=lambda sp, x, y: x / y, domain=(0.5, 2.0),
       fold=first_fold(_identity(1.0), _masked("divide", (0,)), _negations("divide")),
       aliases=("div", "true_divide"))
binary("power", np.power, "{0} ** {1}",
       lambda n, g: (
           g * _zero_at_origin(n.args[0], n.args[1], n.args[1] * n.args[0] ** (n.args[1] - 1)),
           g * _where_zero(n.args[0] == 0, n.out * F.log(n.args[0])),
       ),
       infix=("**", 14), sympy="Pow", domain=(0.5, 2.0), fold=_identity(1), aliases=("pow",),
      scalar="math.pow({0}, {1})")
unary("negative", np.negative, "-{0}", lambda n, g: (-g,), keep_dtype=True,
      sympy=lambda sp, x: -x, aliases=("neg",), infix=("-", 13),
      fold=first_fold(_masked("negative", (0,)), _negations("negative")))
unary("square", np.square, "np.square({0})", lambda n, g: (g * (2.0 * n.args[0]),),
      keep_dtype=True, sympy=lambda sp, x: x**2,
      scalar="{0} * {0}")
binary("maximum", np.maximum, "np.maximum({0}, {1})",
       lambda n, g: _split(g, n.args[0] > n.args[1], n.args[0] == n.args[1]), sympy="Max")
binary("minimum", np.minimum, "np.minimum({0}, {1})",
       lambda n, g: _split(g, n.args[0] < n.args[1], n.args[0] == n.args[1]), sympy="Min")


def _split(g, wins, ties):
    """Gradient of max/min of two operands: ties split the adjoint equally."""
    w = F.where(wins, 1.0, F.where(ties, 0.5, 0.0))
    return g * w, g * (1.0 - w)


# -- functions ----------------------------------------------------------------------------

unary("exp", np.exp, "np.exp({0})", lambda n, g: (g * n.out,), sympy="exp")
unary("log", np.log, "np.log({0})", lambda n, g: (g / n.args[0],), sympy="log",
      domain=(0.2, 3.0))
unary("log1p", np.log1p, "np.log1p({0})", lambda n, g: (g / (1.0 + n.args[0]),),
      sympy=lambda sp, x: sp.log(1 + x), domain=(-0.5, 3.0))
unary("expm1", np.expm1, "np.expm1({0})", lambda n, g: (g * (n.out + 1.0),),
      sympy=lambda sp, x: sp.exp(x) - 1)
unary("sqrt", np.sqrt, "np.sqrt({0})", lambda n, g: (g / (2.0 * n.out),), sympy="sqrt",
      domain=(0.2, 3.0))
unary("sin", np.sin, "np.sin({0})", lambda n, g: (g * F.cos(n.args[0]),), sympy="sin")
unary("cos", np.cos, "np.cos({0})", lambda n, g: (-(g * F.sin(n.args[0])),), sympy="cos")
unary("tan", np.tan, "np.tan({0})", lambda n, g: (g * (1.0 + n.out * n.out),), sympy="tan",
      domain=(-1.2, 1.2))
unary("tanh", np.tanh, "np.tanh({0})", lambda n, g: (g * (1.0 - n.out * n.out),),
      sympy="tanh")


def _sigmoid(x):
    # exp(x - softplus(x)): three NumPy calls, no overflow at +-1000, and accurate in both
    # tails (for x << 0 the exponent is x itself; for x >> 0 the result rounds to 1)
    return np.exp(x - np.logaddexp(0.0, x))


unary("sigmoid", _sigmoid, "np.exp({0} - np.logaddexp(0.0, {0}))",
      lambda n, g: (g * (n.out * (1.0 - n.out)),), sympy=lambda sp, x: 1 / (1 + sp.exp(-x)),
      domain=(-4.0, 4.0),
      doc="logistic function 1 / (1 + exp(-x)), computed without overflow",
      scalar="1.0 / (1.0 + math.exp(-{0}))")
unary("softplus", lambda x: np.logaddexp(0.0, x), "np.logaddexp(0.0, {0})",
      lambda n, g: (g * F.sigmoid(n.args[0]),), sympy=lambda sp, x: sp.log(1 + sp.exp(x)),
      domain=(-4.0, 4.0),
      doc="log(1 + exp(x)), computed without overflow",
      scalar="math.log1p(math.exp(-abs({0}))) + max({0}, 0.0)")
unary("relu", lambda x: np.maximum(x, 0), "np.maximum({0}, 0)",
      lambda n, g: (F.where(n.args[0] > 0, g, 0.0),), keep_dtype=True,
      sympy=lambda sp, x: sp.Max(x, 0),
      domain=(0.2, 2.0), doc="max(x, 0); relu'(0) = 0",
      scalar="max({0}, 0.0)")
unary("abs", np.abs, "np.abs({0})", lambda n, g: (g * F.sign(n.args[0]),), keep_dtype=True,
      sympy="Abs", domain=(0.2, 2.0), aliases=("absolute",), doc="|x|; abs'(0) = 0",
      scalar="abs({0})")
unary("sign", np.sign, "np.sign({0})", None, keep_dtype=True, sympy="sign",
      differentiable=False, scalar="(1.0 if {0} > 0 else -1.0 if {0} < 0 else {0})")

# -- comparisons and selection ------------------------------------------------------------

for _name, _fn, _sym, _src in (
    ("less", np.less, "<", "{0} < {1}"), ("less_equal", np.less_equal, "<=", "{0} <= {1}"),
    ("greater", np.greater, ">", "{0} > {1}"),
    ("greater_equal", np.greater_equal, ">=", "{0} >= {1}"),
    ("equal", np.equal, "==", "{0} == {1}"), ("not_equal", np.not_equal, "!=", "{0} != {1}"),
):
    binary(_name, _fn, _src, None, infer=_compare(_name), infix=(_sym, 6),
           differentiable=False)


def _where_infer(shapes, dtypes, attrs):
    if dtypes[0] != "bool":
        raise ShapeError(f"where: the condition must be boolean, got dtype {dtypes[0]}")
    return broadcast("where", *shapes), result_dtype(dtypes[1], dtypes[2])


def _where_fold(graph, args, attrs, shape, dtype):
    """A constant all-true / all-false condition selects a branch outright."""
    c = graph.nodes[args[0]]
    if c.op != "const" or not (c.attrs["value"].all() or not c.attrs["value"].any()):
        return None
    pick = args[1] if c.attrs["value"].all() else args[2]
    n = graph.nodes[pick]
    return pick if n.shape == shape and n.dtype == dtype else None


register(Op(
    name="where", arity=3, params=("condition", "x", "y"), infer=_where_infer, impl=np.where,
    source="np.where({0}, {1}, {2})", fold=_where_fold, elementwise=True,
    scalar_source="({1} if {0} else {2})",
    backprop=lambda n, g: (None, F.where(n.args[0], g, 0.0), F.where(n.args[0], 0.0, g)),
    doc="x where condition else y; the unselected branch gets an exact zero gradient",
))

del _name, _fn, _sym, _src
