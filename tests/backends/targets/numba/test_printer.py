"""``backend="numba"``: straight-line code in compiled kernels, NumPy's calls where they pay.

The registry battery compiles, per dtype, **one module** holding a case of each op of
:data:`SAMPLE` (elementwise ops of every kind and a case of each family of the others),
each op's value an output and all of them in one loss (one kernel: the cost model is
switched off, so every run of lines that compiles is one). Values equal ``sg.evaluate`` to
1e-12 in float64; in float32 to 4 units in the last place (NumPy's float32 ``exp``,
``sin``, ... are its own SIMD kernels, Numba calls the C library's: they differ in the last
bit). ``SYMGRAD_NUMBA_FULL=1`` (``make fuzz``) runs every case of every op (broadcasting
shapes, 0-d values), with the gradients, a group of ops per module.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.targets import TARGETS
from symgrad.backends.targets.numba import fusion, printer
from symgrad.backends.targets.numba.table import ARRAY_FORMS, NOT_COMPILED, NUMBA
from symgrad.errors import BackendError
from symgrad.ops import REGISTRY
from tests.support import numba_battery as battery

pytest.importorskip("numba")

FULL = os.environ.get("SYMGRAD_NUMBA_FULL") == "1"
BUILTIN = {n for n, op in REGISTRY.items() if op.builtin and n != "const"}


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    """One on-disk cache for the session's tests (CI starts with none)."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


@pytest.fixture
def every_region(monkeypatch):
    """Every run of lines that compiles is a kernel (the cost model off)."""
    monkeypatch.setattr(fusion, "pays", lambda nodes, seg: True)
    monkeypatch.setattr(printer, "numpy_better", lambda n, nodes: None)
    monkeypatch.setattr(printer, "view_better", lambda n, readers, nodes: None)


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
    assert elementwise == set(NUMBA)
    assert BUILTIN - elementwise <= set(ARRAY_FORMS) | set(NOT_COMPILED)
    assert not set(ARRAY_FORMS) & set(NOT_COMPILED)
    solvers = {"optimize", "solver_info", "ivp", "ivp_adjoint", "custom_root",
               "custom_linear_solve"}
    sparse = {n for n in BUILTIN if n.startswith("sparse_")}
    assert set(NOT_COMPILED) == {"partition", "argpartition", "expm", "sqrtm", "lu_factor",
                                 "lu_pivots", "lu_permutation", "scan", "result", "while_loop",
                                 "while_vjp", "fftn", "rfftn", "irfft", "eig", "eigvals",
                                 *solvers, *sparse}
    assert all(len(why) > 20 for why in NOT_COMPILED.values())


# a representative sample: arithmetic, transcendental, two-operand special functions, the
# forms of their own (where, heaviside, sigmoid, softplus, relu, mod, round, astype, sinc),
# comparisons, logic, SciPy's functions; and a case of each family of the other ops
SAMPLE = ("add", "divide", "power", "exp", "log1p", "tanh", "arccosh", "arctan2", "hypot",
          "maximum", "fmin", "sign", "floor", "where", "heaviside", "sigmoid", "softplus",
          "relu", "mod", "less", "logical_xor", "isnan", "copysign", "float_power", "cbrt",
          "round", "astype", "sinc", "erf", "gammaln", "jv",
          "sum", "max", "argmin", "logsumexp", "softmax", "cumprod", "index", "index_add",
          "take", "concatenate", "stack", "transpose", "broadcast_to", "squeeze", "matmul",
          "einsum", "outer", "inv", "det", "cholesky", "argsort", "searchsorted")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_registry_sample_equals_evaluate(dtype, every_region):
    """Every op of the sample and of its gradient compiled (but for the short list's)."""
    cases = battery.first_cases(SAMPLE, dtype)
    outs, values = battery.straight(cases, dtype, gradients=dtype == "float64")
    fn = sg.compile(outs, backend="numba")
    assert set(fn.numpy_ops) <= set(NOT_COMPILED), fn.numpy_ops
    battery.check(fn(**values), sg.evaluate(outs, values), dtype, "sample")


def _groups(size=12):
    ops = sorted({c.op.name for c in battery.cases_of(REGISTRY)})
    return [ops[k:k + size] for k in range(0, len(ops), size)]


