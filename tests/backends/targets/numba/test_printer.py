"""``backend="numba"``: fused loops compiled by Numba, the rest NumPy's calls.

The registry battery compiles, per dtype, **one module** holding one case of each op of
:data:`SAMPLE`, each op's value an output and all of them in one loss (a few kernels: Numba
takes about 0.1 s per op of a loop to compile, so the whole table is the opt-in battery);
every region is compiled (the cost model is switched off, so even a lone op gets its loop).
The gradients of composite models (a gradient is made of the same elementwise ops) are
checked beside it. Values and gradients equal ``sg.evaluate`` to 1e-12 in float64; in
float32 to 4 units in the last place (NumPy's float32 ``exp``, ``sin``, ... are its own SIMD
kernels, Numba calls the C library's: they differ in the last bit). ``SYMGRAD_NUMBA_FULL=1``
(``make fuzz``) runs every case of every op (broadcasting shapes, 0-d values), with the
gradients, one module per op.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.targets import TARGETS
from symgrad.backends.targets.numba import fusion
from symgrad.backends.targets.numba.table import ARRAY_FORMS, NOT_COMPILED, NUMBA
from symgrad.errors import BackendError
from symgrad.ir.expr import build
from symgrad.ops import REGISTRY
from tests.support.registry_cases import registry_cases

pytest.importorskip("numba")

FULL = os.environ.get("SYMGRAD_NUMBA_FULL") == "1"
FUSED = sorted(NUMBA)
BUILTIN = {n for n, op in REGISTRY.items() if op.builtin and n != "const"}


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    """One on-disk cache for the session's tests (CI starts with none)."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


@pytest.fixture
def every_region(monkeypatch):
    monkeypatch.setattr(fusion, "pays", lambda nodes, r: True)


def _close(got, ref, dtype, what):
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape and got.dtype == ref.dtype, what
    if ref.dtype.kind in "biu":
        np.testing.assert_array_equal(got, ref, err_msg=what)
        return
    scale = max(1.0, float(np.max(np.abs(ref[np.isfinite(ref)]), initial=0.0)))
    tol = 1e-12 if dtype == "float64" else 4 * float(np.finfo(np.float32).eps)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * scale, err_msg=what,
                               equal_nan=True)


def test_every_op_has_a_form_or_a_reason():
    """Every op has a scalar form (elementwise) or an array form inside compiled code, or
    is on the short list that says why not."""
    assert TARGETS["numba"].printer.loop_table is NUMBA
    elementwise = {n for n in BUILTIN if REGISTRY[n].elementwise}
    assert elementwise <= set(NUMBA) and set(NUMBA) <= elementwise
    assert BUILTIN - elementwise <= set(ARRAY_FORMS) | set(NOT_COMPILED)
    assert not set(ARRAY_FORMS) & set(NOT_COMPILED)
    assert set(NOT_COMPILED) == {"partition", "argpartition", "expm", "lu_factor", "lu_pivots",
                                 "lu_permutation", "scan"}
    assert all(len(why) > 20 for why in NOT_COMPILED.values())


# a representative sample: arithmetic, transcendental, two-operand special functions, the
# forms of their own (where, heaviside, sigmoid, softplus, relu, mod), comparisons, logic
SAMPLE = ("add", "divide", "power", "exp", "log1p", "tanh", "arccosh", "arctan2", "hypot",
          "maximum", "fmin", "sign", "floor", "where", "heaviside", "sigmoid", "softplus",
          "relu", "mod", "less", "logical_xor", "isnan", "copysign", "float_power", "cbrt")


def _pick(cases, ops=SAMPLE):
    """One case per op of ``ops``: its first (all operands (3, 4))."""
    by_op: dict[str, list] = {}
    for p in cases:
        by_op.setdefault(p.values[0].op.name, []).append(p.values[0])
    return [v[0] for k, v in sorted(by_op.items()) if k in ops]


def _battery(cases, dtype, gradients=True):
    """Each case's op value; one loss summing them all (a boolean value through ``where``),
    and (``gradients``) the gradients of the loss contracted with random directions: one
    scalar that is wrong if any gradient is."""
    outs, values, terms, xs = [], {}, [], []
    rng = np.random.default_rng(7)
    for k, case in enumerate(cases):
        args = []
        for j, a in enumerate(case.arrays):
            a = a.astype(dtype) if a.dtype.kind == "f" else a
            v = sg.var(f"c{k}_{j}", a.shape, a.dtype.name)
            values[v.name] = a
            args.append(v)
            if a.dtype.kind == "f" and case.op.differentiable:
                xs.append(v)
        y = build(case.op, args, {**case.op.attrs, **case.attrs})
        outs.append(y)
        w = sg.const(rng.uniform(0.5, 1.5, size=y.shape).astype(dtype))
        terms.append(sg.where(y, w, -w) if y.dtype == "bool" else y * w)
    loss = sg.sum(_total(terms))
    if not gradients or not xs:  # (an op without derivatives: values only)
        return [*outs, loss], values
    grads = sg.grad(loss, xs)
    contracted = sg.sum(_total([g * sg.const(rng.uniform(0.5, 1.5, size=g.shape).astype(dtype))
                                for g in grads]))
    return [*outs, loss, contracted], values


