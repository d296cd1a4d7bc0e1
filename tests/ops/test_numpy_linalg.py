"""``numpy.linalg`` ops (``symgrad/ops/numpy_linalg.py``) beyond the registry battery.

* values: bit for bit NumPy's, through ``evaluate`` and through emitted code, float32 too;
* every rule against float64 central differences at ill-conditioned but valid inputs
  (condition numbers ~1e6, nearly repeated eigenvalues), to second order, batched, and full
  Hessians against the finite-difference Jacobian of the gradient;
* gradients against ``jax.grad`` where JAX is installed;
* the stated conventions (one triangle read, ties, zero norms, degenerate eigenvalues) and
  the errors;
* emitted source that runs in a fresh interpreter without symgrad;
* two real losses (full-covariance Gaussian NLL, Gaussian-process marginal likelihood):
  the emitted gradient against finite differences and a hand-written NumPy gradient.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
import symgrad.numpy as snp
from symgrad.errors import DifferentiationError, EvaluationError, ShapeError, SymgradError
from symgrad.testing import check_grads, numeric_jacobian
from tests.support.finite_differences import central

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))

from benchmarks import linalg_losses as losses  # noqa: E402

N = 4


def _orthogonal(rng, n: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def _with_singular_values(rng, s, rows: int | None = None) -> np.ndarray:
    """A matrix with singular values ``s`` (rows x len(s))."""
    n = len(s)
    u = _orthogonal(rng, rows or n)[:, :n]
    return (u * s) @ _orthogonal(rng, n).T


def _spd(rng, n: int, cond: float) -> np.ndarray:
    """Symmetric positive definite, eigenvalues from 1 down to 1 / cond."""
    q = _orthogonal(rng, n)
    a = (q * np.logspace(0, -np.log10(cond), n)) @ q.T
    return (a + a.T) / 2


def _symmetric_with_gaps(rng, gaps) -> np.ndarray:
    w = np.cumsum([0.3, *gaps])
    q = _orthogonal(rng, len(w))
    a = (q * w) @ q.T
    return (a + a.T) / 2


@pytest.fixture
def ill(rng):
    """Inputs with condition number ~1e6 (largest entries ~1, smallest singular value 1e-6)."""
    return {
        "square": _with_singular_values(rng, np.logspace(0, -6, N)),
        "spd": _spd(rng, N, 1e6),
        "close": _symmetric_with_gaps(rng, [1e-3, 0.5, 1e-2]),  # eigenvalue gap 1e-3
        "tall": _with_singular_values(rng, np.logspace(0, -6, 3), rows=5),
        "wide": _with_singular_values(rng, np.logspace(0, -6, 3), rows=5).T,
        "vector": rng.standard_normal(N),
        "matrix": rng.standard_normal((N, 3)),
    }


# -- values are NumPy's, bit for bit -----------------------------------------------------------


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    assert got.tobytes() == want.tobytes(), (got, want)


def _tuple_cases(rng):
    a = rng.standard_normal((2, 3, 3))
    s = a @ np.swapaxes(a, -1, -2) + np.eye(3)
    t = rng.standard_normal((4, 3))
    b = rng.standard_normal(4)
    return [
        ("slogdet", (a,), {}, np.linalg.slogdet(a)),
        ("eigh", (s,), {"UPLO": "U"}, np.linalg.eigh(s, "U")),
        ("svd", (t,), {}, np.linalg.svd(t)),
        ("svd", (a,), {"full_matrices": False}, np.linalg.svd(a, full_matrices=False)),
        ("svd", (t,), {"compute_uv": False}, (np.linalg.svd(t, compute_uv=False),)),
        ("qr", (t,), {}, np.linalg.qr(t)),
        ("qr", (t,), {"mode": "complete"}, np.linalg.qr(t, "complete")),
        ("qr", (t,), {"mode": "r"}, (np.linalg.qr(t, "r"),)),
        ("lstsq", (t, b), {}, np.linalg.lstsq(t, b)),
    ]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_multi_output_functions_give_numpys_results_bit_for_bit(rng, dtype):
    for name, arrays, kwargs, want in _tuple_cases(rng):
        arrays = tuple(a.astype(dtype) for a in arrays)
        want = getattr(np.linalg, name)(*arrays, **kwargs)
        want = want if isinstance(want, tuple) else (want,)
        xs = [sg.var(f"a{k}", a.shape, dtype) for k, a in enumerate(arrays)]
        got = getattr(sg, name)(*xs, **kwargs)
        got = list(got) if isinstance(got, tuple) else [got]
        inputs = {x.name: a for x, a in zip(xs, arrays)}
        assert len(got) == len(want), name
        values = sg.evaluate(got, inputs)
        emitted = sg.compile(got, inputs=xs)(*arrays)
        emitted = emitted if isinstance(emitted, tuple) else (emitted,)
        for g, e, w in zip(values, emitted, want):
            _same_bits(g, w)
            _same_bits(e, w)


def test_named_results_and_their_text():
    a = sg.var("A", (3, 3))
    logdet = sg.slogdet(a).logabsdet  # result 1 of one slogdet call
    assert logdet.op == "result" and logdet.graph.nodes[logdet.data.args[0]].op == "slogdet"
    assert sg.eigh(a).eigenvectors.shape == (3, 3)
    assert sg.svd(a).Vh.shape == (3, 3) and sg.qr(a).Q.shape == (3, 3)
    assert str(sg.eigh(a, UPLO="U").eigenvectors) == 'eigh(A, UPLO="U")[1]'
    assert str(sg.svd(a, compute_uv=False)) == "svd(A, compute_uv=False)"
    assert str(sg.qr(a, mode="r")) == 'qr(A, mode="r")'
    assert str(sg.slogdet(a)[0]) == "slogdet(A)[0]"
    b = sg.var("b", (3,))
    assert [str(e) for e in sg.lstsq(a, b, rcond=1e-10)] == [
        f"lstsq(A, b, rcond=1e-10)[{k}]" for k in range(4)]


def test_every_linalg_name_is_numpys_function(rng):
    for name in ("inv", "det", "slogdet", "solve", "cholesky", "eigh", "eigvalsh", "svd",
                 "svdvals", "pinv", "norm", "qr", "lstsq", "matrix_power", "multi_dot"):
        assert sg.ops.ALIASES[f"linalg.{name}"] == name
        assert getattr(snp.linalg, name).__name__ == getattr(sg, name).__name__ == name
    a0 = rng.standard_normal((2, 3, 3))
    a = sg.var("A", a0.shape)
    for got, want in ((snp.linalg.trace(a, offset=1), np.linalg.trace(a0, offset=1)),
                      (np.linalg.trace(a), np.linalg.trace(a0)),  # through the protocol
                      (np.trace(a, 1, 2, 0, dtype=np.float32), np.trace(a0, 1, 2, 0, np.float32)),
                      (a.trace(), a0.trace())):
        _same_bits(sg.evaluate(got, {"A": a0}), want)


def test_text_names_one_result_as_numpy_code_does():
    shapes = {"A": (3, 3), "T": (4, 3), "b": (4,)}
    for text in ("eigh(A)[1]", 'eigh(A, UPLO="U")[0]', "slogdet(A)[1] * slogdet(A)[0]",
                 "svd(T, full_matrices=False)[2]", "svd(T, compute_uv=False)", "qr(T)[0]",
                 'qr(T, mode="r")', "lstsq(T, b, rcond=1e-10)[3]", "lstsq(T, b)[-4]"):
        e = sg.parse(text, shapes=shapes)
        assert sg.parse(str(e), shapes=shapes).node == e.node, text
    with pytest.raises(sg.ParseError, match="2 results"):
        sg.parse("eigh(A)", shapes=shapes)
    for bad in ("eigh(A)[2]", "eigh(A)[0, 1]", "eigh(A)[:1]", "eigh(A)[i]"):
        with pytest.raises(sg.ParseError, match="pick one of the 2 results"):
            sg.parse(bad, shapes=shapes, dtypes={"i": "int64"})


def _outs(a):
    return [sg.inv(a), sg.det(a), sg.solve(a, np.ones(3, a.dtype)), sg.pinv(a),
            sg.norm(a, "nuc"), sg.trace(a), sg.matrix_power(a, -2), sg.svdvals(a),
            sg.eigvalsh(a + a.T), sg.cholesky(a @ a.T), sg.qr(a)[0], sg.eigh(a + a.T)[1]]


def test_float32_in_float32_out(rng):
    a32 = (rng.standard_normal((3, 3)) + 3 * np.eye(3)).astype(np.float32)
    a, a64 = sg.var("a", (3, 3), "float32"), sg.var("a64", (3, 3))
    outs = _outs(a)
    assert all(o.dtype == "float32" for o in outs)
    emitted = sg.compile(outs, inputs=[a])(a32)
    for o, e in zip(outs, emitted):
        assert np.asarray(e).dtype == np.float32, str(o)
    # gradients and Hessians have the variable's dtype, and float32 accuracy
    w = np.array([[0.3, 1.7, -0.4], [1.1, -0.8, 0.6], [0.2, 0.9, 1.5]])
    for o, o64 in zip(outs, _outs(a64)):
        f = sg.sum(w.astype(np.float32) * o * o) if o.ndim == 2 else sg.sum(o * o)
        g, h = sg.grad(f, a), sg.hessian(f, a)
        assert g.dtype == h.dtype == "float32", str(o)
        got = sg.compile(g, inputs=[a])(a32)
        assert got.dtype == np.float32
        f64 = sg.sum(w * o64 * o64) if o.ndim == 2 else sg.sum(o64 * o64)
        want = sg.evaluate(sg.grad(f64, a64), {"a64": a32.astype(np.float64)})
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * np.max(np.abs(want)),
                                   err_msg=str(o))


def test_integer_operands_follow_numpys_dtypes():
    i = sg.var("i", (3, 3), "int64")
    assert sg.inv(i).dtype == "float64" and sg.trace(i).dtype == "int64"
    assert sg.matrix_power(i, 2).dtype == "int64" and sg.matrix_power(i, -1).dtype == "float64"
    assert sg.lstsq(i, np.ones(3))[2].dtype == "int32"


# -- finite differences at ill-conditioned inputs, to second order --------------------------


def _ill_cases(ill):
    """(name, function of A, input key): every rule, at inputs where it is hardest."""
    w = np.linspace(-1.0, 1.0, N)
    b = np.linspace(0.5, -0.5, 5)
    return [
        ("inv", lambda a: sg.inv(a), "square"),
        ("det", lambda a: sg.det(a), "square"),
        ("slogdet", lambda a: sg.slogdet(a)[1], "square"),
        ("solve vector", lambda a: sg.solve(a, w), "square"),
        ("solve matrix", lambda a: sg.solve(a, np.outer(w, w[:2])), "square"),
        ("solve for b", lambda a: sg.solve(ill_square_const, a[:, 0]), "square"),
        ("cholesky", lambda a: sg.cholesky(a), "spd"),
        ("cholesky upper", lambda a: sg.cholesky(a, upper=True), "spd"),
        ("eigh values", lambda a: sg.eigh(a)[0], "close"),
        ("eigh vectors", lambda a: sg.eigh(a)[1], "close"),
        ("eigh vectors U", lambda a: sg.eigh(a, UPLO="U")[1], "close"),
        ("eigvalsh", lambda a: sg.eigvalsh(a), "spd"),
        ("svd S", lambda a: sg.svd(a)[1], "square"),
        ("svd U", lambda a: sg.svd(a)[0], "square"),
        ("svd Vh", lambda a: sg.svd(a)[2], "square"),
        ("svd tall Vh", lambda a: sg.svd(a, full_matrices=False)[2], "tall"),
        ("svd tall U", lambda a: sg.svd(a, full_matrices=False)[0], "tall"),
        ("svd wide Vh", lambda a: sg.svd(a, full_matrices=False)[2], "wide"),
        ("svd hermitian U", lambda a: sg.svd(a, hermitian=True)[0], "close"),
        ("svdvals", lambda a: sg.svdvals(a), "wide"),
        ("pinv", lambda a: sg.pinv(a), "square"),
        ("pinv tall", lambda a: sg.pinv(a), "tall"),
        ("pinv wide", lambda a: sg.pinv(a, rtol=None), "wide"),
        ("pinv hermitian", lambda a: sg.pinv(a, hermitian=True), "spd"),
        ("qr Q", lambda a: sg.qr(a)[0], "square"),
        ("qr R", lambda a: sg.qr(a)[1], "square"),
        ("qr tall Q", lambda a: sg.qr(a)[0], "tall"),
        ("qr tall R", lambda a: sg.qr(a)[1], "tall"),
        ("qr wide Q", lambda a: sg.qr(a)[0], "wide"),
        ("qr wide R", lambda a: sg.qr(a)[1], "wide"),
        ("qr r mode", lambda a: sg.qr(a, mode="r"), "tall"),
        ("lstsq x", lambda a: sg.lstsq(a, b)[0], "tall"),
        ("lstsq residuals", lambda a: sg.lstsq(a, b)[1], "tall"),
        ("lstsq underdetermined", lambda a: sg.lstsq(a, b[:3])[0], "wide"),
        ("lstsq s", lambda a: sg.lstsq(a, b)[3], "tall"),
        ("matrix_power 5", lambda a: sg.matrix_power(a, 5), "square"),
        ("matrix_power -2", lambda a: sg.matrix_power(a, -2), "square"),
        ("norm 2", lambda a: sg.norm(a, 2), "square"),
        ("norm -2", lambda a: sg.norm(a, -2), "square"),
        ("norm nuc", lambda a: sg.norm(a, "nuc"), "square"),
        ("norm fro", lambda a: sg.norm(a), "square"),
        ("norm 1", lambda a: sg.norm(a, 1), "matrix"),
        ("norm inf", lambda a: sg.norm(a, np.inf), "matrix"),
        ("norm p", lambda a: sg.norm(a, 3.5), "vector"),
        ("norm -1 vector", lambda a: sg.norm(a, -1), "vector"),
        ("trace", lambda a: sg.trace(sg.inv(a), offset=1), "square"),
        ("multi_dot", lambda a: sg.multi_dot([w, a, np.outer(w, w) + 1.0, a.T, a]), "square"),
    ]


ill_square_const = np.diag([1.0, 1e-3, 1e-6, 2.0]) + np.triu(np.full((N, N), 0.3), 1)


@pytest.mark.parametrize("case", range(47))
def test_rules_at_ill_conditioned_inputs_to_second_order(ill, case):
    cases = _ill_cases(ill)
    assert len(cases) == 47
    name, fn, key = cases[case]
    a0 = ill[key]
    a = sg.var("A", a0.shape)
    out = fn(a)
    # a step of 1e-3 of the smallest singular value (1e-6): truncation and rounding both
    # stay ~1e-7 relative although entries of inv(A) reach 1e6
    check_grads(out, a, {"A": a0}, order=2, eps=1e-9)


def test_rules_on_batches_at_ill_conditioned_inputs(rng, ill):
    stack = np.stack([ill["square"], _with_singular_values(rng, np.logspace(0, -5, N))])
    spd = np.stack([ill["spd"], _spd(rng, N, 1e5)])
    a, s = sg.var("A", stack.shape), sg.var("S", spd.shape)
    outs = {
        "inv": (sg.inv(a), a, stack), "slogdet": (sg.slogdet(a)[1], a, stack),
        "solve": (sg.solve(a, np.ones(N)), a, stack),
        "cholesky": (sg.cholesky(s), s, spd), "eigh": (sg.eigh(s)[1], s, spd),
        "svd": (sg.svd(a)[0], a, stack), "qr": (sg.qr(a)[0], a, stack),
        "pinv": (sg.pinv(a), a, stack), "power": (sg.matrix_power(a, -3), a, stack),
        "norm": (sg.norm(a, "nuc", axis=(1, 2)), a, stack),
        "trace": (sg.trace(a, axis1=1, axis2=2), a, stack),
    }
    for name, (out, x, value) in outs.items():
        check_grads(out, x, {x.name: value}, order=2, eps=1e-9)
        # each matrix of the batch alone gives the same gradient
        g = sg.evaluate(sg.grad(sg.sum(out * out), x), {x.name: value})
        for k in range(value.shape[0]):
            one = sg.var(f"{x.name}{k}", value.shape[1:])
            single = outs_fn(name)(one)
            gk = sg.evaluate(sg.grad(sg.sum(single * single), one), {one.name: value[k]})
            np.testing.assert_allclose(g[k], gk, rtol=1e-12, atol=0, err_msg=name)


def outs_fn(name):
    return {
        "inv": sg.inv, "slogdet": lambda a: sg.slogdet(a)[1],
        "solve": lambda a: sg.solve(a, np.ones(N)), "cholesky": sg.cholesky,
        "eigh": lambda a: sg.eigh(a)[1], "svd": lambda a: sg.svd(a)[0],
        "qr": lambda a: sg.qr(a)[0], "pinv": sg.pinv,
        "power": lambda a: sg.matrix_power(a, -3), "norm": lambda a: sg.norm(a, "nuc"),
        "trace": sg.trace,
    }[name]


@pytest.mark.parametrize("which", ["logdet", "inv", "cholesky", "eigh", "nuc", "power",
                                   "pinv", "qr", "lstsq"])
def test_hessians_equal_the_difference_quotient_of_the_gradient(rng, which):
    cond = 1e4
    sq = _with_singular_values(rng, np.logspace(0, -np.log10(cond), N))
    spd = _spd(rng, N, cond)
    weights = rng.standard_normal((N, N))
    fns = {
        "logdet": (lambda a: sg.slogdet(a)[1], sq),
        "inv": (lambda a: sg.sum(weights * sg.inv(a)), sq),
        "cholesky": (lambda a: sg.sum(weights * sg.cholesky(a)), spd),
        "eigh": (lambda a: sg.sum(weights * sg.eigh(a)[1] ** 2), _symmetric_with_gaps(
            rng, [0.2, 0.5, 0.3])),
        "nuc": (lambda a: sg.norm(a, "nuc"), sq),
        "power": (lambda a: sg.trace(sg.matrix_power(a, 4) @ weights), sq),
        "pinv": (lambda a: sg.sum(weights[:, :3].T * sg.pinv(a)), sq[:, :3]),
        "qr": (lambda a: sg.sum(weights[:, :3] * sg.qr(a)[0]), sq[:, :3]),
        "lstsq": (lambda a: sg.sum(sg.lstsq(a, weights[0])[0] ** 2), sq[:, :3]),
    }
    fn, value = fns[which]
    a = sg.var("A", value.shape)
    f = fn(a)
    h = np.asarray(sg.evaluate(sg.hessian(f, a), {"A": value}))
    numeric = numeric_jacobian(sg.grad(f, a), a, {"A": value}, eps=1e-4 / cond)
    scale = np.max(np.abs(numeric))
    np.testing.assert_allclose(h, numeric, rtol=1e-5, atol=1e-6 * scale)
    flat = h.reshape(value.size, value.size)
    np.testing.assert_allclose(flat, flat.T, rtol=1e-8, atol=1e-6 * scale)


# -- against JAX -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def jax_np():
    jax = pytest.importorskip("jax", reason="jax is not installed (the bench extra)")
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp

    return jax, jnp


def _jax_cases(rng):
    w = rng.standard_normal((N, N))
    v = rng.standard_normal(N)
    # inputs built from B so that symmetric and triangle-reading functions agree across
    # libraries (JAX symmetrises, LAPACK reads one triangle): spd(B) = B B^T + I
    return [
        ("inv", lambda L, a: L.sum(w * L.linalg.inv(a))),
        ("det", lambda L, a: L.linalg.det(a)),
        ("slogdet", lambda L, a: L.linalg.slogdet(a)[1]),
        ("solve", lambda L, a: L.sum(w[:, :2] * L.linalg.solve(a, w[:, 2:]))),
        ("solve vector", lambda L, a: L.sum(v * L.linalg.solve(a, v))),
        ("cholesky", lambda L, a: L.sum(w * L.linalg.cholesky(a @ a.T + np.eye(N)))),
        ("eigh", lambda L, a: L.sum(v * L.linalg.eigh(a + a.T)[0])
         + L.sum(w * L.linalg.eigh(a + a.T)[1] ** 2)),
        ("eigvalsh", lambda L, a: L.sum(v * L.linalg.eigvalsh(a @ a.T))),
        ("svd", lambda L, a: L.sum(v * L.linalg.svd(a)[1]) + L.sum(w * L.linalg.svd(a)[0] ** 2)
         + L.sum(w.T * L.linalg.svd(a)[2] ** 2)),
        ("svd tall", lambda L, a: L.sum(w[:, :3] * L.linalg.svd(a[:, :3], full_matrices=False)[0]
                                        ** 2)),
        ("pinv", lambda L, a: L.sum(w[:3] * L.linalg.pinv(a[:, :3]))),
        ("qr", lambda L, a: L.sum(w * L.linalg.qr(a)[0] ** 2)
         + L.sum(w.T * L.linalg.qr(a)[1] ** 2)),
        ("lstsq", lambda L, a: L.sum(L.linalg.lstsq(a[:, :3], v)[0] ** 2)),
        ("norm nuc", lambda L, a: L.linalg.norm(a, "nuc")),
        ("norm 2", lambda L, a: L.linalg.norm(a, 2)),
        ("norm 1", lambda L, a: L.linalg.norm(a, 1)),
        ("norm vector 3", lambda L, a: L.linalg.norm(a[0], 3)),
        ("norm axis", lambda L, a: L.sum(L.linalg.norm(a, axis=0))),
        ("matrix_power", lambda L, a: L.sum(w * L.linalg.matrix_power(a, 3))),
        ("matrix_power -2", lambda L, a: L.sum(w * L.linalg.matrix_power(a, -2))),
        ("trace", lambda L, a: L.trace(a @ w, offset=1)),
        ("multi_dot", lambda L, a: L.linalg.multi_dot([v, a, w, a.T, v])),
    ]


def test_gradients_equal_jax(rng, jax_np):
    jax, jnp = jax_np
    a0 = rng.standard_normal((N, N)) + 2.0 * np.eye(N)
    a = sg.var("A", (N, N))
    for name, fn in _jax_cases(rng):
        ours = sg.evaluate(sg.grad(fn(snp, a), a), {"A": a0})
        theirs = np.asarray(jax.jit(jax.grad(lambda x, fn=fn: fn(jnp, x)))(jnp.asarray(a0)))
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-11, err_msg=name)


def test_hessians_equal_jax(rng, jax_np):
    jax, jnp = jax_np
    a0 = rng.standard_normal((N, N)) + 2.0 * np.eye(N)
    a = sg.var("A", (N, N))
    for name, fn in _jax_cases(rng)[:12]:
        ours = sg.evaluate(sg.hessian(fn(snp, a), a), {"A": a0})
        # jitted: one XLA compile per case, not one per primitive as JAX runs eagerly
        theirs = np.asarray(jax.jit(jax.hessian(lambda x, fn=fn: fn(jnp, x)))(jnp.asarray(a0)))
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-10, err_msg=name)


def test_one_triangle_gradients_have_jaxs_symmetric_part(rng, jax_np):
    """cholesky/eigh read one triangle: our gradient lies there; its symmetric part is the
    gradient JAX reports (JAX symmetrises its input)."""
    jax, jnp = jax_np
    s0 = _spd(rng, N, 1e3) + np.eye(N)
    w = rng.standard_normal((N, N))
    s = sg.var("S", (N, N))
    for fn, uplo in ((lambda L, a: L.sum(w * L.linalg.cholesky(a)), "L"),
                     (lambda L, a: L.sum(w * L.linalg.cholesky(a, upper=True)), "U"),
                     (lambda L, a: L.sum(w[0] * L.linalg.eigh(a)[0]), "L"),
                     (lambda L, a: L.sum(w * L.linalg.eigh(a, UPLO="U")[1] ** 2), "U")):
        ours = sg.evaluate(sg.grad(fn(snp, s), s), {"S": s0})
        other = np.triu(ours, 1) if uplo == "L" else np.tril(ours, -1)
        assert np.all(other == 0.0)
        theirs = np.asarray(jax.grad(lambda x, fn=fn: fn(jnp, x))(jnp.asarray(s0)))
        np.testing.assert_allclose((ours + ours.T) / 2, theirs, rtol=1e-9, atol=1e-11)


# -- conventions and errors ------------------------------------------------------------------


def test_one_triangle_is_read_and_differentiated(rng):
    s0 = _spd(rng, 3, 10.0)
    junk = s0 + np.triu(np.full((3, 3), 7.0), 1)  # the upper triangle is never read
    s = sg.var("S", (3, 3))
    f = sg.sum(sg.cholesky(s) * rng.standard_normal((3, 3)))
    g0, g1 = sg.evaluate([sg.grad(f, s), f], {"S": junk})
    np.testing.assert_array_equal(np.triu(g0, 1), 0.0)
    assert g1 == sg.evaluate(f, {"S": s0})
    check_grads(f, s, {"S": junk}, order=2)


def test_degenerate_eigenvalues_give_non_finite_vector_gradients_only():
    a = sg.var("A", (3, 3))
    w, v = sg.eigh(a)
    at = {"A": np.diag([1.0, 1.0, 2.0])}
    assert np.all(np.isfinite(sg.evaluate(sg.grad(sg.sum(w * [1.0, 2.0, 3.0]), a), at)))
    gv = sg.evaluate(sg.grad(sg.sum(v * np.arange(9.0).reshape(3, 3)), a), at)
    assert not np.all(np.isfinite(gv))


def test_det_of_a_singular_matrix_has_a_non_finite_gradient():
    a = sg.var("A", (2, 2))
    with np.errstate(all="ignore"):
        with pytest.raises(EvaluationError, match="inv"):
            sg.evaluate(sg.grad(sg.det(a), a), {"A": [[1.0, 2.0], [2.0, 4.0]]})


def test_norm_conventions():
    x = sg.var("x", (3,))
    for order in (None, 2, 3.0, 1):
        g = sg.evaluate(sg.grad(sg.norm(x, order), x), {"x": np.zeros(3)})
        np.testing.assert_array_equal(g, 0.0)
    g = sg.evaluate(sg.grad(sg.norm(x, np.inf), x), {"x": [-2.0, 2.0, 1.0]})
    np.testing.assert_array_equal(g, [-0.5, 0.5, 0.0])  # ties share, as max does
    np.testing.assert_array_equal(sg.evaluate(sg.grad(sg.norm(x, 0), x), {"x": [1.0, 0, 2]}),
                                  0.0)
    m = sg.var("M", (2, 2))
    g = sg.evaluate(sg.grad(sg.norm(m, 2), m), {"M": np.eye(2)})  # sigma_1 = sigma_2 = 1
    np.testing.assert_allclose(g, 0.5 * np.eye(2))


def test_errors_say_what_to_do():
    a, t = sg.var("A", (3, 3)), sg.var("T", (4, 3))
    with pytest.raises(ShapeError, match="square"):
        sg.inv(t)
    with pytest.raises(ShapeError, match="no batch axes"):
        sg.lstsq(sg.var("B", (2, 4, 3)), sg.var("c", (4,)))
    with pytest.raises(SymgradError, match="raw"):
        sg.qr(a, mode="raw")
    with pytest.raises(SymgradError, match="UPLO"):
        sg.eigh(a, UPLO="X")
    with pytest.raises(SymgradError, match="matrix norm"):
        sg.norm(t, 3)
    with pytest.raises(SymgradError, match="integer"):
        sg.matrix_power(a, 1.5)
    with pytest.raises(DifferentiationError, match="full_matrices=False"):
        sg.grad(sg.sum(sg.svd(t)[0]), t)
    with pytest.raises(DifferentiationError, match="mode='reduced'"):
        sg.grad(sg.sum(sg.qr(t, mode="complete")[0]), t)
    assert sg.grad(sg.sum(sg.svd(t)[1]), t).shape == (4, 3)  # S alone is fine
    with pytest.raises(EvaluationError, match="not positive definite"):
        sg.evaluate(sg.cholesky(a), {"A": -np.eye(3)})


def test_lstsq_residuals_of_a_rank_deficient_matrix_are_computed():
    """NumPy gives no residuals for a rank-deficient tall ``a`` (an empty array, a shape
    no one can know before the values): they are the sum of squares of ``b - a @ x`` at
    NumPy's ``x``, evaluated and compiled."""
    t, b = sg.var("T", (4, 3)), sg.var("b", (4,))
    x, res, rank, _ = sg.lstsq(t, b)
    t0, b0 = np.ones((4, 3)), np.arange(4.0)
    x0, res0, rank0, _ = np.linalg.lstsq(t0, b0)
    assert res0.size == 0 and rank0 == 1
    want = np.sum((b0 - t0 @ x0) ** 2, keepdims=True)
    for got in (sg.evaluate([x, res, rank], {"T": t0, "b": b0}),
                sg.compile([x, res, rank], inputs=[t, b])(t0, b0)):
        _same_bits(got[0], x0)
        np.testing.assert_allclose(got[1], want, rtol=1e-14)
        assert got[2] == 1


