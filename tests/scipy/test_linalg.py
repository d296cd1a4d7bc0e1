"""symgrad.scipy.linalg: values against scipy.linalg, derivatives against finite differences
(only the triangle a triangular solve reads gets a gradient), and the stable Gaussian-process
negative log-likelihood (cholesky, cho_solve, solve_triangular) against JAX."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

import symgrad as sg
from symgrad.scipy import linalg as sgl
from tests.support.finite_differences import directional

sl = pytest.importorskip("scipy.linalg")

RNG = np.random.default_rng(3)
A = RNG.standard_normal((4, 4))
B = RNG.standard_normal((4, 2))
SPD = A @ A.T + 4 * np.eye(4)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, "T"])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_values_and_gradients(lower, trans, unit):
    a, b = sg.var("a", shape=(4, 4)), sg.var("b", shape=(4, 2))
    mat = A + 3 * np.eye(4)  # well conditioned in both triangles
    at = {"a": mat, "b": B}
    x = sgl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
    want = sl.solve_triangular(mat, B, trans=trans, lower=lower, unit_diagonal=unit)
    np.testing.assert_allclose(sg.evaluate(x, at), want, rtol=1e-13, atol=1e-14)
    f = sg.sum(x * np.arange(8.0).reshape(4, 2))
    sg.check_grads(f, [a, b], at, order=2 if (lower, trans, unit) == (True, 0, False) else 1)
    ga = sg.evaluate(sg.grad(f, a), at)
    unread = np.triu(ga, 1) if lower else np.tril(ga, -1)
    assert np.all(unread == 0.0)
    if unit:
        assert np.all(np.diag(ga) == 0.0)


def test_cholesky_cho_factor_cho_solve_solve_and_the_rest():
    a, b = sg.var("a", shape=(4, 4)), sg.var("b", shape=(4, 2))
    at = {"a": SPD, "b": B}
    for lower in (True, False):
        np.testing.assert_allclose(sg.evaluate(sgl.cholesky(a, lower=lower), at),
                                   sl.cholesky(SPD, lower=lower), rtol=1e-13, atol=1e-15)
        c = sgl.cho_factor(a, lower=lower)
        assert c[1] is lower
        np.testing.assert_allclose(sg.evaluate(sgl.cho_solve(c, b), at),
                                   sl.cho_solve(sl.cho_factor(SPD, lower=lower), B), rtol=1e-13)
        sg.check_grads(sg.sum(sgl.cho_solve(c, b) ** 2), [a, b], at, order=1)
        half = np.tril(SPD) + np.triu(A, 1) if lower else np.triu(SPD) + np.tril(A, -1)
        for assume in (None, "sym", "pos"):
            np.testing.assert_allclose(
                sg.evaluate(sgl.solve(a, b, assume_a=assume, lower=lower), {"a": half, "b": B}),
                sl.solve(half, B, assume_a=assume, lower=lower), rtol=1e-12)
    np.testing.assert_allclose(sg.evaluate(sgl.inv(a), at), sl.inv(SPD), rtol=1e-13)
    assert sg.evaluate(sgl.det(a), at) == pytest.approx(sl.det(SPD), rel=1e-13)
    w, v = sgl.eigh(a)
    np.testing.assert_allclose(sg.evaluate(w, at), sl.eigh(SPD, eigvals_only=True), rtol=1e-13)
    np.testing.assert_allclose(np.abs(sg.evaluate(v, at)), np.abs(sl.eigh(SPD)[1]), atol=1e-12)
    np.testing.assert_allclose(sg.evaluate(sgl.svd(a)[1], at), sl.svd(SPD)[1], rtol=1e-13)
    np.testing.assert_allclose(sg.evaluate(sgl.svdvals(a), at), sl.svdvals(SPD), rtol=1e-13)
    blocks = sgl.block_diag(a[:2, :3], b, 3.0, b[:, 0])
    np.testing.assert_array_equal(sg.evaluate(blocks, at),
                                  sl.block_diag(SPD[:2, :3], B, 3.0, B[:, 0]))
    np.testing.assert_allclose(sg.evaluate(sgl.expm(0.1 * a), at), sl.expm(0.1 * SPD),
                               rtol=1e-13)
    with pytest.raises(AttributeError, match="no 'qz'.*not covered"):
        sgl.qz(a)


# -- the Gaussian-process tutorial, stable form --------------------------------------------


def gp_nll(log_ell, log_sf, log_sn, X, y, np, linalg):
    """The negative log marginal likelihood of a GP with a squared-exponential kernel, in
    the tutorials' stable form: a Cholesky factor, cho_solve and solve_triangular."""
    n = X.shape[0]
    sq = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = np.exp(2 * log_sf) * np.exp(-0.5 * sq / np.exp(2 * log_ell)) \
        + np.exp(2 * log_sn) * np.eye(n)
    L = linalg.cholesky(K, lower=True)
    alpha = linalg.cho_solve((L, True), y)
    v = linalg.solve_triangular(L, y, lower=True)
    fit = 0.25 * (y @ alpha) + 0.25 * (v @ v)  # the same number twice, by two routes
    return fit + np.sum(np.log(np.diag(L))) + 0.5 * n * math.log(2 * math.pi)


