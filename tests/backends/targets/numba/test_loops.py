"""``backend="numba"``: a scan compiled whole as one ``numba.njit`` loop function.

Numba takes a second or so per loop to compile: the cases share modules. One float64 module
holds scans with scalar and array carries, pytrees, xs slices and stacked ys, a captured
matrix, ``reverse=True``, lengths 0 and 1, a checkpointed scan (a scan nested in a scan) and
a rolled Python loop, with their gradients; one float32 module holds a scalar and an array
carry. Values and gradients equal ``sg.evaluate`` and the NumPy backend to 1e-12 (float32:
4 units in the last place). A step with an op Numba cannot run in a loop falls back to the
NumPy loop, and says so.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.targets.numba.table import NOT_COMPILED, why_not
from symgrad.ops import REGISTRY
from tests.support import numba_battery as battery

pytest.importorskip("numba")

RNG = np.random.default_rng(7)
W0 = RNG.normal(size=(3, 3)) * 0.5
XS0 = RNG.normal(size=(5, 3))


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    """One on-disk cache for the session's tests (CI starts with none)."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


def test_scans_compiled_equal_evaluate_and_numpy():
    outs, inputs, env = battery.scan_model()
    fn = sg.compile(outs, inputs, backend="numba")
    ref = sg.evaluate(outs, env)
    by_numpy = sg.compile(outs, inputs)(**env)
    got = fn(**env)
    for g, r, n in zip(got, ref, by_numpy):
        battery.close(g, r)
        battery.close(g, n)
        assert not isinstance(g, np.ndarray) or g.flags.writeable  # an array carry too
    assert not fn.numpy_ops.get("scan"), fn.numpy_ops  # every loop compiled
    names = [k for k, _ in fn.kernels]
    assert sum(k.startswith("_sg_loop") for k in names) >= 9, names
    src = sg.to_source(outs, inputs, backend="numba")
    assert "def _sg_loop1_jit(" in src and "@_jit((" in src


def test_float32_carries():
    x, a = sg.var("x", dtype="float32"), sg.var("a", shape=(4,), dtype="float32")
    c, ys = sg.scan(lambda c, _: ((c[0] * 0.5 + sg.sum(c[1]) * 0.25, sg.tanh(c[1]) * c[0]),
                                  sg.sin(c[0])), (x, a), length=5)
    loss = c[0] + sg.sum(c[1]) + sg.sum(ys)
    outs = [c[0], c[1], ys, *sg.grad(loss, [x, a])]
    env = {"x": np.float32(0.3), "a": np.linspace(-1, 1, 4, dtype=np.float32)}
    got = sg.compile(outs, [x, a], backend="numba")(**env)
    for g, r in zip(got, sg.evaluate(outs, env)):
        battery.close(g, r, 4 * float(np.finfo(np.float32).eps))


def test_a_step_with_an_op_of_the_short_list_runs_on_numpy_and_says_so():
    """partition has no compiled form (NumPy's introselect order): its loop is NumPy's."""
    x = sg.var("x", shape=(4,))
    c, _ = sg.scan(lambda c, _: (sg.partition(c * 1.5 - 0.5, 1), None), x, length=3)
    outs = [c, sg.grad(sg.sum(c * c), x)]
    fn = sg.compile(outs, [x], backend="numba")
    env = {"x": np.array([0.3, -1.0, 2.0, 0.1])}
    for g, r in zip(fn(**env), sg.evaluate(outs, env)):
        battery.close(g, r)
    assert fn.numpy_ops["scan"] >= 1 and fn.numpy_ops["partition"] >= 1, fn.numpy_ops
    line = str(sg.stats(outs, backend="numba")).splitlines()[-1]
    assert "scan" in line and "partition" in line, line


def test_docs_lstm_example_compiles_its_loops_and_prints_what_it_says():
    """The backends page's LSTM (a Python loop, rolled) runs on Numba with no scan left to
    NumPy and the NumPy backend's gradient."""
    import os
    import subprocess
    import sys
    import textwrap

    from tests.support import docs

    block = docs.block("guide/backends", "sg.tanh(c)")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(block)], capture_output=True,
                         text=True, check=True, timeout=900, env={**os.environ}).stdout
    assert out.strip() == "0 True"


