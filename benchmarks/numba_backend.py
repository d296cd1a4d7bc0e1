"""``backend="numba"`` against hand NumPy, symgrad's NumPy backend and ``jax.jit(jax.grad)``.

One process, one thread (the environment of :func:`.common.cell_env`, set by restarting
itself, and ``NUMBA_NUM_THREADS=1``), float64. Per workload: the gradient per call of
symgrad-numba, of symgrad's NumPy backend, of the hand-written NumPy gradient (the
workload's ``numpy_grad``) and of ``jax.jit(jax.grad(loss))`` — sampled in turn (paired
ratios), numba's and JAX's also in blocks of calls (:func:`blocks`); the build of
symgrad-numba (loss expression, ``sg.grad``, passes, emit, Numba's compile) with an empty
disk cache (``cold``) and again with the cache it wrote (``warm``; Numba already imported
and initialised in both: a warm-up compile of the workload's smoke size comes first), and
JAX's (trace, XLA compile, first call).

The loop rows (:data:`LOOPS`: W4, the scalar chain at L = 10^4, and RK4 Lotka-Volterra, 100
steps, value and gradient, each written with ``sg.scan`` and as a plain Python loop that
symgrad rolls into one): a scan compiles to one ``numba.njit`` loop function. Their hand
reference is W4's ``math`` loop (forward tape, reverse sweep) and RK4's forward alone over
Python floats (no gradient); JAX is ``jax.jit(jax.value_and_grad)`` of ``jax.lax.scan``.

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

TITLE = "backend='numba' on W1, W2, W5 (ours, users' spellings, W5 over a batch), W3; W4, RK4"
CONFIGS = {
    "w5_lstm": {"workload": "w5_lstm", "config": "T20_H32_I32"},
    "w5_lstm_user": {"workload": "w5_lstm_user", "config": "T20_H32_I32"},
    "w5_lstm_batch": {"workload": "w5_lstm_batch", "config": "T20_H32_I32_B16"},
    "w2_gmm": {"workload": "w2_gmm", "config": "d10_K25_N1000"},
    "w2_gmm_user": {"workload": "w2_gmm_user", "config": "d10_K25_N1000"},
    "w2_gmm_small": {"workload": "w2_gmm", "config": "d2_K5_N1000"},
    "w1_mlp": {"workload": "w1_mlp", "config": "N128_d784_m256_K10"},
    "w3_rosenbrock": {"workload": "w3_rosenbrock", "config": "n1000"},
}


LOOPS = ("w4_scan", "w4_python", "rk4_scan", "rk4_python")
W4_L, RK4_STEPS = 10_000, 100


def _w4(L: int, python: bool) -> tuple[list, list, tuple]:
    """W4's value and gradient at ``x = 0.5`` (outputs, inputs, arguments)."""
    import symgrad as sg

    x = sg.var("x")
    if python:
        h = x
        for _ in range(L):  # rolled into one scan by symgrad
            h = sg.sin(h) * h + sg.cos(h)
    else:
        h, _ = sg.scan(lambda h, _: (sg.sin(h) * h + sg.cos(h), None), x, length=L)
    return [h, sg.grad(h, x)], [x], (0.5,)


def _rk4(steps: int, python: bool) -> tuple[list, list, tuple]:
    """RK4 Lotka-Volterra's misfit and its gradient w.r.t. the 4 parameters."""
    import symgrad as sg

    from . import loops

    dt = 10.0 / steps
    data = np.array(loops._trajectory((1.0, 0.5, 0.12, 0.45), steps, dt))
    p = [sg.var(n) for n in ("a", "b", "c", "d")]
    obs = sg.var("obs", shape=(steps, 2))
    if python:
        loss = loops.python_loop_loss(steps, dt)(p, obs)
    else:
        def step(s, o):
            x, y = loops.rk4_step(s[0], s[1], p, dt)
            return (x, y), (x - o[0]) ** 2 + (y - o[1]) ** 2

        _, misfit = sg.scan(step, loops.S0, (obs[:, 0], obs[:, 1]))
        loss = sg.sum(misfit)
    return [loss, *sg.grad(loss, p)], [*p, obs], (*loops.P0, data)


def _loop_model(name: str, small: bool) -> tuple[list, list, tuple]:
    python = name.endswith("python")
    if name.startswith("w4"):
        return _w4(5 if small else W4_L, python)
    return _rk4(3 if small else RK4_STEPS, python)


def _loop_build(name: str, backend: str, cache: str, small: bool = False) -> tuple[Any, tuple]:
    import symgrad as sg

    os.environ["SYMGRAD_CACHE_DIR"] = cache
    outs, inputs, args = _loop_model(name, small)
    return sg.compile(outs, inputs, backend=backend), args


