"""More of NumPy's elementwise functions: inverse trigonometric and hyperbolic functions,
``exp2 log2 log10 cbrt reciprocal``, angle conversions, rounding (zero derivative),
predicates, logical operators, two-argument functions (``arctan2 hypot logaddexp
logaddexp2 mod fmod fmax fmin copysign float_power``) and ``astype``.

Piecewise-constant functions (``floor ceil rint trunc round floor_divide heaviside``) have
a zero derivative: they are registered as not differentiable, so no gradient flows through
them, which is their derivative almost everywhere. ``mod``'s derivative is NumPy's:
``d/dx = 1``, ``d/dy = -floor(x / y)``.

>>> import numpy as np, symgrad as sg
>>> x, y = sg.var("x"), sg.var("y")
>>> sg.evaluate(sg.grad(sg.arctan2(y, x), [x, y]), {"x": 1.0, "y": 1.0})
[-0.5, 0.5]
"""

from __future__ import annotations

import math

import numpy as np

from ..base.describe import describe
from ..base.errors import ShapeError
from ..ir.expr import F
from ..ir.op import Op, register, sig
from ..ir.shapes import DTYPES, FLOATS, broadcast, is_complex, is_float, real_dtype, result_dtype
from . import series
from .elementwise import binary, compare, split_ties, unary
from .tangent import first

_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _inverse_trig(n, s, K, sign, root=True, negated=False):
    """Taylor rule of ``arcsin`` (``sign=-1``), ``arcsinh`` (``1``), ``arctan`` and ``arctanh``
    (``root=False``), ``arccos`` (``negated``): ``y' = g u'`` with ``g = 1 / w`` (or ``1 /
    sqrt(w)``), ``w = 1 + sign u^2``."""
    u = s[0]
    w = series.shifted_square(u, 1.0, sign, K - 1)
    if root:
        w = series.root(w, F.sqrt(w[0]), K - 1)
    g = series.inverse(w, 1.0 / w[0], K - 1)
    if negated:
        g = [-e if e is not None else None for e in g]
    return series.through(u, n.out, g, K)



def _logical(shapes, dtypes, attrs):
    return broadcast("logical", *shapes), "bool"


def _predicate(shapes, dtypes, attrs):
    return shapes[0], "bool"


def _bool_examples(arity: int):
    def examples(rng):
        shapes = [(3, 4), (1, 4)][:arity] if arity == 2 else [(3, 4)]
        return [([rng.random(s) < 0.5 for s in shapes], {})]

    return examples


# -- inverse trigonometric and hyperbolic, exponents and logarithms -------------------------

unary("arcsin", np.arcsin, lambda n, g: (g / F.sqrt(1.0 - n.args[0] ** 2),), sympy="asin",
      domain=(-0.9, 0.9), aliases=("asin",), taylor=lambda n, s, K: _inverse_trig(n, s, K, -1),
      complex=True)
unary("arccos", np.arccos, lambda n, g: (-(g / F.sqrt(1.0 - n.args[0] ** 2)),), sympy="acos",
      domain=(-0.9, 0.9), aliases=("acos",),
      taylor=lambda n, s, K: _inverse_trig(n, s, K, -1, negated=True), complex=True)
unary("arctan", np.arctan, lambda n, g: (g / (1.0 + n.args[0] ** 2),), sympy="atan",
      aliases=("atan",), taylor=lambda n, s, K: _inverse_trig(n, s, K, 1, root=False), complex=True)
unary("arcsinh", np.arcsinh, lambda n, g: (g / F.sqrt(n.args[0] ** 2 + 1.0),), sympy="asinh",
      aliases=("asinh",), taylor=lambda n, s, K: _inverse_trig(n, s, K, 1), complex=True)
def _arccosh_rule(n, g):
    x = n.args[0]
    if is_complex(x.data.dtype):  # the principal branch: sqrt(z - 1) sqrt(z + 1), not
        return (g / (F.sqrt(x - 1.0) * F.sqrt(x + 1.0)),)  # sqrt(z**2 - 1) (Re z < 0)
    return (g / F.sqrt((x - 1.0) * (x + 1.0)),)


unary("arccosh", np.arccosh, _arccosh_rule, sympy="acosh",
      domain=(1.2, 3.0), aliases=("acosh",), complex=True)
unary("arctanh", np.arctanh, lambda n, g: (g / (1.0 - n.args[0] ** 2),), sympy="atanh",
      domain=(-0.9, 0.9), aliases=("atanh",),
      taylor=lambda n, s, K: _inverse_trig(n, s, K, -1, root=False), complex=True)
unary("exp2", np.exp2, lambda n, g: (g * (n.out * _LN2),), sympy=lambda sp, x: 2**x,
      taylor=lambda n, s, K: series.chain(s[0], n.out, lambda y, m: _LN2 * y[m], K), complex=True)
