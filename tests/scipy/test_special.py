"""symgrad.scipy.special and SciPy's ufuncs on Exprs: values against SciPy, derivatives against
SciPy's own derivative formulas at ordinary and hard points (tails to +-40, log_ndtr far in
the lower tail, gammaln near its poles), forward mode, float32, generated source.

(The registry battery already checks every new op: shape/dtype rules, orders 1 and 2 against
finite differences, forward mode, every backend's table.)"""

from __future__ import annotations

import math

import numpy as np
import pytest

import symgrad as sg
import symgrad.scipy.special as ssp

sp = pytest.importorskip("scipy.special")
stats = pytest.importorskip("scipy.stats")

UNARY = ["erf", "erfc", "erfinv", "erfcinv", "erfcx", "ndtr", "ndtri", "log_ndtr", "logit",
         "gamma", "gammaln", "digamma", "psi", "i0", "i1", "i0e", "i1e", "expit"]
DOMAIN = {"erfinv": (-0.9, 0.9), "erfcinv": (0.1, 1.9), "ndtri": (0.05, 0.95),
          "logit": (0.1, 0.9), "gamma": (0.3, 4.0), "gammaln": (0.3, 4.0),
          "digamma": (0.3, 4.0), "psi": (0.3, 4.0)}


def _grad_at(fn, points: np.ndarray) -> np.ndarray:
    """d fn(x) / dx, elementwise, at ``points`` (one reverse pass of sum(fn(x)))."""
    x = sg.var("x", shape=points.shape)
    return np.asarray(sg.evaluate(sg.grad(sg.sum(fn(x)), x), {"x": points}))


@pytest.mark.parametrize("name", UNARY)
def test_scipy_ufunc_on_an_expr_dispatches_and_equals_scipy(name):
    rng = np.random.default_rng(0)
    pts = rng.uniform(*DOMAIN.get(name, (-2.0, 2.0)), size=7)
    x = sg.var("x", shape=(7,))
    f = getattr(sp, name)(x)  # SciPy's ufunc, called on an Expr
    assert isinstance(f, sg.Expr)
    np.testing.assert_array_equal(sg.evaluate(f, {"x": pts}), getattr(sp, name)(pts))
    g = getattr(ssp, name)(x)  # the same through symgrad.scipy.special
    assert g.node == f.node or np.array_equal(sg.evaluate(g, {"x": pts}),
                                              getattr(sp, name)(pts))


def test_binary_ufuncs_and_keywords_dispatch():
    x, y = sg.var("x", shape=(3,)), sg.var("y", shape=(3,))
    at = {"x": np.array([0.0, 1.5, 2.0]), "y": np.array([0.5, 2.0, 3.0])}
    for name in ("xlogy", "xlog1py", "betaln"):
        got = sg.evaluate(getattr(sp, name)(x, y), at)
        np.testing.assert_array_equal(got, getattr(sp, name)(at["x"], at["y"]))
    with pytest.raises(sg.UnsupportedError, match="out= is not supported"):
        sp.erf(x, out=np.zeros(3))
    with pytest.raises(sg.UnsupportedError, match=r"scipy\.special\.ellipk is not supported.*"
                                                   r"symgrad\.scipy\.special"):
        sp.ellipk(x)


# -- derivatives against SciPy's own formulas ---------------------------------------------

def _erfcx_derivative_50_digits(x):
    import mpmath

    with mpmath.workdps(50):
        t = mpmath.mpf(float(x))
        return 2 * t * mpmath.exp(t * t) * mpmath.erfc(t) - 2 / mpmath.sqrt(mpmath.pi)