@pytest.fixture
def x64():
    jax = pytest.importorskip("jax")
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield jax
    jax.config.update("jax_enable_x64", before)


def test_gp_nll_with_cho_solve_and_solve_triangular_against_jax(x64):
    jax = x64
    jnp = importlib.import_module("jax.numpy")
    jsl = importlib.import_module("jax.scipy.linalg")
    rng = np.random.default_rng(7)
    Xv = rng.uniform(-2, 2, (12, 2))
    yv = np.sin(Xv[:, 0]) + 0.1 * rng.standard_normal(12)
    theta = np.array([0.1, 0.3, -1.2])
    names = ("log_ell", "log_sf", "log_sn")
    hyper = [sg.var(n) for n in names]
    f = gp_nll(*hyper, Xv, yv, np, sgl)  # real NumPy calls on traced values
    grads = sg.grad(f, hyper)
    hess = sg.hessian(f, hyper)
    at = dict(zip(names, theta))
    value, *g = sg.evaluate([f, *grads], at)
    H = np.array([[sg.evaluate(hess[i][j], at) for j in range(3)] for i in range(3)])

    def jfun(t):
        return gp_nll(t[0], t[1], t[2], jnp.asarray(Xv), jnp.asarray(yv), jnp, jsl)

    t = jnp.asarray(theta)
    jvalue, jgrad = jax.jit(jax.value_and_grad(jfun))(t)
    assert value == pytest.approx(float(jvalue), rel=1e-13)
    np.testing.assert_allclose(g, np.asarray(jgrad), rtol=1e-10)
    # the Hessian against central differences of JAX's gradient (JAX's own Hessian of
    # this function takes a minute to trace)
    jg = jax.jit(jax.grad(jfun))
    h = 1e-5
    fd = np.array([(np.asarray(jg(t + h * e)) - np.asarray(jg(t - h * e))) / (2 * h)
                   for e in np.eye(3)])
    np.testing.assert_allclose(H, fd, rtol=1e-6, atol=1e-8)
    fn = sg.compile([f, *grads], inputs=hyper)
    assert "scipy" not in fn.source  # the triangular solves are NumPy's solve
    np.testing.assert_allclose(fn(*theta), [value, *g], rtol=1e-14)


def test_expm_derivative_is_scipys_frechet_derivative():
    a, e = sg.var("a", shape=(4, 4)), RNG.standard_normal((4, 4))
    m = 0.3 * A
    jvp = sg.evaluate(sg.jvp(sgl.expm(a), a, e), {"a": m})
    np.testing.assert_allclose(jvp, sl.expm_frechet(m, e, compute_expm=False), rtol=1e-12)
    g = sg.evaluate(sg.grad(sg.sum(sgl.expm(a) * e), a), {"a": m})
    np.testing.assert_allclose(g, sl.expm_frechet(m.T, e, compute_expm=False), rtol=1e-12)
    sym = SPD / 10  # for a symmetric matrix: V diag(exp(w)) V^T
    w, v = np.linalg.eigh(sym)
    np.testing.assert_allclose(sg.evaluate(sgl.expm(a), {"a": sym}), (v * np.exp(w)) @ v.T,
                               rtol=1e-12)


@pytest.mark.parametrize("trans", [0, 1])
def test_lu_factor_and_lu_solve_against_scipy(trans):
    a, b = sg.var("a", shape=(4, 4)), sg.var("b", shape=(4, 2))
    at = {"a": A, "b": B}
    lu, piv = sgl.lu_factor(a)
    want_lu, want_piv = sl.lu_factor(A)
    np.testing.assert_array_equal(sg.evaluate(lu, at), want_lu)
    np.testing.assert_array_equal(sg.evaluate(piv, at), want_piv)
    x = sgl.lu_solve((lu, piv), b, trans=trans)
    want = sl.lu_solve((want_lu, want_piv), B, trans=trans)
    np.testing.assert_allclose(sg.evaluate(x, at), want, rtol=1e-12)
    sg.check_grads(sg.sum(x * x), [a, b], at, order=2)
    sg.testing.check_jvps(sg.sum(x * x), [a, b], at, order=1)
    # constant factors (SciPy's own) solve a symbolic right-hand side
    y = sgl.lu_solve(sl.lu_factor(A), b, trans=trans)
    np.testing.assert_allclose(sg.evaluate(y, at), want, rtol=1e-12)
    with pytest.raises(sg.UnsupportedError, match="piv must come from"):
        sgl.lu_solve((lu, sg.var("p", shape=(4,), dtype="int64")), b)