unary("log2", np.log2, lambda n, g: (g / (n.args[0] * _LN2),),
      sympy=lambda sp, x: sp.log(x, 2), domain=(0.2, 3.0),
      taylor=lambda n, s, K: series.times(series.logarithm(s[0], n.out, n.args[0], K),
                                          1.0 / _LN2), complex=True)
unary("log10", np.log10, lambda n, g: (g / (n.args[0] * _LN10),),
      sympy=lambda sp, x: sp.log(x, 10), domain=(0.2, 3.0),
      taylor=lambda n, s, K: series.times(series.logarithm(s[0], n.out, n.args[0], K),
                                          1.0 / _LN10), complex=True)
unary("cbrt", np.cbrt, lambda n, g: (g / (3.0 * n.out * n.out),),
      sympy=lambda sp, x: sp.real_root(x, 3),  # sympy's cbrt is the principal (complex) root
      domain=(0.2, 3.0), doc="cube root (real, also of negative numbers); cbrt'(0) is inf")
unary("reciprocal", np.reciprocal, lambda n, g: (-(g * (n.out * n.out)),), keep_dtype=True,
      sympy=lambda sp, x: 1 / x, domain=(0.5, 2.0), doc="1 / x (integer division for ints)",
      taylor=lambda n, s, K: series.inverse(s[0], n.out, K), complex=True)
unary("deg2rad", np.deg2rad, lambda n, g: (g * (math.pi / 180.0),),
      sympy=lambda sp, x: x * sp.pi / 180, aliases=("radians",), taylor=series.piecewise_linear)
unary("rad2deg", np.rad2deg, lambda n, g: (g * (180.0 / math.pi),),
      sympy=lambda sp, x: x * 180 / sp.pi, aliases=("degrees",), taylor=series.piecewise_linear)

# -- rounding: zero derivative ------------------------------------------------------------

for _name, _fn, _sym in (("floor", np.floor, "floor"), ("ceil", np.ceil, "ceiling"),
                         ("trunc", np.trunc, None), ("rint", np.rint, None)):
    unary(_name, _fn, None, keep_dtype=_name != "rint", sympy=_sym, differentiable=False,
          doc=f"{_name}; its derivative is 0 (no gradient flows through it)")


def _round_prepare(shapes, dtypes, attrs):
    d = attrs["decimals"]
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise ShapeError(f"round: decimals must be an int, got {describe(d)}")
    return {"decimals": int(d)}


register(Op(
    name="round", signature=sig("x", "=decimals", decimals=0), prepare=_round_prepare,
    infer=lambda s, d, a: (s[0], d[0]), impl=lambda x, decimals: np.round(x, decimals),
    elementwise=True, differentiable=False, aliases=("around",),
    doc="round half to even to the given decimals; its derivative is 0",
))

# -- predicates and logic -----------------------------------------------------------------

for _name, _fn in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
                   ("signbit", np.signbit)):
    register(Op(name=_name, infer=_predicate, impl=_fn, elementwise=True,
                differentiable=False, doc=f"elementwise {_name} (boolean)",
                complex=_name != "signbit"))
register(Op(name="logical_not", infer=_predicate, impl=np.logical_not, elementwise=True,
            differentiable=False, examples=_bool_examples(1), doc="elementwise not"))
for _name, _fn in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
                   ("logical_xor", np.logical_xor)):
    register(Op(name=_name, signature=sig("x", "y"), infer=_logical, impl=_fn,
                elementwise=True, differentiable=False, examples=_bool_examples(2),
                doc=f"elementwise {_name[8:]} of truth values"))

# -- two arguments --------------------------------------------------------------------------


def _atan2_rule(n, g):
    y, x = n.args
    r2 = x * x + y * y
    return g * (x / r2), -(g * (y / r2))


def _float_infer(shapes, dtypes, attrs):
    dtype = result_dtype(*dtypes)
    return broadcast("binary", *shapes), dtype if dtype in FLOATS else "float64"


binary("arctan2", np.arctan2, _atan2_rule, infer=_float_infer, sympy="atan2",
       domain=(0.5, 2.0), doc="the angle of the point (x2, x1): arctan2(x1, x2)")
binary("hypot", np.hypot,
       lambda n, g: (g * (n.args[0] / n.out), g * (n.args[1] / n.out)), infer=_float_infer,
       sympy=lambda sp, x, y: sp.sqrt(x**2 + y**2), domain=(0.5, 2.0),
       doc="sqrt(x1**2 + x2**2) without overflow or underflow")
binary("logaddexp", np.logaddexp,
       lambda n, g: (g * F.exp(n.args[0] - n.out), g * F.exp(n.args[1] - n.out)),
       infer=_float_infer, sympy=lambda sp, x, y: sp.log(sp.exp(x) + sp.exp(y)),
       doc="log(exp(x1) + exp(x2)) computed stably")