FORMULAS = {
    "erf": (np.linspace(-6, 6, 25), lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x)),
    "erfc": (np.linspace(-6, 6, 25), lambda x: -2 / np.sqrt(np.pi) * np.exp(-x * x)),
    "ndtr": (np.linspace(-40, 40, 33), stats.norm.pdf),
    "erfinv": (np.linspace(-0.999, 0.999, 21),
               lambda y: np.sqrt(np.pi) / 2 * np.exp(sp.erfinv(y) ** 2)),
    "ndtri": (np.linspace(0.001, 0.999, 21), lambda p: 1 / stats.norm.pdf(sp.ndtri(p))),
    "gammaln": (np.array([1e-12, 1e-3, 0.5, 1.0, 7.5, 1e3, -0.5, -1 + 1e-9, -2 - 1e-9]),
                sp.digamma),
    "digamma": (np.array([1e-6, 0.3, 1.0, 4.0, 100.0, -0.5]), lambda x: sp.polygamma(1, x)),
    "gamma": (np.array([0.2, 1.0, 3.5, -0.5, -1.5]), lambda x: sp.gamma(x) * sp.digamma(x)),
    "i0": (np.linspace(-5, 5, 11), sp.i1),
    "i1": (np.array([-3.0, -1e-8, 0.0, 1e-8, 2.0]), lambda x: sp.ivp(1, x)),
    "i0e": (np.array([-30.0, -2.0, 0.5, 3.0, 700.0]),
            lambda x: sp.ivp(0, x) * np.exp(-abs(x)) - np.sign(x) * sp.i0e(x)),
    "i1e": (np.array([-30.0, -2.0, 0.0, 0.5, 3.0, 700.0]),
            lambda x: sp.ivp(1, x) * np.exp(-abs(x)) - np.sign(x) * sp.i1e(x)),
    # 2x erfcx(x) - 2/sqrt(pi) cancels for large x (to 0 at 1e8): the formula at 50 digits
    "erfcx": (np.array([-3.0, 0.0, 2.0, 30.0, 1e4, 1e8]), lambda x: np.array(
        [float(_erfcx_derivative_50_digits(v)) for v in x])),
    "logit": (np.array([1e-6, 0.3, 0.5, 0.999]), lambda p: 1 / (p * (1 - p))),
}


@pytest.mark.parametrize("name", sorted(FORMULAS))
def test_derivative_equals_scipys_formula(name):
    pts, formula = FORMULAS[name]
    got = _grad_at(getattr(ssp, name), pts)
    # i0e' and i1e' at x = 700 are differences of nearly equal numbers, on both sides
    rtol = 1e-11 if name in ("i0e", "i1e") else 1e-12
    np.testing.assert_allclose(got, formula(pts), rtol=rtol, atol=1e-300)


def test_log_ndtr_gradient_far_in_the_lower_tail():
    """d/dx log Phi(x) = phi / Phi = sqrt(2/pi) / erfcx(-x/sqrt 2) (the Mills ratio): finite
    where phi and Phi both underflow (x = -40: both are about 1e-350)."""
    pts = np.array([-1e3, -200.0, -40.0, -38.5, -10.0, -1.0, 0.0, 5.0, 40.0])
    want = np.sqrt(2 / np.pi) / sp.erfcx(-pts / np.sqrt(2))
    got = _grad_at(ssp.log_ndtr, pts)
    assert np.all(np.isfinite(got))
    # exp(-x^2/2 - log_ndtr(x)) loses |x|^2 eps to cancellation: 1e-10 at x = -1000
    np.testing.assert_allclose(got, want, rtol=1e-9)
    np.testing.assert_allclose(got[2:], want[2:], rtol=1e-12)
    x = sg.var("x")
    second = sg.evaluate(sg.derivative(ssp.log_ndtr(x), x, 2), {"x": -40.0})
    h = 1e-4  # the second derivative of log Phi is about -1 far out: finite differences
    fd = (sp.log_ndtr(-40 + h) - 2 * sp.log_ndtr(-40.0) + sp.log_ndtr(-40 - h)) / h**2
    assert second == pytest.approx(fd, rel=1e-4) and second == pytest.approx(-1.0, abs=1e-3)


def test_values_at_hard_points_equal_scipy():
    """erf and ndtr tails to +-40, log_ndtr at -1e5, gammaln next to its poles: the values
    are SciPy's, in evaluate and in generated NumPy code alike."""
    cases = {"erf": [-40.0, -6.0, 6.0, 40.0], "ndtr": [-40.0, -38.0, 8.5, 40.0],
             "log_ndtr": [-1e5, -40.0, 40.0], "gammaln": [1e-300, -1 + 1e-14, -2 - 1e-14, 1e300],
             "erfc": [-40.0, 27.0, 40.0]}
    for name, pts in cases.items():
        pts = np.array(pts)
        x = sg.var("x", shape=pts.shape)
        f = getattr(ssp, name)(x)
        want = getattr(sp, name)(pts)
        np.testing.assert_array_equal(sg.evaluate(f, {"x": pts}), want)
        np.testing.assert_array_equal(sg.compile(f)(pts), want)
    assert sp.ndtr(-37.0) > 0 and sp.log_ndtr(-1e5) == pytest.approx(-5e9, rel=1e-8)


