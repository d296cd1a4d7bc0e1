"""``backend="numba"`` against hand NumPy, symgrad's NumPy backend and ``jax.jit(jax.grad)``.

One process, one thread (the environment of :func:`.common.cell_env`, set by restarting
itself, and ``NUMBA_NUM_THREADS=1``), float64. Per workload: the gradient per call of
symgrad-numba, of symgrad's NumPy backend, of the hand-written NumPy gradient (the
workload's ``numpy_grad``) and of ``jax.jit(jax.grad(loss))`` — sampled in turn (paired
ratios); the build of symgrad-numba (loss expression, ``sg.grad``, passes, emit, Numba's
compile) with an empty disk cache (``cold``) and again with the cache it wrote (``warm``;
Numba already imported and initialised in both: a warm-up compile of the workload's smoke
size comes first), and JAX's (trace, XLA compile, first call). W4 (the scalar chain at L =
10^4) needs the scan op of the loops issue, which this backend does not compile yet: not
measured here.

``python -m benchmarks.numba_backend [budget_seconds] [workload ...]`` prints the table.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from . import common  # noqa: E402

TITLE = "backend='numba' on W1, W2 (both spellings), W3, W5"
CONFIGS = {
    "w5_lstm": {"workload": "w5_lstm", "config": "T20_H32_I32"},
    "w2_gmm": {"workload": "w2_gmm", "config": "d10_K25_N1000"},
    "w2_gmm_user": {"workload": "w2_gmm_user", "config": "d10_K25_N1000"},
    "w2_gmm_small": {"workload": "w2_gmm", "config": "d2_K5_N1000"},
    "w1_mlp": {"workload": "w1_mlp", "config": "N128_d784_m256_K10"},
    "w3_rosenbrock": {"workload": "w3_rosenbrock", "config": "n1000"},
}


def _workload(cfg: dict) -> tuple[Any, dict]:
    mod = importlib.import_module(f"benchmarks.{cfg['workload']}")
    return mod, mod.CONFIGS[cfg["config"]]


def _build(mod: Any, wcfg: dict, backend: str, cache: str) -> Any:
    """The workload's gradient compiled for ``backend`` (its unchecked function)."""
    import symgrad as sg

    os.environ["SYMGRAD_CACHE_DIR"] = cache
    f, params, data = mod.symgrad_loss(wcfg)
    fn = sg.compile(sg.grad(f, list(params)), inputs=[*params, *data], backend=backend)
    return fn


def measure(cfg: dict, budget: float) -> dict:
    """One row: see the module docstring."""
    mod, wcfg = _workload(cfg)
    params, data = mod.inputs(wcfg)
    args = (*params, *data)
    ref = list(mod.numpy_grad(params, data, wcfg)[1])
    _build(mod, mod.SMOKE_CONFIG, "numba", tempfile.mkdtemp())  # Numba's first-use work
    cache = tempfile.mkdtemp(prefix="sg-numba-bench-")
    cold_s, fn = common.once(lambda: _build(mod, wcfg, "numba", cache))
    warm_s, _ = common.once(lambda: _build(mod, wcfg, "numba", cache))
    np_fn = _build(mod, wcfg, "numpy", cache).raw
    nb = fn.raw
    fns = [lambda: nb(*args), lambda: np_fn(*args), lambda: mod.numpy_grad(params, data, wcfg)]
    row: dict = {}
    jax_fn = _jax(mod, wcfg, params, data)
    if jax_fn is not None:
        fns.append(jax_fn[0])
        row["jax_build_s"] = jax_fn[1]
    times = common.interleaved(fns, budget)
    row.update({
        "grad_s": common.median(times[0]), "numpy_backend_s": common.median(times[1]),
        "hand_s": common.median(times[2]),
        "vs_hand": common.paired_ratio(times[0], times[2]),
        "vs_numpy_backend": common.paired_ratio(times[0], times[1]),
        "cold_build_s": cold_s, "warm_build_s": warm_s,
        "native_s": fn.build_seconds["native compile"], "kernels": len(fn.kernels),
        "fused_ops": sum(len(ops) for _, ops in fn.kernels),
        "numpy_ops": sum(fn.numpy_ops.values()),
        "err": common.rel_err([np.asarray(g) for g in nb(*args)], ref),
    })
    if jax_fn is not None:
        row["jax_s"] = common.median(times[3])
        row["vs_jax"] = common.paired_ratio(times[0], times[3])
    return row


def _jax(mod: Any, wcfg: dict, params: tuple, data: tuple):
    if common.available("jax") or not hasattr(mod, "jax_loss"):
        return None
    jax = common.load("jax")
    block = jax.block_until_ready
    p = tuple(jax.numpy.asarray(a) for a in params)
    d = tuple(jax.numpy.asarray(a) for a in data)
    t0 = time.perf_counter()
    fn = jax.jit(jax.grad(mod.jax_loss(jax, wcfg)))
    block(fn(p, d))
    return (lambda: block(fn(p, d))), time.perf_counter() - t0


def table(rows: list[dict]) -> list[str]:
    """Markdown lines for the rows."""
    out = ["| workload | symgrad-numba | symgrad NumPy | hand NumPy | JAX jit(grad) | "
           "numba / hand | numba / JAX | build cold / warm (native) | JAX build | "
           "kernels (ops fused / NumPy) | err |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        jax = (f"{r['jax_s'] * 1e3:.3f} ms", f"{r['vs_jax']:.2f}x", f"{r['jax_build_s']:.2f} s"
               ) if "jax_s" in r else ("-", "-", "-")
        out.append(
            f"| {r['workload']} | {r['grad_s'] * 1e3:.3f} ms | {r['numpy_backend_s'] * 1e3:.3f} "
            f"ms | {r['hand_s'] * 1e3:.3f} ms | {jax[0]} | {r['vs_hand']:.2f}x | {jax[1]} | "
            f"{r['cold_build_s']:.1f} s / {r['warm_build_s']:.1f} s ({r['native_s']:.1f} s) | "
            f"{jax[2]} | {r['kernels']} ({r['fused_ops']} / {r['numpy_ops']}) | "
            f"{r['err']:.1e} |")
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":  # one thread everywhere: restart so
        env = {**common.cell_env(), "NUMBA_NUM_THREADS": "1"}  # BLAS and XLA read it at start
        os.execve(sys.executable, [sys.executable, "-m", "benchmarks.numba_backend", *argv], env)
    budget = float(argv[0]) if argv else 1.5
    names = argv[1:] or list(CONFIGS)
    rows = []
    for name in names:
        rows.append({"workload": name, **measure(CONFIGS[name], budget)})
        print(table(rows[-1:])[-1], flush=True)
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
