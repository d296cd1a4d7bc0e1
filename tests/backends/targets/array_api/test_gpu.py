"""The array backends on a GPU: ``backend="torch"`` on CUDA tensors, ``backend="jax"`` on a
JAX GPU device, ``backend="array_api"`` on CuPy arrays.

Each runs the registry battery of ``test_backends.py`` (every op and the gradient of
``sum(op * c)``, float64) and the workloads W1 (MLP), W2 (GMM) and W5 (LSTM) at their
benchmark sizes, and compares with ``sg.evaluate`` on the CPU; every result must be on the
inputs' device. JAX runs the battery eagerly (the emitted source, op by op) and, for the
ops whose derivatives compare two computed values (max, min, norms, maximum, ...), under
``jax.jit`` too, where XLA fuses each use of a value separately. Each check skips, saying
why, where its library or a GPU is missing. ``-s`` prints a timing table of the backends
against ``jax.jit(jax.grad)`` on W1, W2 and W5 (median per call; no assertion on time).

Run on a GPU machine (torch with CUDA, jax with CUDA, cupy, numpy, sympy, networkx, scipy,
array-api-compat)::

    python -m pytest tests/backends/targets/array_api/test_gpu.py -q -s

``SYMGRAD_GPU_TESTS_ON_CPU=1`` runs the torch and JAX checks on the CPU instead: this file's
own test, on machines without a GPU.
"""

from __future__ import annotations

import importlib
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.targets.array_api.loader import dtype_name
from tests.backends.targets.array_api.test_printer import (
    CASES,
    LIBRARY_TOL,
    UNSPECIFIED_ORDER,
    _assert_partition,
    _close,
    _impl,
    _outputs,
)
from tests.backends.targets.array_api.test_printer import TOL as BATTERY_TOL
from tests.quality.test_ties import _compares_floats

ROOT = Path(__file__).resolve().parents[4]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))

ON_CPU = os.environ.get("SYMGRAD_GPU_TESTS_ON_CPU") == "1"
WORKLOADS = {"W1": ("w1_mlp", "N128_d784_m256_K10"), "W2": ("w2_gmm", "d10_K25_N1000"),
             "W5": ("w5_lstm", "T20_H32_I32")}
TOL = 1e-9  # GPU reductions and products sum in other orders than NumPy


class Device:
    """One backend on one device: how to make its arrays, read them back, and wait."""

    def __init__(self, backend: str, where, put, get, sync, device_of):
        self.backend, self.where = backend, where
        self.put, self.get, self.sync, self.device_of = put, get, sync, device_of


def _need(module: str):
    return pytest.importorskip(module, reason=f"{module} is not installed")


@pytest.fixture(scope="module")
def torch_cuda() -> Device:
    torch = _need("torch")
    _need("array_api_compat")
    if ON_CPU:
        where = torch.device("cpu")
    elif not torch.cuda.is_available():
        pytest.skip(f"torch {torch.__version__} sees no CUDA device")
    else:
        where = torch.device("cuda")
    return Device("torch", where, lambda a: torch.asarray(np.asarray(a), device=where),
                  lambda t: t.cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t),
                  torch.cuda.synchronize if where.type == "cuda" else (lambda: None),
                  lambda t: t.device)


@pytest.fixture(scope="module")
def jax_gpu() -> Device:
    jax = _need("jax")
    try:
        where = jax.devices("cpu" if ON_CPU else "gpu")[0]
    except RuntimeError as e:
        pytest.skip(f"JAX {jax.__version__} has no GPU backend ({e})")
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield Device("jax", where, lambda a: jax.device_put(np.asarray(a), where), np.asarray,
                 lambda: None, lambda a: next(iter(a.devices())))
    jax.config.update("jax_enable_x64", before)


