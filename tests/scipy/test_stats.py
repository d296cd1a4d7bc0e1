"""symgrad.scipy.stats: values against scipy.stats, derivatives (also in the parameters)
against finite differences, SciPy's rules outside the parameter range and the support, and
Black–Scholes Greeks to third order against their closed forms, written as public code
writes Black–Scholes (real NumPy calls on traced values, a normal CDF)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import symgrad as sg
from symgrad.scipy import stats as ss
from tests.support.finite_differences import central

st = pytest.importorskip("scipy.stats")
special = pytest.importorskip("scipy.special")

PTS = np.array([-3.0, -0.5, 0.2, 1.5, 4.0])
CASES = [
    ("norm", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), (0.3, 1.7)),
    ("t", ("logpdf", "pdf"), (3.5, 0.2, 1.3)),
    ("gamma", ("logpdf", "pdf"), (2.5, -3.5, 0.8)),
    ("beta", ("logpdf", "pdf"), (2.5, 1.5, -4.0, 9.0)),
]


@pytest.mark.parametrize("name, methods, params", CASES, ids=[c[0] for c in CASES])
def test_values_and_parameter_gradients(name, methods, params):
    x = sg.var("x", shape=PTS.shape)
    ps = [sg.var(f"p{k}") for k in range(len(params))]
    at = {"x": PTS, **{f"p{k}": v for k, v in enumerate(params)}}
    for m in methods:
        f = getattr(getattr(ss, name), m)(x, *ps)
        want = getattr(getattr(st, name), m)(PTS, *params)
        np.testing.assert_allclose(sg.evaluate(f, at), want, rtol=1e-13, atol=1e-300)
        sg.check_grads(sg.sum(f), [x, *ps], at, order=2)


def test_norm_quantiles_and_the_lower_tail():
    q = sg.var("q", shape=(4,))
    qs = np.array([1e-300, 0.01, 0.5, 0.975])
    for m in ("ppf", "isf"):
        np.testing.assert_allclose(sg.evaluate(getattr(ss.norm, m)(q, 1.0, 2.0), {"q": qs}),
                                   getattr(st.norm, m)(qs, 1.0, 2.0), rtol=1e-14)
    x = sg.var("x")
    lc = ss.norm.logcdf(x)
    for p in (-40.0, -1e3):
        assert sg.evaluate(lc, {"x": p}) == pytest.approx(st.norm.logcdf(p), rel=1e-14)
        assert sg.evaluate(sg.grad(lc, x), {"x": p}) == pytest.approx(-p, rel=1e-3)


def test_scipys_rules_outside_the_range_and_the_support():
    x, s = sg.var("x"), sg.var("s")
    assert np.isnan(sg.evaluate(ss.norm.cdf(x, 0.0, s), {"x": 0.5, "s": -1.0}))
    assert np.isnan(st.norm.cdf(0.5, 0.0, -1.0))
    assert sg.evaluate(ss.gamma.logpdf(x, 2.0), {"x": -1.0}) == -math.inf
    assert sg.evaluate(ss.beta.logpdf(x, 2.0, 3.0), {"x": 1.5}) == -math.inf
    # the gradient outside the support is 0, not NaN
    assert sg.evaluate(sg.grad(ss.gamma.pdf(x, 2.0), x), {"x": -1.0}) == 0.0
    with pytest.raises(AttributeError, match="norm has no 'entropy'"):
        ss.norm.entropy()
    with pytest.raises(AttributeError, match="t has no 'ppf'"):
        ss.t.ppf(x, 3.0)


def test_multivariate_normal_logpdf_against_scipy_and_its_gradients():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 3))
    cov, mean, xs = a @ a.T + np.eye(3), rng.standard_normal(3), rng.standard_normal((4, 3))
    X, m, C = sg.var("X", shape=(4, 3)), sg.var("m", shape=(3,)), sg.var("C", shape=(3, 3))
    at = {"X": xs, "m": mean, "C": cov}
    f = ss.multivariate_normal.logpdf(X, m, C)
    np.testing.assert_allclose(sg.evaluate(f, at), st.multivariate_normal.logpdf(xs, mean, cov),
                               rtol=1e-13)
    for single, cv in ((ss.multivariate_normal.pdf(X[0], m, np.diag(cov)), np.diag(cov)),
                       (ss.multivariate_normal.pdf(X[0], m, 2.5), 2.5)):
        assert sg.evaluate(single, at) == pytest.approx(
            st.multivariate_normal.pdf(xs[0], mean, cv), rel=1e-13)
    # d/dm = sum_i C^-1 (x_i - m); d/dC = (C^-1 S C^-1 - n C^-1) / 2 with S the scatter
    gm, gc = sg.evaluate(list(sg.grad(sg.sum(f), [m, C])), at)
    ci = np.linalg.inv(cov)
    d = xs - mean
    np.testing.assert_allclose(gm, ci @ d.sum(0), rtol=1e-12)
    want_c = 0.5 * (ci @ d.T @ d @ ci - 4 * ci)  # cholesky reads the lower triangle
    np.testing.assert_allclose(gc + gc.T - np.diag(np.diag(gc)), want_c + want_c.T
                               - np.diag(np.diag(want_c)), rtol=1e-11)


# -- Black–Scholes, as public code writes it ------------------------------------------------


def black_scholes_call(S, K, T, r, sigma, cdf):
    d1 = (np.log(S / K) + (r + 0.5 * sigma**2) * T) / (sigma * np.sqrt(T))
    d2 = d1 - sigma * np.sqrt(T)
    return S * cdf(d1) - K * np.exp(-r * T) * cdf(d2)


def _closed_forms(S, K, T, r, v):
    d1 = (math.log(S / K) + (r + v * v / 2) * T) / (v * math.sqrt(T))
    d2 = d1 - v * math.sqrt(T)
    pdf, cdf = st.norm.pdf(d1), st.norm.cdf
    gamma = pdf / (S * v * math.sqrt(T))
    vega = S * pdf * math.sqrt(T)
    return {
        "delta": cdf(d1), "gamma": gamma, "vega": vega,
        "theta": S * pdf * v / (2 * math.sqrt(T)) + r * K * math.exp(-r * T) * cdf(d2),
        "rho": K * T * math.exp(-r * T) * cdf(d2),
        "vanna": -pdf * d2 / v, "volga": vega * d1 * d2 / v,
        "speed": -gamma / S * (d1 / (v * math.sqrt(T)) + 1),
        "zomma": gamma * (d1 * d2 - 1) / v,
        "ultima": -vega / v**2 * (d1 * d2 * (1 - d1 * d2) + d1**2 + d2**2),
    }


@pytest.mark.parametrize("cdf", ["symgrad.scipy.stats.norm.cdf", "scipy.special.ndtr"])
def test_black_scholes_greeks_to_third_order(cdf):
    fn = ss.norm.cdf if cdf.startswith("symgrad") else special.ndtr  # SciPy's own ufunc
    S, K, T, r, v = (sg.var(n) for n in ("S", "K", "T", "r", "v"))
    price = black_scholes_call(S, K, T, r, v, fn)
    d = lambda f, x: sg.grad(f, x)  # noqa: E731
    greeks = {
        "delta": d(price, S), "gamma": d(d(price, S), S), "vega": d(price, v),
        "theta": d(price, T), "rho": d(price, r), "vanna": d(d(price, S), v),
        "volga": d(d(price, v), v), "speed": d(d(d(price, S), S), S),
        "zomma": d(d(d(price, S), S), v), "ultima": d(d(d(price, v), v), v),
    }
    fn_all = sg.compile([price, *greeks.values()], inputs=[S, K, T, r, v])
    for at in ((100.0, 95.0, 0.5, 0.03, 0.2), (40.0, 60.0, 2.0, 0.01, 0.35),
               (100.0, 100.0, 1e-3, 0.05, 0.1)):
        got = dict(zip(["price", *greeks], fn_all(*at)))
        want = _closed_forms(*at)
        S0, K0, T0, r0, v0 = at
        assert got["price"] == pytest.approx(st.norm.cdf(0) * 0 + black_scholes_call(
            S0, K0, T0, r0, v0, st.norm.cdf), rel=1e-14)
        for k, w in want.items():
            assert got[k] == pytest.approx(w, rel=1e-9, abs=1e-12), k


def test_black_scholes_with_scipy_stats_as_written_names_the_fix():
    S = sg.var("S")
    with pytest.raises(sg.UnsupportedError, match=r"use symgrad\.scipy\.stats\.norm\.cdf"):
        black_scholes_call(S, 95.0, 0.5, 0.03, 0.2, st.norm.cdf)


def test_distributions_import_as_modules_as_in_jax(rng):
    """``import symgrad.scipy.stats.multivariate_normal as mvn`` (JAX's spelling)."""
    import scipy.stats
    import symgrad.scipy.stats.multivariate_normal as mvn
    import symgrad.scipy.stats.norm as norm

    x, mean = rng.standard_normal(3), rng.standard_normal(3)
    A = rng.standard_normal((3, 3))
    cov = A @ A.T + np.eye(3)
    got = sg.evaluate(mvn.logpdf(sg.const(x), mean, cov))
    assert got == pytest.approx(scipy.stats.multivariate_normal.logpdf(x, mean, cov), rel=1e-13)
    assert norm is sg.scipy.stats.norm


def test_dirichlet_on_the_simplex_boundary_as_scipy():
    """A component 0 where alpha_i >= 1 is on the support (SciPy's value: the term is 0 at
    alpha_i = 1, -inf above); 0 where alpha_i < 1 is off it (SciPy raises: NaN)."""
    for x, a in (([0.0, 0.5, 0.5], [2.0, 2.0, 2.0]), ([0.0, 0.5, 0.5], [1.0, 2.0, 2.0]),
                 ([1.0, 0.0, 0.0], [1.0, 1.0, 1.0])):
        got = sg.evaluate(ss.dirichlet.logpdf(sg.const(np.array(x)), np.array(a)))
        assert got == st.dirichlet.logpdf(x, a)
    with pytest.raises(ValueError):
        st.dirichlet.logpdf([0.0, 0.5, 0.5], [0.5, 2.0, 2.0])
    assert np.isnan(sg.evaluate(ss.dirichlet.logpdf(sg.const(np.array([0.0, 0.5, 0.5])),
                                                    np.array([0.5, 2.0, 2.0]))))


def test_multivariate_normal_with_a_singular_covariance_says_so():
    with pytest.raises(sg.UnsupportedError, match="cov is not positive definite.*allow_singular"):
        ss.multivariate_normal.logpdf(sg.var("x", shape=(2,)), np.zeros(2), np.ones((2, 2)))


def test_multivariate_normal_singular_covariance_as_scipy():
    """allow_singular=True: SciPy's pseudo-determinant and pseudo-inverse values, -inf off
    the support, gradients in x and mean along the support vs central differences."""
    rng = np.random.default_rng(3)
    basis = np.linalg.qr(rng.standard_normal((4, 4)))[0][:, :2]
    cov = basis @ np.diag([2.0, 0.5]) @ basis.T  # rank 2
    mean = rng.standard_normal(4)
    on = mean + basis @ rng.standard_normal(2)
    x, m = sg.var("x", shape=(4,)), sg.var("m", shape=(4,))
    lp = ss.multivariate_normal.logpdf(x, m, cov, allow_singular=True)
    pdf = ss.multivariate_normal.pdf(x, m, cov, allow_singular=True)
    for point in (on, mean + 1e-3 * rng.standard_normal(4)):  # in and off the support
        want = st.multivariate_normal.logpdf(point, mean, cov, allow_singular=True)
        got = sg.evaluate(lp, {"x": point, "m": mean})
        assert got == pytest.approx(want, rel=1e-12) if np.isfinite(want) else got == want
        assert sg.evaluate(pdf, {"x": point, "m": mean}) == pytest.approx(
            st.multivariate_normal.pdf(point, mean, cov, allow_singular=True), rel=1e-12)
    assert sg.evaluate(lp, {"x": mean + 1e-3 * basis[:, 0] + 1.0, "m": mean}) == -np.inf

    gx, gm = sg.evaluate(list(sg.grad(lp, [x, m])), {"x": on, "m": mean})

    def along(v):  # a function of a point of the support: x = mean + basis @ v
        return st.multivariate_normal.logpdf(mean + basis @ v, mean, cov, allow_singular=True)

    v0 = basis.T @ (on - mean)
    np.testing.assert_allclose(basis.T @ gx, central(along, v0), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(gm, -gx, rtol=1e-12)


def test_multivariate_normal_singular_covariance_that_is_not_semidefinite_is_nan():
    """A covariance with a negative eigenvalue (SciPy raises) gives NaN."""
    x = sg.var("x", shape=(2,))
    lp = ss.multivariate_normal.logpdf(x, None, sg.var("C", shape=(2, 2)), allow_singular=True)
    assert np.isnan(sg.evaluate(lp, {"x": [0.1, 0.2], "C": np.diag([1.0, -1.0])}))


def test_multivariate_normal_entropy_as_scipy_and_its_gradient():
    """entropy(mean, cov): SciPy's value (positive definite and singular), gradient in cov
    vs central differences of SciPy's entropy."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 3))
    cov = a @ a.T + 0.5 * np.eye(3)
    C = sg.var("C", shape=(3, 3))
    h = ss.multivariate_normal.entropy(np.zeros(3), C)
    assert sg.evaluate(h, {"C": cov}) == pytest.approx(st.multivariate_normal.entropy(
        np.zeros(3), cov), rel=1e-13)
    singular = np.diag([2.0, 3.0, 0.0])
    assert sg.evaluate(h, {"C": singular}) == pytest.approx(st.multivariate_normal.entropy(
        None, singular), rel=1e-13)
    assert sg.evaluate(ss.multivariate_normal.entropy(cov=2.5), {}) == pytest.approx(
        st.multivariate_normal.entropy(cov=2.5), rel=1e-13)
    g = sg.evaluate(sg.grad(h, C), {"C": cov})

    def sym(c):  # eigvalsh reads the lower triangle: perturb it symmetrically
        low = np.tril(c)
        return st.multivariate_normal.entropy(None, low + np.tril(low, -1).T)

    np.testing.assert_allclose(g, central(sym, cov), rtol=1e-6, atol=1e-9)
