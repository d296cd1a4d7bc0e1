"""``backend="c"``: the Numba target's kernels as C functions, compiled by the C compiler.

The registry battery compiles a case of each op of :data:`SAMPLE` (elementwise ops of every
kind and a case of each family of the others) into one module per dtype (the cost model
switched off, so every run of lines that compiles is one kernel), with the gradients in
float64: values equal ``sg.evaluate`` and the NumPy backend to 1e-12 (float32: 4 units in
the last place), and nothing is left to NumPy but the ops the C target names
(:data:`~symgrad.backends.targets.c.printer.NOT_IN_C`) and the Numba target's short list.
``SYMGRAD_NUMBA_FULL=1`` (``make fuzz``) runs every case of every op, a module per case.
The benchmark models' gradients (both spellings) equal the NumPy backend's.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil

import numpy as np
import pytest

import symgrad as sg
import symgrad.scipy.special as ss
from symgrad.backends.targets.c.printer import NOT_IN_C
from symgrad.backends.targets.numba import fusion, printer
from symgrad.backends.targets.numba.table import NOT_COMPILED
from symgrad.errors import SymgradWarning
from symgrad.ops import REGISTRY
from tests.support import numba_battery as battery

pytestmark = pytest.mark.skipif(
    shutil.which(os.environ.get("CC") or "cc") is None and shutil.which("gcc") is None,
    reason="no C compiler (cc, gcc) on PATH")

FULL = os.environ.get("SYMGRAD_NUMBA_FULL") == "1"
KEPT = set(NOT_COMPILED) | set(NOT_IN_C)


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    """One on-disk cache for the session's tests (CI starts with none)."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


@pytest.fixture
def every_region(monkeypatch):
    """Every run of lines that compiles is a kernel (the cost model off)."""
    monkeypatch.setattr(fusion, "pays", lambda nodes, seg: True)
    monkeypatch.setattr(printer, "numpy_better", lambda n, nodes: None)


# as the Numba target's sample (tests/backends/targets/numba/test_printer.py), less the ops
# the C target leaves to NumPy (SciPy's special functions, LAPACK but getrf/getri/getrs/potrf,
# sorting)
SAMPLE = ("add", "divide", "power", "exp", "log1p", "tanh", "arccosh", "arctan2", "hypot",
          "maximum", "fmin", "sign", "floor", "where", "heaviside", "sigmoid", "softplus",
          "relu", "mod", "less", "logical_xor", "isnan", "copysign", "float_power", "cbrt",
          "round", "astype", "sinc", "logaddexp", "floor_divide", "remainder", "fmod",
          "sum", "max", "argmin", "logsumexp", "softmax", "cumprod", "index", "index_add",
          "take", "concatenate", "stack", "transpose", "broadcast_to", "squeeze", "matmul",
          "einsum", "outer", "matrix_power", "trace", "inv", "solve", "det", "cholesky")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_registry_sample_equals_evaluate_and_numpy(dtype, every_region):
    """Every op of the sample and of its gradient compiled in C, one kernel."""
    cases = battery.first_cases(SAMPLE, dtype)
    outs, values = battery.straight(cases, dtype, gradients=dtype == "float64")
    fn = sg.compile(outs, backend="c")
    # float32 floor division is NumPy's under the Numba target too (its short list)
    assert set(fn.numpy_ops) <= ({"floor_divide"} if dtype == "float32" else set()), \
        fn.numpy_why
    assert len(fn.kernels) <= 2 and sum(len(ops) for _, ops in fn.kernels) > 50
    got = fn(**values)
    battery.check(got, sg.evaluate(outs, values), dtype, "sample")
    battery.check(got, sg.compile(outs)(**values), dtype, "sample vs the NumPy backend")


def _every_case():
    return sorted({c.op.name for c in battery.cases_of(REGISTRY)})