@pytest.mark.skipif(not FULL, reason="the whole battery: SYMGRAD_NUMBA_FULL=1 (make fuzz)")
@pytest.mark.parametrize("ops", _groups(), ids=lambda ops: f"{ops[0]}-{ops[-1]}")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_registry_full(ops, dtype, every_region):
    """Every case (with a form) of every op, a group of ops per module, with gradients:
    nothing is left to NumPy but the short list's ops."""
    cases = [c for c in battery.cases_of(ops, [(), (3, 4), (3, 1), (1, 4)])
             if battery.has_form(c) and (dtype == "float64" or c.op.elementwise)]
    if not cases:
        pytest.skip("no case of these ops in this dtype")
    outs, values = battery.straight(cases, dtype)
    fn = sg.compile(outs, backend="numba")
    assert set(fn.numpy_ops) <= set(NOT_COMPILED), fn.numpy_ops
    battery.check(fn(**values), sg.evaluate(outs, values), dtype, ",".join(ops))


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True),
                                           ((0, 1), True), (-1, False)])
def test_fused_sums(axis, keepdims):
    x, y = sg.var("x", (5, 7)), sg.var("y", (7,))
    f = sg.sum(sg.exp(x) * y - x, axis=axis, keepdims=keepdims)
    fn = sg.compile(f, backend="numba")
    assert "+= _" in fn.source  # the sum is accumulated in the loop
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 7)), rng.normal(size=7)
    _close(fn(a, b), sg.evaluate(f, {"x": a, "y": b}), "float64", "sum")


def test_a_value_and_its_gradient_are_one_kernel():
    """The forward values the adjoint lines read stay inside the one kernel."""
    x = sg.var("x", (1000,))
    f = sg.sum(sg.sin(x) * x + 1.0)
    src = sg.to_source([f, sg.grad(f, x)], backend="numba")
    assert src.count("@_jit(") == 1 and "value, dx = _f_kernel(np.ascontiguousarray(x))" in src
    fn = sg.compile([f, sg.grad(f, x)], backend="numba")
    a = np.linspace(-1, 1, 1000)
    for g, r in zip(fn(a), sg.evaluate([f, sg.grad(f, x)], {"x": a})):
        _close(g, r, "float64", "grad")


@pytest.mark.parametrize("bias", [(10,), (1, 10)])
def test_sums_written_as_products_with_ones_are_loops_in_a_kernel(bias):
    """The lowering's ``x @ ones`` / ``ones @ x`` (a softmax's backprop's row sums, a
    bias's column sums; products at these sizes, where NumPy's BLAS wins) are sum loops
    inside a kernel, not ``np.dot``: equal to the closed form and to the NumPy backend."""
    import re

    X, W = sg.var("X", (128, 8)), sg.var("W", (8, 10))
    g, onehot = sg.var("g", bias), sg.var("onehot", (128, 10))
    f = -sg.sum(onehot * sg.log_softmax(X @ W + g, axis=1))
    outs = sg.grad(f, [W, g])
    fn = sg.compile(outs, backend="numba")
    assert re.search(r"_c\d+ = np\.full\(\(10, 1\), 1\.0", fn.source)  # the products are there
    assert not re.search(r"np\.dot\([^)]*_c\d", fn.source) and "+= onehot[" in fn.source
    rng = np.random.default_rng(3)
    vals = {"X": rng.normal(size=(128, 8)), "W": rng.normal(size=(8, 10)),
            "g": rng.normal(size=bias), "onehot": 2.0 * np.eye(10)[rng.integers(0, 10, 128)]}
    z = vals["X"] @ vals["W"] + vals["g"]
    p = np.exp(z - z.max(axis=1, keepdims=True))
    ds = p / p.sum(axis=1, keepdims=True) * vals["onehot"].sum(axis=1, keepdims=True) \
        - vals["onehot"]
    for got, ref, numpy_ref in zip(fn(**vals), (vals["X"].T @ ds, ds.sum(axis=0).reshape(bias)),
                                   sg.compile(outs, backend="numpy")(**vals)):
        _close(got, ref, "float64", "closed form")
        _close(got, numpy_ref, "float64", "NumPy backend")


@pytest.mark.parametrize("ones,side", [((7, 1), "right"), ((7,), "right"), ((7, 5), "right"),
                                       ((1, 6), "left"), ((6,), "left"), ((3, 6), "left")])
