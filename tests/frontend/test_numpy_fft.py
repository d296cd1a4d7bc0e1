"""numpy.fft on Exprs: every transform with n/s, axis/axes and norm gives NumPy's values,
and the gradients of real losses of it are jnp.fft's on every target; fftshift/ifftshift
and the frequencies; a Fourier-domain filter fit against JAX."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
import symgrad.numpy as snp


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("axes", [None, 1, -1, (0,), (0, 1), ()])
def test_shifts_equal_numpys_and_differentiate(name, axes):
    fn = getattr(np.fft, name)
    v = np.arange(15.0).reshape(3, 5)
    x = sg.var("x", shape=(3, 5))
    np.testing.assert_array_equal(sg.evaluate(fn(x, axes=axes), {"x": v}), fn(v, axes=axes))
    w = np.random.default_rng(0).standard_normal((3, 5))
    g = sg.evaluate(sg.grad(sg.sum(fn(x, axes=axes) * w), x), {"x": v})
    # a permutation: the gradient is w moved back by the inverse shift
    inverse = np.fft.ifftshift if name == "fftshift" else np.fft.fftshift
    np.testing.assert_array_equal(g, inverse(w, axes=axes))


CASES = [
    ("fft", lambda m, a: m.fft.fft(a), "c"),
    ("fft-n-axis-ortho", lambda m, a: m.fft.fft(a, n=8, axis=0, norm="ortho"), "c"),
    ("ifft-truncated", lambda m, a: m.fft.ifft(a, n=4), "c"),
    ("fft2-forward", lambda m, a: m.fft.fft2(a, norm="forward"), "c"),
    ("fftn-s", lambda m, a: m.fft.fftn(a, s=(3, 8), axes=(0, 1)), "c"),
    ("ifftn-axes", lambda m, a: m.fft.ifftn(a, axes=(1, 0)), "c"),
    ("ifft2-s", lambda m, a: m.fft.ifft2(a, s=(5, 5), norm="ortho"), "c"),
    ("rfft", lambda m, a: m.fft.rfft(a), "r"),
    ("rfft-n-axis-ortho", lambda m, a: m.fft.rfft(a, n=5, axis=0, norm="ortho"), "r"),
    ("irfft", lambda m, a: m.fft.irfft(a), "c"),
    ("irfft-n-odd-forward", lambda m, a: m.fft.irfft(a, n=7, axis=0, norm="forward"), "c"),
    ("rfft2", lambda m, a: m.fft.rfft2(a), "r"),
    ("irfft2-s", lambda m, a: m.fft.irfft2(a, s=(4, 9)), "c"),
    ("rfftn-axes", lambda m, a: m.fft.rfftn(a, axes=(1, 0)), "r"),
    ("irfftn-axes", lambda m, a: m.fft.irfftn(a, axes=(1, 0), norm="ortho"), "c"),
    ("hfft", lambda m, a: m.fft.hfft(a, norm="ortho"), "c"),
    ("hfft-n", lambda m, a: m.fft.hfft(a, n=9, axis=0), "c"),
    ("ihfft", lambda m, a: m.fft.ihfft(a), "r"),
    ("fft-of-real", lambda m, a: m.fft.fft(a, axis=0), "r"),
    ("irfft-of-real", lambda m, a: m.fft.irfft(a, n=5), "r"),
]


def _input(kind, dtype=np.float64):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 6))
    if kind == "c":
        x = x + 1j * rng.standard_normal((4, 6))
    return x.astype(dtype if kind == "r" else np.result_type(dtype, 1j))


@pytest.mark.parametrize("name, f, kind", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_transforms_equal_numpys(name, f, kind, dtype):
    a = _input(kind, dtype)
    x = sg.var("x", shape=a.shape, dtype=a.dtype.name)
    got = sg.evaluate(f(np, x), {"x": a})
    want = f(np, a)
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(sg.evaluate(f(snp, x), {"x": a}), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name, f, kind", CASES, ids=[c[0] for c in CASES])
def test_gradients_of_real_losses_equal_jaxs_on_every_target(name, f, kind, x64):
    """sum(real(F(a) * w)) differentiated by symgrad (interpreted and compiled for each
    target) and by jax.grad of jnp.fft's function."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    a = _input(kind)
    x = sg.var("x", shape=a.shape, dtype=a.dtype.name)
    out = f(np, x)
    rng = np.random.default_rng(3)
    w = rng.standard_normal(out.shape)
    if str(out.dtype).startswith("complex"):
        w = w + 1j * rng.standard_normal(out.shape)
    g = sg.grad(sg.sum(sg.real(out * w)), x)
    want = jax.grad(lambda u: jnp.sum(jnp.real(f(jnp, u) * w)))(jnp.asarray(a))
    got = sg.evaluate(g, {"x": a})
    assert got.dtype == a.dtype
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for backend in ("numpy", "jax", "torch", "numba", "array_api"):
        if backend in ("torch", "numba"):
            pytest.importorskip(backend)
        value = np.asarray(sg.compile(g, inputs=[x], backend=backend)(a))
        np.testing.assert_allclose(value, want, rtol=1e-10, atol=1e-12, err_msg=backend)