binary("logaddexp2", np.logaddexp2,
       lambda n, g: (g * F.exp2(n.args[0] - n.out), g * F.exp2(n.args[1] - n.out)),
       infer=_float_infer, sympy=lambda sp, x, y: sp.log(2**x + 2**y, 2),
       doc="log2(2**x1 + 2**x2) computed stably")
binary("mod", np.remainder,
       lambda n, g: (g, -(g * F.floor_divide(n.args[0], n.args[1]))),
       sympy="Mod", domain=(0.5, 2.0), aliases=("remainder",),
       doc="x1 - floor(x1 / x2) * x2, with the sign of x2 (NumPy's remainder)")
binary("fmod", np.fmod, lambda n, g: (g, -(g * F.trunc(n.args[0] / n.args[1]))),
       domain=(0.5, 2.0), doc="x1 - trunc(x1 / x2) * x2, with the sign of x1 (C's fmod)")
binary("floor_divide", np.floor_divide, None, differentiable=False, domain=(0.5, 2.0),
       doc="floor(x1 / x2); its derivative is 0")
binary("fmax", np.fmax,
       lambda n, g: split_ties(g, (n.args[0] > n.args[1]) | F.isnan(n.args[1]),
                           n.args[0] == n.args[1]),
       doc="maximum that ignores NaN; ties split the gradient equally",
       taylor=series.piecewise_linear, complex=True)
binary("fmin", np.fmin,
       lambda n, g: split_ties(g, (n.args[0] < n.args[1]) | F.isnan(n.args[1]),
                           n.args[0] == n.args[1]),
       doc="minimum that ignores NaN; ties split the gradient equally",
       taylor=series.piecewise_linear, complex=True)
binary("copysign", np.copysign,
       lambda n, g: (g * (F.copysign(1.0, n.args[0]) * F.copysign(1.0, n.args[1])), None),
       infer=_float_infer, domain=(0.5, 2.0),
       doc="|x1| with the sign of x2; no gradient flows to x2")
binary("float_power", np.float_power,
       lambda n, g: (g * (n.args[1] * n.args[0] ** (n.args[1] - 1.0)),
                     g * F.where(n.args[0] == 0, 0.0, n.out * F.log(n.args[0]))),
       infer=lambda s, d, a: (broadcast("float_power", *s), "float64"), domain=(0.5, 2.0),
       doc="x1 ** x2 computed in float64")
binary("heaviside", np.heaviside, None, infer=_float_infer, differentiable=False,
       doc="0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0; its derivative is 0")

# -- dtype conversion -----------------------------------------------------------------------


def _astype_prepare(shapes, dtypes, attrs):
    try:
        name = np.dtype(attrs["dtype"]).name
    except TypeError:
        name = None
    if name not in DTYPES:
        raise ShapeError(f"astype: dtype must be one of {', '.join(DTYPES)}, "
                         f"got {attrs['dtype']!r}")
    return {"dtype": name}


def _astype_rule(n, g):
    source, target = n.args[0].data.dtype, n.dtype
    if not (is_float(source) and is_float(target)):
        return (None,)
    if is_complex(g.data.dtype) and not is_complex(source):  # complex -> real: the real part
        return (F.astype(F.real(g), source) if real_dtype(g.data.dtype) != source
                else F.real(g),)
    return (F.astype(g, source),)


def _astype_forward(n, t):
    if _astype_rule(n, t)[0] is None:
        return None
    if is_complex(t.data.dtype) and not is_complex(n.dtype):  # NumPy drops the imaginary part
        t = F.real(t)
    return F.astype(t, n.dtype)


register(Op(
    name="astype", signature=sig("x", "=dtype:str", dtype=None), prepare=_astype_prepare,
    infer=lambda s, d, a: (s[0], a["dtype"]), impl=lambda x, dtype: np.asarray(x).astype(dtype),
    backprop=_astype_rule, elementwise=True, taylor=series.piecewise_linear,
    forward=first(_astype_forward), complex=True,
    # float64 cases only: the registry's gradient checks need float64 (tests/test_dtypes.py
    # checks the float32 conversions)
    examples=lambda rng: [([rng.standard_normal((2, 3))], {"dtype": "float64"}),
                          ([rng.integers(-3, 3, size=4)], {"dtype": "float64"}),
                          ([rng.standard_normal(4)], {"dtype": "int64"}),
                          ([rng.standard_normal((2, 3))], {"dtype": "complex128"}),
                          ([rng.standard_normal(4) + 1j * rng.standard_normal(4)],
                           {"dtype": "complex128"})],
    doc="x converted to dtype; gradients flow between float dtypes only",
))

del _name, _fn, _sym, compare