def test_products_with_ones_of_every_shape_equal_numpy(ones, side, every_region):
    """A vector of ones is a sum's loop; a matrix of ones (repeated sums) stays a product:
    each equals NumPy's product."""
    from symgrad.ir.expr import Expr

    x = sg.var("x", (6, 7))
    c = Expr(x.graph, x.graph.const(np.ones(ones)))
    f = sg.tanh(x) @ c if side == "right" else c @ sg.tanh(x)
    fn = sg.compile(f, backend="numba")
    a = np.linspace(-2, 3, 42).reshape(6, 7)
    ref = np.tanh(a) @ np.ones(ones) if side == "right" else np.ones(ones) @ np.tanh(a)
    _close(fn(a), ref, "float64", str(ones))


def test_a_blas_bound_product_stays_numpy_and_says_why():
    """A large matrix product is NumPy's call (the same BLAS); the rest of the gradient,
    decompositions included, is compiled."""
    W, x = sg.var("W", (256, 256)), sg.var("x", (256,))
    A = sg.var("A", (4, 4))
    h = sg.tanh(W @ x) * 0.5 + sg.sin(x)
    f = sg.sum(h * h) + sg.log(sg.det(A @ A.T + sg.eye(4)))
    outs = [f, *sg.grad(f, [W, x, A])]
    fn = sg.compile(outs, backend="numba")
    assert fn.numpy_ops.get("matmul", 0) >= 1 and "det" not in fn.numpy_ops
    assert "BLAS" in sg.stats(outs, backend="numba").numpy_why["matmul"]
    rng = np.random.default_rng(1)
    vals = {"W": rng.normal(size=(256, 256)) / 16, "x": rng.normal(size=256),
            "A": rng.normal(size=(4, 4))}
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


def test_kernels_take_c_contiguous_arrays_and_a_kernels_own_as_they_are():
    """A kernel's array parameters are C-contiguous (its nests' loops vectorize): the
    driver passes an input through np.ascontiguousarray, an array a kernel made as it is;
    a strided input gives evaluate's values."""
    x = sg.var("x", (3, 4))
    a = sg.tanh(x) * x + 1.0
    b = sg.sum(sg.sin(sg.partition(a, 1)) * a * 2.0)  # NumPy's partition between kernels
    outs = [b, sg.grad(b, x)]
    src = sg.to_source(outs, backend="numba")
    lines = src.split("\ndef f(")[1].splitlines()
    types = [ln for ln in src.splitlines() if ln.startswith("@_jit((")]
    assert types and all("_A(" not in t or "'C')" in t for t in types), types
    calls = [k for k, ln in enumerate(lines) if "= _f_kernel" in ln]
    assert len(calls) >= 2 and "np.ascontiguousarray(x)" in lines[calls[0]], lines
    made = {name.strip() for name in lines[calls[0]].split("=")[0].split(",")}
    later = "\n".join(lines[calls[1]:])
    assert any(name in later for name in made), (made, later)
    assert not any(f"np.ascontiguousarray({name})" in later for name in made), later
    fn = sg.compile(outs, backend="numba")
    v = np.linspace(-1, 1, 12).reshape(4, 3).T
    for g, r in zip(fn(v), sg.evaluate(outs, {"x": v})):
        _close(g, r, "float64", "strided")


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
    f = sg.sum(sg.tanh(W @ x) * x + sg.exp(x)) + sg.sum(sg.partition(x, 3) * x)
    fn = sg.compile([f, sg.grad(f, W)], backend="numba")
    assert fn.numpy_ops.get("partition") == 1
    fused = [op for _, ops in fn.kernels for op in ops]
    assert {"tanh", "sum", "matmul", "outer"} <= set(fused)
    assert set(fn.build_seconds) == {"passes", "emit", "native compile"}


def test_docs_numba_example_prints_what_it_says():
    """The backends page's pricer compiles loops and says why of each NumPy call left."""
    from tests.support import docs

    block = docs.block("guide/backends", "1.702 * d1")
    out = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True,
                         check=True, timeout=600, env={**os.environ}).stdout
    assert out.strip() == "True True"


def _consumers(nodes, body):
    out: dict[int, set[int]] = {}
    for i in body:
        for a in nodes[i].args:
            out.setdefault(a, set()).add(i)
    return out


def _model(model):
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
    return nodes, body, set(low.functions[0].outputs)