@pytest.mark.skipif(not FULL, reason="the whole battery: SYMGRAD_NUMBA_FULL=1 (make fuzz)")
@pytest.mark.parametrize("op", _every_case())
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_registry_full(op, dtype, every_region):
    """Every case (with a Numba form) of every op, with gradients: nothing is left to
    NumPy but what the C target names."""
    cases = [c for c in battery.cases_of([op], [(), (3, 4), (3, 1), (1, 4)])
             if battery.has_form(c) and (dtype == "float64" or c.op.elementwise)]
    if not cases:
        pytest.skip("no case of this op in this dtype")
    extra = battery.first_cases(["exp"], dtype)  # a float output: the loss has a term
    for case in cases:
        outs, values = battery.straight([case, *extra], dtype, gradients=dtype == "float64")
        fn = sg.compile(outs, backend="c")
        assert set(fn.numpy_ops) <= KEPT | {"floor_divide"}, fn.numpy_why
        assert all("no C form" not in why for why in fn.numpy_why.values()), fn.numpy_why
        # float32: the values (a loss of a few float32 terms summed in loop order is off
        # NumPy's pairwise sum by more than 4 units in the last place, as under Numba)
        keep = len(outs) if dtype == "float64" else -1
        battery.check(fn(**values)[:keep], sg.evaluate(outs, values)[:keep], dtype, op)


def test_what_stays_numpy_is_counted_with_its_reason(monkeypatch):
    """A SciPy special function and LAPACK are NumPy's calls, and a scan whose step holds
    one the NumPy target's loop, each counted with its reason (and a warning says so);
    the rest compiles."""
    from symgrad.backends.targets.c import target as ctarget

    monkeypatch.setattr(ctarget, "_WARNED", set())
    x, A = sg.var("x", (4,)), sg.var("A", (3, 3))
    c, _ = sg.scan(lambda c, _: (ss.erf(c) * 0.5, None), x, length=3)
    f = sg.sum(ss.erf(x) * sg.exp(x)) + sg.sum(sg.linalg.eigvalsh(A)) + sg.sum(c * x)
    with pytest.warns(SymgradWarning, match=r"backend='c'\): 1 scan stays a NumPy loop"):
        fn = sg.compile(f, backend="c")
    assert {"erf", "eigvalsh", "scan"} <= set(fn.numpy_ops)
    assert "SciPy" in fn.numpy_why["erf"] and "LAPACK" in fn.numpy_why["eigvalsh"]
    assert fn.numpy_why["scan"].startswith("its step holds erf")
    env = {"x": np.linspace(-1, 1, 4), "A": np.eye(3) + 0.1}
    np.testing.assert_allclose(fn(**env), sg.evaluate(f, env), rtol=1e-13)
    text = str(sg.stats(f, backend="c"))
    assert "c: " in text and "erf" in text and "scan" in text


def test_traced_index_out_of_range_raises_as_numpy():
    """A traced index out of range raises IndexError (NumPy's), never reads memory."""
    x, k = sg.var("x", (5,)), sg.var("k", (), "int64")
    f = sg.sum(sg.exp(x) * x) + sg.exp(x)[k] * 2.0
    fn = sg.compile(f, backend="c")
    assert fn(x=np.ones(5), k=-1) == pytest.approx(sg.evaluate(f, {"x": np.ones(5), "k": -1}))
    with pytest.raises(IndexError):
        fn(x=np.ones(5), k=5)


def test_kernel_refuses_arrays_of_other_shapes():
    """The Python function calling a C kernel checks its arrays (a pointer carries no
    shape): the raw function refuses a wrong shape rather than read past it."""
    x = sg.var("x", (6,))
    fn = sg.compile(sg.sum(sg.tanh(x) * x + sg.exp(x)), backend="c", check_inputs=False)
    with pytest.raises(ValueError, match="shape"):
        fn(np.ones(7))


MODELS = ["w1_mlp", "w1_mlp_public", "w2_gmm", "w2_gmm_public", "w3_rosenbrock",
          "w3_rosenbrock_public", "w5_lstm", "w5_lstm_public"]


