"""The regularised incomplete gamma and beta functions (``gammainc gammaincc betainc``),
Student's t CDF (``stdtr``) and the CDFs they give ``scipy.stats``' ``t gamma beta chi2``:
values against SciPy (float64 and float32, in the tails), x-derivatives against SciPy's own
densities and to second order against finite differences, and the refused derivative in a
shape parameter (an error naming the call and the fix, never a zero).

(The registry battery checks the four ops themselves: shape/dtype rules, orders 1 and 2
against finite differences, forward mode, every backend's table.)"""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
import symgrad.scipy.special as ssp
from symgrad.scipy import stats as ss

sp = special = pytest.importorskip("scipy.special")
st = pytest.importorskip("scipy.stats")

# (function, shape parameters, points: ordinary ones and tails), with SciPy's density in x
HARD = {
    "gammainc": ((2.5,), np.array([1e-300, 1e-8, 0.3, 2.5, 30.0, 700.0]),
                 lambda x, a: st.gamma.pdf(x, a)),
    "gammaincc": ((0.4,), np.array([1e-200, 1e-6, 0.7, 40.0, 600.0]),
                  lambda x, a: -st.gamma.pdf(x, a)),
    "betainc": ((0.7, 3.5), np.array([1e-250, 1e-9, 0.25, 0.9, 1 - 1e-9]),
                lambda x, a, b: st.beta.pdf(x, a, b)),
    "stdtr": ((3.0,), np.array([-1e6, -40.0, -1.0, 0.0, 2.0, 40.0, 1e6]),
              lambda t, df: st.t.pdf(t, df)),
}


def _call(name, params, x):
    fn = getattr(ssp, name)
    return fn(*params, x)


def _grad_at(name, params, pts, dtype="float64"):
    x = sg.var("x", shape=pts.shape, dtype=dtype)
    f = _call(name, params, x)
    return sg.evaluate([f, sg.grad(sg.sum(f), x)], {"x": pts})


