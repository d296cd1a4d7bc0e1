"""Linear algebra inside compiled code: the calls with several results (eigh, svd, qr,
slogdet, lstsq) in a compiled scan step and in its reverse step.

A case of each op for each set of its attributes (every registry case with
``SYMGRAD_NUMBA_FULL=1``, as ``make fuzz`` runs it) runs in the step of one scan (each
result a stacked output) with the gradients of a loss over them: the forward and the
reverse scan are each one compiled loop, no scan is left to NumPy, and the values and
gradients equal ``sg.evaluate``'s (the same LAPACK routines). A smaller model whose losses
do not depend on the signs LAPACK gives eigenvectors and singular vectors is checked
against JAX.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.targets.numba.table import why_not
from tests.support import numba_battery as battery

pytest.importorskip("numba")

CALLS = ("eigh", "svd", "qr", "slogdet", "lstsq")
FULL = os.environ.get("SYMGRAD_NUMBA_FULL") == "1"


def _sample(cases: list) -> list:
    """Every case (FULL), else the first case of each op for each set of its attributes."""
    if FULL:
        return cases
    seen, kept = set(), []
    for c in cases:
        key = (c.op.name, repr(sorted(c.attrs.items())))
        if key not in seen:
            seen.add(key)
            kept.append(c)
    return kept


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    """One on-disk cache for the session's tests (CI starts with none)."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


def test_every_case_of_the_calls_with_several_results_in_a_compiled_step():
    """Each result of the registry cases of eigh, svd, qr, slogdet and lstsq (sampled: see
    the module docstring), in one scan: both loops compiled, values and gradients equal
    evaluate's and the NumPy backend's."""
    cases = _sample([c for c in battery.cases_of(CALLS) if battery.has_form(c)])
    assert {c.op.name for c in cases} == set(CALLS)
    outs, values = battery.in_scan(cases)
    fn = sg.compile(outs, backend="numba")
    assert "scan" not in fn.numpy_ops, fn.numpy_ops
    assert sum(k.startswith("_sg_loop") for k, _ in fn.kernels) == 2
    got = fn(**values)
    battery.check(got, sg.evaluate(outs, values), "float64", "calls")
    battery.check(got, sg.compile(outs)(**values), "float64", "calls vs NumPy backend")
    src = fn.source
    for call in ("np.linalg.eigh(", "np.linalg.svd(", "np.linalg.qr(", "np.linalg.slogdet(",
                 "np.linalg.lstsq("):
        assert call in src.split("def _sg_loop1_jit(")[1].split("\ndef _sg_loop1(")[0], call


def test_the_cases_left_out_are_hermitian_svd_upper_eigh_and_complete_qr_of_a_tall_matrix():
    """Only svd(hermitian=True), eigh(UPLO='U') and qr(mode='complete') of a tall matrix
    have no compiled form among these ops, each with its reason."""
    left = sorted({(c.op.name, repr(sorted(c.attrs.items())), c.arrays[0].shape)
                   for c in battery.cases_of(CALLS) if not battery.has_form(c)})
    assert left == [("eigh", "[('UPLO', 'U')]", (3, 3)),
                    ("svd", "[('hermitian', True)]", (3, 3))], left
    for shape, why in (((4, 2), "tall"), ((3, 3), None), ((2, 3), None)):
        q, _ = sg.qr(sg.var("a", shape=shape), mode="complete")
        nodes = q.graph.nodes
        got = why_not(nodes[nodes[q.node].args[0]], nodes)
        assert got == why or why in got, (shape, got)


def _model():
    """Losses that do not depend on the eigenvectors' and singular vectors' signs."""
    xs = sg.var("xs", shape=(3, 4, 3))

    def step(c, a):
        s = a.T @ a + sg.const(np.eye(3)) * c
        w, v = sg.eigh(s)
        u, sv, vh = sg.svd(a, full_matrices=False)
        q, r = sg.qr(a)
        sign, logdet = sg.slogdet(s)
        x, res, _, sl = sg.lstsq(a, a[:, 0] + 1.0)
        y = (sg.sum(w) * 0.1 + sg.sum(v[:, 2] ** 2 * w) + sg.sum((u * sv) @ vh)
             + sg.sum((q @ r) ** 2) * 0.01 + sg.sum(r[0] ** 2) + sign * logdet
             + sg.sum(x) + sg.sum(res) + sg.sum(sl))
        return c * 0.5 + y * 0.01, y

    c, ys = sg.scan(step, sg.const(1.5), xs)
    loss = c + sg.sum(ys)
    return [c, ys, loss, sg.grad(loss, xs)], xs


def _jax_model(xs):
    import jax.numpy as jnp

    def step(c, a):
        s = a.T @ a + jnp.eye(3) * c
        w, v = jnp.linalg.eigh(s, UPLO="L", symmetrize_input=False)
        u, sv, vh = jnp.linalg.svd(a, full_matrices=False)
        q, r = jnp.linalg.qr(a)
        sign, logdet = jnp.linalg.slogdet(s)
        b = a[:, 0] + 1.0
        x = jnp.linalg.solve(a.T @ a, a.T @ b)  # a has full column rank
        res = jnp.sum((b - a @ x) ** 2)
        y = (jnp.sum(w) * 0.1 + jnp.sum(v[:, 2] ** 2 * w) + jnp.sum((u * sv) @ vh)
             + jnp.sum((q @ r) ** 2) * 0.01 + jnp.sum(r[0] ** 2) + sign * logdet
             + jnp.sum(x) + res + jnp.sum(sv))
        return c * 0.5 + y * 0.01, y

    c = 1.5
    ys = []
    for t in range(xs.shape[0]):
        c, y = step(c, xs[t])
        ys.append(y)
    return c + sum(ys)


def test_values_and_gradients_equal_jax():
    """The compiled loops' loss and gradient equal JAX's (float64)."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    outs, xs = _model()
    value = np.random.default_rng(3).normal(size=(3, 4, 3))
    fn = sg.compile(outs, [xs], backend="numba")
    assert "scan" not in fn.numpy_ops, fn.numpy_ops
    c, ys, loss, grad = fn(value)
    ref_loss, ref_grad = jax.value_and_grad(_jax_model)(value)
    np.testing.assert_allclose(loss, float(ref_loss), rtol=1e-10)
    np.testing.assert_allclose(grad, np.asarray(ref_grad), rtol=1e-8, atol=1e-10)
    for g, r in zip(fn(value), sg.compile(outs, [xs])(value)):
        np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)


def test_straight_line_calls_stay_numpy_and_say_why():
    """Outside a loop a LAPACK call of several results is NumPy's call in the driver, a
    choice of the cost model that sg.stats states."""
    from symgrad.backends.targets.numba.costs import chosen

    a = sg.var("a", shape=(3, 3))
    w, v = sg.eigh(a @ a.T)
    fn = sg.compile([w, v], [a], backend="numba")
    assert fn.numpy_ops.get("eigh") == 1, fn.numpy_ops
    line = str(sg.stats([w, v], backend="numba")).splitlines()[-1]
    why = line.split("eigh 1 (")[1]
    assert chosen(why), line