def _total(terms):
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_registry_sample_equals_evaluate(dtype, every_region):
    cases = _pick(registry_cases([(3, 4), (3, 1)]))
    outs, values = _battery(cases, dtype, gradients=False)  # gradients: the full battery
    fn = sg.compile(outs, backend="numba")
    assert fn.source.count("@_jit(") >= 3
    got = fn(**values)
    ref = sg.evaluate(outs, values)
    names = [c.op.name for c in cases]
    for k, (g, r) in enumerate(zip(got, ref)):
        _close(g, r, dtype, names[k] if k < len(names) else f"output {k}")


@pytest.mark.skipif(not FULL, reason="the whole battery: SYMGRAD_NUMBA_FULL=1 (make fuzz)")
@pytest.mark.parametrize("op", FUSED)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_registry_full(op, dtype, every_region):
    cases = [p.values[0] for p in registry_cases([(), (3, 4), (3, 1), (1, 4)])
             if p.values[0].op.name == op]
    outs, values = _battery(cases, dtype)
    got = sg.compile(outs, backend="numba")(**values)
    for k, (g, r) in enumerate(zip(got, sg.evaluate(outs, values))):
        _close(g, r, dtype, f"{op} output {k}")


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True),
                                           ((0, 1), True), (-1, False)])
def test_fused_sums(axis, keepdims):
    x, y = sg.var("x", (5, 7)), sg.var("y", (7,))
    f = sg.sum(sg.exp(x) * y - x, axis=axis, keepdims=keepdims)
    fn = sg.compile(f, backend="numba")
    assert "+= v" in fn.source  # the sum is accumulated in the loop
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 7)), rng.normal(size=7)
    _close(fn(a, b), sg.evaluate(f, {"x": a, "y": b}), "float64", "sum")


def test_a_gradient_stores_the_forward_values_its_adjoint_reads():
    x = sg.var("x", (1000,))
    f = sg.sum(sg.exp(x) * x + 1.0)
    src = sg.to_source([f, sg.grad(f, x)], backend="numba")
    assert "value, t1, t2 = _f_loop(x)" in src  # one pass: the sum and two forward values
    fn = sg.compile([f, sg.grad(f, x)], backend="numba")
    a = np.linspace(-1, 1, 1000)
    for g, r in zip(fn(a), sg.evaluate([f, sg.grad(f, x)], {"x": a})):
        _close(g, r, "float64", "grad")


def test_split_matmul_and_decompositions_stay_numpy_calls():
    W, x = sg.var("W", (4, 4)), sg.var("x", (4,))
    h = sg.tanh(W @ x) * 0.5 + sg.sin(x)
    f = sg.sum(h * h) + sg.slogdet(W @ W.T + sg.eye(4))[1]
    outs = [f, *sg.grad(f, [W, x])]
    fn = sg.compile(outs, backend="numba")
    assert "np.linalg.slogdet" in fn.source and "@_jit(" in fn.source
    rng = np.random.default_rng(1)
    vals = {"W": rng.normal(size=(4, 4)), "x": rng.normal(size=4)}
    for g, r in zip(fn(**vals), sg.evaluate(outs, vals)):
        _close(g, r, "float64", "split")


def test_scalar_model_and_inputs_of_any_kind():
    s, k, v = sg.var("s"), sg.var("k"), sg.var("v")
    d1 = (sg.log(s / k) + 0.5 * v * v) / v
    price = s * sg.sigmoid(1.7 * d1) - k * sg.sigmoid(1.7 * (d1 - v))
    outs = [price, *sg.grad(price, [s, k, v])]
    fn = sg.compile(outs, backend="numba")
    ref = sg.evaluate(outs, {"s": 100.0, "k": 95.0, "v": 0.2})
    for args in [(100.0, 95.0, 0.2), (np.float64(100.0), np.array(95.0), 0.2)]:
        got = fn(*args)
        for g, r in zip(got, ref):
            assert type(g) is np.float64
            _close(g, r, "float64", "scalar")


def test_views_and_read_only_inputs():
    x = sg.var("x", (3, 4))
    f = sg.exp(x) * x + 1.0
    fn = sg.compile(f, backend="numba")
    a = np.arange(12.0).reshape(4, 3).T / 10  # a transposed view
    b = a.copy()
    b.flags.writeable = False
    for arr in (a, b):
        _close(fn(arr), np.exp(arr) * arr + 1.0, "float64", "view")


def test_missing_numba_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)
    with pytest.raises(BackendError, match=r"pip install 'symgrad\[numba\]'"):
        sg.compile(sg.sin(sg.var("x")), backend="numba")