@pytest.mark.parametrize("name", sorted(HARD))
def test_values_and_x_derivative_equal_scipy_in_the_tails(name):
    params, pts, density = HARD[name]
    val, grad = _grad_at(name, params, pts)
    want = getattr(sp, name)(*params, pts)
    np.testing.assert_array_equal(val, want)
    x = sg.var("x", shape=pts.shape)
    np.testing.assert_array_equal(sg.compile(_call(name, params, x))(pts), want)
    np.testing.assert_allclose(grad, density(pts, *params), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("name", sorted(HARD))
def test_second_derivative_against_differences_of_scipys_density(name):
    params, pts, density = HARD[name]
    pts = pts[(np.abs(pts) > 1e-3) & (np.abs(pts) < 100) & (np.abs(1 - pts) > 1e-3)]
    x = sg.var("x", shape=pts.shape)
    second = sg.evaluate(sg.grad(sg.sum(sg.grad(sg.sum(_call(name, params, x)), x)), x),
                         {"x": pts})
    h = 1e-5 * np.maximum(1.0, np.abs(pts))
    fd = (density(pts + h, *params) - density(pts - h, *params)) / (2 * h)
    np.testing.assert_allclose(second, fd, rtol=1e-6, atol=1e-12)
    sg.check_grads(sg.sum(_call(name, params, x)), x, {"x": pts}, order=2)


@pytest.mark.parametrize("name", sorted(HARD))
def test_float32_stays_float32_and_agrees_with_float64(name):
    params, pts, _ = HARD[name]
    pts = pts[(np.abs(pts) > 1e-30) & (np.abs(pts) < 1e30)]
    p32 = pts.astype(np.float32)
    val, grad = _grad_at(name, params, p32, "float32")
    assert val.dtype == grad.dtype == np.float32
    want, want_grad = _grad_at(name, params, p32.astype(np.float64))
    np.testing.assert_allclose(val, want, rtol=5e-6, atol=1e-37)
    np.testing.assert_allclose(grad, want_grad, rtol=5e-5, atol=1e-37)


def test_scipys_own_ufuncs_on_an_expr_dispatch():
    x = sg.var("x", shape=(3,))
    pts = np.array([0.1, 0.5, 0.9])
    for f, want in ((sp.gammainc(2.0, x), sp.gammainc(2.0, pts)),
                    (sp.gammaincc(2, x), sp.gammaincc(2, pts)),
                    (sp.betainc(2.0, 3.0, x), sp.betainc(2.0, 3.0, pts)),
                    (sp.stdtr(4.0, x), sp.stdtr(4.0, pts))):
        assert isinstance(f, sg.Expr)
        np.testing.assert_array_equal(sg.evaluate(f, {"x": pts}), want)


@pytest.mark.parametrize("call, params", [
    (lambda p, x: ssp.gammainc(p, x), "a"), (lambda p, x: ssp.gammaincc(p, x), "a"),
    (lambda p, x: ssp.betainc(2.0, p, x), "a, b"), (lambda p, x: ssp.stdtr(p, x), "df"),
    (lambda p, x: ss.t.cdf(x, p), "df"), (lambda p, x: ss.chi2.logsf(x, p), "a"),
])
def test_a_shape_parameters_derivative_is_refused_not_zero(call, params):
    """Reverse and forward mode alike raise, naming the call and stop_gradient; with the
    parameter held constant (stop_gradient) or not differentiated, x's derivative comes."""
    p, x = sg.var("p"), sg.var("x")
    at = {"p": 2.5, "x": 0.4}
    f = call(p, x)
    with pytest.raises(sg.DifferentiationError,
                       match=rf"scipy\.special\.\w+\(.*\): the derivative with respect to "
                             rf"{params} .*symgrad\.stop_gradient"):
        sg.grad(f, p)
    with pytest.raises(sg.DifferentiationError, match="no closed form"):
        sg.jvp(f, p, 1.0)
    held = call(sg.stop_gradient(p), x)
    gp, gx = sg.evaluate(list(sg.grad(held, [p, x])), at)
    assert gp == 0.0
    assert gx == sg.evaluate(sg.grad(f, x), at) != 0.0


def test_explain_asks_only_for_the_operands_with_an_adjoint():
    a, x = sg.var("a"), sg.var("x")
    table = str(sg.explain(ssp.gammainc(a, x), x, at={"a": 2.0, "x": 1.0}))
    assert "gammainc(u1, u2)" in table and "0.367879" in table  # x e^-x at 1


# -- scipy.stats: cdf, sf, logcdf, logsf ----------------------------------------------------

DISTS = [
    ("t", (3.5,), (0.2, 1.3), np.array([-1e4, -30.0, -3.0, -0.5, 0.2, 1.5, 4.0, 30.0, 1e4])),
    ("gamma", (2.5,), (-3.5, 0.8), np.array([-5.0, -3.4, -2.0, 0.0, 5.0, 20.0, 40.0])),
    ("beta", (2.5, 1.5), (-4.0, 9.0), np.array([-5.0, -3.999, 0.0, 3.0, 4.99, 4.999999, 6.0])),
    ("chi2", (3.0,), (0.5, 2.0), np.array([-1.0, 0.6, 3.0, 30.0, 200.0, 2000.0])),
]
METHODS = ("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf")


@pytest.mark.parametrize("name, shapes, locscale, pts", DISTS, ids=[d[0] for d in DISTS])
def test_distribution_values_equal_scipy_in_the_tails(name, shapes, locscale, pts):
    x = sg.var("x", shape=pts.shape)
    for m in METHODS:
        got = sg.evaluate(getattr(getattr(ss, name), m)(x, *shapes, *locscale), {"x": pts})
        want = getattr(getattr(st, name), m)(pts, *shapes, *locscale)
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300, err_msg=m)
        assert np.isnan(sg.evaluate(getattr(getattr(ss, name), m)(x, *shapes, 0.0, -1.0),
                                    {"x": pts})).all(), m