# -- lu: P, L, U ------------------------------------------------------------------------------


@pytest.mark.parametrize("permute_l", [False, True])
@pytest.mark.parametrize("p_indices", [False, True])
def test_lu_equals_scipy_and_its_factors_are_differentiable(permute_l, p_indices):
    a = sg.var("a", shape=(4, 4))
    got = sg.evaluate(list(sgl.lu(a, permute_l=permute_l, p_indices=p_indices)), {"a": A})
    want = sl.lu(A, permute_l=permute_l, p_indices=p_indices)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)
    parts = sgl.lu(a, permute_l=permute_l, p_indices=p_indices)
    weights = [RNG.standard_normal((4, 4)) for _ in parts]
    f = sg.sum(sg.stack([sg.sum(x * c) for x, c in zip(parts, weights) if x.dtype != "int32"]))
    sg.check_grads(f, a, {"a": A}, order=2)


def test_lu_float32_and_shapes():
    a = sg.var("a", shape=(3, 3), dtype="float32")
    a32 = A[:3, :3].astype(np.float32)
    p, low, up = sg.evaluate(list(sgl.lu(a)), {"a": a32})
    assert low.dtype == up.dtype == p.dtype == np.float32
    np.testing.assert_allclose(p @ low @ up, a32, rtol=1e-6, atol=1e-6)
    with pytest.raises(sg.ShapeError, match="lu: a must be one square matrix"):
        sgl.lu(sg.var("r", shape=(3, 4)))


# -- eigh(a, b): the generalised symmetric eigenproblem ------------------------------------

GA = RNG.standard_normal((4, 4))
GA = GA + GA.T
GB = SPD / 4.0