# -- the op registry's battery inside a compiled step ------------------------------------------

FULL = os.environ.get("SYMGRAD_NUMBA_FULL") == "1"
# a case of each family: reductions over any axes (keepdims), arg reductions, logsumexp and
# softmax, cumulative ops, indexing by traced indices, scatters, take, shaping, joins,
# products, LAPACK, sorting, SciPy's special functions, conversions, rounding
SAMPLE = ("sum", "max", "argmax", "logsumexp", "log_softmax", "cumsum", "index", "index_add",
          "take", "concatenate", "stack", "transpose", "broadcast_to", "reshape", "matmul",
          "einsum", "solve", "cholesky", "det", "sort", "argsort", "erf", "gammaln",
          "where", "astype", "round", "sinc", "trace", "convolution", "norm")


def _first_cases(ops):
    found = {}
    for case in battery.cases_of(ops):
        if case.op.name not in found and battery.has_form(case):
            found[case.op.name] = case
    return [found[op] for op in sorted(found)]


def test_registry_sample_in_a_compiled_step_and_its_reverse():
    """One case of each family in the step of one scan: the forward and the reverse scan
    are each one compiled loop, and equal sg.evaluate."""
    cases = _first_cases(SAMPLE)
    assert len(cases) == len(SAMPLE)
    outs, values = battery.in_scan(cases)
    fn = sg.compile(outs, backend="numba")
    assert "scan" not in fn.numpy_ops, fn.numpy_ops
    assert sum(k.startswith("_sg_loop") for k, _ in fn.kernels) == 2
    battery.check(fn(**values), sg.evaluate(outs, values), "float64", "sample")


def _groups(size=8):
    ops = sorted({c.op.name for c in battery.cases_of(REGISTRY)})
    return [ops[k:k + size] for k in range(0, len(ops), size)]


@pytest.mark.skipif(not FULL, reason="the whole battery: SYMGRAD_NUMBA_FULL=1 (make fuzz)")
@pytest.mark.parametrize("ops", _groups(), ids=lambda ops: f"{ops[0]}-{ops[-1]}")
def test_registry_full_in_a_compiled_step(ops):
    """Every case of every op, a group of ops per scan: nothing falls back (the cases on
    the short list are checked below)."""
    cases = [c for c in battery.cases_of(ops) if battery.has_form(c)]
    outs, values = battery.in_scan(cases)
    fn = sg.compile(outs, backend="numba")
    assert "scan" not in fn.numpy_ops, fn.numpy_ops
    battery.check(fn(**values), sg.evaluate(outs, values), "float64", ",".join(ops))


def test_the_cases_without_a_form_are_the_short_list():
    """The registry cases whose node has no compiled form are the ops of NOT_COMPILED, the
    user's calls with several results and a few attribute cases, each with its reason."""
    lacking = {}
    for case in battery.cases_of(REGISTRY):
        out, _, _ = case.build()
        nodes = out.graph.nodes
        n = nodes[out.node]
        why = why_not(nodes[n.args[0]] if case.result is not None else n, nodes)
        if why is not None:
            lacking.setdefault(case.op.name, why)
    calls = {"custom_jvp_call", "custom_vjp_call"}
    attributes = {"pinv", "matrix_rank", "svd", "eigh"}  # hermitian=True, UPLO="U"
    assert set(lacking) - set(NOT_COMPILED) == {*attributes, *calls}
    assert all(len(why) > 30 for why in lacking.values())


