"""SciPy's special functions as elementwise ops: the error function family, the normal
distribution's ``ndtr ndtri log_ndtr``, ``logit``, the gamma family (``gamma gammaln
digamma polygamma betaln``), modified Bessel functions ``i0 i1 i0e i1e``, ``erfcx``,
``sinc`` and ``xlogy xlog1py``.

Their meaning is :mod:`scipy.special`'s (NumPy's for ``sinc``): the interpreter runs SciPy's
ufuncs (imported on first use: SciPy is needed to *evaluate* these ops, not to build or
differentiate them). Each backprop rule is the closed-form derivative written with ops of
this family, so every order is available:

* ``erf' = 2/sqrt(pi) exp(-x^2)``, ``ndtr' = exp(-x^2/2)/sqrt(2 pi)``; the inverses reuse
  their output (``erfinv' = sqrt(pi)/2 exp(erfinv(x)^2)``, ``ndtri' = sqrt(2 pi)
  exp(ndtri(p)^2/2)``);
* ``log_ndtr' = sqrt(2/pi) / erfcx(-x/sqrt(2))`` for ``x < 0`` (``pdf / cdf`` with
  ``exp(-x^2/2)`` cancelled): accurate for large negative ``x`` (about ``-x``), where
  ``pdf / cdf`` is ``0 / 0`` and ``exp(-x^2/2 - log_ndtr(x))`` cancels;
  ``erfcx' = 2x erfcx(x) - 2/sqrt(pi)``, by its asymptotic series from ``x = 1000`` (where
  the difference cancels);
* ``gammaln' = digamma``, ``digamma' = polygamma(1, .)``, ``polygamma(n)' = polygamma(n+1)``;
* ``j1' = (j0 - jv(2, x)) / 2``, ``i1' = (i0 + iv(2, x)) / 2``, ``i0e' = i1e - sign(x)
  i0e``, ``i1e' = (i0e + ive(2, x)) / 2 - sign(x) i1e``: no division by ``x``, so every
  order is accurate near 0 (the third derivative of ``j1`` at 0 is ``-3/8``);
  ``sinc' = (cos(pi x) - sinc(x)) / x`` (0 at 0): its removable singularity is guarded with
  a double ``where``, so no NaN reaches any order of derivative at ``x = 0``;
* ``xlogy(x, y)`` and ``xlog1py`` are 0 wherever ``x == 0``: their ``y``-derivative there
  is 0 (the function is constant in ``y``), not ``0/0``;
* the regularised incomplete gamma and beta functions ``gammainc gammaincc betainc`` and
  Student's t CDF ``stdtr`` have closed-form derivatives in ``x`` (the densities, written in
  log space: ``x^(a-1) e^-x / Gamma(a)``, ``x^(a-1) (1-x)^(b-1) / B(a, b)``, the t density
  through ``betaln``, finite where the gamma functions overflow). Their derivatives in the
  shape parameters (``a``, ``b``, ``df``) are series with no closed form: asking for one
  raises :class:`~symgrad.errors.DifferentiationError` (never a silent 0); a shape
  parameter that does not depend on what is differentiated needs nothing.

>>> import symgrad as sg
>>> x = sg.var("x")
>>> round(sg.evaluate(sg.grad(sg.erf(x), x), {"x": 0.0}), 12)  # 2 / sqrt(pi)
1.128379167096
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base.errors import DifferentiationError, ShapeError, UnsupportedError
from ..ir.expr import F
from ..ir.op import Op, register, sig
from ..ir.shapes import broadcast, float_dtype, is_float, result_dtype
from . import series
from .elementwise import binary, unary, where_zero
from .tangent import elementwise

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_PI2 = math.pi ** 2
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_MINUS_INV_SQRT_2 = -1.0 / math.sqrt(2.0)


def special() -> Any:
    """:mod:`scipy.special`, imported on first use (evaluating these ops needs SciPy)."""
    try:
        import scipy.special
    except ImportError:  # pragma: no cover - SciPy is installed with symgrad[test]
        raise UnsupportedError("evaluating SciPy's special functions needs SciPy: "
                               "pip install scipy") from None
    return scipy.special


def _scipy(name: str):
    """The interpreter's implementation: ``scipy.special.<name>``."""
    def impl(*args: Any) -> Any:
        return getattr(special(), name)(*args)

    impl.__name__ = impl.__qualname__ = name
    return impl