@pytest.mark.parametrize("kind", [1, 2, 3])
@pytest.mark.parametrize("lower", [True, False])
def test_generalised_eigh_equals_scipy_reading_one_triangle(kind, lower):
    """The other triangle of a and b holds garbage: neither reads it."""
    junk = 100 * RNG.standard_normal((4, 4))
    keep = np.tril if lower else np.triu
    a_in = keep(GA) + (junk - keep(junk))
    b_in = keep(GB) + (junk.T - keep(junk.T))
    a, b = sg.var("a", shape=(4, 4)), sg.var("b", shape=(4, 4))
    at = {"a": a_in, "b": b_in}
    w, v = sg.evaluate(list(sgl.eigh(a, b, type=kind, lower=lower)), at)
    ww, vv = sl.eigh(a_in, b_in, type=kind, lower=lower)
    np.testing.assert_allclose(w, ww, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.abs(v), np.abs(vv), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(sg.evaluate(sgl.eigvalsh(a, b, type=kind, lower=lower), at), ww,
                               rtol=1e-12, atol=1e-13)
    norm = v.T @ (np.linalg.inv(GB) if kind == 3 else GB) @ v
    np.testing.assert_allclose(norm, np.eye(4), atol=1e-12)


@pytest.mark.parametrize("kind", [1, 2, 3])
def test_generalised_eigh_gradients(kind):
    """Values' and (sign-free) vectors' derivatives in a and b against finite differences,
    and d w_k = v_k^T (dA - w_k dB) v_k (type 1) against the closed form."""
    a, b = sg.var("a", shape=(4, 4)), sg.var("b", shape=(4, 4))
    at = {"a": GA, "b": GB}
    w, v = sgl.eigh(a, b, type=kind)
    c = RNG.standard_normal((4, 4))
    sg.check_grads(sg.sum(w * np.arange(1.0, 5.0)), [a, b], at, order=2)
    sg.check_grads(sg.sum(v * v * c), [a, b], at, order=1)
    if kind == 1:
        ga, gb = sg.evaluate(list(sg.grad(w[2], [a, b])), at)
        ww, vv = sl.eigh(GA, GB)
        k = vv[:, 2]
        want_a, want_b = np.outer(k, k), -ww[2] * np.outer(k, k)
        fold = lambda m: np.tril(m + m.T - np.diag(np.diag(m)))  # noqa: E731 (reads lower)
        np.testing.assert_allclose(ga, fold(want_a), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(gb, fold(want_b), rtol=1e-10, atol=1e-12)


def test_generalised_eigh_refuses_what_it_does_not_do():
    a, b = sg.var("a", shape=(3, 3)), sg.var("b", shape=(3, 3))
    with pytest.raises(sg.UnsupportedError, match="subset_by_index is not supported"):
        sgl.eigh(a, b, subset_by_index=[0, 1])
    with pytest.raises(sg.UnsupportedError, match="type must be 1, 2 or 3"):
        sgl.eigh(a, b, type=4)
    with pytest.raises(sg.ShapeError, match="one shape"):
        sgl.eigh(a, sg.var("c", shape=(2, 2)))


@pytest.mark.parametrize("lu", [(1, 1), (0, 2), (2, 0)])
def test_solve_banded_values_and_gradients_against_scipy(lu):
    """solve_banded: SciPy's values; gradients in ab (zero outside the band) and b equal
    central differences of SciPy's own solve_banded."""
    lo, up = lu
    n = 5
    rng = np.random.default_rng(7)
    band = rng.standard_normal((lo + up + 1, n))
    band[up] += 4.0  # a dominant diagonal
    rhs = rng.standard_normal((n, 2))
    ab, b = sg.var("ab", shape=band.shape), sg.var("b", shape=(n, 2))
    x = sgl.solve_banded(lu, ab, b)
    at = {"ab": band, "b": rhs}
    np.testing.assert_allclose(sg.evaluate(x, at), sl.solve_banded(lu, band, rhs),
                               rtol=1e-12, atol=1e-13)
    weights = rng.standard_normal((n, 2))
    f = sg.sum(x * weights)
    ga, gb = sg.evaluate(list(sg.grad(f, [ab, b])), at)
    for k in range(up):  # SciPy's unread corners
        assert np.all(ga[k, :up - k] == 0.0)
    for k in range(lo):
        assert np.all(ga[up + 1 + k, n - 1 - k:] == 0.0)
    for g, name, val in ((ga, "ab", band), (gb, "b", rhs)):
        d = rng.standard_normal(val.shape)

        def scipy_f(v, name=name):
            args = {"ab": band, "b": rhs, name: v}
            return np.sum(sl.solve_banded(lu, args["ab"], args["b"]) * weights)

        assert np.sum(g * d) == pytest.approx(directional(scipy_f, val, d), rel=1e-7, abs=1e-9)
    sg.check_grads(f, [ab, b], at, order=2)


def test_solve_banded_refuses_a_wrong_band_shape():
    with pytest.raises(sg.ShapeError, match=r"ab must have shape \(l \+ u \+ 1, n\)"):
        sgl.solve_banded((1, 1), sg.var("ab", shape=(2, 4)), np.ones(4))


def test_solve_sylvester_values_real_and_complex():
    """solve_sylvester: SciPy's values for real, rectangular and complex systems."""
    rng = np.random.default_rng(8)
    a, b, q = rng.standard_normal((3, 3)), rng.standard_normal((2, 2)), rng.standard_normal((3, 2))
    A, B, Q = sg.var("A", shape=(3, 3)), sg.var("B", shape=(2, 2)), sg.var("Q", shape=(3, 2))
    x = sgl.solve_sylvester(A, B, Q)
    np.testing.assert_allclose(sg.evaluate(x, {"A": a, "B": b, "Q": q}),
                               sl.solve_sylvester(a, b, q), rtol=1e-11, atol=1e-12)
    ca, cb, cq = (m + 1j * rng.standard_normal(m.shape) for m in (a, b, q))
    Ac = sg.var("Ac", shape=(3, 3), dtype="complex128")
    Bc = sg.var("Bc", shape=(2, 2), dtype="complex128")
    Qc = sg.var("Qc", shape=(3, 2), dtype="complex128")
    np.testing.assert_allclose(
        sg.evaluate(sgl.solve_sylvester(Ac, Bc, Qc), {"Ac": ca, "Bc": cb, "Qc": cq}),
        sl.solve_sylvester(ca, cb, cq), rtol=1e-11, atol=1e-12)


def test_solve_sylvester_derivatives_forward_reverse_and_order_two():
    """Reverse and forward derivatives in a, b and q equal central differences of SciPy's
    solve_sylvester; order 2 by check_grads."""
    rng = np.random.default_rng(9)
    vals = {"A": rng.standard_normal((3, 3)), "B": rng.standard_normal((3, 3)),
            "Q": rng.standard_normal((3, 3))}
    xs = [sg.var(k, shape=(3, 3)) for k in "ABQ"]
    weights = rng.standard_normal((3, 3))
    f = sg.sum(sgl.solve_sylvester(*xs) * weights)
    grads = sg.evaluate(list(sg.grad(f, xs)), vals)
    for var, g in zip(xs, grads):
        d = rng.standard_normal((3, 3))

        def scipy_f(v, name=var.name):
            args = {**vals, name: v}
            return np.sum(sl.solve_sylvester(args["A"], args["B"], args["Q"]) * weights)

        want = directional(scipy_f, vals[var.name], d)
        assert np.sum(g * d) == pytest.approx(want, rel=1e-7)
        tangent = sg.evaluate(sg.jvp(f, var, d), vals)
        assert float(tangent) == pytest.approx(want, rel=1e-7)
    sg.check_grads(f, xs, vals, order=2)


def test_solve_sylvester_refuses_mismatched_and_huge_systems():
    with pytest.raises(sg.ShapeError, match="q must have shape"):
        sgl.solve_sylvester(np.eye(2), np.eye(3), sg.var("q", shape=(3, 2)))
    with pytest.raises(sg.LimitError, match="matrix_functions.SYLVESTER_LIMIT"):
        sgl.solve_sylvester(sg.var("a", shape=(65, 65)), np.eye(65), np.zeros((65, 65)))


SQRTM = {
    "positive-definite": SPD,
    "negative-eigenvalues": A + A.T,
    "complex": A + 1j * RNG.standard_normal((4, 4)) + 3 * np.eye(4),
    "stack": RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3),
}


@pytest.mark.parametrize("name", sorted(SQRTM))
def test_sqrtm_values_are_scipys_principal_root(name):
    """sqrtm: SciPy's principal root (complex always), on the NumPy target too."""
    a = SQRTM[name]
    X = sg.var("X", shape=a.shape, dtype=a.dtype.name)
    root = sgl.sqrtm(X)
    want = sl.sqrtm(a)
    got = sg.evaluate(root, {"X": a})
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(sg.compile(root, inputs=[X])(a), want, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(got @ got, a, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", sorted(SQRTM))
def test_sqrtm_derivatives_forward_reverse_and_order_two(name):
    """Reverse and forward derivatives of a real loss of sqrtm equal central differences of
    SciPy's sqrtm; the second order equals central differences of the gradient."""
    rng = np.random.default_rng(13)
    a = SQRTM[name]
    X = sg.var("X", shape=a.shape, dtype=a.dtype.name)
    c1, c2 = rng.standard_normal(a.shape), rng.standard_normal(a.shape)
    loss = sg.sum(sg.real(sgl.sqrtm(X)) * c1 + sg.imag(sgl.sqrtm(X)) * c2)

    def scipy_loss(m):
        r = sl.sqrtm(m)
        return np.sum(r.real * c1 + r.imag * c2)

    d = rng.standard_normal(a.shape)
    if np.iscomplexobj(a):
        d = d + 1j * rng.standard_normal(a.shape)
    want = directional(scipy_loss, a, d)
    g = sg.grad(loss, X)
    assert np.sum((sg.evaluate(g, {"X": a}) * d).real) == pytest.approx(want, rel=1e-6)
    assert float(sg.evaluate(sg.jvp(loss, X, d), {"X": a})) == pytest.approx(want, rel=1e-6)
    c = rng.standard_normal(a.shape)
    second = sg.sum(sg.real(g) * c)

    def at(m):
        return float(sg.evaluate(second, {"X": m}))

    g2 = sg.evaluate(sg.grad(second, X), {"X": a})
    assert np.sum((g2 * d).real) == pytest.approx(directional(at, a, d, 1e-5), rel=1e-5, abs=1e-7)


def test_sqrtm_on_jax_equals_scipy(x64):
    """The JAX target computes sqrtm with jax.scipy.linalg.sqrtm (the same root), and the
    gradient with symgrad's Sylvester rule (JAX's sqrtm has no derivative of its own)."""
    pytest.importorskip("jax")
    X = sg.var("X", shape=(4, 4))
    root = sgl.sqrtm(X)
    g = sg.grad(sg.sum(sg.real(root) * np.arange(16.0).reshape(4, 4)), X)
    fn = sg.compile([root, g], inputs=[X], backend="jax")
    got = fn(SPD)
    np.testing.assert_allclose(np.asarray(got[0]), sl.sqrtm(SPD), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(got[1]), sg.evaluate(g, {"X": SPD}), rtol=1e-9,
                               atol=1e-12)