@pytest.mark.parametrize("name, f, kind", CASES[:6] + CASES[9:11], ids=[
    c[0] for c in CASES[:6] + CASES[9:11]])
def test_forward_mode_and_second_order_equal_jaxs(name, f, kind, x64):
    """The JVP with a complex tangent, and the gradient of a function of the gradient."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    a = _input(kind)
    x = sg.var("x", shape=a.shape, dtype=a.dtype.name)
    t = _input(kind)[::-1].copy()
    got = sg.evaluate(sg.jvp(f(np, x), x, t), {"x": a})
    want = jax.jvp(lambda u: f(jnp, u), (jnp.asarray(a),), (jnp.asarray(t),))[1]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)

    def loss(m, u):
        return m.sum(m.abs(f(m, u)) ** 2 * m.cos(m.real(f(m, u))))
    g = sg.grad(loss(np, x), x)
    second = sg.grad(sg.sum(sg.real(g * t)), x)
    jg = jax.grad(lambda u: loss(jnp, u))
    want2 = jax.grad(lambda u: jnp.sum(jnp.real(jg(u) * t)))(jnp.asarray(a))
    np.testing.assert_allclose(sg.evaluate(second, {"x": a}), want2, rtol=1e-9, atol=1e-10)


def test_a_fourier_domain_filter_fit_matches_jax(x64):
    """loss(theta) = ||irfft(rfft(x) * H(theta)) - y||^2 with a two-parameter low-pass
    H(f) = a / (1 + (f / c)^2): value and gradient as JAX's, and a few gradient steps
    reduce the loss as JAX's do."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(11)
    n = 64
    signal = np.cumsum(rng.standard_normal(n))
    freqs = np.fft.rfftfreq(n)
    target = np.fft.irfft(np.fft.rfft(signal) * 0.8 / (1 + (freqs / 0.1) ** 2), n=n)

    def loss(m, theta):
        h = theta[0] / (1.0 + (m.fft.rfftfreq(n) / theta[1]) ** 2)
        y = m.fft.irfft(m.fft.rfft(signal) * h, n=n)
        return m.sum((y - target) ** 2)

    theta = sg.var("theta", shape=(2,))
    f = loss(np, theta)
    g = sg.grad(f, theta)
    step = sg.compile([f, g], inputs=[theta])
    jstep = jax.value_and_grad(lambda t: loss(jnp, t))
    t_sg = t_jax = np.array([0.5, 0.3])
    for _ in range(5):
        (v, d), (jv, jd) = step(t_sg), jstep(jnp.asarray(t_jax))
        np.testing.assert_allclose(v, jv, rtol=1e-10)
        np.testing.assert_allclose(d, jd, rtol=1e-9, atol=1e-12)
        t_sg, t_jax = t_sg - 1e-3 * d, t_jax - 1e-3 * np.asarray(jd)
    assert step(t_sg)[0] < step(np.array([0.5, 0.3]))[0]


@pytest.mark.parametrize("d", [1.0, 0.25])
def test_frequencies_equal_numpys(d):
    def value(e):  # numbers in, NumPy's array out (eager); an Expr where d is symbolic
        return sg.evaluate(e) if isinstance(e, sg.Expr) else e

    for n in (5, 8):
        np.testing.assert_array_equal(value(snp.fft.fftfreq(n, d)), np.fft.fftfreq(n, d))
        np.testing.assert_array_equal(value(snp.fft.rfftfreq(n, d)), np.fft.rfftfreq(n, d))
    step = sg.var("d")
    np.testing.assert_allclose(sg.evaluate(snp.fft.fftfreq(6, step), {"d": d}),
                               np.fft.fftfreq(6, d))


@pytest.mark.parametrize("call, match", [
    (lambda x, z: np.fft.rfft(z), "input is real"),
    (lambda x, z: np.fft.fft(x, norm="unitary"), "norm must be"),
    (lambda x, z: np.fft.fftn(x, s=(2, 3), axes=(0,)), "different lengths"),
    (lambda x, z: np.fft.fft(x, n=0), "positive"),
    (lambda x, z: np.fft.fft(x, axis=2), "out of range"),
    (lambda x, z: np.fft.irfft(z[:, :1]), "output length"),
])
def test_bad_arguments_are_refused_clearly(call, match):
    x = sg.var("x", shape=(4, 4))
    z = sg.var("z", shape=(4, 4), dtype="complex128")
    with pytest.raises(sg.SymgradError, match=match):
        call(x, z)