@pytest.mark.parametrize("name", MODELS)
def test_benchmark_models_gradients_equal_numpy_backend(name):
    """Each benchmark model's loss and gradients (smoke sizes) under ``backend="c"`` equal
    the NumPy backend's to 1e-12, with kernels compiled in C."""
    mod = importlib.import_module(f"benchmarks.{name}")
    f, params, data = mod.symgrad_loss(mod.SMOKE_CONFIG)
    pvals, dvals = mod.inputs(mod.SMOKE_CONFIG)
    outs = [f, *sg.grad(f, list(params))]
    env = {v.name: np.asarray(a) for v, a in zip([*params, *data], [*pvals, *dvals])}
    got = sg.compile(outs, [*params, *data], backend="c")
    ref = sg.compile(outs, [*params, *data])(**env)
    for g, r in zip(got(**env), ref):
        scale = max(1.0, float(np.max(np.abs(r))))
        np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12 * scale)
    assert got.kernels, got.numpy_ops


def test_a_singular_matrix_raises_linalgerror_as_numpy():
    """LAPACK's info > 0 inside a C function (a singular matrix, one not positive
    definite) raises NumPy's LinAlgError, as the NumPy backend does."""
    A = sg.var("A", (3, 3))
    for f in (sg.sum(sg.linalg.inv(A) * 2.0) + sg.sum(A),
              sg.sum(sg.linalg.cholesky(A) * 2.0) + sg.sum(A)):
        fn = sg.compile(f, backend="c")
        assert not fn.numpy_ops, fn.numpy_why
        with pytest.raises(np.linalg.LinAlgError):
            fn(np.zeros((3, 3)))
        with pytest.raises(np.linalg.LinAlgError):
            sg.compile(f)(np.zeros((3, 3)))


def test_kernel_refuses_other_dtypes_and_strided_arrays_and_the_driver_converts():
    """The Python function calling a C kernel refuses an array of another dtype, a
    strided view, a subclass and a byte-swapped array (the C reads a pointer); the
    module's function makes its inputs C-contiguous first, so a strided view gives the
    right value."""
    x = sg.var("x", (6,))
    f = sg.sum(sg.tanh(x) * x + sg.exp(x))
    fn = sg.compile(f, backend="c", check_inputs=False)
    kernel = fn.raw.__globals__["_f_kernel"]
    v = np.linspace(-1, 1, 12)
    for bad in (v[:6].astype(np.float32), v[::2], np.ma.masked_array(v[:6]),
                v[:6].astype(v.dtype.newbyteorder())):
        with pytest.raises(ValueError, match="C-contiguous float64 array of shape"):
            kernel(bad)
    assert float(fn(v[::2])) == pytest.approx(float(sg.evaluate(f, {"x": v[::2]})), rel=1e-14)
    assert float(kernel(v[:6])) == pytest.approx(float(sg.evaluate(f, {"x": v[:6]})),
                                                 rel=1e-14)