def test_scipy_functions_and_a_second_process_uses_the_disk_cache(tmp_path):
    x = sg.var("x", (6,))
    f = sg.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    s = sg.scipy_functions(f, x, backend="numba")
    ref = sg.scipy_functions(f, x)
    x0 = np.linspace(-1, 1, 6)
    for g, r in zip(s.fun(x0), ref.fun(x0)):
        _close(g, r, "float64", "scipy")
    code = ("import numpy as np, symgrad as sg\n"
            "x = sg.var('x', (50,))\n"
            "f = sg.sum(sg.exp(x) * sg.sin(x) + x)\n"
            "fn = sg.compile([f, sg.grad(f, x)], backend='numba')\n"
            "print(float(fn(np.ones(50))[0]))\n")
    env = {**os.environ, "SYMGRAD_CACHE_DIR": str(tmp_path), "NUMBA_DEBUG_CACHE": "1"}
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True)
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, check=True)
    assert "data saved" in first.stdout and "data saved" not in second.stdout
    assert "data loaded" in second.stdout
    assert first.stdout.splitlines()[-1] == second.stdout.splitlines()[-1]


def test_the_function_says_what_is_compiled_and_what_numpy_runs():
    W, x = sg.var("W", (8, 8)), sg.var("x", (8,))
    f = sg.sum(sg.tanh(W @ x) * x + sg.exp(x))
    fn = sg.compile([f, sg.grad(f, W)], backend="numba")
    assert fn.numpy_ops.get("matmul") == 1 and "outer" in fn.numpy_ops
    fused = [op for _, ops in fn.kernels for op in ops]
    assert "tanh" in fused and "sum" in fused
    assert set(fn.build_seconds) == {"passes", "emit", "native compile"}


def test_docs_numba_example_prints_what_it_says():
    """The backends page's pricer compiles to 7 loops and leaves nothing to NumPy."""
    from tests.support import docs

    block = docs.block("guide/backends", "1.702 * d1")
    out = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True,
                         check=True, timeout=600, env={**os.environ}).stdout
    assert out.strip() == "7 {}"


def _consumers(nodes, body):
    out: dict[int, set[int]] = {}
    for i in body:
        for a in nodes[i].args:
            out.setdefault(a, set()).add(i)
    return out


@pytest.mark.parametrize("model", ["lstm", "gmm", "chain"])
def test_regions_are_convex_and_store_what_others_read(model):
    """The planner's invariants on gradients of real models (pure graph analysis)."""
    from benchmarks import w2_gmm, w5_lstm
    from symgrad.backends.stages import lower, request

    if model == "chain":
        x = sg.var("x")
        t = x
        for k in range(60):  # cos or tanh by the Thue-Morse sequence: no run of identical
            op = sg.tanh if bin(k).count("1") % 2 else sg.cos  # steps, so no rolling
            t = sg.sin(t) * t + op(t) * (1.0 + k / 64)
        outs = [t, sg.grad(t, x)]
    else:
        mod = w5_lstm if model == "lstm" else w2_gmm
        f, params, _ = mod.symgrad_loss(mod.SMOKE_CONFIG)
        outs = [f, *sg.grad(f, list(params))]
    low = lower(request(outs, backend="numba"))
    nodes = low.graph.nodes
    body = [i for i in low.graph.ancestors(list(low.functions[0].outputs))
            if not (nodes[i].is_var or nodes[i].is_const)]
    escapes = set(low.functions[0].outputs)
    regions = fusion.plan(nodes, body, escapes, NUMBA)
    assert regions
    users = _consumers(nodes, body)
    seen: set[int] = set()
    for r in regions:
        assert r.members == sorted(r.members) and r.root == r.members[-1]
        assert not seen & set(r.members)
        seen |= set(r.members)
        assert 1 < len(r.members) <= fusion.MAX_OPS
        inside = set(r.members)
        for m in r.members[:-1]:
            assert nodes[m].shape == r.shape
            outside = users.get(m, set()) - inside
            if m in r.extras:
                assert m in escapes or outside
                assert all(u > r.root for u in outside)  # read only after the call
            else:
                assert not outside and m not in escapes  # lives only in the loop
        for a in r.inputs:  # inputs are computed before the call
            assert a < r.root and a not in inside


def test_stats_says_what_is_compiled_and_what_numpy_runs():
    """sg.stats(..., backend="numba"): the loops the module would compile and the NumPy
    calls left in the driver (an op Numba lacks splits the function; it still runs)."""
    x, w = sg.var("x", shape=(4,)), sg.var("w", shape=(4, 4))
    f = sg.sum(sg.tanh(w @ x) * x) + sg.sum(sg.sort(x) * 2.0)
    s = sg.stats([f, sg.grad(f, x)], backend="numba")
    assert s.backend == "numba" and s.kernels
    assert {"matmul", "sort"} <= set(s.numpy_ops)
    assert str(s).splitlines()[-1].startswith("numba: ")
    plain = sg.stats(f)
    assert plain.backend is None and "numba" not in str(plain)