# -- emitted code --------------------------------------------------------------------------------


def test_emitted_source_runs_without_symgrad(tmp_path, rng):
    a = sg.var("A", (3, 3))
    b = sg.var("b", (3,))
    s = a @ a.T + np.eye(3)
    w, v = sg.eigh(s)
    f = (sg.slogdet(s)[1] + sg.sum(sg.solve(s, b)) + sg.sum(sg.cholesky(s))
         + sg.sum(w * v[0]) + sg.norm(a, "nuc") + sg.trace(sg.pinv(a)) + sg.sum(sg.qr(a)[0]))
    grads = sg.grad(f, [a, b])
    path = tmp_path / "linalg_grad.py"
    path.write_text(sg.to_source([f, *grads], inputs=[a, b], name="value_and_grad"))
    a0, b0 = rng.standard_normal((3, 3)), rng.standard_normal(3)
    np.save(tmp_path / "a.npy", a0)
    np.save(tmp_path / "b.npy", b0)
    script = textwrap.dedent(f"""
        import sys, runpy, numpy as np
        ns = runpy.run_path({str(path)!r})
        out = ns["value_and_grad"](np.load({str(tmp_path / 'a.npy')!r}),
                                   np.load({str(tmp_path / 'b.npy')!r}))
        assert "symgrad" not in sys.modules
        np.save({str(tmp_path / 'out.npy')!r}, np.concatenate([np.ravel(o) for o in out]))
    """)
    subprocess.run([sys.executable, "-I", "-c", script], check=True, timeout=120)
    got = np.load(tmp_path / "out.npy")
    want = sg.evaluate([f, *grads], {"A": a0, "b": b0})
    np.testing.assert_array_equal(got, np.concatenate([np.ravel(x) for x in want]))


