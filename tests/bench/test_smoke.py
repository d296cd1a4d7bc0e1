"""Smoke version of the benchmarks: tiny sizes, gradients checked, no timing assertions.

For every workload: the hand-written NumPy gradient matches float64 central finite
differences, and symgrad's gradient (through ``sg.evaluate`` and through the compiled
emitted source) matches the hand-written one. The JAX / PyTorch / autograd versions are
checked too when those libraries are installed (skipped otherwise). Finally one cell of the
harness runs in-process and its report renders.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))

import symgrad as sg  # noqa: E402
from benchmarks import common, gradcell, report  # noqa: E402
from benchmarks import w3_rosenbrock as w3  # noqa: E402
from benchmarks import w4_chain as w4  # noqa: E402

GRAD_WORKLOADS = ["w1_mlp", "w2_gmm", "w2_gmm_user", "w3_rosenbrock", "w5_lstm",
                  "w5_lstm_user"]


def _mod(name):
    return importlib.import_module(f"benchmarks.{name}")


def _close(got, ref, rtol=1e-9):
    assert common.rel_err(got, ref) < rtol, (got, ref)


@pytest.mark.parametrize("name", GRAD_WORKLOADS)
def test_hand_gradient_matches_finite_differences(name):
    mod = _mod(name)
    cfg = mod.SMOKE_CONFIG
    params, data = mod.inputs(cfg, seed=3)
    value, grads = mod.numpy_grad(params, data, cfg)
    assert value == pytest.approx(mod.numpy_forward(params, data, cfg), rel=1e-12)
    assert len(grads) == len(params) == len(mod.PARAMS)
    for k, p in enumerate(params):
        def f(pk, k=k):
            ps = list(params)
            ps[k] = pk
            return mod.numpy_forward(tuple(ps), data, cfg)

        fd = common.fd_grad(f, p)
        assert grads[k].shape == p.shape
        np.testing.assert_allclose(grads[k], fd, rtol=1e-6, atol=1e-7 * max(1.0, abs(value)))


@pytest.mark.parametrize("name", GRAD_WORKLOADS)
def test_symgrad_gradient_matches_hand_written(name):
    mod = _mod(name)
    cfg = mod.SMOKE_CONFIG
    params, data = mod.inputs(cfg, seed=4)
    ref_value, ref_grads = mod.numpy_grad(params, data, cfg)
    fn, exprs, names = gradcell.build_symgrad(mod, cfg)
    args = (*params, *data)
    evaluated = sg.evaluate(exprs, dict(zip(names, args)))
    compiled = fn(*args)
    for out in (evaluated, compiled):
        assert float(out[0]) == pytest.approx(ref_value, rel=1e-12)
        _close(list(out[1:]), list(ref_grads))
    assert "def " in sg.to_source(exprs, inputs=names)


def test_gmm_prior_and_packing():
    """The Wishart term and the column-major packing of the lower triangle."""
    mod = _mod("w2_gmm")
    rows, cols = mod.tri_index(4)
    assert list(zip(rows, cols)) == [(1, 0), (2, 0), (3, 0), (2, 1), (3, 1), (3, 2)]
    D, S = mod.scatter(3)
    q, low = np.array([[0.1, 0.2, 0.3]]), np.array([[1.0, 2.0, 3.0]])
    Q = (np.exp(q) @ D + low @ S).reshape(3, 3)
    expect = np.diag(np.exp(q[0]))
    expect[1, 0], expect[2, 0], expect[2, 1] = 1.0, 2.0, 3.0
    np.testing.assert_array_equal(Q, expect)
    # with one component and one point at its mean, the data term is alpha + sum(q)
    cfg = {"d": 2, "K": 1, "N": 1, "gamma": 2.0, "m": 3}
    icf = np.array([[0.5, -0.25, 0.7]])
    params, data = (np.array([0.4]), np.zeros((1, 2)), icf), (np.zeros((1, 2)),)
    prior = 0.5 * 4.0 * (np.exp(1.0) + np.exp(-0.5) + 0.49) - 3 * 0.25
    expect = mod.constant(cfg) + 0.25 + prior
    assert mod.numpy_forward(params, data, cfg) == pytest.approx(expect, rel=1e-12)


def test_rosenbrock_second_order_hand_written_and_symgrad():
    scipy_opt = pytest.importorskip("scipy.optimize")
    cfg = w3.SMOKE_CONFIG
    (x,), _ = w3.inputs(cfg, seed=5)
    v = w3.direction(cfg, seed=6)
    np.testing.assert_allclose(w3.numpy_grad((x,), (), cfg)[1][0], scipy_opt.rosen_der(x))
    np.testing.assert_allclose(w3.numpy_hvp(x, v), scipy_opt.rosen_hess_prod(x, v))
    np.testing.assert_allclose(w3.numpy_hessian(x), scipy_opt.rosen_hess(x))
    fd = common.fd_grad(lambda y: float(w3.numpy_grad((y,), (), cfg)[1][0] @ v), x)
    np.testing.assert_allclose(w3.numpy_hvp(x, v), fd, rtol=1e-6)
    f, (xv,), _ = w3.symgrad_loss(cfg)
    hv, hess = sg.hvp(f, xv, "v"), sg.hessian(f, xv)
    for out, ref in ((hv, w3.numpy_hvp(x, v)), (hess, w3.numpy_hessian(x))):
        _close(sg.evaluate(out, {"x": x, "v": v}), ref)
    _close(gradcell.sg_compile(hv, [xv, "v"])(x, v), w3.numpy_hvp(x, v))
    _close(gradcell.sg_compile(hess, [xv])(x), w3.numpy_hessian(x))


def test_chain_hand_loop_and_symgrad():
    L = w4.CHECK_L
    h, d = w4.hand_loop(w4.X0, L)
    assert h == pytest.approx(w4.chain(np, w4.X0, L), rel=1e-15)
    for short in (1, 2, 3):  # at L = 5 the derivative (1e-7) drowns in FD noise: sympy below
        fd = common.fd_grad(lambda y, n=short: w4.chain(np, float(y[0]), n), np.array([0.5]))
        assert w4.hand_loop(0.5, short)[1] == pytest.approx(fd[0], rel=1e-7)
    b = w4._symgrad_build(L)
    for value, deriv in (b["fn"](w4.X0), sg.evaluate(b["exprs"], {"x": w4.X0})):
        assert float(value) == pytest.approx(h, rel=1e-14)
        assert float(deriv) == pytest.approx(d, rel=1e-12)
    # the chain converges to pi/2, where the derivative underflows
    assert w4.hand_loop(w4.X0, 200) == (pytest.approx(np.pi / 2, rel=1e-15), 0.0)


def test_chain_sympy_and_derivative_counts():
    row = w4.sympy_cell(w4.CHECK_L)  # exact symbolic derivative vs the hand loop
    assert row["err_L5"] < 1e-12 and row["count_ops"] > 100
    rows = w4._symgrad_extras(3, w4._symgrad_build(3)["exprs"], budget=0.01)
    counts = [r["nodes"] for r in rows if r["task"] == "derivative_n"]
    assert len(counts) == 4 and counts == sorted(counts)


@pytest.mark.parametrize("system", ["jax", "torch", "autograd"])
@pytest.mark.parametrize("name", GRAD_WORKLOADS)
def test_other_systems_match_hand_written(system, name):
    pytest.importorskip(system)
    mod = _mod(name)
    rows = gradcell.measure(mod, mod.SMOKE_CONFIG, system, budget=0.0)
    assert rows[0]["err"] < 1e-10 and rows[0]["value_err"] < 1e-12


def test_harness_cell_and_report_render(tmp_path):
    from benchmarks import cell

    rec = cell.run({"workload": "w1_mlp", "cfg": _mod("w1_mlp").SMOKE_CONFIG,
                    "system": "symgrad", "budget": 0.0, "config": "smoke"})
    systems = [r["system"] for r in rec["rows"]]
    assert systems == ["numpy", "symgrad", "symgrad-eval"]
    assert all(r["err"] < 1e-10 for r in rec["rows"])
    assert rec["rows"][1]["vs_numpy"] > 0 and rec["probe_s"] > 0
    meta = report.machine_info()
    meta.update({"rounds": 1, "wall_s": 1.0, "probe_start_s": 1e-3, "probe_end_s": 1e-3})
    md = report.render({"meta": meta, "cells": [rec]})
    assert "MALLOC_MMAP_THRESHOLD_=33554432" in md and "## Targets" in md
    assert "| symgrad |" in md


def test_small_network_hand_gradient_matches_symgrad():
    from benchmarks import small_network
    from symgrad.cli.demo import DTYPES, INPUTS, NETWORK, SHAPES, WRT, example_inputs

    at = example_inputs(3)
    f = sg.parse(NETWORK, shapes=SHAPES, dtypes=DTYPES)
    want = sg.evaluate([f, *sg.grad(f, WRT)], at)
    got = small_network.hand(*[at[k] for k in INPUTS])
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_cold_start_and_compile_scale_cells():
    from benchmarks import cold_start, compile_scale

    (row,) = cold_start.measure({"rounds": 1}, "symgrad", 0.0)
    assert row["numpy_ms"] > 0 and row["symgrad_ms"] > 0
    assert "networkx" not in row["heavy_modules"] and "sympy" not in row["heavy_modules"]
    assert "dask" not in row["heavy_modules"]  # symgrad.dask loads only on first use
    (row,) = compile_scale.measure({"L": 300}, "symgrad", 0.0)
    assert row["forward_nodes"] == 4 * 300 + 1
    assert row["lines"] < 200  # the traced chain is rolled into one loop before emitting
    assert row["value"] == pytest.approx(w4.hand_loop(w4.X0, 300)[0], rel=1e-14)


def test_dask_scale_cell_at_a_tiny_size(tmp_path):
    """The Dask cell at 2,000 rows: its three ways agree with each other and with symgrad
    on the whole data, and it reports throughput and worker memory (no timing checks)."""
    pytest.importorskip("distributed", reason="dask[distributed] is not installed")
    from benchmarks import dask_scale

    row = dask_scale.measure_chunk(tmp_path, 2000, 3, 700, repeat=1)
    assert row["chunks"] == 3 and row["polymorphic"] and row["rel_err"] < 1e-12
    assert row["dask_rows_s"] > 0 and row["worker_peak_rss_mb"] >= row["worker_idle_rss_mb"]
    X, y = (np.asarray(a) for a in dask_scale.write_data(tmp_path / "again", 2000, 3, 700))
    loss, *_ = dask_scale.logistic(2000, 3)
    w, b = np.linspace(0.5, -0.5, 3), 0.1
    want = sg.evaluate([loss, *sg.grad(loss, ["w", "b"])], {"X": X, "y": y, "w": w, "b": b})
    got = dask_scale.hand(w, b, X, y)
    for a, ref in zip(got, want):
        np.testing.assert_allclose(a, ref, rtol=1e-12)
    assert "M rows/s" in dask_scale.table([row])


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_setaffinity"), reason="Linux only")
def test_one_core_pins_every_thread_and_restores_the_mask(monkeypatch):
    """While timed, the process's threads (those running and those started) share one CPU;
    afterwards every thread has the mask it had. Without the thread variables (a BLAS pool
    of several threads) nothing is pinned."""
    import os
    import threading

    for key in common.THREAD_ENV:
        monkeypatch.delenv(key, raising=False)
    with common.one_core() as cpu:
        assert cpu is None
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")  # the others still unset
    with common.one_core() as cpu:
        assert cpu is None
    for key, value in common.THREAD_ENV.items():
        monkeypatch.setenv(key, value)

    before = os.sched_getaffinity(0)
    started = threading.Event()
    done = threading.Event()
    seen: dict[str, set] = {}

    def worker(key: str) -> None:
        started.set()
        done.wait(10)
        seen[key] = os.sched_getaffinity(0)

    old = threading.Thread(target=worker, args=("old",))
    old.start()
    started.wait(10)
    with common.one_core() as cpu:
        assert cpu in before
        assert os.sched_getaffinity(0) == {cpu}
        tid = old.native_id
        assert os.sched_getaffinity(tid) == {cpu}
        inner: list[set] = []
        t = threading.Thread(target=lambda: inner.append(os.sched_getaffinity(0)))
        t.start()
        t.join()
        assert inner == [{cpu}]
    assert os.sched_getaffinity(0) == before
    done.set()
    old.join()
    assert seen["old"] == before
    samples = common.interleaved([lambda: sum(range(100))], budget=0.0, min_samples=2)
    assert samples[0].size >= 2 and os.sched_getaffinity(0) == before


@pytest.mark.parametrize("k", range(1, 9))
def test_interleaved_orders_put_every_system_after_every_other_equally_often(k):
    from collections import Counter

    orders = common.balanced_orders(k)
    assert all(sorted(order) == list(range(k)) for order in orders)
    pairs = Counter((a, b) for order in orders for a, b in zip(order, order[1:]))
    assert set(pairs) == {(a, b) for a in range(k) for b in range(k) if a != b}
    assert len(set(pairs.values())) <= 1