def test_elementwise_regions_of_one_shape_share_one_nest_in_a_step():
    """Two regions of a step over the same shape (a value two of them read) are one loop
    nest; the value read only inside the nest is no array; the results equal evaluate's."""
    xs = sg.var("xs", shape=(5, 3))

    def step(h, xt):
        a = sg.sin(h + xt)
        return a * 2.0 + h, sg.cos(a) * 3.0

    h, ys = sg.scan(step, sg.cos(xs[0]), xs)
    outs = [h, ys, sg.grad(sg.sum(h) + sg.sum(ys * ys), xs)]
    fn = sg.compile(outs, [xs], backend="numba")
    forward = fn.source.split("def _sg_loop1_jit(")[1].split("\ndef ")[0]
    assert forward.count("for _t") == 1 + 1  # the steps, and one nest over (3,)
    for g, r in zip(fn(XS0), sg.evaluate(outs, {"xs": XS0})):
        battery.close(g, r)


def test_constant_slices_in_a_step_are_views_and_a_carried_view_is_copied():
    """x[a:b] with constant bounds is Numba's view (no copy loop); a carry that is such a
    view is copied before the next step; values and gradients equal evaluate's."""
    W, xs = sg.var("W", shape=(3, 3)), sg.var("xs", shape=(5, 3))

    def step(h, xt):
        z = sg.concatenate([sg.sin(W @ h + xt), h * 0.5])
        return z[0:3], z[3:6] * 2.0 + z[1, ...]

    h, ys = sg.scan(step, sg.cos(xs[0]), xs)
    outs = [h, ys, *sg.grad(sg.sum(h) + sg.sum(ys * ys), [W, xs])]
    fn = sg.compile(outs, [W, xs], backend="numba")
    assert "scan" not in fn.numpy_ops, fn.numpy_ops
    forward = fn.source.split("def _sg_loop1_jit(")[1].split("\ndef ")[0]
    assert "[0:3]" in forward and "[3:6]" in forward and ".copy()" in forward
    for g, r in zip(fn(W0, XS0), sg.evaluate(outs, {"W": W0, "xs": XS0})):
        battery.close(g, r)


def _while_model():
    """A while loop of an int counter and an array carry (its trip count a run-time
    value: the counter against a captured bound), and one of a scalar carry alone; the
    loss and its gradient w.r.t. the initial carry and the captured values."""
    x0, a, b = sg.var("x0", shape=(4,)), sg.var("a"), sg.var("b")

    def step(c):
        k, x = c
        return k + 1, x + 0.05 * (a * sg.sin(x) - 0.1 * x * b)

    _, x = sg.while_loop(lambda c: c[0] < 37, step, (0, x0), snapshots=3)
    y = sg.while_loop(lambda c: c < 50.0, lambda c: c * (1.0 + a * a), b)
    loss = sg.sum(x * x) + y
    return [loss, *sg.grad(loss, [x0, a, b])], [x0, a, b]


def test_a_while_loop_runs_compiled_and_its_gradient_equals_the_numpy_backends():
    """The condition and step of each while loop compile into one loop function, and its
    reverse sweep (from the tape the compiled loop records with 3 snapshots: Revolve
    between the stored carries) into another: nothing is left to NumPy, values and
    gradients equal the NumPy backend's to 1e-12."""
    outs, ins = _while_model()
    args = (np.array([0.3, -1.2, 2.0, 0.7]), 0.8, 1.3)
    fn = sg.compile(outs, ins, backend="numba")
    ref = sg.compile(outs, ins, backend="numpy")(*args)
    for got, want in zip(fn(*args), ref):
        battery.close(got, want)
    assert "while_loop" not in fn.numpy_ops and "while_vjp" not in fn.numpy_ops, fn.numpy_ops
    loops = [name for name, _ in fn.kernels if name.startswith("_sg_while")]
    assert len(loops) == 4, fn.kernels  # two loops, two sweeps
    driver = fn.raw.source[fn.raw.source.index("\ndef f("):]
    assert "_sg_while(" not in driver and "_sg_while_vjp(" not in driver, driver
    value = sg.compile(outs[0], ins, backend="numba")  # the loop alone: no tape
    battery.close(value(*args), ref[0])