# -- two real losses ---------------------------------------------------------------------------


@pytest.mark.parametrize("name,cfg", [("gaussian_nll", {"N": 30, "d": 4}),
                                      ("gp_nlml", {"n": 25})])
def test_losses_emitted_gradient_matches_differences_and_the_hand_written_one(name, cfg):
    data = losses.data_for(name, cfg)
    f, wrt, fn, order = losses.compiled(name, data)
    args = [data[k] for k in order]
    got = fn(*args)
    ref = losses.hand(name)(*args)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)
    # the emitted value, differenced: the emitted gradient is its derivative
    for k, w in enumerate(wrt):
        x0 = np.asarray(data[w.name], dtype=float)
        h = 1e-6 * max(1.0, float(np.max(np.abs(x0))))
        numeric = np.zeros_like(x0)
        for idx in np.ndindex(*x0.shape):
            step = np.zeros_like(x0)
            step[idx] = h
            plus = dict(zip(order, args)) | {w.name: x0 + step}
            minus = dict(zip(order, args)) | {w.name: x0 - step}
            numeric[idx] = (fn(*[plus[o] for o in order])[0]
                            - fn(*[minus[o] for o in order])[0]) / (2 * h)
        np.testing.assert_allclose(got[k + 1], numeric, rtol=1e-6, atol=1e-6)
    check_grads(f, wrt, {k: data[k] for k in order}, order=2)


