"""``symgrad.scipy.special``: SciPy's special functions on symbolic values.

Names, signatures and meanings are :mod:`scipy.special`'s, so code written for it traces as
it is (``from symgrad.scipy.special import ndtr`` in place of ``from scipy.special import
ndtr``). SciPy's ufuncs applied to an Expr (``scipy.special.erf(x)``) arrive here through
the array protocol too. Each function is an op of :mod:`symgrad.ops.special` (differentiable
to any order, in every backend's table) or is built from ops (``expit``, ``logsumexp``,
``softmax``, ``beta``). SciPy itself is needed to evaluate them, not to trace them. The
incomplete gamma and beta functions and ``stdtr`` are differentiable in ``x`` (``t``) only:
a derivative in a shape parameter raises :class:`~symgrad.errors.DifferentiationError`.

>>> import symgrad as sg
>>> from symgrad.scipy.special import ndtr
>>> x = sg.var("x")
>>> round(float(sg.evaluate(sg.grad(ndtr(x), x), {"x": 0.0})), 12)  # the normal density
0.398942280401
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as _numpy  # noqa: F401  (the ops and NumPy's names, registered first)
from ..base.errors import UnsupportedError
from ..frontend.numpy_define import as_expr, define, no_out
from ..ir.expr import Expr, F
from ..ir.op import FUNCTIONS, REGISTRY

__all__ = [
    "betainc", "betaln", "beta", "digamma", "erf", "erfc", "erfcinv", "erfcx", "erfinv",
    "expit", "gamma", "gammainc", "gammaincc", "gammaln", "gammasgn", "i0", "i0e", "i1",
    "i1e", "iv", "ive", "j0", "j1", "jn", "jv", "k0", "k0e", "k1", "k1e", "kv", "kve",
    "log_expit", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr",
    "ndtri", "polygamma", "psi", "rgamma", "sinc", "softmax", "stdtr", "xlog1py", "xlogy",
    "y0", "y1", "yn", "yv",
]

_PREFIX = "scipy.special."


def _ufunc(name: str, op: str, arity: int, params: tuple[str, ...] = ("x", "y")):
    """SciPy's ufunc ``name`` as op ``op``, with the ufunc keywords (``out=`` refused)."""
    params = params[:arity]

    @define(_PREFIX + name, *params, out=None, where=True, dtype=None, casting="same_kind",
            order="K", subok=True, strings=("dtype",))
    def fn(*args: Any, out: Any = None, where: Any = True, dtype: Any = None,
           casting: str = "same_kind", order: str = "K", subok: bool = True) -> Expr:
        no_out(_PREFIX + name, out, where)
        if dtype is not None:
            args = tuple(F.astype(as_expr(a), np.dtype(dtype).name) for a in args)
        return getattr(F, op)(*args)

    fn.__doc__ = f"scipy.special.{name}: {REGISTRY[op].doc or op}"
    return fn


