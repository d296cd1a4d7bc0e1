"""``symgrad.scipy.stats``: SciPy's distributions on symbolic values, built from ops.

``norm`` (``logpdf pdf cdf logcdf sf logsf ppf isf``), ``t``, ``gamma``, ``beta`` and
``chi2`` (``logpdf pdf cdf logcdf sf logsf``), ``poisson`` (``logpmf pmf cdf logcdf sf
logsf``), ``multivariate_normal`` (``logpdf pdf entropy``, ``allow_singular``) and
``dirichlet`` (``logpdf pdf``),
with SciPy's signatures (``norm.cdf(x, loc=0, scale=1)``, ``t.logpdf(x, df, loc=0,
scale=1)``, ...) and meanings: NaN where a parameter is out of range (``scale <= 0``),
``-inf`` log-density outside the support. Every argument may be symbolic, so derivatives
with respect to ``x``, ``loc`` and ``scale`` come too, and for the densities with respect to
the shape parameters; the CDFs of ``t``, ``gamma``, ``beta`` and ``chi2`` are the incomplete
beta and gamma functions, whose derivatives in a shape parameter (``df``, ``a``, ``b``) have
no closed form: asking for one raises :class:`~symgrad.errors.DifferentiationError`.
``logcdf``/``logsf`` take the logarithm of the smaller of ``cdf`` and ``sf`` (``log1p(-sf)``
where ``cdf > 1/2``), so they are accurate in both tails.
``scipy.stats.norm.cdf(x)`` on an Expr cannot be traced (SciPy converts its arguments to
arrays first); its error names the function here.

>>> import symgrad as sg
>>> from symgrad.scipy.stats import norm
>>> x = sg.var("x")
>>> round(float(sg.evaluate(sg.grad(norm.cdf(x, 1.0, 2.0), x), {"x": 1.0})), 12)
0.199471140201
"""

from __future__ import annotations

import math
import sys as _sys
from typing import Any

import numpy as np

from .. import numpy as _numpy  # noqa: F401  (the ops and NumPy's names, registered first)
from ..base.errors import ShapeError, UnsupportedError
from ..frontend.numpy_define import as_expr
from ..ir.expr import Expr, F

__all__ = ["beta", "chi2", "dirichlet", "gamma", "multivariate_normal", "norm", "poisson",
           "t"]

_LOG_2PI = math.log(2.0 * math.pi)


def _checked(value: Expr, ok: Any) -> Expr:
    """``value`` where the parameters are valid (``ok``), NaN elsewhere (SciPy's rule)."""
    return F.where(ok, value, math.nan)


def _log_prob(p: Expr, q: Expr) -> Expr:
    """log p for probabilities with p + q = 1: log p where p <= 1/2, log1p(-q) above, each
    branch on values it keeps finite (so neither sends NaN into the other's derivative)."""
    upper = p > 0.5
    return F.where(upper, F.log1p(-F.where(upper, q, 0.5)), F.log(F.where(upper, 0.5, p)))


class _Distribution:
    """A distribution of SciPy's: the methods it has here, and a message for the rest."""

    name = ""

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        have = ", ".join(m for m in dir(type(self)) if not m.startswith("_") and m != "name")
        raise AttributeError(f"symgrad.scipy.stats.{self.name} has no {attr!r} (it has "
                             f"{have})")

    def __repr__(self) -> str:
        return f"<symgrad.scipy.stats.{self.name}>"


class _Density(_Distribution):
    """A continuous distribution: ``pdf`` from its ``logpdf``."""

    def pdf(self, x: Any, *args: Any, **kwargs: Any) -> Expr:
        """The density: ``exp(logpdf(...))``, same arguments."""
        return F.exp(self.logpdf(x, *args, **kwargs))


