"""Elementwise ops with NumPy broadcasting: arithmetic, functions, comparisons, ``where``.

Each stanza is one call to :func:`unary`, :func:`binary` or :func:`register`. Backprop rules
return contributions with the *output's* shape (plus leading batch axes); the reverse pass
sums them back to each operand's shape. Forward rules default to the backprop rule with each
operand's tangent in place of ``g`` (the Jacobian is diagonal: :func:`.tangent.elementwise`);
the arithmetic ops state theirs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..base.errors import ShapeError
from ..ir.expr import Expr, F, call
from ..ir.op import BINARY, UNARY, Op, register, sig
from ..ir.shapes import broadcast, float_dtype, is_complex, real_dtype, result_dtype
from . import series
from .tangent import align, elementwise, total, typed

# facts about inf and NaN the exact passes may use (the ``ieee`` field of :mod:`symgrad.ir.op`)
NAN_IN_NAN_OUT = ("nan_in_nan_out",)
SIN_COS = ("bounded", "finite_with", "nan_at_inf", "nan_in_nan_out")


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


def compare(name: str) -> Callable:
    def infer(shapes, dtypes, attrs):
        return broadcast(name, *shapes), "bool"

    return infer


def _forward(backprop, forward):
    return forward or (elementwise(backprop) if backprop is not None else None)


def unary(name, impl, backprop, *, sympy=None, domain=(-2.0, 2.0), keep_dtype=False,
          differentiable=True, aliases=(), doc="", infix=None, forward=None, taylor=None,
          ieee=(), infer=None, complex=False, front=None):
    """Register a one-operand elementwise op (``infix`` makes it a prefix operator)."""
    return register(Op(
        name=name, infer=infer or (_same if keep_dtype else _floating), impl=impl,
        backprop=backprop, forward=_forward(backprop, forward), taylor=taylor,
        signature=sig("x", infix=infix) if infix else UNARY, sympy=sympy, domain=domain,
        differentiable=differentiable, aliases=aliases, doc=doc, elementwise=True,
        ieee=frozenset(ieee), complex=complex, front=front,
    ))


def binary(name, impl, backprop, *, infer=None, infix=None, sympy=None, domain=(-2.0, 2.0),
           differentiable=True, aliases=(), doc="", forward=None, taylor=None, ieee=(),
           complex=False):
    """Register a two-operand broadcasting op."""
    return register(Op(
        name=name, infer=infer or _arith(name), impl=impl, backprop=backprop,
        forward=_forward(backprop, forward), taylor=taylor,
        signature=sig("x", "y", infix=infix) if infix else BINARY, sympy=sympy, domain=domain,
        differentiable=differentiable, aliases=aliases, doc=doc, elementwise=True,
        ieee=frozenset(ieee), complex=complex,
    ))


def _zero_at_origin(x, y, value):
    """``value``, but exactly 0 where ``x == 0`` and ``y == 0`` (``d/dx x**0`` at 0 is 0).

    Nested so that a constant exponent folds the guard away (``x**2`` gets no ``where``).
    """
    return F.where(y == 0, where_zero(x == 0, value), value)


def where_zero(cond, value):
    """``value`` where ``cond`` is false, exact zero where it is true (for kinks/poles)."""
    return F.where(cond, 0.0, value)


# -- arithmetic ---------------------------------------------------------------------------

def _aligned(n, t):
    """The tangents broadcast-aligned with the output (None stays None)."""
    return [None if tk is None else align(tk, a, len(n.shape)) for a, tk in zip(n.args, t)]


def _subtract_forward(n, t):
    tx, ty = _aligned(n, t)
    return -ty if tx is None else tx if ty is None else tx - ty


def _mul_forward(n, t):
    # tangent first in both products, as the other rules write g * local: t * sin(h) built
    # for cos(h) and for sin(h) * h is then one node
    tx, ty = _aligned(n, t)
    x, y = n.args
    return total(None if tx is None else tx * y, None if ty is None else ty * x)


def _div_forward(n, t):
    tx, ty = _aligned(n, t)
    x, y = n.args
    q = None if tx is None else tx / y
    return q if ty is None else -(ty * (n.out / y)) if q is None else q - ty * (n.out / y)


binary("add", np.add, lambda n, g: (g, g), infix=("+", 11), sympy="Add",
       forward=lambda n, t: total(*_aligned(n, t)), taylor=series.piecewise_linear,
       ieee=NAN_IN_NAN_OUT, complex=True)
binary("subtract", np.subtract, lambda n, g: (g, -g), infix=("-", 11),
       sympy=lambda sp, x, y: x - y, aliases=("sub",), forward=_subtract_forward,
       taylor=series.piecewise_linear, ieee=NAN_IN_NAN_OUT, complex=True)
binary("multiply", np.multiply,
       lambda n, g: (g * n.args[1] if n.needs(0) else None, g * n.args[0] if n.needs(1) else None),
       infix=("*", 12), sympy="Mul", aliases=("mul",), forward=_mul_forward,
       taylor=series.bilinear, ieee=NAN_IN_NAN_OUT, complex=True)
binary("divide", np.true_divide,
       lambda n, g: (g / n.args[1] if n.needs(0) else None,
                     -(g * (n.out / n.args[1])) if n.needs(1) else None),
       infer=_true_div, infix=("/", 12), sympy=lambda sp, x, y: x / y, domain=(0.5, 2.0),
       aliases=("div", "true_divide"), forward=_div_forward, taylor=series.quotient,
       ieee=NAN_IN_NAN_OUT, complex=True)
binary("power", np.power,
       lambda n, g: (
           g * _zero_at_origin(n.args[0], n.args[1], n.args[1] * n.args[0] ** (n.args[1] - 1)),
           g * where_zero(n.args[0] == 0, n.out * F.log(n.args[0])),
       ),
       infix=("**", 14), sympy="Pow", domain=(0.5, 2.0), aliases=("pow",),
       taylor=series.power, complex=True)
unary("negative", np.negative, lambda n, g: (-g,), keep_dtype=True, sympy=lambda sp, x: -x,
      aliases=("neg",), infix=("-", 13), taylor=series.piecewise_linear, ieee=NAN_IN_NAN_OUT,
      complex=True)
unary("square", np.square, lambda n, g: (g * (2.0 * n.args[0]),), keep_dtype=True,
      sympy=lambda sp, x: x**2,
      taylor=lambda n, s, K: [n.out] + [series.square_term(s[0], k) for k in range(1, K + 1)],
      ieee=NAN_IN_NAN_OUT, complex=True)
binary("maximum", np.maximum,
       lambda n, g: split_ties(g, n.args[0] > n.args[1], n.args[0] == n.args[1]), sympy="Max",
       taylor=series.piecewise_linear, complex=True)
binary("minimum", np.minimum,
       lambda n, g: split_ties(g, n.args[0] < n.args[1], n.args[0] == n.args[1]), sympy="Min",
       taylor=series.piecewise_linear, complex=True)


def split_ties(g, wins, ties):
    """Gradient of max/min of two operands: ties split the adjoint equally."""
    one = typed(1.0, g)
    w = F.where(wins, one, F.where(ties, typed(0.5, g), typed(0.0, g)))
    return g * w, g * (one - w)


# -- functions ----------------------------------------------------------------------------

unary("exp", np.exp, lambda n, g: (g * n.out,), sympy="exp",
      taylor=lambda n, s, K: series.chain(s[0], n.out, lambda y, m: y[m], K), ieee=NAN_IN_NAN_OUT,
      complex=True)
unary("log", np.log, lambda n, g: (g / n.args[0],), sympy="log", domain=(0.2, 3.0),
      taylor=lambda n, s, K: series.logarithm(s[0], n.out, n.args[0], K), ieee=NAN_IN_NAN_OUT,
      complex=True)
unary("log1p", np.log1p, lambda n, g: (g / (1.0 + n.args[0]),),
      sympy=lambda sp, x: sp.log(1 + x), domain=(-0.5, 3.0),
      taylor=lambda n, s, K: series.logarithm(s[0], n.out, 1.0 + n.args[0], K), complex=True)
unary("expm1", np.expm1, lambda n, g: (g * (n.out + 1.0),), sympy=lambda sp, x: sp.exp(x) - 1,
      taylor=lambda n, s, K: series.chain(s[0], n.out, lambda y, m: y[m] if m else y[0] + 1.0,
                                          K), complex=True)
unary("sqrt", np.sqrt, lambda n, g: (g / (2.0 * n.out),), sympy="sqrt", domain=(0.2, 3.0),
      taylor=lambda n, s, K: series.root(s[0], n.out, K), ieee=NAN_IN_NAN_OUT, complex=True)
unary("sin", np.sin, lambda n, g: (g * F.cos(n.args[0]),), sympy="sin",
      taylor=lambda n, s, K: series.pair(s[0], n.out, F.cos(n.args[0]), (1, -1), K), ieee=SIN_COS,
      complex=True)
unary("cos", np.cos, lambda n, g: (-(g * F.sin(n.args[0])),), sympy="cos",
      taylor=lambda n, s, K: series.pair(s[0], n.out, F.sin(n.args[0]), (-1, 1), K), ieee=SIN_COS,
      complex=True)
unary("tan", np.tan, lambda n, g: (g * (1.0 + n.out * n.out),), sympy="tan",
      domain=(-1.2, 1.2), taylor=lambda n, s, K: series.chain(
          s[0], n.out, lambda y, m: series.square_term(y, m) if m else 1.0 + y[0] * y[0], K),
      ieee=("nan_at_inf", *NAN_IN_NAN_OUT), complex=True)
unary("tanh", np.tanh, lambda n, g: (g * (1.0 - n.out * n.out),), sympy="tanh",
      taylor=lambda n, s, K: series.chain(s[0], n.out, lambda y, m: series.scaled(
          -1, series.square_term(y, m)) if m else 1.0 - y[0] * y[0], K),
      ieee=("bounded", *NAN_IN_NAN_OUT), complex=True)
unary("sinh", np.sinh, lambda n, g: (g * F.cosh(n.args[0]),), sympy="sinh",
      taylor=lambda n, s, K: series.pair(s[0], n.out, F.cosh(n.args[0]), (1, 1), K), complex=True)
unary("cosh", np.cosh, lambda n, g: (g * F.sinh(n.args[0]),), sympy="cosh",
      taylor=lambda n, s, K: series.pair(s[0], n.out, F.sinh(n.args[0]), (1, 1), K), complex=True)


def _sigmoid(x):
    # 1 / (1 + exp(-x)): a few ulp everywhere, exactly 1 and 0 at +-inf (exp(-x) overflows
    # to inf below x = -709.78, giving 0 where the true value is subnormal), and the same
    # formula as the scalar math backend, so the two agree
    return 1.0 / (1.0 + np.exp(-x))


def _logistic(u, y0, x, K):
    """The series of ``sigmoid(u)``: ``y' = y (1 - y) u'``, order 0 of ``y (1 - y)`` as the
    backprop rule writes it (``s(x) s(-x)``, exact in both tails)."""
    def g(y, m):
        return (series.total([y[m], series.scaled(-1, series.square_term(y, m))]) if m
                else y0 * F.sigmoid(-x))

    return series.chain(u, y0, g, K)


def _softplus_series(u, y0, x, K):
    """``softplus(u)``: ``y' = sigmoid(u) u'``."""
    g = _logistic(u, F.sigmoid(x), x, K)
    return series.chain(u, y0, lambda y, m: g[m], K)


# sigmoid' = s(x) s(-x): exact in both tails, where s (1 - s) cancels to 0 beyond x ~ 37
unary("sigmoid", _sigmoid, lambda n, g: (g * (n.out * F.sigmoid(-n.args[0])),),
      sympy=lambda sp, x: 1 / (1 + sp.exp(-x)), domain=(-4.0, 4.0),
      doc="logistic function 1 / (1 + exp(-x)), computed without overflow",
      taylor=lambda n, s, K: _logistic(s[0], n.out, n.args[0], K),
      ieee=("bounded", *NAN_IN_NAN_OUT))
unary("softplus", lambda x: np.logaddexp(0.0, x), lambda n, g: (g * F.sigmoid(n.args[0]),),
      sympy=lambda sp, x: sp.log(1 + sp.exp(x)), domain=(-4.0, 4.0),
      doc="log(1 + exp(x)), computed without overflow",
      taylor=lambda n, s, K: _softplus_series(s[0], n.out, n.args[0], K))
unary("relu", lambda x: np.maximum(x, 0), lambda n, g: (F.where(n.args[0] > 0, g, 0.0),),
      keep_dtype=True, sympy=lambda sp, x: sp.Max(x, 0), domain=(0.2, 2.0),
      doc="max(x, 0); relu'(0) = 0", taylor=series.piecewise_linear)
def _abs_rule(n, g):
    z = n.args[0]
    if not is_complex(z.data.dtype):
        return (g * F.sign(z),)
    # |z|' pairs with conj(z) / |z| (zero at 0, as for real x): z / |z| is not locally
    # constant, so it is written out rather than as sign(z), which has no derivative; the
    # divisor is 1 at 0 (a compiled complex division by zero raises, NumPy's warns)
    zero = n.out == 0
    return (g * where_zero(zero, F.conj(z) / F.where(zero, 1.0, n.out)),)


def _abs_forward(n, t):
    if t[0] is None:
        return None
    (d,) = _abs_rule(n, t[0])
    return F.real(d) if is_complex(d.data.dtype) else d


def _abs_series(n, s, K):
    """Taylor rule: piecewise linear for real values; none for complex (declined)."""
    return None if is_complex(n.args[0].data.dtype) else series.piecewise_linear(n, s, K)


def _abs_infer(shapes, dtypes, attrs):
    return shapes[0], real_dtype(dtypes[0])


def _sign_front(x):
    """``np.sign``: for complex values NumPy 2's ``z / |z|`` (0 at 0), written out so that
    it has its derivative (the ``sign`` op is for real values, where it is locally
    constant)."""
    if isinstance(x, Expr) and is_complex(x.data.dtype):
        return where_zero(x == 0, x / F.abs(x))
    return call("sign", x)


_sign_front.signature = UNARY  # type: ignore[attr-defined]
unary("abs", np.abs, _abs_rule, infer=_abs_infer, sympy="Abs",
      domain=(0.2, 2.0), aliases=("absolute",), doc="|x|; abs'(0) = 0",
      forward=_abs_forward,
      taylor=_abs_series, ieee=NAN_IN_NAN_OUT, complex=True)
unary("sign", np.sign, None, keep_dtype=True, sympy="sign", differentiable=False,
      complex="sign(z) = z / |z| is not locally constant: np.sign (symgrad.numpy.sign) "
      "writes it out for complex values", front=_sign_front)

# -- comparisons and selection ------------------------------------------------------------

for _name, _fn, _sym in (
    ("less", np.less, "<"), ("less_equal", np.less_equal, "<="),
    ("greater", np.greater, ">"), ("greater_equal", np.greater_equal, ">="),
    ("equal", np.equal, "=="), ("not_equal", np.not_equal, "!="),
):
    binary(_name, _fn, None, infer=compare(_name), infix=(_sym, 6), differentiable=False,
           complex=True)


def _where_infer(shapes, dtypes, attrs):
    if dtypes[0] != "bool":
        raise ShapeError(f"where: the condition must be boolean, got dtype {dtypes[0]}")
    return broadcast("where", *shapes), result_dtype(dtypes[1], dtypes[2])


def _where_forward(n, t):
    _, tx, ty = _aligned(n, t)
    if tx is None and ty is None:
        return None
    return F.where(n.args[0], 0.0 if tx is None else tx, 0.0 if ty is None else ty)


register(Op(
    name="where", signature=sig("condition", "x", "y"), infer=_where_infer, impl=np.where,
    elementwise=True, forward=_where_forward, taylor=series.piecewise_linear,
    backprop=lambda n, g: (None, F.where(n.args[0], g, 0.0), F.where(n.args[0], 0.0, g)),
    doc="x where condition else y; the unselected branch gets an exact zero gradient",
    complex=True,
))

del _name, _fn, _sym
