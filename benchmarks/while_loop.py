"""A long ``sg.while_loop`` differentiated in reverse mode: time and memory of its gradient.

The loop: ``T = 10^5`` steps of a 1,000-float carry ``x <- x + (a sin(x) - 0.1 x) / T`` (a
cheap nonlinear step), stopped by a step counter, ``snapshots = 20``; the loss is
``sum(w * x_T)``, its gradient taken with respect to ``x_0`` and ``a``. One process, one
thread, the NumPy target:

* ``forward_s``: the value alone (the compiled loss: the loop with no tape);
* ``value_grad_s``: the value and the gradient (one compiled function);
* ``ratio``: their paired median ratio (the issue's target: at most 5);
* ``peak_carries``: the peak traced memory (``tracemalloc``) of one value+gradient call in
  units of one carry (8,000 bytes); the target: at most ``snapshots + 1`` plus a constant;
* ``schedule_steps``: how many steps the reverse sweep runs forward (counted on a step that
  only counts); ``steps_per_step``: those and the forward loop's ``T``, divided by ``T``.
  Against Revolve's optimum for a reversal with the trip count known in advance, ``t T -
  C(c + t, t - 1)`` forward steps with ``t`` the smallest such that ``C(c + t, c) >= T``
  (Griewank and Walther 2000; it counts the first pass over the loop too), for ``c`` the
  checkpoints including the first state: ``revolve_optimum_steps`` with ``c = s + 1`` (the
  memory the sweep has: ``s`` snapshots and the initial carry), ``revolve_optimum_steps_s``
  with ``c = s``.

The gradient is checked first against a central difference of the forward loop along a
random direction. Run ``python -m benchmarks.while_loop`` (``--steps N`` for a shorter loop,
``--snapshots S`` for another memory, ``--backend numba`` for the compiled target (its
condition and step compiled into one loop function): none of them writes the file);
the figures go to ``benchmarks/measured/while_loop.json`` as ``after``; ``before`` there
are those of the same command at commit ba0fdf9 (the sweep running the loop again from its
first carry, Revolve's split with one slot unused), kept when the file is rewritten.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from . import common

os.environ.setdefault("OMP_NUM_THREADS", "1")

MEASURED = Path(__file__).resolve().parent / "measured" / "while_loop.json"
N, STEPS, SNAPSHOTS = 1000, 10 ** 5, 20


def revolve_optimum(steps: int, snapshots: int) -> tuple[int, int]:
    """``(t, forward steps)`` of Revolve's optimal reversal of ``steps`` steps with
    ``snapshots`` stored states besides the first (the first pass included)."""
    t = 0
    while math.comb(snapshots + t, snapshots) < steps:
        t += 1
    return t, t * steps - math.comb(snapshots + t, t - 1)


def build(steps: int, snapshots: int, backend: str = "numpy"):
    """The compiled value and value+gradient of the loop's loss."""
    import symgrad as sg

    x0, a = sg.var("x0", shape=(N,)), sg.var("a")
    w, h = np.linspace(-1.0, 1.0, N), 1.0 / steps  # the loop integrates to time 1

    def step(c):
        k, x = c
        return k + 1, x + h * (a * sg.sin(x) - 0.1 * x)

    _, x = sg.while_loop(lambda c: c[0] < steps, step, (0, x0), snapshots=snapshots)
    loss = sg.sum(w * x)
    value = sg.compile(loss, [x0, a], backend=backend)
    both = sg.compile([loss, *sg.grad(loss, [x0, a])], [x0, a], backend=backend)
    return value, both


def schedule_steps(steps: int, snapshots: int) -> int:
    """How many steps the reverse sweep of :mod:`symgrad.ops.while_loop` runs forward for
    ``steps`` steps and ``snapshots`` snapshots, after the forward loop recorded its tape
    (a step that only counts)."""
    from symgrad.ops.while_loop import _sg_while, _sg_while_vjp

    count = [0]

    def step(c):
        count[0] += 1
        return c + 1

    *_, n, tape = _sg_while(lambda c: c < steps, step, (0,), (), (), ("int64",), snapshots)
    count[0] = 0
    _sg_while_vjp(step, lambda c, g: (g,), snapshots, n, (0,), (), (1.0,),
                  (((), "float64"),), tape)
    return count[0]


