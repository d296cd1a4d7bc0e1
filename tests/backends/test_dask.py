"""symgrad.dask: a loss summed over data rows, its gradient and Hessian-vector products
computed chunk by chunk on Dask (a two-process LocalCluster, and the synchronous
scheduler), against symgrad on the whole data and against finite differences."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="dask[array] is not installed")
distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")
import dask  # noqa: E402

import symgrad as sg  # noqa: E402
from symgrad.dask import chunk_graph  # noqa: E402
from symgrad.errors import UnsupportedError  # noqa: E402
from tests.support.finite_differences import central_at  # noqa: E402

N, D, CHUNK = 1003, 4, 200  # six chunks, the last of 3 rows
RNG = np.random.default_rng(7)
XN = RNG.normal(size=(N, D))
YN = (RNG.random(N) < 0.4).astype(float)
W0, B0 = RNG.normal(size=D) * 0.5, 0.3


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       dashboard_address=":0")
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _problem(mean: bool = False):
    X, y, w, b = sg.var("X", (N, D)), sg.var("y", (N,)), sg.var("w", (D,)), sg.var("b")
    z = X @ w + b
    rows = sg.logaddexp(0.0, z) - y * z
    loss = (sg.mean(rows) if mean else sg.sum(rows)) + 0.5 * sg.sum(w * w) + b * b
    data = {X: da.from_array(XN, chunks=(CHUNK, D)), y: da.from_array(YN, chunks=CHUNK)}
    return loss, [w, b], data


def _reference(loss, params, at):
    return sg.evaluate([loss, *sg.grad(loss, params)], at)


def _full(**values):
    return {"X": XN, "y": YN, "w": W0, "b": B0} | values


def test_value_gradient_and_hvp_on_a_two_process_cluster(client):
    loss, params, data = _problem()
    fg = sg.dask.value_and_grad(loss, params, data)
    assert fg.chunks == (200,) * 5 + (3,) and fg.polymorphic
    value, (dw, db) = fg(W0, B0)
    want = _reference(loss, params, _full())
    assert value == pytest.approx(want[0], rel=1e-13)
    np.testing.assert_allclose(dw, want[1], rtol=1e-12)
    assert float(db) == pytest.approx(float(want[2]), rel=1e-12)
    np.testing.assert_allclose(dw, central_at(loss, _full(), "w"), rtol=1e-6)
    assert float(db) == pytest.approx(float(central_at(loss, _full(), "b")), rel=1e-6)
    vw, vb = RNG.normal(size=D), 0.7
    hw, hb = fg.hvp([W0, B0], [vw, vb])
    w, b = params
    ref = sg.evaluate(list(sg.jvp(list(sg.grad(loss, params)), params, [vw, vb])), _full())
    np.testing.assert_allclose(hw, ref[0], rtol=1e-12)
    assert float(hb) == pytest.approx(float(ref[1]), rel=1e-12)
    h = 1e-5  # the directional derivative of the gradient, by central differences
    up, down = fg(W0 + h * vw, B0 + h * vb)[1], fg(W0 - h * vw, B0 - h * vb)[1]
    np.testing.assert_allclose(hw, (up[0] - down[0]) / (2 * h), rtol=1e-6)
    assert float(hb) == pytest.approx(float((up[1] - down[1]) / (2 * h)), rel=1e-6)


def test_the_workers_compute_the_chunks(client):
    """The tasks run in the worker processes (each compiles the chunk source once)."""
    loss, params, data = _problem()
    fg = sg.dask.value_and_grad(loss, params, data)
    fg(W0, B0)
    loaded = client.run(lambda: len(sys.modules["symgrad.backends.dask"]._LOADED)
                        if "symgrad.backends.dask" in sys.modules else 0)
    assert len(loaded) == 2 and sum(loaded.values()) >= 1


def test_a_chunk_function_per_length_when_the_source_names_the_length(client):
    """max over a row's features: its backprop reshapes to (c, 1), so the texts for two
    chunk lengths differ and one function per distinct length is shipped."""
    X, w = sg.var("X", (N, D)), sg.var("w", (D,))
    loss = sg.sum(sg.max(X * w, axis=1) ** 2)
    fg = sg.dask.value_and_grad(loss, w, {X: da.from_array(XN, chunks=(CHUNK, D))})
    assert not fg.polymorphic
    assert {c for c, _ in fg._grad.sources} == {0, 3, 200}
    value, (dw,) = fg(W0)
    want = _reference(loss, [w], {"X": XN, "w": W0})
    assert value == pytest.approx(want[0], rel=1e-12)
    np.testing.assert_allclose(dw, want[1], rtol=1e-12)
    v = RNG.normal(size=D)
    (hv,) = fg.hvp([W0], [v])
    assert len(fg._hvp.sources) == 3  # per length here too
    np.testing.assert_allclose(hv, sg.evaluate(sg.hvp(loss, w, v), {"X": XN, "w": W0}),
                               rtol=1e-12)


def test_mean_over_the_data_axis_is_the_mean_over_all_rows():
    loss, params, data = _problem(mean=True)
    fg = sg.dask.value_and_grad(loss, params, data)
    with dask.config.set(scheduler="synchronous"):
        value, grads = fg(W0, B0)
        hv = fg.hvp([W0, B0], [np.ones(D), 1.0])
    want = _reference(loss, params, _full())
    assert value == pytest.approx(want[0], rel=1e-13) and fg.polymorphic
    for got, ref in zip(grads, want[1:]):
        np.testing.assert_allclose(got, ref, rtol=1e-12)
    ref = sg.evaluate(list(sg.jvp(list(sg.grad(loss, params)), params, [np.ones(D), 1.0])),
                      _full())
    for got, r in zip(hv, ref):
        np.testing.assert_allclose(got, r, rtol=1e-12)
    # the chunk graph: the mean became a sum times 1/N (not a mean over the chunk's rows)
    small, _ = chunk_graph(loss, ["X", "y"], 5)
    at = {"X": XN[:5], "y": YN[:5], "w": W0, "b": B0}
    z = XN[:5] @ W0 + B0
    rows = np.logaddexp(0.0, z) - YN[:5] * z
    expected = rows.sum() / N + 0.5 * W0 @ W0 + B0 * B0
    assert sg.evaluate(small, at) == pytest.approx(expected, rel=1e-14)


def test_scipy_minimize_on_the_synchronous_scheduler():
    scipy_optimize = pytest.importorskip("scipy.optimize")
    loss, params, data = _problem(mean=True)
    fun = sg.dask.value_and_grad(loss, params, data).scipy()
    x0 = fun.pack(np.zeros(D), 0.0)
    with dask.config.set(scheduler="synchronous"):
        lbfgs = scipy_optimize.minimize(fun.fun, x0, jac=True, method="L-BFGS-B",
                                        options={"gtol": 1e-12, "ftol": 1e-15})
        newton = scipy_optimize.minimize(fun.fun, x0, jac=True, hessp=fun.hessp,
                                         method="Newton-CG", options={"xtol": 1e-12})
    local = sg.compile([loss, *sg.grad(loss, params)], inputs=["w", "b", "X", "y"])

    def whole(x):
        w, b = fun.unpack(x)
        value, dw, db = local(w, b, XN, YN)
        return value, np.concatenate([dw, [db]])

    ref = scipy_optimize.minimize(whole, x0, jac=True, method="L-BFGS-B",
                                  options={"gtol": 1e-12, "ftol": 1e-15})
    np.testing.assert_allclose(lbfgs.x, ref.x, atol=1e-6)
    np.testing.assert_allclose(newton.x, ref.x, atol=1e-6)
    assert np.abs(whole(newton.x)[1]).max() < 1e-7 and fun.calls > 0


def test_data_is_rechunked_to_whole_rows_and_aligned():
    loss, params, _ = _problem()
    X, y = sg.var("X", (N, D)), sg.var("y", (N,))
    data = {X: da.from_array(XN, chunks=(300, 2)), "y": da.from_array(YN, chunks=250)}
    fg = sg.dask.value_and_grad(loss, ["w", "b"], data)
    assert fg.chunks == (300, 300, 300, 103)
    assert [a.chunks[1:] for a in fg._arrays] == [((D,),), ()]
    with dask.config.set(scheduler="synchronous"):
        value, _ = sg.dask.value_and_grad(loss, params, {X: XN, y: YN})(W0, B0)
        chunked = fg(W0, B0)[0]
    assert value == pytest.approx(_reference(loss, params, _full())[0], rel=1e-13)
    assert chunked == pytest.approx(value, rel=1e-13)


def test_the_objective_pickles_as_text():
    loss, params, data = _problem()
    fg = sg.dask.value_and_grad(loss, params, data)
    blob = pickle.dumps(fg._grad)
    assert len(blob) < 20_000 and b"def chunk" in blob
    kernel = pickle.loads(blob)
    out = kernel(XN[:10], YN[:10], params=[W0, np.float64(B0)])
    small = {"X": XN[:10], "y": YN[:10], "w": W0, "b": B0}
    f, ids = chunk_graph(loss, ["X", "y"], 10)
    g = f.graph
    want = sg.evaluate([f, *sg.grad(f, [sg.Expr(g, ids["w"]), sg.Expr(g, ids["b"])])], small)
    np.testing.assert_allclose(out, np.concatenate([[want[0]], want[1], [want[2]]]),
                               rtol=1e-13)


def test_the_chunk_results_are_summed_as_a_tree():
    from symgrad.backends.dask import _tree_sum

    parts = [dask.delayed(np.full)(3, float(k)) for k in range(20)]
    total = _tree_sum(parts, 3)
    graph = dict(total.__dask_graph__())
    adds = [k for k in graph if str(k).startswith("_sum_parts")]
    assert len(adds) == 7 + 3 + 1  # 20 -> 7 -> 3 -> 1: log depth, fan-in 3
    with dask.config.set(scheduler="synchronous"):
        np.testing.assert_array_equal(total.compute(), np.full(3, 190.0))
    loss, params, data = _problem()
    with pytest.raises(sg.InputError, match="split_every"):
        sg.dask.value_and_grad(loss, params, data, split_every=1)


def test_integer_labels_and_float32_data():
    X = sg.var("X", (N, D), dtype="float32")
    y, w = sg.var("y", (N,), dtype="int64"), sg.var("w", (D,))
    z = X @ w
    loss = sg.sum(sg.logaddexp(0.0, z) - y * z)
    Xd = da.from_array(XN.astype(np.float32), chunks=(CHUNK, D))
    yd = da.from_array(YN.astype(np.int64), chunks=CHUNK)
    fg = sg.dask.value_and_grad(loss, w, {X: Xd, y: yd})
    with dask.config.set(scheduler="synchronous"):
        value, (dw,) = fg(W0)
    want = _reference(loss, [w], {"X": XN.astype(np.float32), "y": YN.astype(np.int64),
                                  "w": W0})
    assert value == pytest.approx(want[0], rel=1e-12)
    np.testing.assert_allclose(dw, want[1], rtol=1e-10)


def _error(loss, params, data, cls, *words, call=(W0,)):
    with pytest.raises(cls) as info:
        fg = sg.dask.value_and_grad(loss, params, data)
        with dask.config.set(scheduler="synchronous"):
            fg(*call)
    for word in words:
        assert word in str(info.value), str(info.value)


def test_losses_that_are_not_sums_over_rows_are_refused():
    X, w = sg.var("X", (N, D)), sg.var("w", (D,))
    data = {X: da.from_array(XN, chunks=(CHUNK, D))}
    z = X @ w
    _error(sg.max(z), w, data, sg.ShapeError, "max", "data axis")
    _error(sg.logsumexp(z), w, data, sg.ShapeError, "logsumexp")
    _error(sg.sum(sg.reshape(X, (N * D,)) * 2.0) + sg.sum(w), w, data, sg.ShapeError,
           "reshape", "rows")
    _error(sg.sum(z[::2]), w, data, sg.ShapeError, "selects or mixes rows")
    _error(sg.log(sg.sum(sg.exp(z))), w, data, UnsupportedError, "not a sum over")
    _error(sg.sum(z) ** 2, w, data, UnsupportedError, "not a sum over")
    _error(sg.numpy.var(z), w, data, UnsupportedError, "not a sum over")
    _error(z, w, data, sg.ShapeError, "scalar")


def test_bad_data_and_parameters_are_refused():
    X, w, s = sg.var("X", (N, D)), sg.var("w", (D,)), sg.var("s")
    loss = sg.sum(X @ w)
    good = da.from_array(XN, chunks=(CHUNK, D))
    _error(loss, w, {X: good.astype("float32")}, sg.InputError, "dtype", "astype")
    _error(loss, w, {X: good[:10]}, sg.ShapeError, "(1003, 4)")
    _error(loss * s, w, {X: good}, sg.InputError, "'s'", "neither")
    _error(loss, "v", {X: good}, sg.InputError, "no variable 'v'")
    _error(loss, w, {w: good}, sg.InputError, "both a parameter and data")
    _error(loss, w, {X: "data"}, sg.InputError, "dask.array")
    _error(loss, w, {X: good}, sg.InputError, "shape (4,)", call=(np.zeros(3),))
    _error(loss, w, {X: good}, sg.InputError, "takes 1 values", call=(W0, W0))
    unknown = good[good[:, 0] > 0]
    _error(loss, w, {X: unknown}, sg.InputError, "compute_chunk_sizes")
    _error(sg.sum(w), w, {X: good}, sg.InputError, "no variable 'X'")


def test_import_symgrad_does_not_import_dask():
    code = ("import sys, symgrad; assert 'dask' not in sys.modules, 'dask imported'; "
            "symgrad.dask; assert 'dask.array' in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_the_docs_example_runs_at_a_small_size():
    """The Dask page's example, with 20,000 rows in chunks of 5,000 (it says 10^7)."""
    from tests.support import docs

    block = docs.block("guide/dask", "sg.dask.value_and_grad")
    assert "N, d = 10_000_000, 10" in block
    small = block.replace("10_000_000", "20_000").replace("250_000", "5_000")
    namespace = {"__name__": "__main__"}
    exec(compile(small, "docs/guide/dask.md", "exec"), namespace)  # our own documentation
    fit, objective = namespace["fit"], namespace["objective"]
    assert fit.success and objective.chunks == (5_000,) * 4
    X_data, y_data = dask.compute(namespace["X_data"], namespace["y_data"])
    at = {"X": X_data, "y": y_data}
    loss = namespace["loss"]
    want = sg.evaluate([loss, *sg.grad(loss, ["w", "b"])], at | {"w": np.zeros(10), "b": 0.0})
    assert namespace["value"] == pytest.approx(want[0], rel=1e-13)
    np.testing.assert_allclose(namespace["dw"], want[1], rtol=1e-12, atol=1e-15)
    g = sg.evaluate(sg.grad(loss, ["w", "b"]), at | {"w": namespace["w_fit"],
                                                     "b": namespace["b_fit"]})
    assert max(np.abs(g[0]).max(), abs(float(g[1]))) < 1e-6  # a minimum of the whole loss