def _float(shapes, dtypes, attrs):
    return shapes[0], float_dtype(dtypes[0])


def _float_binary(name: str):
    def infer(shapes, dtypes, attrs):
        return broadcast(name, *shapes), float_dtype(result_dtype(*dtypes))

    return infer


def _safe(x, at: float = 0.0):
    """``x`` with ``at`` replaced by 1: a divisor whose gradient is exactly 0 there."""
    return F.where(x == at, 1.0, x)


# -- the error function and the normal distribution -----------------------------------------

def _erf_series(n, u, K):
    """``erf'(u) = 2/sqrt(pi) exp(-u^2) u'``: the series of ``exp(-u^2)`` first."""
    v = series.shifted_square(u, 0.0, -1, K - 1)
    e = series.chain(v, F.exp(-F.square(n.args[0])), lambda y, m: y[m], K - 1)
    return series.through(u, n.out, [None if t is None else _TWO_OVER_SQRT_PI * t for t in e], K)


# of complex values: SciPy's (Faddeeva's), holomorphic, so the real rules hold
unary("erf", _scipy("erf"), lambda n, g: (g * (_TWO_OVER_SQRT_PI * F.exp(-F.square(n.args[0]))),),
      sympy="erf", doc="the error function 2/sqrt(pi) * integral of exp(-t^2) from 0 to x",
      taylor=lambda n, s, K: _erf_series(n, s[0], K), ieee=("bounded", "nan_in_nan_out"),
      complex=True)
unary("erfc", _scipy("erfc"),
      lambda n, g: (-(g * (_TWO_OVER_SQRT_PI * F.exp(-F.square(n.args[0])))),),
      sympy="erfc", doc="1 - erf(x), accurate where erf(x) is near 1", complex=True)
unary("erfinv", _scipy("erfinv"), lambda n, g: (g * (_SQRT_PI_OVER_2 * F.exp(F.square(n.out))),),
      sympy="erfinv", domain=(-0.9, 0.9), doc="the inverse of erf on (-1, 1)")
unary("erfcinv", _scipy("erfcinv"),
      lambda n, g: (-(g * (_SQRT_PI_OVER_2 * F.exp(F.square(n.out)))),),
      sympy="erfcinv", domain=(0.1, 1.9), doc="the inverse of erfc on (0, 2)")


def _erfcx_derivative(x, out):
    """``erfcx'(x) = 2 x erfcx(x) - 2/sqrt(pi)``, which cancels for large ``x`` (to 0 at
    1e8, losing ``2 x^2 eps`` of it): from x = 1000 its asymptotic series ``2/sqrt(pi)
    sum_k (-1)^k (2k-1)!! / (2x^2)^k``, three terms (to 3e-11 there; few nodes: the rule
    is built for every erfcx). The series' branch is masked below, where it is not read."""
    v = 1.0 / F.square(x)
    c = _TWO_OVER_SQRT_PI
    series = v * (-0.5 * c + v * (0.75 * c + v * (-1.875 * c)))
    return F.where(x > _ERFCX_SERIES_FROM, series, 2.0 * x * out - c)


_ERFCX_SERIES_FROM = 1000.0


def _log_ndtr_derivative(x, out):
    """``pdf(x) / ndtr(x)``: ``sqrt(2/pi) / erfcx(-x/sqrt(2))`` below 0 (``exp(-x^2/2)``
    cancelled: accurate at -1e5, where ``exp(-x^2/2 - log_ndtr(x))`` cancels), that form
    above (``ndtr >= 1/2``, where erfcx would overflow past x = 37)."""
    return F.where(x < 0, _SQRT_2_OVER_PI / F.erfcx(_MINUS_INV_SQRT_2 * x),
                   _INV_SQRT_2PI * F.exp(-0.5 * F.square(x) - out))


unary("erfcx", _scipy("erfcx"),
      lambda n, g: (g * _erfcx_derivative(n.args[0], n.out),),
      sympy=lambda sp, x: sp.exp(x**2) * sp.erfc(x),
      doc="the scaled complementary error function exp(x^2) erfc(x)")
unary("ndtr", _scipy("ndtr"),
      lambda n, g: (g * (_INV_SQRT_2PI * F.exp(-0.5 * F.square(n.args[0]))),),
      sympy=lambda sp, x: (1 + sp.erf(x / sp.sqrt(2))) / 2, domain=(-3.0, 3.0),
      doc="the standard normal CDF")