def test_losses_also_run_as_plain_numpy():
    data = losses.gaussian_nll_data({"N": 20, "d": 3})
    value = losses.gaussian_nll(data["mu"], data["sigma"], data["x"])
    assert value == pytest.approx(losses.gaussian_nll_value_and_grad(
        data["mu"], data["sigma"], data["x"])[0], rel=1e-12)
    gp = losses.gp_data({"n": 10})
    args = [gp[k] for k in ("log_ell", "log_sf", "log_sn", "d2", "y")]
    assert losses.gp_nlml(*args) == pytest.approx(losses.gp_nlml_value_and_grad(*args)[0],
                                                  rel=1e-12)


def test_one_decomposition_is_computed_once_per_call(monkeypatch, rng):
    calls = []
    real = np.linalg.svd

    @functools.wraps(real)
    def counting(*args, **kwargs):
        calls.append(args[0].shape)
        return real(*args, **kwargs)

    monkeypatch.setattr(np.linalg, "svd", counting)
    a = sg.var("A", (4, 3))
    u, s, vh = sg.svd(a, full_matrices=False)
    f = sg.sum(u ** 2 * rng.standard_normal((4, 3))) + sg.sum(s) + sg.sum(vh ** 3)
    outs = [u, f, sg.grad(f, a)]
    assert sum(n.op == "svd" for n in a.graph.nodes) == 1  # one call node, three results
    fn = sg.compile(outs, inputs=[a])
    code = [line.split("  #")[0] for line in fn.source.splitlines()]
    assert sum("np.linalg.svd(" in line for line in code) == 1
    a0 = rng.standard_normal((4, 3))
    first = fn(a0)
    assert len(calls) == 1  # U, S, Vh and the rules' factors: one LAPACK call
    again = fn(a0)
    assert len(calls) == 2  # one per call of the function: nothing is remembered
    np.testing.assert_array_equal(again[0], real(a0, full_matrices=False)[0])
    np.testing.assert_array_equal(first[2], again[2])
    values = sg.evaluate(outs, {"A": a0})  # the interpreter: one run too
    assert len(calls) == 3
    for v, w in zip(values, first):
        np.testing.assert_array_equal(v, w)