erf = _ufunc("erf", "erf", 1)
erfc = _ufunc("erfc", "erfc", 1)
erfinv = _ufunc("erfinv", "erfinv", 1)
erfcinv = _ufunc("erfcinv", "erfcinv", 1)
erfcx = _ufunc("erfcx", "erfcx", 1)
ndtr = _ufunc("ndtr", "ndtr", 1)
ndtri = _ufunc("ndtri", "ndtri", 1)
log_ndtr = _ufunc("log_ndtr", "log_ndtr", 1)
logit = _ufunc("logit", "logit", 1)
gamma = _ufunc("gamma", "gamma", 1)
gammaln = _ufunc("gammaln", "gammaln", 1)
digamma = _ufunc("digamma", "digamma", 1)
psi = _ufunc("psi", "digamma", 1)
i0 = _ufunc("i0", "i0", 1)
i1 = _ufunc("i1", "i1", 1)
i0e = _ufunc("i0e", "i0e", 1)
i1e = _ufunc("i1e", "i1e", 1)
sinc = _ufunc("sinc", "sinc", 1)
betaln = _ufunc("betaln", "betaln", 2)
xlogy = _ufunc("xlogy", "xlogy", 2)
xlog1py = _ufunc("xlog1py", "xlog1py", 2)
expit = _ufunc("expit", "sigmoid", 1)
# differentiable in x only: a shape parameter's derivative raises DifferentiationError
gammainc = _ufunc("gammainc", "gammainc", 2, ("a", "x"))
gammaincc = _ufunc("gammaincc", "gammaincc", 2, ("a", "x"))
betainc = _ufunc("betainc", "betainc", 3, ("a", "b", "x"))
stdtr = _ufunc("stdtr", "stdtr", 2, ("df", "t"))
# Bessel functions: the ones of an order v are differentiable in x only (DifferentiationError)
j0 = _ufunc("j0", "j0", 1)
j1 = _ufunc("j1", "j1", 1)
y0 = _ufunc("y0", "y0", 1)
y1 = _ufunc("y1", "y1", 1)
k0 = _ufunc("k0", "k0", 1)
k1 = _ufunc("k1", "k1", 1)
k0e = _ufunc("k0e", "k0e", 1)
k1e = _ufunc("k1e", "k1e", 1)
jv = _ufunc("jv", "jv", 2, ("v", "x"))
jn = jv  # SciPy's jn is jv
yv = _ufunc("yv", "yv", 2, ("v", "x"))
yn = _ufunc("yn", "yn", 2, ("n", "x"))
iv = _ufunc("iv", "iv", 2, ("v", "x"))
ive = _ufunc("ive", "ive", 2, ("v", "x"))
kv = _ufunc("kv", "kv", 2, ("v", "x"))
kve = _ufunc("kve", "kve", 2, ("v", "x"))


@define(_PREFIX + "log_expit", "x", out=None, where=True)
def log_expit(x: Any, out: Any = None, where: Any = True) -> Expr:
    """scipy.special.log_expit: log(expit(x)) = -softplus(-x), finite for large |x|."""
    no_out(_PREFIX + "log_expit", out, where)
    return -F.softplus(-as_expr(x))


@define(_PREFIX + "polygamma", "=n", "x", n=0)
def polygamma(n: Any, x: Any) -> Expr:
    """scipy.special.polygamma(n, x): the n-th derivative of digamma; ``n`` a Python int."""
    if isinstance(n, Expr) or np.ndim(n) != 0 or np.asarray(n).dtype.kind not in "iu":
        raise UnsupportedError(f"scipy.special.polygamma: the order n must be one int (not a "
                               f"symbolic value or an array), got {n!r}")
    return F.polygamma(x, n=int(n))


@define(_PREFIX + "beta", "a", "b", out=None, where=True)
def beta(a: Any, b: Any, out: Any = None, where: Any = True) -> Expr:
    """scipy.special.beta: gamma(a) gamma(b) / gamma(a + b), as exp(betaln) with its sign
    (so it does not overflow where the gammas do)."""
    no_out(_PREFIX + "beta", out, where)
    a, b = as_expr(a), as_expr(b)
    sign = F.sign(F.gamma(a)) * F.sign(F.gamma(b)) * F.sign(F.gamma(a + b))
    return sign * F.exp(F.betaln(a, b))


@define(_PREFIX + "rgamma", "x", out=None, where=True)
def rgamma(x: Any, out: Any = None, where: Any = True) -> Expr:
    """scipy.special.rgamma: 1 / gamma(x), 0 at the poles (x = 0, -1, -2, ...), written
    sign * exp(-gammaln(x)) (SciPy's gamma is NaN at the negative poles); its derivative
    -digamma(x) rgamma(x) is NaN exactly at a pole, where digamma has none."""
    no_out(_PREFIX + "rgamma", out, where)
    x = as_expr(x)
    sign = F.where((x > 0) | (F.mod(F.floor(x), 2.0) == 0), 1.0, -1.0)
    return sign * F.exp(-F.gammaln(x))