@pytest.fixture(scope="module")
def cupy_gpu() -> Device:
    if ON_CPU:
        pytest.skip("CuPy runs on CUDA only")
    cp = _need("cupy")
    _need("array_api_compat")
    try:
        count = cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # CUDA absent: cupy imports but finds no runtime
        pytest.skip(f"CuPy finds no CUDA runtime ({e})")
    if count < 1:
        pytest.skip("CuPy sees no GPU")
    return Device("array_api", cp.cuda.Device(0), cp.asarray, cp.asnumpy,
                  lambda: cp.cuda.Stream.null.synchronize(), lambda a: a.device)


# -- the registry battery -----------------------------------------------------------------


def _check(dev: Device, case, fn) -> None:
    """``fn`` (the compiled or loaded function) on ``dev``'s arrays equals ``sg.evaluate``,
    each result on the inputs' device."""
    outs, inputs = _outputs(case)
    ref = sg.evaluate(outs, inputs)
    args = [dev.put(inputs[k]) for k in sorted(inputs)]
    with np.errstate(all="ignore"):
        got = fn(*args)
    assert len(got) == len(ref)
    for k, (g, r) in enumerate(zip(got, ref)):
        what = f"{case.op.name} output {k} on {dev.backend}"
        if args:
            assert dev.device_of(g) == dev.device_of(args[0]), f"{what}: on {dev.device_of(g)}"
        if k == 0:
            assert dtype_name(g.dtype) == np.asarray(r).dtype.name, what
        g = dev.get(g)
        if k == 0 and case.op.name in UNSPECIFIED_ORDER:
            values = case.arrays[0] if case.op.name == "argpartition" else None
            _assert_partition(g, np.asarray(r), _impl(case)[0], values)
            continue
        # torch's digamma/polygamma are good to about 1e-9 (on the CPU too: test_backends)
        tol = LIBRARY_TOL.get(("torch" if dev.backend == "torch" else "", case.op.name),
                              BATTERY_TOL)
        _close(g, r, what, case.op.name if k == 0 else "", tol)