def measure(steps: int = STEPS, snapshots: int = SNAPSHOTS, budget: float = 20.0,
            backend: str = "numpy") -> dict:
    value, both = build(steps, snapshots, backend)
    rng = np.random.default_rng(0)
    x0, a = rng.uniform(-1.0, 1.0, N), 0.8
    got = both(x0, a)
    v, h = rng.standard_normal(N), 1e-5
    fd = (float(value(x0 + h * v, a)) - float(value(x0 - h * v, a))) / (2 * h)
    fd_a = (float(value(x0, a + h)) - float(value(x0, a - h))) / (2 * h)
    err = max(abs(float(got[1] @ v) - fd) / abs(fd), abs(float(got[2]) - fd_a) / abs(fd_a))
    if not err < 1e-6:
        raise AssertionError(f"the gradient differs from central differences: {err:.2e}")
    assert float(got[0]) == float(value(x0, a))
    t_fwd, t_both = common.interleaved([lambda: value(x0, a), lambda: both(x0, a)], budget,
                                       min_samples=3, max_samples=9, warmup=1)
    tracemalloc.start()
    try:
        both(x0, a)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    t, optimum = revolve_optimum(steps, snapshots + 1)
    sweep = schedule_steps(steps, snapshots)
    return {"steps": steps, "snapshots": snapshots, "carry_floats": N, "fd_err": err,
            "forward_s": common.median(t_fwd), "value_grad_s": common.median(t_both),
            "ratio": common.paired_ratio(t_both, t_fwd), "peak_carries": peak / (8 * N),
            "revolve_t": t, "revolve_optimum_steps": optimum,
            "revolve_optimum_steps_s": revolve_optimum(steps, snapshots)[1],
            "schedule_steps": sweep, "steps_per_step": (steps + sweep) / steps,
            "optimum_per_step": optimum / steps}


ROWS = (("forward loop (value alone)", "forward_s", "{:.2f} s", ""),
        ("value + gradient", "value_grad_s", "{:.2f} s", ""),
        ("value + gradient / forward (paired median)", "ratio", "{:.2f}x", "<= 5x"),
        ("peak traced memory", "peak_carries", "{:.1f} carries", "<= 21 carries + a constant"),
        ("forward steps per step (loop and sweep)", "steps_per_step", "{:.2f}",
         "Revolve with T known: {optimum_per_step:.2f}"))


def results(row: dict, before: dict | None, notes: list) -> dict:
    """The results file (benchmarks/tables.py's fields) of ``row``, beside ``before``."""
    old = before or {}
    rows = [[name, fmt.format(old[key]) if key in old else "", fmt.format(row[key]),
             target.format(**row)] for name, key, fmt, target in ROWS]
    return {"title": "A 10^5-step `sg.while_loop` differentiated in reverse mode",
            "command": "OMP_NUM_THREADS=1 PYTHONPATH=. python -m benchmarks.while_loop",
            "machine": "2-core machine shared with other jobs (times swing when it is loaded)",
            "date": time.strftime("%Y-%m-%d"),
            "method": "one process, one thread, the NumPy target; 1,000-float carry, 20 "
                      "snapshots; times are medians of interleaved calls, memory by "
                      "tracemalloc in units of one carry, steps counted on a counting step",
            "tables": [{"columns": ["figure", "before (ba0fdf9: the sweep runs the loop "
                                    "again)", "after (online tape)", "target"],
                        "rows": rows}],
            "notes": notes, "after": row, "before": before}


def main(argv: list[str]) -> None:
    steps = int(argv[argv.index("--steps") + 1]) if "--steps" in argv else STEPS
    snaps = int(argv[argv.index("--snapshots") + 1]) if "--snapshots" in argv else SNAPSHOTS
    backend = argv[argv.index("--backend") + 1] if "--backend" in argv else "numpy"
    row = measure(steps, snaps, backend=backend)
    for k, v in row.items():
        print(f"{k:>22}: {v:.4g}" if isinstance(v, float) else f"{k:>22}: {v}")
    # the figures before and the notes stay
    if (steps, snaps, backend) == (STEPS, SNAPSHOTS, "numpy"):
        old = json.loads(MEASURED.read_text()) if MEASURED.exists() else {}
        data = results(row, old.get("before"), old.get("notes", []))
        MEASURED.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    common.with_thread_env("benchmarks.while_loop")
    main(sys.argv[1:])