@define(_PREFIX + "gammasgn", "x", out=None, where=True)
def gammasgn(x: Any, out: Any = None, where: Any = True) -> Expr:
    """scipy.special.gammasgn: the sign of gamma(x) (piecewise constant: derivative 0)."""
    no_out(_PREFIX + "gammasgn", out, where)
    return F.sign(F.gamma(as_expr(x)))


@define(_PREFIX + "multigammaln", "a", "=d", d=1)
def multigammaln(a: Any, d: Any) -> Expr:
    """scipy.special.multigammaln(a, d): log of the multivariate gamma function,
    d (d - 1) / 4 log(pi) + sum_j gammaln(a - j / 2) for j < d; ``d`` a Python int. SciPy
    raises where a <= (d - 1) / 2; a symbolic ``a`` cannot be checked then: NaN there."""
    if isinstance(d, (bool, Expr)) or np.ndim(d) != 0 or np.asarray(d).dtype.kind not in "iu":
        raise UnsupportedError(f"scipy.special.multigammaln: d must be one int, got {d!r}")
    d, a = int(d), as_expr(a)
    total = d * (d - 1) / 4.0 * float(np.log(np.pi))
    for j in range(d):
        total = total + F.gammaln(a - 0.5 * j)
    return F.where(a > 0.5 * (d - 1), total, np.nan)


def _over_all(fn, x: Expr, axis: Any) -> Expr:
    """``fn`` along one axis, or over all elements (``axis=None``, SciPy's default)."""
    if axis is None:
        return F.reshape(fn(F.reshape(x, (-1,)), axis=-1), x.shape)
    if isinstance(axis, (tuple, list)):
        axes = tuple(a % x.ndim for a in axis)
        rest = [k for k in range(x.ndim) if k not in axes]
        moved = F.transpose(x, tuple(rest) + axes)
        flat = F.reshape(moved, moved.shape[:len(rest)] + (-1,))
        back = F.reshape(fn(flat, axis=-1), moved.shape)
        return F.transpose(back, tuple(np.argsort(rest + list(axes)).tolist()))
    return fn(x, axis=axis)


@define(_PREFIX + "softmax", "x", "=axis", axis=None)
def softmax(x: Any, axis: Any = None) -> Expr:
    """scipy.special.softmax(x, axis=None): over all elements unless ``axis`` is given."""
    return _over_all(F.softmax, as_expr(x), axis)


@define(_PREFIX + "log_softmax", "x", "=axis", axis=None)
def log_softmax(x: Any, axis: Any = None) -> Expr:
    """scipy.special.log_softmax(x, axis=None): over all elements unless ``axis`` is given."""
    return _over_all(F.log_softmax, as_expr(x), axis)


@define(_PREFIX + "logsumexp", "a", "=axis", "?b", "=keepdims", "=return_sign", axis=None,
        keepdims=False, return_sign=False)
def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False) -> Expr:
    """scipy.special.logsumexp: log(sum(b * exp(a))) over ``axis``; ``b`` (weights) must be
    non-negative (``return_sign=True`` is not supported)."""
    if return_sign:
        raise UnsupportedError("scipy.special.logsumexp(return_sign=True) is not supported: "
                               "use non-negative weights b")
    a = as_expr(a)
    if b is not None:  # a weight of 0 drops its term, as in SciPy (inf * 0 is not NaN here)
        b = as_expr(b)
        a = F.where(b == 0.0, float("-inf"), a + F.log(F.where(b == 0.0, 1.0, b)))
    return F.logsumexp(a, axis=axis, keepdims=keepdims)


def __getattr__(name: str) -> Any:
    fn = FUNCTIONS.get(_PREFIX + name)
    if fn is None:
        raise AttributeError(f"symgrad.scipy.special has no {name!r}: it is not covered "
                             f"(symgrad.scipy.special.__all__ lists what is)")
    return fn

