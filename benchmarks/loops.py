"""Loops written with ``sg.scan`` / ``sg.fori_loop`` (the loops issue), paired, one thread.

* W4 chain ``h <- sin(h) * h + cos(h)`` as ``sg.scan``, L = 10^3 and 10^4 (and 10^4 with
  ``fast_math=True``, whose passes drop ``t - t`` from the step's VJP): build time
  (trace + grad + compile), emitted lines, value+gradient per call against the hand-written
  ``math`` loop (forward tape, reverse sweep) of ``benchmarks/w4_chain.py``.
* RK4 Lotka-Volterra, 100 and 10,000 steps, misfit gradient w.r.t. the 4 parameters, the
  loop written with ``sg.scan``: build time, value+gradient per call against the forward
  loop alone (Python floats) and against the forward alone with NumPy arrays.

* The same two written as plain Python loops and rolled by symgrad (``sg.value_and_grad``
  of the function with the ``for`` loop): W4 at L = 10^3 and 10^4, RK4 at 100 and 10^4 steps.
* What tracing those Python loops costs per node and per step, and what rolling them costs
  (``trace_cost``: W4 at L = 10^4, RK4 at 10^3 steps).
* The SciPy tutorial's Rosenbrock with the builtin ``sum`` (n = 1000): gradient against
  ``scipy.optimize.rosen_der`` (the reductions pass makes the element chain one ``sum``).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python -m benchmarks.loops`` (prints one line per
cell). Each row checks the value and gradient against an independent reference first.
"""

from __future__ import annotations

import os
import time

import numpy as np

from . import common
from .w4_chain import hand_loop

os.environ.setdefault("OMP_NUM_THREADS", "1")


def w4(L: int, budget: float = 2.0, fast_math: bool = False) -> dict:
    import symgrad as sg

    t0 = time.perf_counter()
    x = sg.var("x")
    h, _ = sg.scan(lambda h, _: (sg.sin(h) * h + sg.cos(h), None), x, length=L)
    dx = sg.grad(h, x)
    fn = sg.compile([h, dx], [x], fast_math=fast_math)
    build = time.perf_counter() - t0
    lines = len(sg.to_source([h, dx], [x], fast_math=fast_math).splitlines())
    got, want = [float(v) for v in fn(0.5)], hand_loop(0.5, L)
    err = common.rel_err(got, list(want))
    t_sg, t_hand = common.interleaved([lambda: fn(0.5), lambda: hand_loop(0.5, L)], budget)
    task = f"W4 scan L={L}" + (" fast_math" if fast_math else "")
    return {"task": task, "build_s": build, "lines": lines, "err": err,
            "eval_s": common.median(t_sg), "ref_s": common.median(t_hand),
            "vs_ref": common.paired_ratio(t_sg, t_hand), "ref": "hand math loop"}


P0 = (1.1, 0.4, 0.1, 0.4)  # Lotka-Volterra alpha, beta, delta, gamma
S0 = (10.0, 5.0)


def _lv(x, y, a, b, c, d):
    return a * x - b * x * y, c * x * y - d * y


def rk4_step(x, y, p, dt):
    """One RK4 step of Lotka-Volterra, written once for floats, NumPy and symgrad."""
    k1 = _lv(x, y, *p)
    k2 = _lv(x + dt / 2 * k1[0], y + dt / 2 * k1[1], *p)
    k3 = _lv(x + dt / 2 * k2[0], y + dt / 2 * k2[1], *p)
    k4 = _lv(x + dt * k3[0], y + dt * k3[1], *p)
    return (x + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]),
            y + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]))


def forward_floats(p, data, dt):
    """The misfit with Python floats (the forward alone)."""
    x, y = S0
    total = 0.0
    for k in range(len(data)):
        x, y = rk4_step(x, y, p, dt)
        total += (x - data[k, 0]) ** 2 + (y - data[k, 1]) ** 2
    return total


def forward_numpy(p, data, dt):
    """The misfit with the state as a NumPy array (the forward alone)."""
    s = np.array(S0)
    a, b, c, d = p
    traj = np.empty_like(data)

    def f(s):
        return np.array([a * s[0] - b * s[0] * s[1], c * s[0] * s[1] - d * s[1]])

    for k in range(len(data)):
        k1 = f(s)
        k2 = f(s + dt / 2 * k1)
        k3 = f(s + dt / 2 * k2)
        k4 = f(s + dt * k3)
        s = s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        traj[k] = s
    return float(np.sum((traj - data) ** 2))