def test_removable_singularities_give_numbers_at_every_order():
    x = sg.var("x")
    at = {"x": 0.0}
    d = [sg.evaluate(sg.derivative(ssp.sinc(x), x, k), at) for k in (1, 2, 3)]
    assert d[0] == 0.0 and d[1] == pytest.approx(-math.pi**2 / 3, rel=1e-15) and d[2] == 0.0
    assert sg.evaluate(sg.derivative(ssp.i1(x), x, 1), at) == 0.5
    assert np.isfinite(sg.evaluate(sg.derivative(ssp.i1(x), x, 2), at))
    assert sg.evaluate(sg.derivative(ssp.i1e(x), x, 1), at) == 0.5
    # sinc' near 0, where (cos(pi x) - sinc x) / x cancels: the series takes over
    for p in (1e-9, 3e-3, 0.0099, 0.0101, 0.5):
        h = sg.evaluate(sg.grad(ssp.sinc(x), x), {"x": p})
        want = (math.cos(math.pi * p) - math.sin(math.pi * p) / (math.pi * p)) / p \
            if p > 1e-3 else -math.pi**2 * p / 3
        assert h == pytest.approx(want, rel=1e-10)


def test_xlogy_is_locally_constant_in_y_where_x_is_zero():
    x, y = sg.var("x"), sg.var("y")
    for fn in (ssp.xlogy, ssp.xlog1py):
        dy = sg.derivative(fn(x, y), y, 1)
        dyy = sg.derivative(fn(x, y), y, 2)
        for yv in (0.0, 2.0):
            assert sg.evaluate(dy, {"x": 0.0, "y": yv}) == 0.0
            assert sg.evaluate(dyy, {"x": 0.0, "y": yv}) == 0.0
        assert sg.evaluate(dy, {"x": 2.0, "y": 3.0}) == pytest.approx(
            2 / 3 if fn is ssp.xlogy else 2 / 4)
    assert np.isinf(sg.evaluate(sg.grad(ssp.xlogy(x, y), y), {"x": 1.0, "y": 0.0}))


def test_betaln_gradient_is_the_digamma_difference():
    a, b = sg.var("a"), sg.var("b")
    got = sg.evaluate(list(sg.grad(ssp.betaln(a, b), [a, b])), {"a": 2.5, "b": 0.7})
    want = [sp.digamma(2.5) - sp.digamma(3.2), sp.digamma(0.7) - sp.digamma(3.2)]
    np.testing.assert_allclose(got, want, rtol=1e-14)
    assert sg.evaluate(ssp.beta(a, b), {"a": -0.5, "b": 2.25}) == pytest.approx(
        sp.beta(-0.5, 2.25), rel=1e-13)


@pytest.mark.parametrize("name", ["erf", "ndtr", "log_ndtr", "gammaln", "erfinv", "i1e"])
def test_forward_mode_equals_reverse_to_second_order(name):
    pts = np.array([0.1, 0.3, 0.7])
    x = sg.var("x", shape=(3,))
    f = getattr(ssp, name)(x)
    v = np.array([1.0, -2.0, 0.5])
    fwd = sg.evaluate(sg.jvp(f, x, v), {"x": pts})
    np.testing.assert_allclose(fwd, _grad_at(getattr(ssp, name), pts) * v, rtol=1e-13)
    sg.testing.check_jvps(sg.sum(f), x, {"x": pts}, order=2)


@pytest.mark.parametrize("name", ["erf", "ndtr", "log_ndtr", "gammaln", "digamma", "i0e",
                                  "expit", "logit", "ndtri"])
def test_float32_keeps_float32_and_agrees_with_float64(name):
    pts = np.array([0.2, 0.4, 0.6], dtype=np.float32)
    x = sg.var("x", shape=(3,), dtype="float32")
    f = getattr(ssp, name)(x)
    g = sg.grad(sg.sum(f), x)
    assert f.dtype == g.dtype == "float32"
    val, grad = sg.evaluate([f, g], {"x": pts})
    assert val.dtype == grad.dtype == np.float32
    np.testing.assert_allclose(val, getattr(sp, name)(pts.astype(np.float64)), rtol=2e-6)
    np.testing.assert_allclose(grad, _grad_at(getattr(ssp, name), pts.astype(np.float64)),
                               rtol=2e-5)