class _Tails:
    """For a distribution whose ``_tails(x, *params)`` gives ``((cdf, sf), valid)``:
    ``cdf sf logcdf logsf`` with SciPy's signatures."""

    def cdf(self, x: Any, *args: Any, **kwargs: Any) -> Expr:
        """P(X <= x)."""
        (cdf, _), ok = self._tails(x, *args, **kwargs)
        return _checked(cdf, ok)

    def sf(self, x: Any, *args: Any, **kwargs: Any) -> Expr:
        """P(X > x), accurate in the upper tail."""
        (_, sf), ok = self._tails(x, *args, **kwargs)
        return _checked(sf, ok)

    def logcdf(self, x: Any, *args: Any, **kwargs: Any) -> Expr:
        """log P(X <= x), accurate in both tails."""
        (cdf, sf), ok = self._tails(x, *args, **kwargs)
        return _checked(_log_prob(cdf, sf), ok)

    def logsf(self, x: Any, *args: Any, **kwargs: Any) -> Expr:
        """log P(X > x), accurate in both tails."""
        (cdf, sf), ok = self._tails(x, *args, **kwargs)
        return _checked(_log_prob(sf, cdf), ok)


class _Norm(_Density):
    """The normal distribution ``N(loc, scale^2)``: ``scipy.stats.norm``'s methods."""

    name = "norm"

    @staticmethod
    def _z(x: Any, loc: Any, scale: Any) -> tuple[Expr, Expr]:
        scale = as_expr(scale)
        return (as_expr(x) - loc) / scale, scale

    def logpdf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Expr:
        """log N(x; loc, scale^2)."""
        z, scale = self._z(x, loc, scale)
        return _checked(-0.5 * F.square(z) - F.log(scale) - 0.5 * _LOG_2PI, scale > 0)

    def cdf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Expr:
        """P(X <= x) = ndtr((x - loc) / scale)."""
        z, scale = self._z(x, loc, scale)
        return _checked(F.ndtr(z), scale > 0)

    def logcdf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Expr:
        """log P(X <= x), accurate far in the lower tail (log_ndtr)."""
        z, scale = self._z(x, loc, scale)
        return _checked(F.log_ndtr(z), scale > 0)

    def sf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Expr:
        """P(X > x) = ndtr(-z), accurate in the upper tail."""
        z, scale = self._z(x, loc, scale)
        return _checked(F.ndtr(-z), scale > 0)

    def logsf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Expr:
        """log P(X > x)."""
        z, scale = self._z(x, loc, scale)
        return _checked(F.log_ndtr(-z), scale > 0)

    def ppf(self, q: Any, loc: Any = 0.0, scale: Any = 1.0) -> Expr:
        """The quantile function: loc + scale * ndtri(q)."""
        scale = as_expr(scale)
        return _checked(loc + scale * F.ndtri(as_expr(q)), scale > 0)

    def isf(self, q: Any, loc: Any = 0.0, scale: Any = 1.0) -> Expr:
        """The inverse survival function: loc - scale * ndtri(q)."""
        scale = as_expr(scale)
        return _checked(loc - scale * F.ndtri(as_expr(q)), scale > 0)