def test_docs_linear_algebra_example_runs():
    """The linear-algebra page's example: its gradients are the closed forms."""
    from tests.support import docs

    block = docs.block("guide/linalg", "sg.slogdet(S)")
    namespace: dict = {}
    exec(compile(block, "docs/guide/linalg.md", "exec"), namespace)  # our own documentation
    nll, dS, dx = namespace["fn"](namespace["at"]["S"], namespace["at"]["x"])
    s, x = namespace["at"]["S"], namespace["at"]["x"]
    inv = np.linalg.inv(s)
    np.testing.assert_allclose(dx, 0.5 * (inv + inv.T) @ x, rtol=1e-12)
    np.testing.assert_allclose(dS, 0.5 * (inv.T - np.outer(inv.T @ x, inv @ x)), rtol=1e-12)


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"])
def test_cond_is_numpys_and_differentiates(rng, p):
    a0 = np.stack([_with_singular_values(rng, np.logspace(0, -3, N)),
                   rng.standard_normal((N, N)) + 2 * np.eye(N)])
    a = sg.var("A", a0.shape)
    c = snp.linalg.cond(a, p)
    _same_bits(sg.evaluate(c, {"A": a0}), np.linalg.cond(a0, p))
    check_grads(c, a, {"A": a0}, order=2, eps=1e-7)