unary("ndtri", _scipy("ndtri"),
      lambda n, g: (g * (_SQRT_2PI * F.exp(0.5 * F.square(n.out))),),
      sympy=lambda sp, x: sp.sqrt(2) * sp.erfinv(2 * x - 1), domain=(0.05, 0.95),
      doc="the inverse of the standard normal CDF")
unary("log_ndtr", _scipy("log_ndtr"),
      lambda n, g: (g * _log_ndtr_derivative(n.args[0], n.out),),
      sympy=lambda sp, x: sp.log((1 + sp.erf(x / sp.sqrt(2))) / 2), domain=(-4.0, 3.0),
      doc="the log of the standard normal CDF, accurate far in the lower tail")
unary("logit", _scipy("logit"), lambda n, g: (g / (n.args[0] * (1.0 - n.args[0])),),
      sympy=lambda sp, x: sp.log(x / (1 - x)), domain=(0.1, 0.9),
      doc="log(p / (1 - p)), the inverse of the logistic sigmoid")

# -- the gamma family ---------------------------------------------------------------------

unary("gamma", _scipy("gamma"), lambda n, g: (g * (n.out * F.digamma(n.args[0])),),
      sympy="gamma", domain=(0.5, 3.0), doc="the gamma function")
unary("gammaln", _scipy("gammaln"), lambda n, g: (g * F.digamma(n.args[0]),),
      sympy=lambda sp, x: sp.log(sp.Abs(sp.gamma(x))), domain=(0.5, 4.0),
      doc="log |gamma(x)|")
unary("digamma", _scipy("digamma"), lambda n, g: (g * F.polygamma(n.args[0], n=1),),
      sympy="digamma", domain=(0.5, 4.0), doc="the derivative of gammaln (psi)")


def _polygamma_prepare(shapes, dtypes, attrs):
    order = attrs["n"]
    if isinstance(order, bool) or not isinstance(order, int) or order < 0:
        raise ShapeError(f"polygamma: the order n must be a non-negative int, got {order!r}")
    return {"n": int(order)}


def _polygamma(x, n):
    # scipy's polygamma is a function, not a ufunc: float64 for float32 input
    return special().polygamma(n, x).astype(np.result_type(x, np.float32))


def _polygamma_rule(n, g):
    return (g * F.polygamma(n.args[0], n=n.attrs["n"] + 1),)


def _polygamma_examples(rng):
    return [([rng.uniform(0.5, 3.0, size=s)], {"n": k}) for k, s in ((0, ()), (1, (3, 4)),
                                                                        (2, (2,)))]


register(Op(
    name="polygamma", signature=sig("=n", "x", n=0), prepare=_polygamma_prepare,
    infer=_float, impl=_polygamma, backprop=_polygamma_rule,
    forward=elementwise(_polygamma_rule), elementwise=True, examples=_polygamma_examples,
    doc="the n-th derivative of digamma (n a static non-negative int)",
))
binary("betaln", _scipy("betaln"),
       lambda n, g: (g * (F.digamma(n.args[0]) - F.digamma(n.args[0] + n.args[1])),
                     g * (F.digamma(n.args[1]) - F.digamma(n.args[0] + n.args[1]))),
       infer=_float_binary("betaln"), domain=(0.5, 3.0),
       sympy=lambda sp, a, b: sp.log(sp.Abs(sp.gamma(a) * sp.gamma(b) / sp.gamma(a + b))),
       doc="log |B(a, b)|, the log of the beta function")

# -- x log y --------------------------------------------------------------------------------


def _xlog_rule(log_of, shift: float):
    def rule(n, g):
        x, y = n.args
        # 0 where x == 0; the divisor there is 1, so no 0/0 reaches a higher derivative
        dy = where_zero(x == 0, x / F.where(x == 0, 1.0, y + shift)) if n.needs(1) else None
        return (g * log_of(y) if n.needs(0) else None, None if dy is None else g * dy)

    return rule


binary("xlogy", _scipy("xlogy"), _xlog_rule(F.log, 0.0), infer=_float_binary("xlogy"),
       domain=(0.2, 3.0),
       sympy=lambda sp, x, y: x * sp.log(y), doc="x * log(y), 0 where x == 0")
binary("xlog1py", _scipy("xlog1py"), _xlog_rule(F.log1p, 1.0),
       infer=_float_binary("xlog1py"), domain=(0.2, 3.0),
       sympy=lambda sp, x, y: x * sp.log(1 + y), doc="x * log1p(y), 0 where x == 0")