@pytest.mark.parametrize("model", ["lstm", "gmm", "chain"])
def test_regions_are_convex_and_store_what_others_read(model):
    """The fused loops' planner on gradients of real models (pure graph analysis)."""
    nodes, body, escapes = _model(model)
    regions = fusion.plan(nodes, body, escapes, NUMBA, keep=lambda n, r: len(r.members) > 1)
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


@pytest.mark.parametrize("model", ["lstm", "gmm", "chain"])
def test_kernels_are_runs_of_lines_and_return_what_others_read(model):
    """The kernels' planner: each kernel is consecutive lines that compile, reads values
    computed before it and returns exactly the values read after it (or returned)."""
    nodes, body, escapes = _model(model)
    why = {i: (None if i % 7 else "kept") for i in body}  # some lines stay NumPy's
    kernels, reasons = fusion.segments(nodes, body, escapes, lambda n: why[n.id])
    assert kernels and set(reasons) >= {i for i in body if why[i]}
    users = _consumers(nodes, body)
    pos = {i: k for k, i in enumerate(body)}
    for seg in kernels:
        k0 = pos[seg.members[0]]
        assert seg.members == body[k0:k0 + len(seg.members)]
        assert all(why[m] is None for m in seg.members)
        inside = set(seg.members)
        for a in seg.inputs:
            assert a not in inside and (a not in pos or pos[a] < k0)
        for m in seg.members:
            later = users.get(m, set()) - inside
            assert (m in seg.outputs) == bool(later or m in escapes)


def test_stats_says_what_is_compiled_and_what_numpy_runs():
    """sg.stats(..., backend="numba"): the functions the module would compile and the NumPy
    calls left in the driver, each with its reason (an op without a compiled form splits
    the function; it still runs)."""
    x, w = sg.var("x", shape=(4,)), sg.var("w", shape=(4, 4))
    f = sg.sum(sg.tanh(w @ x) * x) + sg.sum(sg.partition(x, 2) * 2.0)
    s = sg.stats([f, sg.grad(f, x)], backend="numba")
    assert s.backend == "numba" and s.kernels
    assert "partition" in s.numpy_ops and "introselect" in s.numpy_why["partition"]
    line = str(s).splitlines()[-1]
    assert line.startswith("numba: ") and "introselect" in line
    plain = sg.stats(f)
    assert plain.backend is None and "numba" not in str(plain)


def test_the_module_compiles_at_llvm_o2_and_numba_keeps_its_level(tmp_path, monkeypatch):
    """While symgrad's module compiles, Numba's LLVM level is -O2; afterwards it is Numba's
    own again; a user's NUMBA_OPT is left alone."""
    from numba.core import config, event

    from symgrad.backends.targets.numba import source

    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    seen = []

    class Listener(event.Listener):
        def on_start(self, ev):
            seen.append(int(config.OPT))

        def on_end(self, ev):
            pass

    listener = Listener()
    event.register("numba:compile", listener)
    try:
        before = config.OPT
        x = sg.var("x", (5,))
        fn = sg.compile(sg.sum(sg.sin(x) * x + 1.0), backend="numba")
        assert config.OPT == before and fn(np.ones(5)) == pytest.approx(5 * np.sin(1.0) + 5)
        assert seen and set(seen) == {source.OPT_LEVEL}
        seen.clear()
        monkeypatch.setenv("NUMBA_OPT", str(int(before)))
        sg.compile(sg.sum(sg.cos(x) * x + 1.0), backend="numba")
        assert seen and set(seen) == {int(before)} and config.OPT == before
    finally:
        event.unregister("numba:compile", listener)


def test_a_big_identity_in_a_kernel_is_zeros_and_its_diagonal_not_a_literal(every_region):
    """eye(60, 70, k=-2) inside a kernel: NumPy's values, written as zeros and a loop
    setting its diagonal (a literal of 4,200 elements takes Numba a minute to type)."""
    x = sg.var("x", shape=(60, 70))
    e = sg.eye(60, 70, k=-2) * x + x
    src = sg.to_source(e, backend="numba")
    assert "np.zeros((60, 70)" in src and "0.0, 0.0, 0.0" not in src, src
    v = np.random.default_rng(3).normal(size=(60, 70))
    np.testing.assert_array_equal(sg.compile(e, [x], backend="numba")(v),
                                  np.eye(60, 70, k=-2) * v + v)
