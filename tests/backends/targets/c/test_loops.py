"""``backend="c"``: a scan compiled whole as one C function running every step.

One float64 module holds scans with scalar and array carries, pytrees, xs slices and
stacked ys, a captured matrix, ``reverse=True``, lengths 0 and 1, a checkpointed scan (a
scan nested in a scan: a C function the outer one calls) and a rolled Python loop, with
their gradients; values and gradients equal ``sg.evaluate`` and the NumPy backend to 1e-12.
The registry battery's sample runs inside one scan's step, forward and reverse.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.targets.c.printer import NOT_IN_C, c_why
from symgrad.backends.targets.numba.table import NOT_COMPILED
from symgrad.ops import REGISTRY
from tests.support import numba_battery as battery

pytestmark = pytest.mark.skipif(
    shutil.which(os.environ.get("CC") or "cc") is None and shutil.which("gcc") is None,
    reason="no C compiler (cc, gcc) on PATH")

@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sgcache"))


def test_scans_compiled_equal_evaluate_and_numpy():
    outs, inputs, env = battery.scan_model()
    fn = sg.compile(outs, inputs, backend="c")
    ref = sg.evaluate(outs, env)
    by_numpy = sg.compile(outs, inputs)(**env)
    for g, r, n in zip(fn(**env), ref, by_numpy):
        battery.close(g, r)
        battery.close(g, n)
    names = [k for k, _ in fn.kernels]
    assert sum(k.startswith("_sg_loop") for k in names) >= 9, names
    assert "scan" not in fn.numpy_ops, fn.numpy_why  # a checkpointed scan (nested) too
    src = sg.to_source(outs, inputs, backend="c")
    assert "_sg_loop1_c(" in src and "for (int64_t" in src


def test_loop_of_float32_keeps_its_dtype():
    x = sg.var("x", (), "float32")
    c, ys = sg.scan(lambda c, _: (sg.sin(c) * c + 1.0, c * 2.0), x, length=7)
    fn = sg.compile([c, ys, sg.grad(c, x)], backend="c")
    got = fn(x=np.float32(0.3))
    ref = sg.evaluate([c, ys, sg.grad(c, x)], {"x": np.float32(0.3)})
    assert not fn.numpy_ops
    battery.check(got, ref, "float32", "float32 scan")


SAMPLE = ("add", "divide", "power", "exp", "tanh", "arctan2", "maximum", "sign", "where",
          "sigmoid", "relu", "mod", "round", "astype", "logaddexp", "sum", "max", "argmin",
          "logsumexp", "softmax", "cumsum", "index", "index_add", "take", "concatenate",
          "stack", "transpose", "broadcast_to", "reshape", "matmul", "einsum", "outer",
          "trace", "inv", "solve", "det", "cholesky")


def test_registry_sample_inside_a_scan_step_equals_evaluate():
    """A case of each sampled op in the step of one scan (forward and its reverse scan):
    both compiled in C, values and gradients equal to sg.evaluate's."""
    found = {}
    for case in battery.cases_of(SAMPLE):
        if case.op.name not in found and battery.has_form(case):
            found[case.op.name] = case
    outs, values = battery.in_scan([found[op] for op in sorted(found)])
    fn = sg.compile(outs, backend="c")
    assert not fn.numpy_ops.get("scan"), fn.numpy_why
    assert set(fn.numpy_ops) <= set(NOT_COMPILED) | set(NOT_IN_C) | {
        "index", "broadcast_to", "zeros", "multiply", "add", "sum", "stack", "full"}
    battery.check(fn(**values), sg.evaluate(outs, values), "float64", "sample in a scan")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_products_in_a_step_call_blas_and_equal_numpy(dtype):
    """Matrix products in a step (a transposed operand, a matrix-vector product) are BLAS
    calls inside the C function, and equal the NumPy backend's (its BLAS too)."""
    rng = np.random.default_rng(3)
    A, B = sg.var("A", (12, 12), dtype), sg.var("B", (12, 12), dtype)
    h, ys = sg.scan(lambda h, _: (sg.tanh(A @ h @ A.T * 0.1 + B.T @ h.T), h[0] @ A),
                    sg.var("h0", (12, 12), dtype), length=4)
    outs = [h, ys, *sg.grad(sg.sum(h) + sg.sum(ys), [A, B])]
    fn = sg.compile(outs, backend="c")
    assert not fn.numpy_ops.get("scan")
    assert ("sg_dgemm(" if dtype == "float64" else "sg_sgemm(") in fn.source
    env = {k: rng.normal(size=s).astype(dtype) * 0.5
           for k, s in (("A", (12, 12)), ("B", (12, 12)), ("h0", (12, 12)))}
    battery.check(fn(**env), sg.compile(outs)(**env), dtype, "products")


FULL = os.environ.get("SYMGRAD_NUMBA_FULL") == "1"


def _c_form(case) -> bool:
    """Whether the case's node has a C form (not an attribute case NumPy keeps)."""
    out, _, _ = case.build()
    nodes = out.graph.nodes
    n = nodes[out.node]
    return c_why(nodes[n.args[0]] if case.result is not None else n) is None


def _groups(size=8):
    ops = sorted({c.op.name for c in battery.cases_of(REGISTRY)} - set(NOT_IN_C))
    return [ops[k:k + size] for k in range(0, len(ops), size)]


@pytest.mark.skipif(not FULL, reason="the whole battery: SYMGRAD_NUMBA_FULL=1 (make fuzz)")
@pytest.mark.parametrize("ops", _groups(), ids=lambda ops: f"{ops[0]}-{ops[-1]}")
def test_registry_full_in_a_c_step(ops):
    """Every case (with a Numba form) of every op the C target compiles, a group of ops per
    scan: the forward and reverse scans compile in C and equal sg.evaluate."""
    cases = [c for c in battery.cases_of(ops) if battery.has_form(c) and _c_form(c)]
    if not cases:
        pytest.skip("no case of these ops with a form")
    outs, values = battery.in_scan(cases)
    fn = sg.compile(outs, backend="c")
    assert "scan" not in fn.numpy_ops, fn.numpy_why
    battery.check(fn(**values), sg.evaluate(outs, values), "float64", ",".join(ops))


def test_a_nested_loop_without_a_c_form_runs_both_loops_in_python(monkeypatch):
    """Where a loop nested in a step has no C form, it is a Python function and the loop
    around it the NumPy target's loop (its step's lines run in Python), counted with the
    reason; the values are the same."""
    from symgrad.backends.targets.c import printer as cprinter
    from symgrad.backends.targets.c.scalars import Unsupported

    real = cprinter.translate

    def refuse_inner(source, inputs, outs, name=None, *rest):
        if name and not name.endswith("_c"):  # a nested loop's C function
            raise Unsupported("refused by the test")
        return real(source, inputs, outs, name, *rest)

    monkeypatch.setattr(cprinter, "translate", refuse_inner)
    x, xs = sg.var("x"), sg.var("xs", shape=(6,))
    ck, _ = sg.scan(lambda c, xt: (sg.sin(c) + xt * c, None), x, xs, checkpoint=2)
    outs = [ck, *sg.grad(ck, [x, xs])]
    fn = sg.compile(outs, backend="c")
    env = {"x": 0.3, "xs": np.linspace(-1, 1, 6)}
    assert fn.numpy_ops.get("scan", 0) >= 1 and "refused" in fn.numpy_why["scan"]
    for g, r in zip(fn(**env), sg.evaluate(outs, env)):
        battery.close(g, r)