@pytest.mark.parametrize("name, shapes, locscale, pts", DISTS, ids=[d[0] for d in DISTS])
def test_distribution_gradients_in_x_loc_scale_to_second_order(name, shapes, locscale, pts):
    """Inside the support, away from its edges: finite differences to order 2."""
    lo, hi = {"gamma": (-3.0, 30.0), "beta": (-3.9, 4.9), "chi2": (0.7, 100.0)}.get(
        name, (-50.0, 50.0))
    pts = pts[(pts > lo) & (pts < hi)]
    x, loc, scale = sg.var("x", shape=pts.shape), sg.var("loc"), sg.var("scale")
    at = {"x": pts, "loc": locscale[0], "scale": locscale[1]}
    for m in METHODS[2:]:
        f = sg.sum(getattr(getattr(ss, name), m)(x, *shapes, loc, scale))
        sg.check_grads(f, [x, loc, scale], at, order=2)


@pytest.mark.parametrize("name, shapes, locscale, pts", DISTS, ids=[d[0] for d in DISTS])
def test_log_tail_derivatives_are_density_over_probability(name, shapes, locscale, pts):
    """d logcdf / dx = pdf / cdf and d logsf / dx = -pdf / sf, formed from SciPy's log
    values (exp(logpdf - logcdf)): finite far in both tails, where pdf and cdf underflow."""
    dist, ref = getattr(ss, name), getattr(st, name)
    x = sg.var("x", shape=pts.shape)
    args = (*shapes, *locscale)
    inside = ref.pdf(pts, *args) > 0
    for m, sign, log_p in (("logcdf", 1.0, ref.logcdf), ("logsf", -1.0, ref.logsf)):
        got = sg.evaluate(sg.grad(sg.sum(getattr(dist, m)(x, *args)), x), {"x": pts})
        with np.errstate(invalid="ignore"):  # -inf - -inf outside the support
            want = sign * np.exp(ref.logpdf(pts, *args) - log_p(pts, *args))
        np.testing.assert_allclose(got[inside], want[inside], rtol=1e-10, err_msg=m)
        assert (got[~inside] == 0.0).all() or name == "t", m


def test_distribution_cdfs_of_float32_values_are_scipys():
    """SciPy's distributions return float64 for float32 values (their parameters are
    float64): the same dtype here, the same numbers, and float64 gradients."""
    x = sg.var("x", shape=(4,), dtype="float32")
    pts = np.array([0.05, 0.5, 2.0, 9.0], dtype=np.float32)
    for name, shapes, scale in (("t", (3.0,), 1.0), ("gamma", (2.0,), 1.0),
                                ("chi2", (3.0,), 1.0), ("beta", (2.0, 3.0), 10.0)):
        for m in ("cdf", "logsf"):
            f = getattr(getattr(ss, name), m)(x, *shapes, 0.0, scale)
            want = getattr(getattr(st, name), m)(pts, *shapes, 0.0, scale)
            val, grad = sg.evaluate([f, sg.grad(sg.sum(f), x)], {"x": pts})
            assert val.dtype == want.dtype == grad.dtype == np.float64
            np.testing.assert_allclose(val, want, rtol=1e-13)
            ref = getattr(st, name).pdf(pts, *shapes, 0.0, scale)
            if m == "cdf":
                np.testing.assert_allclose(grad, ref, rtol=1e-12)


def test_backends_agree_in_the_tails():
    """The JAX and PyTorch forms (JAX's stdtr through betainc; torch's betaln given a
    number beside a tensor) against SciPy's values and evaluate's gradients."""
    t = sg.var("t", shape=(6,))
    pts = np.array([-1e3, -40.0, -0.3, 0.0, 2.0, 60.0])
    f = sg.sum(ssp.stdtr(3.0, t) + ssp.betaln(t * t + 1.0, 0.5))
    outs = [ssp.stdtr(3.0, t), sg.grad(f, t)]
    want = sg.evaluate(outs, {"t": pts})
    for backend in ("jax", "torch"):
        lib = pytest.importorskip(backend)
        before = lib.config.jax_enable_x64 if backend == "jax" else None
        if backend == "jax":
            lib.config.update("jax_enable_x64", True)
        try:
            got = sg.compile(outs, backend=backend)(lib.numpy.asarray(pts) if backend == "jax"
                                                    else lib.asarray(pts))
        finally:
            if backend == "jax":
                lib.config.update("jax_enable_x64", before)
        # the gradient's digamma(t^2 + 1) - digamma(t^2 + 1.5) cancels: JAX's digamma is
        # within 1e-15 of SciPy's, the difference within 2e-11
        for g, w, rtol in zip(got, want, (1e-12, 1e-10)):
            np.testing.assert_allclose(np.asarray(g), w, rtol=rtol, atol=1e-300,
                                       err_msg=backend)