def _battery(dev: Device, run_case, cases=CASES) -> None:
    failed = []
    for p in cases:
        try:
            run_case(p.values[0])
        except Exception as e:  # collected: one report for the whole battery
            failed.append(f"{p.id}: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
    assert not failed, f"{len(failed)} of {len(cases)} cases on {dev.where}:\n" + \
        "\n".join(failed[:30])


def _compiled(dev: Device):
    def run_case(case):
        outs, inputs = _outputs(case)
        _check(dev, case, sg.compile(outs, inputs=sorted(inputs), backend=dev.backend))
    return run_case


def test_torch_backend_on_cuda_equals_evaluate(torch_cuda):
    _battery(torch_cuda, _compiled(torch_cuda))


def test_array_api_backend_on_cupy_equals_evaluate(cupy_gpu):
    _battery(cupy_gpu, _compiled(cupy_gpu))


def _eager_jax(case):
    """The emitted JAX source, loaded and called without ``jax.jit`` (op by op)."""
    outs, inputs = _outputs(case)
    space: dict = {}
    exec(sg.to_source(outs, inputs=sorted(inputs), backend="jax"), space)  # our own source
    return space["f"]


def test_jax_backend_on_a_gpu_equals_evaluate(jax_gpu):
    _battery(jax_gpu, lambda case: _check(jax_gpu, case, _eager_jax(case)))


def test_jax_backend_jitted_on_a_gpu_selections(jax_gpu):
    """The derivatives that compare two computed values, under ``jax.jit``: the matrix
    1-norm's gradient was NaN on an H100 (XLA computed the column sums twice, in two
    orders, and no column equalled their maximum)."""
    cases = [p for p in CASES if _compares_floats(_outputs(p.values[0])[0][1:])]
    assert len(cases) >= 40
    _battery(jax_gpu, _compiled(jax_gpu), cases)


# -- the workloads --------------------------------------------------------------------------


def _workload(name: str):
    module, config = WORKLOADS[name]
    mod = importlib.import_module(f"benchmarks.{module}")
    cfg = mod.CONFIGS[config]
    f, params, data = mod.symgrad_loss(cfg)
    outs = [f, *sg.grad(f, list(params))]
    names = [e.name for e in (*params, *data)]
    params, data = mod.inputs(cfg)
    values = dict(zip(names, (*params, *data)))
    return mod, cfg, outs, names, values


@pytest.mark.parametrize("name", WORKLOADS)
@pytest.mark.parametrize("kind", ["torch_cuda", "jax_gpu", "cupy_gpu"])
def test_workloads_on_the_gpu_equal_evaluate(name, kind, request):
    dev = request.getfixturevalue(kind)
    _, _, outs, names, values = _workload(name)
    want = sg.evaluate(outs, values)
    fn = sg.compile(outs, inputs=names, backend=dev.backend)
    args = [dev.put(values[n]) for n in names]
    got = fn(*args)
    for k, (g, w) in enumerate(zip(got, want)):
        assert dev.device_of(g) == dev.device_of(args[0]), f"{name} output {k}"
        g = dev.get(g)
        scale = max(1.0, float(np.max(np.abs(w))))
        np.testing.assert_allclose(g, w, rtol=TOL, atol=TOL * scale, err_msg=f"{name} {k}")


# -- timing (printed with -s; never asserted) -----------------------------------------------


def _median_time(call, sync, repeats: int = 30) -> float:
    for _ in range(3):
        call()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _timings(name: str, devices: dict) -> dict:
    mod, cfg, outs, names, values = _workload(name)
    grads = outs[1:]
    row = {}
    jax_dev = devices.get("jax")
    if jax_dev is not None:
        import jax

        params, data = mod.inputs(cfg)
        p = tuple(jax_dev.put(a) for a in params)
        d = tuple(jax_dev.put(a) for a in data)
        ref = jax.jit(jax.grad(mod.jax_loss(jax, cfg)))
        row["jax.jit(jax.grad)"] = _median_time(lambda: jax.block_until_ready(ref(p, d)),
                                                jax_dev.sync)
    for label, dev in devices.items():
        fn = sg.compile(grads, inputs=names, backend=dev.backend, check_inputs=False)
        row[f"symgrad {label}"] = _time_call(dev, fn, [dev.put(values[n]) for n in names])
    return row


def _time_call(dev: Device, fn, args: list) -> float:
    if dev.backend == "jax":  # JAX dispatches asynchronously: wait for the results
        import jax

        return _median_time(lambda: jax.block_until_ready(fn(*args)), dev.sync)
    return _median_time(lambda: fn(*args), dev.sync)


def test_timing_table(request, capsys):
    devices = {}
    for label, kind in (("jax", "jax_gpu"), ("torch", "torch_cuda"), ("cupy", "cupy_gpu")):
        try:
            devices[label] = request.getfixturevalue(kind)
        except pytest.skip.Exception:
            continue
    if not devices:
        pytest.skip("no backend has a GPU here")
    rows = {name: _timings(name, devices) for name in WORKLOADS}
    columns = list(dict.fromkeys(c for row in rows.values() for c in row))
    ref = "jax.jit(jax.grad)"
    lines = [f"{'':4}" + "".join(f"{c:>22}" for c in columns)]
    for name, row in rows.items():
        cells = []
        for c in columns:
            t = row.get(c)
            ratio = f" ({t / row[ref]:.2f}x)" if t and ref in row and c != ref else ""
            cells.append(f"{'-' if t is None else f'{t * 1e6:.0f} us'}{ratio:>9}")
        lines.append(f"{name:4}" + "".join(f"{cell:>22}" for cell in cells))
    where = ", ".join(f"{k}: {d.where}" for k, d in devices.items())
    with capsys.disabled():
        print(f"\nper-call gradient time, median of 30 ({where}); ratio to {ref}")
        print("\n".join(lines))