# -- Bessel functions and sinc ----------------------------------------------------------------


unary("i0", _scipy("i0"), lambda n, g: (g * F.i1(n.args[0]),), domain=(-3.0, 3.0),
      sympy=lambda sp, x: sp.besseli(0, x), doc="the modified Bessel function I0")
unary("i1", _scipy("i1"),
      lambda n, g: (g * (0.5 * (F.i0(n.args[0]) + F.iv(2.0, n.args[0]))),),
      domain=(-3.0, 3.0), sympy=lambda sp, x: sp.besseli(1, x),
      doc="the modified Bessel function I1")
unary("i0e", _scipy("i0e"),
      lambda n, g: (g * (F.i1e(n.args[0]) - F.sign(n.args[0]) * n.out),), domain=(-3.0, 3.0),
      sympy=lambda sp, x: sp.exp(-sp.Abs(x)) * sp.besseli(0, x),
      doc="exp(-|x|) i0(x), without overflow")
unary("i1e", _scipy("i1e"),
      lambda n, g: (g * (0.5 * (F.i0e(n.args[0]) + F.ive(2.0, n.args[0]))
                         - F.sign(n.args[0]) * n.out),),
      domain=(-3.0, 3.0), sympy=lambda sp, x: sp.exp(-sp.Abs(x)) * sp.besseli(1, x),
      doc="exp(-|x|) i1(x), without overflow")


# Bessel functions of the first and second kinds and the modified ones (DLMF 10.6, 10.29,
# 10.51): J0' = -J1, J1' = J0 - J1/x (1/2 at 0), Y0' = -Y1, Y1' = Y0 - Y1/x, K0' = -K1,
# K1' = -K0 - K1/x; the scaled k0e = e^x K0 and k1e = e^x K1 add their own value.
unary("j0", _scipy("j0"), lambda n, g: (-(g * F.j1(n.args[0])),), domain=(-8.0, 8.0),
      sympy=lambda sp, x: sp.besselj(0, x), doc="the Bessel function of the first kind J0")
unary("j1", _scipy("j1"),
      lambda n, g: (g * (0.5 * (F.j0(n.args[0]) - F.jv(2.0, n.args[0]))),),
      domain=(-8.0, 8.0), sympy=lambda sp, x: sp.besselj(1, x),
      doc="the Bessel function of the first kind J1")
unary("y0", _scipy("y0"), lambda n, g: (-(g * F.y1(n.args[0])),), domain=(0.3, 8.0),
      sympy=lambda sp, x: sp.bessely(0, x), doc="the Bessel function of the second kind Y0")
unary("y1", _scipy("y1"), lambda n, g: (g * (F.y0(n.args[0]) - n.out / n.args[0]),),
      domain=(0.3, 8.0), sympy=lambda sp, x: sp.bessely(1, x),
      doc="the Bessel function of the second kind Y1")
unary("k0", _scipy("k0"), lambda n, g: (-(g * F.k1(n.args[0])),), domain=(0.2, 4.0),
      sympy=lambda sp, x: sp.besselk(0, x), doc="the modified Bessel function K0")
unary("k1", _scipy("k1"), lambda n, g: (-(g * (F.k0(n.args[0]) + n.out / n.args[0])),),
      domain=(0.2, 4.0), sympy=lambda sp, x: sp.besselk(1, x),
      doc="the modified Bessel function K1")
unary("k0e", _scipy("k0e"), lambda n, g: (g * (n.out - F.k1e(n.args[0])),), domain=(0.2, 4.0),
      sympy=lambda sp, x: sp.exp(x) * sp.besselk(0, x), doc="exp(x) k0(x), without underflow")
unary("k1e", _scipy("k1e"),
      lambda n, g: (g * (n.out - F.k0e(n.args[0]) - n.out / n.args[0]),), domain=(0.2, 4.0),
      sympy=lambda sp, x: sp.exp(x) * sp.besselk(1, x), doc="exp(x) k1(x), without underflow")


def _no_order_derivative(call: str):
    """Refuse the order's contribution: a Bessel function's derivative in its order has no
    closed form in these functions."""
    raise DifferentiationError(
        f"scipy.special.{call}: the derivative with respect to the order v is not "
        f"implemented (it has no closed form in the Bessel functions): differentiate with "
        f"respect to x only, or wrap the order in symgrad.stop_gradient(v) to hold it "
        f"constant")