class _T(_Tails, _Density):
    """Student's t distribution with ``df`` degrees of freedom: ``scipy.stats.t``."""

    name = "t"

    def logpdf(self, x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Expr:
        """log of the density (df + 1)/2 ... : gammaln and log1p, no overflow for large x."""
        df, scale = as_expr(df), as_expr(scale)
        z = (as_expr(x) - loc) / scale
        half = 0.5 * (df + 1.0)
        value = (F.gammaln(half) - F.gammaln(0.5 * df) - 0.5 * F.log(df * math.pi)
                 - F.log(scale) - half * F.log1p(F.square(z) / df))
        return _checked(value, (scale > 0) & (df > 0))

    @staticmethod
    def _tails(x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0):
        """(cdf, sf) through Student's t CDF, stdtr (sf by symmetry)."""
        df, scale = as_expr(df), as_expr(scale)
        z = (as_expr(x) - loc) / scale
        return (F.stdtr(df, z), F.stdtr(df, -z)), (scale > 0) & (df > 0)


class _Gamma(_Tails, _Density):
    """The gamma distribution with shape ``a``: ``scipy.stats.gamma``."""

    name = "gamma"

    def logpdf(self, x: Any, a: Any, loc: Any = 0.0, scale: Any = 1.0) -> Expr:
        """(a - 1) log z - z - gammaln(a) - log(scale) on z >= 0, -inf below."""
        a, scale = as_expr(a), as_expr(scale)
        z = (as_expr(x) - loc) / scale
        inside = F.xlogy(a - 1.0, F.where(z >= 0, z, 1.0)) - z - F.gammaln(a) - F.log(scale)
        return _checked(F.where(z >= 0, inside, -math.inf), (scale > 0) & (a > 0))

    @staticmethod
    def _tails(x: Any, a: Any, loc: Any = 0.0, scale: Any = 1.0):
        """(cdf, sf): the regularised incomplete gamma functions P(a, z) and Q(a, z)."""
        a, scale = as_expr(a), as_expr(scale)
        z = (as_expr(x) - loc) / scale
        zs = F.where(z > 0, z, 0.0)
        return (F.gammainc(a, zs), F.gammaincc(a, zs)), (scale > 0) & (a > 0)


class _Chi2(_Tails, _Density):
    """The chi-squared distribution with ``df`` degrees of freedom: ``scipy.stats.chi2``
    (the gamma distribution with shape ``df/2`` and scale 2)."""

    name = "chi2"

    def logpdf(self, x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Expr:
        """(df/2 - 1) log z - z/2 - (df/2) log 2 - gammaln(df/2) - log(scale) on z >= 0."""
        half, scale = 0.5 * as_expr(df), as_expr(scale)
        z = (as_expr(x) - loc) / scale
        inside = (F.xlogy(half - 1.0, F.where(z >= 0, z, 1.0)) - 0.5 * z
                  - half * math.log(2.0) - F.gammaln(half) - F.log(scale))
        return _checked(F.where(z >= 0, inside, -math.inf), (scale > 0) & (half > 0))

    @staticmethod
    def _tails(x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0):
        """(cdf, sf): P(df/2, z/2) and Q(df/2, z/2)."""
        half, scale = 0.5 * as_expr(df), as_expr(scale)
        z = (as_expr(x) - loc) / scale
        zs = F.where(z > 0, 0.5 * z, 0.0)
        return (F.gammainc(half, zs), F.gammaincc(half, zs)), (scale > 0) & (half > 0)


class _Beta(_Tails, _Density):
    """The beta distribution with shapes ``a``, ``b``: ``scipy.stats.beta``."""

    name = "beta"

    def logpdf(self, x: Any, a: Any, b: Any, loc: Any = 0.0, scale: Any = 1.0) -> Expr:
        """(a-1) log z + (b-1) log(1-z) - betaln(a, b) - log(scale) on [0, 1], -inf off it."""
        a, b, scale = as_expr(a), as_expr(b), as_expr(scale)
        z = (as_expr(x) - loc) / scale
        on = (z >= 0) & (z <= 1)
        zs = F.where(on, z, 0.5)
        inside = (F.xlogy(a - 1.0, zs) + F.xlog1py(b - 1.0, -zs) - F.betaln(a, b)
                  - F.log(scale))
        return _checked(F.where(on, inside, -math.inf), (scale > 0) & (a > 0) & (b > 0))

    @staticmethod
    def _tails(x: Any, a: Any, b: Any, loc: Any = 0.0, scale: Any = 1.0):
        """(cdf, sf): I_z(a, b) and I_{1-z}(b, a) (not 1 - I_z: accurate near z = 1)."""
        a, b, scale = as_expr(a), as_expr(b), as_expr(scale)
        z = (as_expr(x) - loc) / scale
        zs = F.where(z > 0, F.where(z < 1, z, 1.0), 0.0)
        return (F.betainc(a, b, zs), F.betainc(b, a, 1.0 - zs)), \
            (scale > 0) & (a > 0) & (b > 0)


class _Poisson(_Tails, _Distribution):
    """The Poisson distribution with mean ``mu``: ``scipy.stats.poisson`` (``logpmf pmf cdf
    sf logcdf logsf``). Its values are integers: derivatives are with respect to ``mu``
    (the CDF's is closed-form, the incomplete gamma function's in its ``x``)."""

    name = "poisson"

    def logpmf(self, k: Any, mu: Any, loc: Any = 0.0) -> Expr:
        """k log mu - mu - gammaln(k + 1) at integers k >= 0, -inf elsewhere."""
        k, mu = as_expr(k) - loc, as_expr(mu)
        on = (k >= 0) & (k == F.floor(k))
        ks = F.where(on, k, 0.0)
        inside = F.xlogy(ks, mu) - mu - F.gammaln(ks + 1.0)
        return _checked(F.where(on, inside, -math.inf), mu >= 0)

    def pmf(self, k: Any, mu: Any, loc: Any = 0.0) -> Expr:
        """P(X = k) = exp(logpmf)."""
        return F.exp(self.logpmf(k, mu, loc))

    @staticmethod
    def _tails(k: Any, mu: Any, loc: Any = 0.0):
        """(cdf, sf): Q(floor(k) + 1, mu) and P(floor(k) + 1, mu); 0 and 1 below 0."""
        k, mu = as_expr(k) - loc, as_expr(mu)
        n = F.floor(F.where(k >= 0, k, 0.0)) + 1.0
        below = k < 0
        cdf = F.where(below, 0.0, F.gammaincc(n, mu))
        sf = F.where(below, 1.0, F.gammainc(n, mu))
        return (cdf, sf), mu >= 0


class _Dirichlet(_Density):
    """The Dirichlet distribution: ``scipy.stats.dirichlet``'s ``logpdf``/``pdf``."""

    name = "dirichlet"

    def logpdf(self, x: Any, alpha: Any) -> Expr:
        """sum (alpha_i - 1) log x_i - sum gammaln(alpha_i) + gammaln(sum alpha_i), with
        SciPy's layout: the components along the *first* axis of ``x`` (``K`` or ``K - 1``
        of them: the last is then 1 - the sum). On the simplex's boundary a component 0
        with ``alpha_i >= 1`` is SciPy's value (its term is 0 at ``alpha_i = 1``, ``-inf``
        above). Where SciPy raises (``x`` off the simplex: a component outside [0, 1], 0
        where ``alpha_i < 1``, or sums off 1 by more than 1e-9) the value is NaN; the
        derivative in ``x`` is the unconstrained one, as SciPy's formula gives."""
        x, alpha = as_expr(x), as_expr(alpha)
        k = alpha.shape[0] if alpha.ndim == 1 else 0
        if alpha.ndim != 1 or x.ndim < 1 or x.shape[0] not in (k, k - 1):
            raise ShapeError(f"dirichlet.logpdf: alpha must be a vector and x have its "
                             f"length (or one less) on its first axis, got shapes "
                             f"{alpha.shape} and {x.shape}")
        if x.shape[0] == k - 1:
            x = F.concatenate([x, 1.0 - F.sum(x, axis=0, keepdims=True)], axis=0)
        a = F.reshape(alpha, (k,) + (1,) * (x.ndim - 1))
        value = F.sum(F.xlogy(a - 1.0, x), axis=0) - F.sum(F.gammaln(alpha)) \
            + F.gammaln(F.sum(alpha))
        positive = (x > 0) | ((x == 0) & (a >= 1.0))  # SciPy: 0 is allowed where alpha >= 1
        inside = (F.abs(F.sum(x, axis=0) - 1.0) <= 1e-9) & F.all(positive & (x <= 1), axis=0)
        return _checked(value, inside & F.all(alpha > 0))


class _MultivariateNormal(_Density):
    """The multivariate normal: ``scipy.stats.multivariate_normal``'s ``logpdf``, ``pdf``
    and ``entropy``."""

    name = "multivariate_normal"

    def logpdf(self, x: Any, mean: Any = None, cov: Any = 1.0,
               allow_singular: bool = False) -> Expr:
        """log N(x; mean, cov) for ``x`` of shape ``(..., d)`` (the last axis is the
        dimension), through the Cholesky factor of ``cov``: ``-(d log 2 pi + log det cov +
        |L^-1 (x - mean)|^2) / 2``. ``cov`` may be a number, a vector (the diagonal) or a
        matrix, as in SciPy.

        ``allow_singular=True`` is SciPy's positive semidefinite case, through the
        eigendecomposition ``cov = U diag(s) U^T`` (its lower triangle read, as SciPy's
        ``eigh``): eigenvalues above SciPy's tolerance ``1e6 eps max|s|`` count, the rank is
        their number, ``log det`` their log-sum (the pseudo-determinant) and the Mahalanobis
        term uses their inverses (the pseudo-inverse); ``x - mean`` out of the support
        (its part along the dropped eigenvectors longer than ``1e3`` times that tolerance)
        gives ``-inf``, and a ``cov`` with an eigenvalue below ``-tolerance`` gives NaN
        (SciPy raises). The derivative is that of this formula where the rank is locally
        constant: exact for ``x`` and ``mean`` within the support.

        >>> import numpy as np, symgrad as sg
        >>> x = sg.var("x", shape=(2,))
        >>> lp = multivariate_normal.logpdf(x, np.zeros(2), np.diag([1.0, 0.0]),
        ...                                 allow_singular=True)
        >>> round(float(sg.evaluate(lp, {"x": [0.5, 0.0]})), 12)
        -1.043938533205
        """
        x = as_expr(x)
        d = x.shape[-1] if x.ndim else 1
        dev = x - (0.0 if mean is None else as_expr(mean))
        if dev.ndim == 0:
            dev = F.reshape(dev, (1,))
        if allow_singular:
            return _singular_logpdf(dev, _cov_matrix(cov, d, "logpdf"))
        _positive_definite(cov)
        chol = F.cholesky(_cov_matrix(cov, d, "logpdf"))
        z = F.solve(chol, dev) if dev.ndim == 1 else F.matrix_transpose(
            F.solve(chol, F.reshape(dev, (-1, d)).T))
        if dev.ndim > 2:
            z = F.reshape(z, dev.shape)
        maha = F.sum(F.square(z), axis=-1)
        logdet = 2.0 * F.sum(F.log(F.einsum("ii->i", chol)))
        return -0.5 * (d * _LOG_2PI + logdet + maha)

    def pdf(self, x: Any, mean: Any = None, cov: Any = 1.0,
            allow_singular: bool = False) -> Expr:
        """The density: ``exp(logpdf(...))``, same arguments (0 out of the support)."""
        return F.exp(self.logpdf(x, mean, cov, allow_singular=allow_singular))

    def entropy(self, mean: Any = None, cov: Any = 1.0) -> Expr:
        """The differential entropy ``(r (log 2 pi + 1) + log pdet cov) / 2``, as SciPy's:
        ``r`` and the pseudo-determinant over the eigenvalues of ``cov`` above SciPy's
        tolerance (``r = d`` and ``det`` for a positive definite ``cov``; NaN for an
        eigenvalue below ``-tolerance``). ``mean`` only fixes the dimension.

        >>> import numpy as np, symgrad as sg
        >>> c = sg.var("c", shape=(2, 2))
        >>> h = multivariate_normal.entropy(np.zeros(2), c)
        >>> round(float(sg.evaluate(h, {"c": np.eye(2)})), 12)
        2.837877066409
        """
        if mean is not None:
            mean = as_expr(mean)
        d = mean.shape[-1] if mean is not None and mean.ndim else None
        if d is None:
            shape = np.shape(cov) if not isinstance(cov, Expr) else cov.shape
            d = shape[-1] if shape else 1
        s = F.eigvalsh(_cov_matrix(cov, d, "entropy"))
        keep, valid = _spectrum_cut(s)
        rank = F.sum(F.astype(keep, s.dtype))
        log_pdet = F.sum(F.where(keep, F.log(F.where(keep, s, 1.0)), 0.0))
        return _checked(0.5 * (rank * (_LOG_2PI + 1.0) + log_pdet), valid)


def _positive_definite(cov: Any) -> None:
    """A covariance given as numbers must be positive definite, as SciPy's check says (a
    symbolic one fails where its Cholesky factor is computed)."""
    if isinstance(cov, Expr):
        return
    c = np.asarray(cov, dtype=np.float64)
    m = np.diag(c) if c.ndim == 1 else c if c.ndim == 2 else None
    if m is None:
        return
    try:
        np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        raise UnsupportedError(
            "multivariate_normal.logpdf: cov is not positive definite (a singular covariance "
            "or not symmetric): pass allow_singular=True for SciPy's positive semidefinite "
            "meaning, or regularise it (cov + eps * I)") from None


def _cov_matrix(cov: Any, d: int, method: str) -> Expr:
    """``cov`` as a ``(d, d)`` matrix (a number times the identity, or a diagonal from a
    vector, as SciPy reads them)."""
    cov = as_expr(cov)
    if cov.ndim == 0:
        cov = cov * F.eye(d)
    elif cov.ndim == 1:
        cov = F.einsum("i,ij->ij", cov, F.eye(d))
    if cov.shape != (d, d):
        raise ShapeError(f"multivariate_normal.{method}: cov has shape {cov.shape}, the "
                         f"values have dimension {d}")
    return cov


def _spectrum_cut(s: Expr) -> tuple[Expr, Expr]:
    """SciPy's ``_PSD`` cut of the eigenvalues ``s``: which count (``s > eps``, ``eps = 1e6
    eps_float max|s|``) and whether ``cov`` is positive semidefinite (``min s >= -eps``)."""
    eps = _psd_eps(s)
    return s > eps, F.min(s) >= -eps


def _psd_eps(s: Expr) -> Expr:
    factor = 1e3 if s.dtype == "float32" else 1e6
    return factor * float(np.finfo(s.dtype).eps) * F.max(F.abs(s))


def _singular_logpdf(dev: Expr, cov: Expr) -> Expr:
    """SciPy's ``logpdf(..., allow_singular=True)``: the rank, pseudo-determinant and
    pseudo-inverse over the eigenvalues of ``cov`` above the tolerance; ``-inf`` off the
    support, NaN for a ``cov`` that is not positive semidefinite."""
    s, u = F.eigh(cov)
    keep, valid = _spectrum_cut(s)
    ones = F.ones_like(s)
    root_pinv = F.where(keep, F.sqrt(ones / F.where(keep, s, ones)), 0.0)
    maha = F.sum(F.square((dev @ u) * root_pinv), axis=-1)
    rank = F.sum(F.astype(keep, s.dtype))
    log_pdet = F.sum(F.where(keep, F.log(F.where(keep, s, ones)), 0.0))
    value = -0.5 * (rank * _LOG_2PI + log_pdet + maha)
    off = F.sum(F.square(F.where(keep, 0.0, dev @ u)), axis=-1)
    tol = 1e3 * _psd_eps(s)
    return _checked(F.where(off < F.square(tol), value, -math.inf), valid)


norm = _Norm()
t = _T()
gamma = _Gamma()
beta = _Beta()
chi2 = _Chi2()
poisson = _Poisson()
dirichlet = _Dirichlet()
multivariate_normal = _MultivariateNormal()

# ``import symgrad.scipy.stats.multivariate_normal as mvn``, as JAX's modules are imported
for _dist in (norm, t, gamma, beta, chi2, poisson, dirichlet, multivariate_normal):
    _sys.modules[f"{__name__}.{_dist.name}"] = _dist  # type: ignore[assignment]
del _dist