def test_scipy_special_functions_built_from_ops():
    x = sg.var("x", shape=(2, 3))
    a = np.array([[1.0, -2.0, 3.0], [1000.0, 0.5, -1000.0]])
    b = np.array([[1.0, 0.5, 2.0], [1.0, 0.0, 3.0]])
    for got, want in (
        (ssp.logsumexp(x), sp.logsumexp(a)),
        (ssp.logsumexp(x, axis=1, keepdims=True), sp.logsumexp(a, axis=1, keepdims=True)),
        (ssp.logsumexp(x, axis=0, b=b), sp.logsumexp(a, axis=0, b=b)),
        (ssp.softmax(x), sp.softmax(a)),
        (ssp.softmax(x, axis=0), sp.softmax(a, axis=0)),
        (ssp.log_softmax(x, axis=(0, 1)), sp.log_softmax(a, axis=(0, 1))),
        (ssp.log_softmax(x, axis=1), sp.log_softmax(a, axis=1)),
        (ssp.expit(x), sp.expit(a)),
        (ssp.log_expit(x), sp.log_expit(a)),
        (ssp.polygamma(2, x + 1001.0), sp.polygamma(2, a + 1001.0)),
    ):
        np.testing.assert_allclose(sg.evaluate(got, {"x": a}), want, rtol=1e-14, atol=1e-300)
    with pytest.raises(sg.UnsupportedError, match="return_sign"):
        ssp.logsumexp(x, return_sign=True)
    with pytest.raises(sg.UnsupportedError, match="order n must be one int"):
        ssp.polygamma(x, x)
    sg.check_grads(sg.sum(ssp.softmax(x) * a), x, {"x": a / 1000}, order=2)


def test_generated_numpy_source_says_it_needs_scipy():
    x = sg.var("x", shape=(3,))
    f = sg.sum(ssp.log_ndtr(x))
    src = sg.to_source([f, sg.grad(f, x)])
    assert src.startswith("# Generated by symgrad. Requires NumPy and SciPy.\nimport numpy as np\n"
                          "import scipy.special\n")
    assert "Generated by symgrad (NumPy and SciPy)." in src
    assert "Requires only NumPy" in sg.to_source(sg.sum(sg.exp(x)))


def test_scalar_math_code_uses_math_erfc_for_ndtr():
    s = sg.var("s")
    f = ssp.ndtr(s) * ssp.erf(s)
    src = sg.to_source([f, sg.grad(f, s)], scalars="math")
    assert "math.erfc(" in src and "math.erf(" in src and "scipy" not in src
    fn = sg.compile([f, sg.grad(f, s)])
    for p in (-40.0, -3.0, 0.0, 0.7, 9.0):
        got = fn(p)
        want = [sp.ndtr(p) * sp.erf(p), stats.norm.pdf(p) * sp.erf(p)
                + sp.ndtr(p) * 2 / np.sqrt(np.pi) * np.exp(-p * p)]
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-320)


def test_scipy_stats_on_an_expr_names_the_symgrad_function():
    x = sg.var("x", shape=(3,))
    with pytest.raises(sg.UnsupportedError, match=r"use symgrad\.scipy\.stats\.norm\.cdf"):
        stats.norm.cdf(x)
    with pytest.raises(sg.UnsupportedError, match=r"use symgrad\.scipy\.stats\.norm\.logpdf"):
        stats.norm(0.0, 2.0).logpdf(x)
    with pytest.raises(sg.UnsupportedError, match="converting to a NumPy array"):
        np.asarray(x)


def test_the_docs_list_scipy_support_as_the_modules_say():
    """The NumPy and SciPy support page's SciPy list is generated:
    symgrad.scipy.support_markdown()."""
    import symgrad.scipy
    from tests.support import docs

    assert docs.marked("guide/numpy", "scipy-support") == symgrad.scipy.support_markdown(), (
        "regenerate: python -c 'import symgrad.scipy as s; print(s.support_markdown())'")


def test_rgamma_gammasgn_multigammaln_against_scipy():
    x = sg.var("x", shape=(6,))
    pts = np.array([-2.5, -1.5, -0.5, 0.5, 3.2, 7.0])
    at = {"x": pts}
    for got, want in ((sp.rgamma(x), sp.rgamma(pts)), (sp.gammasgn(x), sp.gammasgn(pts)),
                      (ssp.multigammaln(x + 5.0, 3), sp.multigammaln(pts + 5.0, 3))):
        np.testing.assert_allclose(sg.evaluate(got, at), want, rtol=1e-14)
    poles = {"x": np.array([0.0, -1.0, -2.0, 1.0, 2.0, 3.0])}
    assert np.abs(sg.evaluate(ssp.rgamma(x), poles)[:3]).tolist() == [0.0, 0.0, 0.0]
    assert np.isnan(sg.evaluate(sg.grad(sg.sum(ssp.rgamma(x)), x), poles)[:3]).all()
    g = sg.evaluate(sg.grad(sg.sum(ssp.rgamma(x)), x), at)
    np.testing.assert_allclose(g, -sp.digamma(pts) * sp.rgamma(pts), rtol=1e-13)
    np.testing.assert_array_equal(sg.evaluate(sg.grad(sg.sum(ssp.gammasgn(x)), x), at), 0.0)
    sg.check_grads(sg.sum(ssp.multigammaln(x + 5.0, 3)), x, at, order=2)
    assert np.isnan(sg.evaluate(ssp.multigammaln(x, 3), at)).tolist() == [True] * 4 + [False] * 2
    with pytest.raises(sg.UnsupportedError, match="d must be one int"):
        ssp.multigammaln(x, 2.5)