def test_a_while_loop_with_an_op_without_a_compiled_form_is_numpys_and_says_so():
    """A step holding partition (no compiled form: NOT_COMPILED) keeps NumPy's run-time
    loop, with the same values; sg.stats names the while loop among the NumPy calls."""
    assert "partition" in NOT_COMPILED
    x0 = sg.var("x0", shape=(5,))
    _, x = sg.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, sg.partition(c[1], 2) * 0.5),
                         (0, x0))
    s = sg.stats(sg.sum(x), backend="numba")
    assert "while_loop" in s.numpy_ops, s.numpy_ops
    v = np.array([3.0, -1.0, 2.0, 0.5, 7.0])
    got = sg.compile(sg.sum(x), [x0], backend="numba")(v)
    battery.close(got, sg.compile(sg.sum(x), [x0], backend="numpy")(v))


@pytest.mark.parametrize("steps", [1, 2, 37, 200])
def test_the_compiled_while_loop_records_the_numpy_loops_tape(steps):
    """The compiled recording loop places the same carries at the same step indices as the
    NumPy target's _sg_while (online checkpointing, 4 snapshots), with the same values."""
    from symgrad.ops.while_loop import _sg_while

    x0 = sg.var("x0", shape=(3,))
    _, x = sg.while_loop(lambda c: c[0] < steps, lambda c: (c[0] + 1, sg.sin(c[1]) * 1.01),
                         (0, x0), snapshots=4)
    fn = sg.compile([sg.sum(x), sg.grad(sg.sum(x), x0)], [x0], backend="numba")
    space = fn.raw.__globals__
    ours = space["_sg_while1"]
    cond, step = (space[n] for n in ("_sg_fn1", "_sg_fn2"))
    carries, dtypes = (0, np.array([0.1, 0.2, -0.3])), ("int64", "float64")
    *got, (tape,) = ours(cond, step, carries, (), (), dtypes, 4)
    *want, (ref,) = _sg_while(cond, step, carries, (), (), dtypes, 4)
    assert list(tape) == list(ref) and int(got[2]) == int(want[2]) == int(got[0]) == steps
    for k in ref:
        assert int(tape[k][0]) == int(ref[k][0])
        battery.close(tape[k][1], ref[k][1])
    battery.close(got[1], want[1])


def test_a_while_loop_reading_one_row_per_step_gets_its_row_cotangents_compiled():
    """A step reading row k of a captured matrix (k the counter carry): the sweep adds each
    step's row cotangent at its row (NumPy's sweep over the compiled step and product);
    values and gradients equal the NumPy backend's to 1e-12."""
    xs, x0 = sg.var("xs", shape=(6, 3)), sg.var("x0", shape=(3,))
    _, x = sg.while_loop(lambda c: c[0] < 6, lambda c: (c[0] + 1, sg.sin(c[1]) * xs[c[0]]
                                                        + c[1]), (0, x0), snapshots=2)
    loss = sg.sum(x * x)
    outs = [loss, *sg.grad(loss, [x0, xs])]
    args = (np.array([0.1, 0.5, -0.3]), RNG.normal(size=(6, 3)))
    fn = sg.compile(outs, [x0, xs], backend="numba")
    for got, want in zip(fn(*args), sg.compile(outs, [x0, xs], backend="numpy")(*args)):
        battery.close(got, want)
    assert not fn.numpy_ops, fn.numpy_ops


def test_a_compiled_while_loops_gradient_holds_about_its_snapshots_of_carries():
    """2,000 steps of a 1,000-float carry, 10 snapshots: value and gradient together hold
    about 11 carries at a time (peak traced memory), as the NumPy backend's, where storing
    every carry would take 2,000."""
    import tracemalloc

    x0 = sg.var("x0", shape=(1000,))
    _, x = sg.while_loop(lambda c: c[0] < 2000,
                         lambda c: (c[0] + 1, c[1] + 1e-3 * sg.sin(c[1])), (0, x0),
                         snapshots=10)
    loss = sg.sum(x * x)
    fn = sg.compile([loss, sg.grad(loss, x0)], [x0], backend="numba")
    v = np.linspace(-1.0, 1.0, 1000)
    fn(v)
    tracemalloc.start()
    try:
        got = fn(v)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    battery.close(got[1], sg.compile(sg.grad(loss, x0), [x0], backend="numpy")(v))
    assert peak < 20 * v.nbytes, peak / v.nbytes