def test_the_c_entries_are_python_functions_taking_arrays_and_numbers():
    """Each C function's entry is a built-in Python function (no ctypes conversion at the
    call): arrays, float, integer and boolean scalars reach the C with their values (the
    results equal NumPy's), a number Python cannot convert raises Python's TypeError, and
    a wrong number of arguments is refused, never read."""
    x, a = sg.var("x", (6,)), sg.var("a", ())
    k, b = sg.var("k", (), "int64"), sg.var("b", (), "bool")
    f = sg.sum(sg.where(b, sg.exp(x) * a, x * x - a)) + sg.exp(x)[k] * a
    fn = sg.compile(f, backend="c")
    src = fn.source
    assert "SG_FLOAT(self" in src and "SG_INT(self" in src and "SG_BOOL(self" in src
    v = np.linspace(-1, 1, 6)
    for env in ({"x": v, "a": 1.5, "k": 2, "b": True}, {"x": v, "a": -0.25, "k": -1, "b": False}):
        assert float(fn(**env)) == pytest.approx(float(sg.evaluate(f, env)), rel=1e-14)
    lib, (name,) = fn.raw.__globals__["_C"], fn.raw.__globals__["_C_ENTRIES"]
    entry = getattr(lib, name)
    assert type(entry) is type(len)
    text = src[src.index(f"void *{name}("):]
    text = text[:text.index("\n}")]
    kinds = {int(i): kind for kind, i in re.findall(
        r"(SG_FLOAT|SG_INT|SG_BOOL|SG_DATA)\((?:self, )?a\[(\d+)\]\)", text)}
    value = {"SG_FLOAT": 1.5, "SG_INT": 2, "SG_BOOL": True}
    out = np.empty(())
    arrays = iter([v, out])
    args = [next(arrays) if kinds[i] == "SG_DATA" else value[kinds[i]]
            for i in range(len(kinds))]
    assert entry(*args) == 0
    assert float(out) == pytest.approx(float(sg.evaluate(f, {"x": v, "a": 1.5, "k": 2,
                                                              "b": True})), rel=1e-14)
    bad = [a if kinds[i] != "SG_FLOAT" else "not a number" for i, a in enumerate(args)]
    with pytest.raises(TypeError):
        entry(*bad)
    from symgrad.backends.targets.c.build import failure

    code = entry(v)
    assert code == 5 and isinstance(failure(code, name), TypeError)


def test_a_c_function_releases_the_gil_while_it_runs():
    """Another Python thread runs while a C function computes (its entry releases the GIL,
    as the Numba target's nogil functions do): with thread switches left to blocking
    calls only, the main thread still counts while the worker is inside C (a scan of
    three million steps, one C call; holding the GIL, the count stays 0)."""
    import sys
    import threading
    import time

    x = sg.var("x")
    h, _ = sg.scan(lambda h, _: (sg.sin(h) * h + sg.cos(h), None), x, length=3_000_000)
    fn = sg.compile(h, backend="c")
    assert not fn.numpy_ops, fn.numpy_why
    fn(0.5)  # built and loaded before the threads start
    state = {"done": False, "count": 0}

    def work():
        state["value"] = fn(0.5)
        state["done"] = True

    old = sys.getswitchinterval()
    sys.setswitchinterval(30.0)  # no forced switch: only a released GIL lets main run
    try:
        t = threading.Thread(target=work)
        t.start()
        while not state["done"]:
            state["count"] += 1
            time.sleep(0)  # releases the GIL: the worker takes it when its C call returns
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert state["count"] > 10
    assert float(state["value"]) == pytest.approx(np.pi / 2, rel=1e-12)  # its fixed point


def test_a_while_loop_runs_in_the_driver_with_the_numpy_backends_values():
    """A while loop (and its reverse sweep) is the driver's run-time loop over its
    condition and step, whose kernels are C; inside a scan step it keeps that scan a NumPy
    loop; each is counted with the reason. Values and gradients equal the NumPy backend's."""
    x, v = sg.var("x"), sg.var("v", (3,))
    w = sg.while_loop(lambda c: c < 100.0, lambda c: c * x + 0.5, 1.0)
    wv = sg.while_loop(lambda c: sg.sum(c * c) < 50.0, lambda c: sg.tanh(c) + c * x, v)
    s, _ = sg.scan(lambda c, _: (sg.while_loop(lambda d: d < 4.0, lambda d: d * 1.5 + x, c),
                                 None), x * 0.1, length=3)
    loss = w + sg.sum(wv * v) + s
    outs = [loss, *sg.grad(loss, [x, v])]
    fn = sg.compile(outs, ["x", "v"], backend="c")
    env = {"x": 1.5, "v": np.array([0.3, -0.2, 0.5])}
    for got, want in zip(fn(**env), sg.compile(outs, ["x", "v"])(**env)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert fn.numpy_why["while_loop"] == NOT_IN_C["while_loop"]
    assert fn.numpy_why["while_vjp"] == NOT_IN_C["while_vjp"]
    assert "while_loop" in fn.numpy_why["scan"]
    assert "_jit" not in fn.source  # no Numba text in a C module