def _bessel_rule(name: str, combine):
    """The rule of ``name(v, x)`` by its recurrence: ``combine(f(v-1), f(v+1), f(v), x)``."""
    def rule(n, g):
        if n.needs(0):
            _no_order_derivative(f"{name}(v, x)")
        v, x = _real(n.args[0]), n.args[1]
        fn = getattr(F, name)
        d = combine(fn(v - 1.0, x), fn(v + 1.0, x), n.out, x)
        return (None, g * (d if d.dtype == n.out.dtype else F.astype(d, n.out.dtype)))

    return rule


def _order_and_x_examples(lo: float, hi: float):
    """Integer orders (constants: their derivative is refused), negative ones included,
    and float ``x`` in ``(lo, hi)``, over broadcasting shapes."""
    def examples(rng):
        return [([rng.integers(-2, 4, size=sv), rng.uniform(lo, hi, size=sx)], {})
                for sv, sx in (((), ()), ((3, 1), (1, 4)), ((4,), (3, 4)))]

    return examples


for _name, _combine, _lo, _hi, _sym, _doc in (
        ("jv", lambda a, b, y, x: 0.5 * (a - b), 0.2, 8.0,
         lambda sp, v, x: sp.besselj(v, x), "the Bessel function of the first kind J_v(x)"),
        ("yv", lambda a, b, y, x: 0.5 * (a - b), 0.3, 8.0,
         lambda sp, v, x: sp.bessely(v, x), "the Bessel function of the second kind Y_v(x)"),
        ("yn", lambda a, b, y, x: 0.5 * (a - b), 0.3, 8.0,
         lambda sp, v, x: sp.bessely(v, x),
         "the Bessel function of the second kind Y_n(x) of an integer order n (yv's values, "
         "by SciPy's integer-order algorithm)"),
        ("iv", lambda a, b, y, x: 0.5 * (a + b), -4.0, 4.0,
         lambda sp, v, x: sp.besseli(v, x), "the modified Bessel function I_v(x)"),
        ("ive", lambda a, b, y, x: 0.5 * (a + b) - F.sign(x) * y, -4.0, 4.0,
         lambda sp, v, x: sp.exp(-sp.Abs(x)) * sp.besseli(v, x),
         "exp(-|x|) iv(v, x), without overflow"),
        ("kv", lambda a, b, y, x: -0.5 * (a + b), 0.2, 4.0,
         lambda sp, v, x: sp.besselk(v, x), "the modified Bessel function K_v(x)"),
        ("kve", lambda a, b, y, x: y - 0.5 * (a + b), 0.2, 4.0,
         lambda sp, v, x: sp.exp(x) * sp.besselk(v, x), "exp(x) kv(v, x), without underflow")):
    _rule = _bessel_rule(_name, _combine)
    register(Op(
        name=_name, signature=sig("v", "x"), infer=_float_binary(_name), impl=_scipy(_name),
        backprop=_rule, forward=elementwise(_rule), elementwise=True, sympy=_sym,
        examples=_order_and_x_examples(_lo, _hi), doc=_doc + " (differentiable in x only)",
    ))

def _sinc_rule(n, g):
    # (cos(pi x) - sinc(x)) / x cancels near 0: there its series, -pi^2 x/3 + pi^4 x^3/30
    # - pi^6 x^5/840 (the next term is below 3e-15 for |x| < 0.01)
    x = n.args[0]
    x2 = F.square(x)
    series = x * (-_PI2 / 3.0 + x2 * (_PI2 ** 2 / 30.0 - x2 * (_PI2 ** 3 / 840.0)))
    exact = (F.cos(math.pi * x) - n.out) / F.where(F.abs(x) < 0.01, 1.0, x)
    return (g * F.where(F.abs(x) < 0.01, series, exact),)


unary("sinc", np.sinc, _sinc_rule,
      sympy=lambda sp, x: sp.sin(sp.pi * x) / (sp.pi * x),
      doc="NumPy's normalised sinc: sin(pi x) / (pi x), 1 at 0")


# -- the incomplete gamma and beta functions, Student's t CDF ---------------------------------