def _loop_refs(name: str, args: tuple) -> tuple[Any, list, Any]:
    """The hand reference (a callable), the exact values (value, gradient) and JAX's
    ``(callable, build seconds)`` (None without JAX)."""
    from . import loops
    from .w4_chain import hand_loop

    if name.startswith("w4"):
        hand = lambda: hand_loop(0.5, W4_L)  # noqa: E731
        want = list(hand_loop(0.5, W4_L))
    else:
        p, data, dt = args[:4], args[4], 10.0 / RK4_STEPS
        hand = lambda: loops.forward_floats(p, data, dt)  # noqa: E731
        want = [loops.forward_floats(p, data, dt), *loops._fd_grad(p, data, dt)]
    return hand, want, _loop_jax(name, args)


def _loop_jax(name: str, args: tuple):
    if common.available("jax"):
        return None
    from . import loops

    jax = common.load("jax")
    jnp, lax = jax.numpy, jax.lax
    if name.startswith("w4"):
        def f(x):
            h, _ = lax.scan(lambda h, _: (jnp.sin(h) * h + jnp.cos(h), None), x, None,
                            length=W4_L)
            return h

        fargs = (jnp.asarray(0.5),)
    else:
        dt = 10.0 / RK4_STEPS

        def f(p, obs):
            def step(s, o):
                x, y = loops.rk4_step(s[0], s[1], (p[0], p[1], p[2], p[3]), dt)
                return (x, y), (x - o[0]) ** 2 + (y - o[1]) ** 2

            _, m = lax.scan(step, (jnp.asarray(loops.S0[0]), jnp.asarray(loops.S0[1])), obs)
            return jnp.sum(m)

        fargs = (jnp.asarray(args[:4]), jnp.asarray(args[4]))
    t0 = time.perf_counter()
    fn = jax.jit(jax.value_and_grad(f))
    jax.block_until_ready(fn(*fargs))
    return (lambda: jax.block_until_ready(fn(*fargs))), time.perf_counter() - t0


def measure_loop(name: str, budget: float) -> dict:
    """One loop row: see the module docstring."""
    _loop_build(name, "numba", tempfile.mkdtemp(), small=True)  # Numba's first-use work
    cache = tempfile.mkdtemp(prefix="sg-numba-bench-")
    cold_s, (fn, args) = common.once(lambda: _loop_build(name, "numba", cache))
    warm_s, _ = common.once(lambda: _loop_build(name, "numba", cache))
    np_fn = _loop_build(name, "numpy", cache)[0].raw
    nb = fn.raw
    hand, want, jax_fn = _loop_refs(name, args)
    got = nb(*args)
    flat = [float(got[0]), *(float(v) for v in np.ravel(got[1:]))]
    fns = [lambda: nb(*args), lambda: np_fn(*args), hand]
    row: dict = {}
    if jax_fn is not None:
        fns.append(jax_fn[0])
        row["jax_build_s"] = jax_fn[1]
    times = common.interleaved(fns, budget)
    row.update({
        "grad_s": common.median(times[0]), "numpy_backend_s": common.median(times[1]),
        "hand_s": common.median(times[2]), "vs_hand": common.paired_ratio(times[0], times[2]),
        "vs_numpy_backend": common.paired_ratio(times[0], times[1]),
        "cold_build_s": cold_s, "warm_build_s": warm_s,
        "native_s": fn.build_seconds["native compile"], "kernels": len(fn.kernels),
        "fused_ops": sum(len(ops) for _, ops in fn.kernels),
        "numpy_ops": sum(fn.numpy_ops.values()),
        "err": common.rel_err(flat, want),
    })
    if jax_fn is not None:
        row["jax_s"] = common.median(times[3])
        row["vs_jax"] = common.paired_ratio(times[0], times[3])
        nb_b, jax_b = blocks([fns[0], fns[3]])
        row["vs_jax_blocks"] = nb_b / jax_b
    return row


def blocks(fns: list, rounds: int = 7, number: int = 30) -> list[float]:
    """Median per-call seconds of each of ``fns`` timed over blocks of ``number`` calls,
    the functions in turn for ``rounds`` rounds: JAX runs a call on a worker thread whose
    wake-up after another system's call costs milliseconds on a busy machine, which calls
    in a block do not pay."""
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, times in zip(fns, out):
            fn()
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            times.append((time.perf_counter() - t0) / number)
    return [float(np.median(t)) for t in out]


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
        nb_b, jax_b = blocks([fns[0], fns[3]])
        row["vs_jax_blocks"] = nb_b / jax_b
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
           "numba / hand | numba / JAX (blocks) | build cold / warm (native) | JAX build | "
           "kernels (ops fused / NumPy) | err |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        jax = (f"{r['jax_s'] * 1e3:.3f} ms", f"{r['vs_jax']:.2f}x ({r['vs_jax_blocks']:.2f}x)",
               f"{r['jax_build_s']:.2f} s") if "jax_s" in r else ("-", "-", "-")
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
    names = argv[1:] or [*CONFIGS, *LOOPS]
    rows = []
    for name in names:
        row = measure_loop(name, budget) if name in LOOPS else measure(CONFIGS[name], budget)
        rows.append({"workload": name, **row})
        print(table(rows[-1:])[-1], flush=True)
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