def test_matrix_rank_and_what_is_not_traced(rng):
    a0 = rng.standard_normal((2, 4, 2)) @ rng.standard_normal((2, 3))
    a = sg.var("A", a0.shape)
    _same_bits(sg.evaluate(np.linalg.matrix_rank(a), {"A": a0}), np.linalg.matrix_rank(a0))
    assert sg.grad(sg.sum(sg.svdvals(a) * np.linalg.matrix_rank(a)[:, None]), a).shape == a0.shape


# -- pinv: second derivatives at ill-conditioned points ----------------------------------------


def _conditioned(rng, shape, cond):
    """A matrix of ``shape`` whose singular values run from 1 to ``1/cond``."""
    m, n = shape
    k = min(m, n)
    u = np.linalg.qr(rng.standard_normal((m, k)))[0]
    v = np.linalg.qr(rng.standard_normal((n, k)))[0]
    return (u * np.geomspace(1.0, 1.0 / cond, k)) @ v.T


def _mp_inverse_gram_hessian(x0: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The exact Hessian of ``sum(c * inv(X.T @ X))`` at ``x0`` in 40-digit arithmetic:
    with B = X^T X and P = B^-1, d2 sum(c * P)[E1, E2] = sum(c * (P dB1 P dB2 P +
    P dB2 P dB1 P - P (E1^T E2 + E2^T E1) P)), dB = E^T X + X^T E."""
    mpmath = pytest.importorskip("mpmath")
    m, n = x0.shape
    H = np.zeros((m * n, m * n))
    with mpmath.workdps(40):
        X, C = mpmath.matrix(x0.tolist()), mpmath.matrix(c.tolist())
        P = mpmath.inverse(X.T * X)
        units = []
        for i in range(m):
            for j in range(n):
                e = mpmath.zeros(m, n)
                e[i, j] = 1
                units.append((e, e.T * X + X.T * e))
        for a, (e1, db1) in enumerate(units):
            p1 = P * db1 * P
            for b, (e2, db2) in enumerate(units[a:], start=a):
                d2 = p1 * db2 * P + P * db2 * p1 - P * (e1.T * e2 + e2.T * e1) * P
                H[a, b] = H[b, a] = float(sum(C[i, j] * d2[i, j] for i in range(n)
                                              for j in range(n)))
    return H.reshape(m, n, m, n)


def test_pinv_hessian_of_a_gram_matrix_is_as_accurate_as_inv(rng):
    """pinv(X.T @ X) at cond 9e4 (autograd's low-rank test function): the Hessian was off
    by 1e-3 relative (JAX's too), the same function through inv by 1e-11. The terms of
    I - A P and I - P A vanish identically at a full-rank square matrix; computed, they
    are rounding noise whose derivatives cancel only in exact arithmetic."""
    x0 = _conditioned(rng, (3, 3), 300.0)  # X.T @ X: cond 9e4
    c = rng.standard_normal((3, 3))
    x = sg.var("X", (3, 3))
    want = _mp_inverse_gram_hessian(x0, c)
    scale = np.max(np.abs(want))
    for inverse in (sg.pinv, sg.inv):
        f = sg.sum(inverse(x.T @ x) * c)
        for h in (sg.hessian(f, x), sg.jacfwd(sg.grad(f, x), x)):  # rev-over-rev, fwd-over-rev
            got = sg.evaluate(h, {"X": x0})
            assert np.max(np.abs(got - want)) / scale < 1e-9, inverse.__name__


def test_pinv_hessian_of_rectangular_matrices_against_high_precision(rng):
    """A tall and a wide matrix of full rank at cond 9e4: one Golub-Pereyra term vanishes,
    the other does not; the Hessian against central differences in 40-digit arithmetic."""
    mpmath = pytest.importorskip("mpmath")
    for shape in ((4, 2), (2, 4)):
        a0, c = _conditioned(rng, shape, 9e4), rng.standard_normal(shape[::-1])
        a = sg.var("A", shape)
        got = sg.evaluate(sg.hessian(sg.sum(sg.pinv(a) * c), a), {"A": a0})
        with mpmath.workdps(40):
            C = mpmath.matrix(c.tolist())

            def f(m, C=C, tall=shape[0] > shape[1]):
                p = mpmath.inverse(m.T * m) * m.T if tall else m.T * mpmath.inverse(m * m.T)
                return sum(C[i, j] * p[i, j] for i in range(p.rows) for j in range(p.cols))

            h, base = mpmath.mpf("1e-15"), mpmath.matrix(a0.tolist())
            idx = list(np.ndindex(shape))
            want = np.zeros((len(idx), len(idx)))
            for p, e1 in enumerate(idx):
                for q, e2 in enumerate(idx[p:], start=p):
                    total = 0
                    for s1, s2 in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                        m = base.copy()
                        m[e1] += s1 * h
                        m[e2] += s2 * h
                        total += s1 * s2 * f(m)
                    want[p, q] = want[q, p] = float(total / (4 * h * h))
        want = want.reshape(shape + shape)
        assert np.max(np.abs(got - want)) / np.max(np.abs(want)) < 1e-6, shape


def test_pinv_hermitian_differentiates_the_triangle_it_reads(rng):
    """hermitian=True reads the lower triangle: its derivatives are those of
    inv(tril(A) + tril(A, -1).T), also at a non-symmetric A and to second order (the rule
    used the operand as given, so the gradient was off by 0.36 there and the Hessian by
    0.77 even at a symmetric point)."""
    for a0 in (rng.standard_normal((3, 3)) + 3 * np.eye(3), _spd(rng, 3, 10.0)):
        a = sg.var("A", (3, 3))
        c = rng.standard_normal((3, 3))
        mirrored = sg.tril(a) + sg.tril(a, -1).T
        fp, fi = sg.sum(sg.pinv(a, hermitian=True) * c), sg.sum(sg.inv(mirrored) * c)
        t = rng.standard_normal((3, 3))
        got = sg.evaluate([sg.grad(fp, a), sg.jvp(fp, a, t), sg.hessian(fp, a)], {"A": a0})
        want = sg.evaluate([sg.grad(fi, a), sg.jvp(fi, a, t), sg.hessian(fi, a)], {"A": a0})
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10 * np.max(np.abs(w)))


@pytest.mark.parametrize("name", ["eigh", "svd", "qr", "slogdet"])
def test_a_decomposition_is_one_node_with_numpys_values_and_gradients(name, rng):
    """Every result of ``eigh``, ``svd``, ``qr`` and ``slogdet`` is a projection of ONE
    call node; the values are NumPy's bit for bit, evaluated and compiled, and the
    gradient of a loss reading every result matches finite differences to second order."""
    s0 = rng.standard_normal((4, 4))
    a0 = s0 @ s0.T + 4.0 * np.eye(4) if name in ("eigh", "slogdet") else s0
    a = sg.var("A", (4, 4))
    call = {"eigh": lambda m: sg.eigh(m), "svd": lambda m: sg.svd(m),
            "qr": lambda m: sg.qr(m), "slogdet": lambda m: sg.slogdet(m)}[name]
    results = list(call(a))
    nodes = a.graph.nodes
    assert sum(n.op == name for n in nodes) == 1
    assert {r.op for r in results} == {"result"}
    want = getattr(np.linalg, name)(a0)
    for got in (sg.evaluate(results, {"A": a0}), sg.compile(results, inputs=[a])(a0)):
        for g, w in zip(got, want):
            _same_bits(g, w)
    weights = [rng.standard_normal(r.shape) for r in results]
    f = sum(sg.sum(w * r ** 2) for w, r in zip(weights, results))
    check_grads(f, a, {"A": a0}, order=2, eps=1e-6)
    assert sum(n.op == name for n in nodes) == 1  # the rules read the same call


# -- complex matrices: values NumPy's, derivatives JAX's (beyond the registry battery) -------


def _complex_matrix(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def test_complex_linalg_values_are_numpys(rng):
    """cholesky, eigh, svd, qr, norm, pinv, lstsq and expm of complex matrices evaluate to
    NumPy's (SciPy's) results, in complex dtypes with real eigenvalues, singular values,
    norms and residuals."""
    import scipy.linalg

    z0 = _complex_matrix(rng, (4, 3))
    h0 = z0.conj().T @ z0 + np.eye(3)
    z, h = sg.var("Z", (4, 3), "complex128"), sg.var("H", (3, 3), "complex128")
    at = {"Z": z0, "H": h0}
    w, v = np.linalg.eigh(h)
    u, s, vh = np.linalg.svd(z, full_matrices=False)
    q, r = np.linalg.qr(z)
    x, res, _, sv = np.linalg.lstsq(z, z[:, 0])
    pairs = [(np.linalg.cholesky(h), np.linalg.cholesky(h0)),
             (w, np.linalg.eigh(h0)[0]), (v, np.linalg.eigh(h0)[1]),
             (s, np.linalg.svd(z0)[1]), (u @ vh, np.linalg.svd(z0, full_matrices=False)[0]
                                         @ np.linalg.svd(z0, full_matrices=False)[2]),
             (q, np.linalg.qr(z0)[0]), (r, np.linalg.qr(z0)[1]),
             (np.linalg.norm(z, "nuc"), np.linalg.norm(z0, "nuc")),
             (np.linalg.norm(z[:, 0], 3), np.linalg.norm(z0[:, 0], 3)),
             (np.linalg.pinv(z), np.linalg.pinv(z0)),
             (x, np.linalg.lstsq(z0, z0[:, 0])[0]), (res, np.linalg.lstsq(z0, z0[:, 0])[1]),
             (sv, np.linalg.lstsq(z0, z0[:, 0])[3]),
             (sg.expm(h * 0.1j), scipy.linalg.expm(h0 * 0.1j))]
    for got, want in pairs:
        value, want = np.asarray(sg.evaluate(got, at)), np.asarray(want)
        assert value.dtype == want.dtype, (got, value.dtype, want.dtype)
        np.testing.assert_allclose(value, want, rtol=1e-12, atol=1e-12)


def test_complex_eigh_of_the_upper_triangle_matches_jax(rng, x64):
    """eigh with UPLO="U" reads the upper triangle of a complex matrix (a Hermitian one, the
    diagonal's real part): its gradient of a phase-free loss (eigenvalues, |V|^2) is JAX's
    through that Hermitian matrix, to second order."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    a0 = _complex_matrix(rng, (3, 3))
    c, d = rng.standard_normal(3), rng.standard_normal((3, 3))
    a = sg.var("A", (3, 3), "complex128")
    w, v = np.linalg.eigh(a, UPLO="U")
    loss = sg.sum(w * c) + sg.sum(sg.abs(v) ** 2 * d) + sg.sum(w ** 2)

    def jax_loss(x):
        upper = jnp.triu(x, 1)
        hermitian = upper + jnp.conj(upper.T) + jnp.diag(jnp.real(jnp.diag(x)))
        jw, jv = jnp.linalg.eigh(hermitian)
        return jnp.sum(jw * c) + jnp.sum(jnp.abs(jv) ** 2 * d) + jnp.sum(jw ** 2)

    g = sg.grad(loss, a)
    np.testing.assert_allclose(sg.evaluate(g, {"A": a0}), jax.grad(jax_loss)(a0), atol=1e-9)
    e = _complex_matrix(rng, (3, 3))
    second = sg.grad(sg.sum(sg.real(g * e)), a)
    want = jax.grad(lambda x: jnp.sum(jnp.real(jax.grad(jax_loss)(x) * e)))(a0)
    np.testing.assert_allclose(sg.evaluate(second, {"A": a0}), want, atol=1e-8)


@pytest.mark.parametrize("mode", ["reduced", "r"])
def test_complex_qr_of_a_wide_matrix_against_differences(rng, mode):
    """qr of a wide complex matrix (a case JAX does not differentiate): the gradient of a
    real loss of Q and R is the central difference quotient's, in JAX's convention."""
    a0 = _complex_matrix(rng, (2, 4))
    wq, wr = _complex_matrix(rng, (2, 2)), _complex_matrix(rng, (2, 4))
    a = sg.var("A", (2, 4), "complex128")
    if mode == "r":
        loss = sg.sum(sg.real(np.linalg.qr(a, mode="r") * wr))
    else:
        q, r = np.linalg.qr(a)
        loss = sg.sum(sg.real(q * wq)) + sg.sum(sg.real(r * wr))

    def numeric(x):
        if mode == "r":
            return np.sum(np.real(np.linalg.qr(x, mode="r") * wr))
        q0, r0 = np.linalg.qr(x)
        return np.sum(np.real(q0 * wq)) + np.sum(np.real(r0 * wr))

    got = sg.evaluate(sg.grad(loss, a), {"A": a0})
    np.testing.assert_allclose(got, central(numeric, a0), atol=1e-7)