def test_poisson_against_scipy_and_its_mean_derivatives():
    k, mu = sg.var("k", shape=(7,)), sg.var("mu")
    ks = np.array([-1.0, 0.0, 1.5, 2.0, 3.0, 12.0, 40.0])
    at = {"k": ks, "mu": 2.5}
    for m in ("logpmf", "pmf", "cdf", "sf", "logsf"):
        np.testing.assert_allclose(sg.evaluate(getattr(ss.poisson, m)(k, mu), at),
                                   getattr(st.poisson, m)(ks, 2.5), rtol=1e-13, err_msg=m)
    # logcdf in the upper tail is log1p(-sf), where SciPy's log(cdf) loses digits (at k =
    # 40 it rounds to 0)
    got = sg.evaluate(ss.poisson.logcdf(k, mu), at)
    cdf, sf = st.poisson.cdf(ks, 2.5), st.poisson.sf(ks, 2.5)
    with np.errstate(divide="ignore"):
        want = np.where(cdf > 0.5, np.log1p(-sf), np.log(cdf))
    np.testing.assert_allclose(got, want, rtol=1e-13)
    assert got[-1] < 0.0 == st.poisson.logcdf(40.0, 2.5)
    # d cdf(k) / d mu = -pmf(floor(k); mu); nothing flows to k (a step function)
    gk, gmu = sg.evaluate(list(sg.grad(sg.sum(ss.poisson.cdf(k, mu)), [k, mu])), at)
    assert gmu == pytest.approx(-st.poisson.pmf(np.floor(ks[1:]), 2.5).sum(), rel=1e-12)
    np.testing.assert_array_equal(gk, 0.0)
    inside = {"k": np.array([0.0, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0]), "mu": 2.5}
    for m in ("logpmf", "cdf", "logsf"):
        sg.check_grads(sg.sum(getattr(ss.poisson, m)(k, mu)), mu, inside, order=2)
    with pytest.raises(AttributeError, match="poisson has no 'pdf'.*pmf"):
        ss.poisson.pdf(k, mu)


def test_dirichlet_against_scipy_and_its_gradients():
    alpha = np.array([1.5, 2.0, 3.0])
    xs = np.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]]).T  # components on the first axis
    x, a = sg.var("x", shape=(3, 2)), sg.var("a", shape=(3,))
    at = {"x": xs, "a": alpha}
    for m in ("logpdf", "pdf"):
        np.testing.assert_allclose(sg.evaluate(getattr(ss.dirichlet, m)(x, a), at),
                                   getattr(st.dirichlet, m)(xs, alpha), rtol=1e-13)
    short = sg.var("s", shape=(2,))
    assert sg.evaluate(ss.dirichlet.logpdf(short, a), {"s": xs[:2, 0], "a": alpha}) == \
        pytest.approx(st.dirichlet.logpdf(xs[:2, 0], alpha), rel=1e-13)
    # x normalised, as autograd's test does: finite differences stay on the simplex
    on_simplex = ss.dirichlet.logpdf(x / sg.sum(x, axis=0, keepdims=True), a)
    sg.check_grads(sg.sum(on_simplex), [x, a], at, order=2)
    ga = sg.evaluate(sg.grad(sg.sum(ss.dirichlet.logpdf(x[:, 0], a)), a), at)
    want = np.log(xs[:, 0]) - special.digamma(alpha) + special.digamma(alpha.sum())
    np.testing.assert_allclose(ga, want, rtol=1e-13)
    off = {"x": xs * 1.1, "a": alpha}  # off the simplex: SciPy raises, here NaN
    assert np.isnan(sg.evaluate(ss.dirichlet.logpdf(x, a), off)).all()
