"""The backends of ``sg.compile(..., backend=...)`` on W1, W2 and W5.

Two cells per workload, each measured in one process (ratios are paired medians):

* ``system="jax"``: symgrad's gradient emitted with ``backend="jax"`` (``jax.jit`` of the
  emitted ``jax.numpy`` source) against ``jax.jit(jax.grad(f))`` on the same loss written in
  ``jax.numpy`` (the workload's ``jax_loss``), both on JAX arrays, float64
  (``jax_enable_x64``), one thread. ``grad_vs_jax`` = symgrad / JAX per call. Build:
  symgrad's (loss expression, ``sg.grad``, compile passes, source, ``jax.jit`` and the first
  call, which compiles with XLA) against JAX's (trace, XLA compile, first call):
  ``build_vs_jax``.
* ``system="array_api"``: the ``array_api`` backend's gradient on NumPy arrays (namespace
  from ``array_api_compat``) against the ``numpy`` backend's: ``vs_numpy_backend``.

``python -m benchmarks.backends`` runs all of them in this process and prints the rows.
"""

from __future__ import annotations

import importlib
import sys
import time
from typing import Any

import numpy as np

from . import common

TITLE = "Backends (jax, array_api) on W1, W2, W5"
CONFIGS = {
    "w1_mlp": {"workload": "w1_mlp", "config": "N128_d784_m256_K10"},
    "w2_gmm": {"workload": "w2_gmm", "config": "d10_K25_N1000"},
    "w5_lstm": {"workload": "w5_lstm", "config": "T20_H32_I32"},
}
SYSTEMS = ("jax", "array_api")


def _workload(cfg: dict) -> tuple[Any, dict]:
    mod = importlib.import_module(f"benchmarks.{cfg['workload']}")
    return mod, cfg.get("cfg") or mod.CONFIGS[cfg["config"]]


def _symgrad_grad(mod: Any, wcfg: dict, backend: str) -> tuple[Any, list[str]]:
    """The gradient of the workload's loss wrt its parameters, compiled for ``backend``
    (the unchecked function), and its input names."""
    import symgrad as sg

    f, params, data = mod.symgrad_loss(wcfg)
    grads = sg.grad(f, list(params))
    fn = sg.compile(grads, inputs=[*params, *data], backend=backend)
    return fn.raw, [e.name for e in (*params, *data)]


def _ref_grads(mod: Any, params: tuple, data: tuple, wcfg: dict) -> list:
    return list(mod.numpy_grad(params, data, wcfg)[1])


def measure(cfg: dict, system: str, budget: float) -> list[dict]:
    """Rows of one backends cell (see the module docstring)."""
    mod, wcfg = _workload(cfg)
    params, data = mod.inputs(wcfg)
    ref = _ref_grads(mod, params, data, wcfg)
    if system == "jax":
        return [_jax_row(mod, wcfg, params, data, ref, budget)]
    if system == "array_api":
        return [_array_api_row(mod, wcfg, params, data, ref, budget)]
    raise ValueError(f"unknown backends system {system!r}")


def _jax_row(mod, wcfg, params, data, ref, budget) -> dict:
    jax = common.load("jax")
    jnp = jax.numpy
    block = jax.block_until_ready
    p = tuple(jnp.asarray(a) for a in params)
    d = tuple(jnp.asarray(a) for a in data)
    small_p, small_d = mod.inputs(mod.SMOKE_CONFIG)  # warm-up: first-use work of both
    block(jax.jit(jax.grad(mod.jax_loss(jax, mod.SMOKE_CONFIG)))(small_p, small_d))
    warm, _ = _symgrad_grad(mod, mod.SMOKE_CONFIG, "jax")
    block(warm(*small_p, *small_d))

    def jax_build():
        fn = jax.jit(jax.grad(mod.jax_loss(jax, wcfg)))
        block(fn(p, d))
        return fn

    def sg_build():
        fn, _ = _symgrad_grad(mod, wcfg, "jax")
        block(fn(*p, *d))
        return fn

    sg_build_s, sg_fn = common.once(sg_build)
    jax_build_s, jax_fn = common.once(jax_build)
    t_sg, t_jax = common.interleaved(
        [lambda: block(sg_fn(*p, *d)), lambda: block(jax_fn(p, d))], budget)
    got = [np.asarray(g) for g in sg_fn(*p, *d)]
    jax_got = [np.asarray(g) for g in jax_fn(p, d)]
    return {
        "system": "symgrad-jax", "task": "grad", "grad_s": common.median(t_sg),
        "jax_grad_s": common.median(t_jax), "grad_vs_jax": common.paired_ratio(t_sg, t_jax),
        "build_s": sg_build_s, "jax_build_s": jax_build_s,
        "build_vs_jax": sg_build_s / jax_build_s, "err": common.rel_err(got, ref),
        "jax_err": common.rel_err(jax_got, ref), "samples": int(len(t_sg)),
    }


def _array_api_row(mod, wcfg, params, data, ref, budget) -> dict:
    args = (*params, *data)
    t0 = time.perf_counter()
    xp_fn, _ = _symgrad_grad(mod, wcfg, "array_api")
    build_s = time.perf_counter() - t0
    np_fn, _ = _symgrad_grad(mod, wcfg, "numpy")
    t_xp, t_np = common.interleaved([lambda: xp_fn(*args), lambda: np_fn(*args)], budget)
    return {
        "system": "symgrad-array_api", "task": "grad", "grad_s": common.median(t_xp),
        "numpy_backend_s": common.median(t_np),
        "vs_numpy_backend": common.paired_ratio(t_xp, t_np), "build_s": build_s,
        "err": common.rel_err([np.asarray(g) for g in xp_fn(*args)], ref),
        "samples": int(len(t_xp)),
    }


def table(rows: list[dict]) -> list[str]:
    """Markdown lines for the rows of the backends cells."""
    out = ["| workload | backend | symgrad grad | reference | ratio | build (symgrad / ref) "
           "| err |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "grad_vs_jax" in r:
            out.append(f"| {r['workload']} | jax | {r['grad_s'] * 1e3:.3f} ms | "
                       f"jax.jit(jax.grad) {r['jax_grad_s'] * 1e3:.3f} ms | "
                       f"{r['grad_vs_jax']:.2f}x | {r['build_s']:.2f} s / "
                       f"{r['jax_build_s']:.2f} s ({r['build_vs_jax']:.2f}x) | "
                       f"{r['err']:.1e} |")
        elif "vs_numpy_backend" in r:
            out.append(f"| {r['workload']} | array_api (NumPy arrays) | "
                       f"{r['grad_s'] * 1e3:.3f} ms | numpy backend "
                       f"{r['numpy_backend_s'] * 1e3:.3f} ms | {r['vs_numpy_backend']:.2f}x | "
                       f"{r['build_s']:.2f} s / - | {r['err']:.1e} |")
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    budget = float(argv[0]) if argv else 1.5
    rows = []
    for name, cfg in CONFIGS.items():
        for system in SYSTEMS:
            if common.available(system):
                print(f"skipping {system}: {common.available(system)}")
                continue
            rows += [{"workload": name, **r} for r in measure(cfg, system, budget)]
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    common.with_thread_env("benchmarks.backends")
    sys.exit(main())