def test_logsumexp_weight_zero_drops_an_infinite_term():
    """SciPy: a weight b = 0 drops its term, even an infinite one (not inf * 0 = NaN)."""
    a, b = np.array([np.inf, 1.0, 2.0]), np.array([0.0, 1.0, 2.0])
    assert sg.jit(lambda a: ssp.logsumexp(a, b=b))(a) == sp.logsumexp(a, b=b)
    g = sg.grad(lambda a: ssp.logsumexp(a, b=b))(a)
    w = b[1:] * np.exp(a[1:])
    np.testing.assert_allclose(g, [0.0, *(w / w.sum())], rtol=1e-15)


def _mp_derivative(f, x: float, k: int) -> float:
    import mpmath

    with mpmath.workdps(60):
        return float(mpmath.diff(f, mpmath.mpf(x), k))


def test_higher_derivatives_of_j1_and_i1_near_zero_equal_mpmath():
    """j1' = (j0 - jv(2, x))/2 and i1' = (i0 + iv(2, x))/2: no division by x, so the second
    and third derivatives hold at 1e-12 and 1e-300 (-3/8 and 3/8 at 0)."""
    import mpmath

    x = sg.var("x")
    for fn, ref in ((ssp.j1, lambda t: mpmath.besselj(1, t)),
                    (ssp.i1, lambda t: mpmath.besseli(1, t))):
        orders = [fn(x)]
        for _ in range(3):
            orders.append(sg.grad(orders[-1], x))
        for at in (1e-300, 1e-12, 0.0, 0.7, -2.5):
            for k in (1, 2, 3):
                got = sg.evaluate(orders[k], {"x": at})
                want = _mp_derivative(ref, at, k)
                assert got == pytest.approx(want, rel=1e-13, abs=1e-300), (fn, at, k)


def test_log_ndtr_and_norm_logcdf_derivatives_far_in_the_lower_tail_equal_mpmath():
    import mpmath

    from symgrad.scipy.stats import norm

    x = sg.var("x")
    for f in (ssp.log_ndtr(x), norm.logcdf(x)):
        first = sg.grad(f, x)
        second = sg.grad(first, x)
        for at in (-1e5, -1e4, -300.0, -3.0, 0.0, 5.0, 40.0):
            ref = lambda t: mpmath.log(mpmath.ncdf(t))  # noqa: E731
            assert sg.evaluate(first, {"x": at}) == pytest.approx(
                _mp_derivative(ref, at, 1), rel=1e-13, abs=1e-300)
            assert sg.evaluate(second, {"x": at}) == pytest.approx(
                _mp_derivative(ref, at, 2), rel=1e-10, abs=1e-300)


def test_erfcx_derivatives_for_large_x_equal_mpmath():
    import mpmath

    x = sg.var("x")
    orders = [ssp.erfcx(x)]
    for _ in range(3):
        orders.append(sg.grad(orders[-1], x))
    for at in (1e8, 1e4, 2e3, 10.0, 3.0, -3.0):
        for k in (1, 2, 3):
            want = _mp_derivative(lambda t: mpmath.exp(t * t) * mpmath.erfc(t), at, k)
            assert sg.evaluate(orders[k], {"x": at}) == pytest.approx(want, rel=1e-10), (at, k)
    # below x = 1000 the first derivative is the formula, 2x erfcx(x) - 2/sqrt(pi): it loses
    # about 2 x^2 eps to cancellation
    want = _mp_derivative(lambda t: mpmath.exp(t * t) * mpmath.erfc(t), 999.0, 1)
    assert sg.evaluate(orders[1], {"x": 999.0}) == pytest.approx(want, rel=1e-9)