def rk4(steps: int, budget: float = 2.0, columns: bool = True) -> dict:
    """``columns``: the data scanned as two 1-D arrays (the step is all-scalar and runs
    over Python floats); else as the rows of one (steps, 2) array (NumPy scalars)."""
    import symgrad as sg

    dt = 10.0 / steps
    data = np.array(_trajectory((1.0, 0.5, 0.12, 0.45), steps, dt))
    t0 = time.perf_counter()
    p = [sg.var(n) for n in ("a", "b", "c", "d")]
    obs = sg.var("obs", shape=(steps, 2))

    def step(s, o):
        x, y = rk4_step(s[0], s[1], p, dt)
        return (x, y), (x - o[0]) ** 2 + (y - o[1]) ** 2

    _, misfit = sg.scan(step, S0, (obs[:, 0], obs[:, 1]) if columns else obs)
    loss = sg.sum(misfit)
    fn = sg.compile([loss, *sg.grad(loss, p)], [*p, obs])
    build = time.perf_counter() - t0
    lines = len(sg.to_source([loss, *sg.grad(loss, p)], [*p, obs]).splitlines())
    got = [float(v) for v in fn(*P0, data)]
    want = [forward_floats(P0, data, dt)] + list(_fd_grad(P0, data, dt))
    err = common.rel_err(got, want)
    run = lambda: fn(*P0, data)  # noqa: E731
    t_sg, t_fl, t_np = common.interleaved(
        [run, lambda: forward_floats(P0, data, dt), lambda: forward_numpy(P0, data, dt)],
        budget)
    kind = "columns" if columns else "rows"
    return {"task": f"RK4 LV scan steps={steps} {kind}", "build_s": build, "lines": lines,
            "err": err, "eval_s": common.median(t_sg), "ref_s": common.median(t_fl),
            "vs_ref": common.paired_ratio(t_sg, t_fl), "ref": "forward alone (floats)",
            "numpy_fwd_s": common.median(t_np),
            "vs_numpy_fwd": common.paired_ratio(t_sg, t_np)}


def _trajectory(p, steps, dt):
    x, y = S0
    out = []
    for _ in range(steps):
        x, y = rk4_step(x, y, p, dt)
        out.append((x, y))
    return out


def _fd_grad(p, data, dt, h=1e-6):
    out = []
    for k in range(4):
        up, down = list(p), list(p)
        up[k] += h
        down[k] -= h
        out.append((forward_floats(up, data, dt) - forward_floats(down, data, dt)) / (2 * h))
    return out


def w4_python(L: int, budget: float = 2.0) -> dict:
    """W4 as users write it: a ``for`` loop in the function ``sg.value_and_grad`` traces."""
    import symgrad as sg

    def f(x):
        for _ in range(L):
            x = np.sin(x) * x + np.cos(x)
        return x

    t0 = time.perf_counter()
    vg = sg.value_and_grad(f)
    got = [float(v) for v in vg(0.5)]
    build = time.perf_counter() - t0
    err = common.rel_err(got, list(hand_loop(0.5, L)))
    t_sg, t_hand = common.interleaved([lambda: vg(0.5), lambda: hand_loop(0.5, L)], budget)
    return {"task": f"W4 python loop L={L}", "build_s": build,
            "lines": len(vg.source.splitlines()), "err": err, "eval_s": common.median(t_sg),
            "ref_s": common.median(t_hand), "vs_ref": common.paired_ratio(t_sg, t_hand),
            "ref": "hand math loop"}


def python_loop_loss(steps: int, dt: float):
    """The RK4 misfit ``loss(p, obs)`` as users write it: a ``for`` loop over the steps,
    the misfit accumulated in a Python variable (NumPy values or symgrad expressions)."""

    def loss(p, obs):
        x, y = S0
        total = 0.0
        for k in range(steps):
            x, y = rk4_step(x, y, p, dt)
            total = total + (x - obs[k, 0]) ** 2 + (y - obs[k, 1]) ** 2
        return total

    return loss


