"""The benchmark workloads in both spellings (the project's and public code's), at tiny
sizes, no timing: every hand-written gradient matches central finite differences; every
spelling's symgrad gradient matches the hand-written one, ``jax.grad`` in float64 and the
other spelling of the same model; the PyTensor and CasADi peers the Numba benchmark times
compute the same gradients.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))

import symgrad as sg  # noqa: E402
from benchmarks import common, numba_backend, numba_peers  # noqa: E402
from benchmarks import w3_rosenbrock_public as w3p  # noqa: E402
from benchmarks.w4_chain import X0, hand_loop  # noqa: E402

OURS = ["w1_mlp", "w2_gmm", "w3_rosenbrock", "w5_lstm"]
PUBLIC = ["w1_mlp_public", "w2_gmm_public", "w3_rosenbrock_public", "w5_lstm_public"]
# (spelling, other spelling of the same model): a module, or a module's function name
PAIRS = [
    ("w1_mlp_public", "w1_mlp_public:symgrad_loss_ours"),
    ("w2_gmm_public", "w2_gmm"),
    ("w2_gmm_public", "w2_gmm_user"),
    ("w3_rosenbrock_public", "w3_rosenbrock"),
    ("w5_lstm_public", "w5_lstm_public:symgrad_loss_ours"),
]


def _mod(name):
    return importlib.import_module(f"benchmarks.{name}")


def _symgrad_grads(loss_fn, cfg, params, data):
    """The gradient of ``loss_fn(cfg)`` through ``sg.evaluate`` and compiled NumPy code."""
    f, pv, dv = loss_fn(cfg)
    grads = sg.grad(f, list(pv))
    names = [e.name for e in (*pv, *dv)]
    evaluated = sg.evaluate(grads, dict(zip(names, (*params, *data))))
    compiled = sg.compile(grads, inputs=names)(*params, *data)
    return [np.asarray(g) for g in evaluated], [np.asarray(g) for g in compiled]


def _loss_fn(spec):
    name, _, fn = spec.partition(":")
    return getattr(_mod(name), fn or "symgrad_loss")


@pytest.mark.parametrize("name", PUBLIC)
def test_public_hand_gradient_matches_finite_differences(name):
    mod = _mod(name)
    cfg = mod.SMOKE_CONFIG
    params, data = mod.inputs(cfg, seed=3)
    value, grads = mod.numpy_grad(params, data, cfg)
    assert value == pytest.approx(mod.numpy_forward(params, data, cfg), rel=1e-12)
    for k, p in enumerate(params):
        def f(pk, k=k):
            ps = list(params)
            ps[k] = pk
            return mod.numpy_forward(tuple(ps), data, cfg)

        np.testing.assert_allclose(grads[k], common.fd_grad(f, p), rtol=1e-6,
                                   atol=1e-7 * max(1.0, abs(value)))


@pytest.mark.parametrize("name", OURS + PUBLIC)
def test_symgrad_and_jax_gradients_match_hand_written(name, x64):
    jax = pytest.importorskip("jax")
    mod = _mod(name)
    cfg = mod.SMOKE_CONFIG
    params, data = mod.inputs(cfg, seed=4)
    ref = list(mod.numpy_grad(params, data, cfg)[1])
    for got in _symgrad_grads(mod.symgrad_loss, cfg, params, data):
        assert common.rel_err(got, ref) < 1e-12
    as_jax = [tuple(jax.numpy.asarray(a) for a in xs) for xs in (params, data)]
    theirs = jax.grad(mod.jax_loss(jax, cfg))(*as_jax)
    assert common.rel_err([np.asarray(g) for g in theirs], ref) < 1e-12


@pytest.mark.parametrize("spelling,other", PAIRS)
def test_the_two_spellings_of_a_model_give_the_same_gradient(spelling, other):
    mod = _mod(spelling)
    cfg = mod.SMOKE_CONFIG
    for seed in (5, 6):
        params, data = mod.inputs(cfg, seed=seed)
        mine = _symgrad_grads(_loss_fn(spelling), cfg, params, data)[1]
        theirs = _symgrad_grads(_loss_fn(other), cfg, params, data)[1]
        assert common.rel_err(mine, theirs) < 1e-12
        assert common.rel_err(mine, list(mod.numpy_grad(params, data, cfg)[1])) < 1e-12


def test_rosenbrock_public_is_scipys_and_sums_to_one_reduction():
    scipy_opt = pytest.importorskip("scipy.optimize")
    (x,), _ = w3p.inputs({"n": 9}, seed=6)
    assert w3p.rosen(x) == pytest.approx(scipy_opt.rosen(x), rel=1e-14)
    f, (xv,), _ = w3p.symgrad_loss({"n": 9})
    got = sg.compile(sg.grad(f, xv), inputs=[xv])(x)
    np.testing.assert_allclose(got, scipy_opt.rosen_der(x), rtol=1e-13)


@pytest.mark.parametrize("python", [False, True], ids=["scan", "python_loop"])
def test_w4_spellings_match_the_hand_loop_and_jax(python, x64):
    L = 8
    outs, inputs, args = numba_backend._w4_model(L, python)
    got = [float(v) for v in sg.compile(outs, inputs)(*args)]
    want = hand_loop(X0, L)
    assert got == pytest.approx(list(want), rel=1e-13)
    if common.available("jax") is None:
        j = numba_peers.jax_w4(L)
        assert [float(v) for v in j.result()] == pytest.approx(list(want), rel=1e-13)


@pytest.fixture(scope="module")
def pytensor():
    """PyTensor (skip without it), its compile folder under the user's cache folder: some
    of its Python implementations compile with Numba on first use (a minute each here),
    and its disk cache makes later runs fast."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    os.environ.setdefault("PYTENSOR_FLAGS",
                          f"base_compiledir={os.path.join(cache, 'symgrad-bench-pytensor')}")
    return pytest.importorskip("pytensor")


@pytest.mark.parametrize("name", OURS + PUBLIC)
def test_pytensor_spelling_matches_hand_written(name, pytensor):
    """The graph PyTensor is timed on computes the same gradient (its Python
    implementations, no rewrites; the benchmark checks the Numba linker's at full size)."""
    import pytensor.tensor as pt
    from pytensor.compile.mode import Mode

    mod = _mod(name)
    cfg = mod.SMOKE_CONFIG
    params, data = mod.inputs(cfg, seed=7)
    loss, pv, dv = mod.pytensor_loss(pt, cfg)
    fn = pytensor.function([*pv, *dv], pytensor.grad(loss, list(pv)),
                           mode=Mode(linker="py", optimizer=None))
    ref = list(mod.numpy_grad(params, data, cfg)[1])
    assert common.rel_err([np.asarray(g) for g in fn(*params, *data)], ref) < 1e-12


def test_casadi_peers_match_hand_written():
    pytest.importorskip("casadi")
    w3 = _mod("w3_rosenbrock")
    (x,), _ = w3.inputs({"n": 11}, seed=8)
    got = numba_peers.casadi_rosenbrock(11, x).result()
    assert common.rel_err(got, list(w3.numpy_grad((x,), (), {"n": 11})[1])) < 1e-13
    assert numba_peers.casadi_w4(6).result() == pytest.approx(list(hand_loop(X0, 6)),
                                                              rel=1e-13)