def _no_shape_derivative(call: str, params: str):
    """Refuse a shape parameter's contribution: its derivative has no closed form."""
    first = params.split(",")[0]
    raise DifferentiationError(
        f"scipy.special.{call}: the derivative with respect to {params} (shape parameters) "
        f"has no closed form and is not implemented: differentiate with respect to x only, "
        f"or wrap the parameter in symgrad.stop_gradient({first}) to hold it constant")


def _real(e):
    """``e`` as floats (an integer shape parameter: its logs and gammas are float code)."""
    return e if is_float(e.dtype) else F.astype(e, float_dtype(e.dtype))


def _density(log_dens, n):
    """``exp(log_dens)`` in the output's dtype (float64 shape parameters beside float32
    ``x`` must not widen the derivative)."""
    dens = F.exp(log_dens)
    return dens if dens.dtype == n.out.dtype else F.astype(dens, n.out.dtype)


def _incomplete_gamma_rule(sign: float, call: str):
    def rule(n, g):
        if n.needs(0):
            _no_shape_derivative(call, "a")
        a, x = _real(n.args[0]), n.args[1]
        # x^(a-1) e^-x / Gamma(a) in log space: xlogy makes a = 1, x = 0 give 1, not NaN
        dens = _density(F.xlogy(a - 1.0, x) - x - F.gammaln(a), n)
        return (None, g * dens if sign > 0 else -(g * dens))

    return rule


def _betainc_rule(n, g):
    if n.needs(0) or n.needs(1):
        _no_shape_derivative("betainc(a, b, x)", "a, b")
    a, b, x = _real(n.args[0]), _real(n.args[1]), n.args[2]
    dens = _density(F.xlogy(a - 1.0, x) + F.xlog1py(b - 1.0, -x) - F.betaln(a, b), n)
    return (None, None, g * dens)


def _stdtr_rule(n, g):
    if n.needs(0):
        _no_shape_derivative("stdtr(df, t)", "df")
    df, t = _real(n.args[0]), n.args[1]
    # the t density: Gamma((df+1)/2) / (Gamma(df/2) sqrt(df pi)) = 1 / (B(df/2, 1/2) sqrt(df))
    log_dens = -F.betaln(0.5 * df, 0.5) - 0.5 * F.log(df) \
        - (0.5 * df + 0.5) * F.log1p(F.square(t) / df)
    return (None, g * _density(log_dens, n))


def _shape_and_x_examples(count: int, lo: float, hi: float):
    """Cases with integer shape parameters (constants: their derivative is refused) and
    float ``x`` in ``(lo, hi)``, over broadcasting shapes."""
    def examples(rng):
        out = []
        for shapes in (((), ()), ((3, 1), (1, 4)), ((4,), (3, 4))):
            params = [rng.integers(1, 6, size=shapes[0]) for _ in range(count)]
            out.append(([*params, rng.uniform(lo, hi, size=shapes[1])], {}))
        return out

    return examples


def _float_nary(name: str):
    def infer(shapes, dtypes, attrs):
        return broadcast(name, *shapes), float_dtype(result_dtype(*dtypes))

    return infer


for _name, _sign, _doc in (
        ("gammainc", 1.0, "the regularised lower incomplete gamma function P(a, x)"),
        ("gammaincc", -1.0, "the regularised upper incomplete gamma function Q(a, x) = "
                            "1 - P(a, x), accurate where P is near 1")):
    _rule = _incomplete_gamma_rule(_sign, f"{_name}(a, x)")
    register(Op(
        name=_name, signature=sig("a", "x"), infer=_float_nary(_name), impl=_scipy(_name),
        backprop=_rule, forward=elementwise(_rule), elementwise=True,
        examples=_shape_and_x_examples(1, 0.05, 4.0), doc=_doc,
    ))
register(Op(
    name="betainc", signature=sig("a", "b", "x"), infer=_float_nary("betainc"),
    impl=_scipy("betainc"), backprop=_betainc_rule, forward=elementwise(_betainc_rule),
    elementwise=True, examples=_shape_and_x_examples(2, 0.05, 0.95),
    doc="the regularised incomplete beta function I_x(a, b)",
))
register(Op(
    name="stdtr", signature=sig("df", "t"), infer=_float_nary("stdtr"), impl=_scipy("stdtr"),
    backprop=_stdtr_rule, forward=elementwise(_stdtr_rule), elementwise=True,
    examples=_shape_and_x_examples(1, -4.0, 4.0),
    doc="Student's t CDF with df degrees of freedom, P(T <= t)",
))