def rk4_python(steps: int, budget: float = 2.0) -> dict:
    """RK4 Lotka-Volterra as users write it: a ``for`` loop over the steps, the misfit
    accumulated in a Python variable; value and gradient w.r.t. the 4 parameters."""
    import symgrad as sg

    dt = 10.0 / steps
    data = np.array(_trajectory((1.0, 0.5, 0.12, 0.45), steps, dt))
    loss = python_loop_loss(steps, dt)
    p0 = np.array(P0)
    t0 = time.perf_counter()
    vg = sg.value_and_grad(loss)
    value, grad = vg(p0, data)
    build = time.perf_counter() - t0
    want = [forward_floats(P0, data, dt)] + list(_fd_grad(P0, data, dt))
    err = common.rel_err([float(value), *map(float, grad)], want)
    t_sg, t_np = common.interleaved(
        [lambda: vg(p0, data), lambda: forward_numpy(P0, data, dt)], budget)
    return {"task": f"RK4 LV python loop steps={steps}", "build_s": build,
            "lines": len(vg.source.splitlines()), "err": err, "eval_s": common.median(t_sg),
            "ref_s": common.median(t_np), "vs_ref": common.paired_ratio(t_sg, t_np),
            "ref": "forward alone (NumPy)"}


def trace_cost(kind: str, n: int) -> dict:
    """What tracing a Python loop costs, per node and per step, and what rolling it costs
    (process CPU seconds, one run): W4 (``kind="w4"``, L = n) or the RK4 misfit (``"rk4"``,
    n steps), traced on variables; the rolled value checked against the float loop."""
    import symgrad as sg
    from symgrad.passes.rolling import roll

    roll([_traced(kind, 16)])  # first calls (imports, NumPy's dispatch) not timed
    t0 = time.process_time()
    out = _traced(kind, n)
    trace = time.process_time() - t0
    t0 = time.process_time()
    (rolled,) = roll([out])
    rolling = time.process_time() - t0
    if kind == "w4":
        err = common.rel_err([float(sg.evaluate(rolled, {"x": 0.5}))], [hand_loop(0.5, n)[0]])
    else:
        data = np.array(_trajectory((1.0, 0.5, 0.12, 0.45), n, 10.0 / n))
        got = float(sg.evaluate(rolled, {"p": np.array(P0), "obs": data}))
        err = common.rel_err([got], [forward_floats(P0, data, 10.0 / n)])
    nodes = len(out.graph)
    return {"task": f"trace {kind} python loop n={n}", "trace_s": trace, "nodes": nodes,
            "us_per_node": trace / nodes * 1e6, "us_per_step": trace / n * 1e6,
            "roll_s": rolling, "err": err}


def _traced(kind: str, n: int):
    import symgrad as sg

    if kind == "w4":
        out = sg.var("x")
        for _ in range(n):
            out = np.sin(out) * out + np.cos(out)
        return out
    return python_loop_loss(n, 10.0 / n)(sg.var("p", shape=(4,)), sg.var("obs", shape=(n, 2)))


def rosen_builtin_sum(n: int = 1000, budget: float = 2.0) -> dict:
    """The SciPy tutorial's ``rosen`` with the builtin ``sum``: its gradient."""
    from scipy.optimize import rosen_der

    import symgrad as sg

    def rosen(x):
        return sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)

    x0 = np.random.default_rng(0).uniform(-1.0, 1.0, n)
    t0 = time.perf_counter()
    g = sg.grad(rosen)
    got = g(x0)
    build = time.perf_counter() - t0
    err = common.rel_err(list(got), list(rosen_der(x0)))
    t_sg, t_ref = common.interleaved([lambda: g(x0), lambda: rosen_der(x0)], budget)
    return {"task": f"rosen builtin sum n={n}", "build_s": build,
            "lines": len(g.source.splitlines()), "err": err, "eval_s": common.median(t_sg),
            "ref_s": common.median(t_ref), "vs_ref": common.paired_ratio(t_sg, t_ref),
            "ref": "scipy rosen_der"}


def main() -> None:
    rows = [w4(1000), w4(10_000), w4(10_000, fast_math=True), rk4(100), rk4(10_000),
            rk4(100, columns=False),
            w4_python(1000), w4_python(10_000), rk4_python(100), rk4_python(10_000),
            trace_cost("w4", 10_000), trace_cost("rk4", 1000), rosen_builtin_sum(1000)]
    for r in rows:
        print(" | ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in r.items()))


if __name__ == "__main__":
    common.with_thread_env("benchmarks.loops")
    main()


__all__ = ["main", "python_loop_loss", "rk4", "rk4_python", "rosen_builtin_sum", "trace_cost",
           "w4", "w4_python"]
