"""Scale figures of the hardening work: ``python -m benchmarks.hardening [--quick]``.

* **scatter**: ``f = v[0]*1.0 + v[1]*2.0 + ...`` over ``v`` of shape (N,); the time of
  ``sg.grad(f, v)`` (all N adjoint scatters merged into one ``scatter_sum``) at N = 10^3,
  10^4, 10^5, and the per-term time at the largest N over the smallest (1.0 = linear).
* **emit**: ``sg.to_source`` of that gradient (one ``scatter_sum`` with N operands):
  time and the per-term ratio (it was quadratic: every operand's dtype read for every
  literal operand).
* **constant**: ``sg.compile`` of ``sum(C * x)`` and its gradient with ``C`` a constant of
  N = 10^4 / 10^5 / 10^6 elements (written as its base64 bytes, not a list of numbers):
  seconds, peak traced memory and the source's size.
* **parse**: ``sg.parse`` of ``x0*x1 + x1*x2 + ...`` (50 names, N terms): time and the
  per-term ratio, as above.
* **lock**: the W4 chain ``h <- sin(h)*h + cos(h)`` (expression and gradient, L steps)
  built as shipped (the graph's lock, per-thread builder state) and with a no-op lock and
  a plain state object in their place, alternating rounds in one process: the cost of
  thread safety as a ratio.

Times are wall-clock seconds (``time.perf_counter``) with process CPU seconds next to them
(the machine is shared, so CPU time is the steadier figure).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import symgrad as sg

from .w4_chain import chain


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def scatter(n: int) -> tuple[float, float]:
    """Seconds (wall, cpu) of the gradient of an N-term indexed sum; checked exactly."""
    v = sg.var("v", shape=(n,))
    f = v[0] * 1.0
    for i in range(1, n):
        f = f + v[i] * float(i + 1)
    g, wall, cpu = _timed(lambda: sg.grad(f, v))
    got = sg.evaluate(g, {"v": np.zeros(n)})
    assert np.array_equal(got, np.arange(1.0, n + 1.0)), "wrong gradient"
    return wall, cpu


def emit(n: int) -> tuple[float, float]:
    """Seconds (wall, cpu) to emit the gradient of an N-term indexed sum."""
    v = sg.var("v", shape=(n,))
    f = v[0] * 1.0
    for i in range(1, n):
        f = f + v[i] * float(i + 1)
    g = sg.grad(f, v)
    _, wall, cpu = _timed(lambda: sg.to_source(g))
    return wall, cpu


def constant(n: int) -> tuple[float, float, int]:
    """Seconds (cpu) and peak traced MB to compile a function holding an N-element
    constant, and its source's length; the gradient checked bit for bit."""
    import tracemalloc

    c = np.random.default_rng(0).standard_normal(n)
    x = sg.var("x", shape=(n,))
    f = sg.sum(sg.const(c) * x)
    tracemalloc.start()
    fn, _, cpu = _timed(lambda: sg.compile([f, sg.grad(f, x)]))
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    assert np.array_equal(fn(np.ones(n))[1], c), "wrong gradient"
    return cpu, peak, len(fn.source)


def parse_text(n: int) -> str:
    return " + ".join(f"x{i % 50}*x{(i + 1) % 50}" for i in range(n))


def parse(n: int) -> tuple[float, float]:
    """Seconds (wall, cpu) to parse an N-term sum of products; checked at one point."""
    text = parse_text(n)
    f, wall, cpu = _timed(lambda: sg.parse(text))
    at = {f"x{k}": 1.0 + k / 100 for k in range(50)}
    want = sum(at[f"x{i % 50}"] * at[f"x{(i + 1) % 50}"] for i in range(n))
    assert abs(sg.evaluate(f, at) - want) <= 1e-9 * abs(want), "wrong value"
    return wall, cpu


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _PlainState:
    """The builder's per-thread state as a plain object (what it was before threads)."""

    def __init__(self) -> None:
        self.role, self.origin, self.rewriter = "forward", None, None
        self.built, self.stop, self.overrun = 0, sys.maxsize, None


def _w4_build(steps: int, safe: bool) -> float:
    x = sg.var("x")
    if not safe:
        x.graph.lock = _NoLock()
        x.graph._state = _PlainState()
    t0 = time.process_time()
    h = chain(sg, x, steps)
    sg.grad(h, x)
    return time.process_time() - t0


def lock_cost(steps: int, rounds: int) -> tuple[float, float, float]:
    """(median cpu s thread-safe, without the lock and thread-local state, ratio) over
    alternating rounds."""
    safe, plain = [], []
    for k in range(rounds):
        for flag in ((True, False) if k % 2 == 0 else (False, True)):
            (safe if flag else plain).append(_w4_build(steps, flag))
    a, b = statistics.median(safe), statistics.median(plain)
    return a, b, a / b


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    args = ap.parse_args(argv)
    sizes = (1000, 10_000) if args.quick else (1000, 10_000, 100_000)
    rows = []
    for name, fn in (("scatter grad", scatter), ("scatter emit", emit), ("parse", parse)):
        per = {}
        for n in sizes:
            wall, cpu = fn(n)
            per[n] = cpu / n
            rows.append(f"{name:13} N={n:>7,}  {wall:7.3f} s wall  {cpu:7.3f} s cpu")
            print(rows[-1], flush=True)
        ratio = per[sizes[-1]] / per[sizes[0]]
        rows.append(f"{name:13} per-term cpu time N={sizes[-1]:,} / N={sizes[0]:,}: {ratio:.2f}x")
        print(rows[-1], flush=True)
    for n in sizes[1:] + (1_000_000,):
        cpu, peak, chars = constant(n)
        rows.append(f"constant      N={n:>9,}  {cpu:7.3f} s cpu  {peak:7.1f} MB peak  "
                    f"{chars / 1e6:6.2f} MB source")
        print(rows[-1], flush=True)
    steps = 2000 if args.quick else 10_000
    a, b, r = lock_cost(steps, 3 if args.quick else 5)
    rows.append(f"W4 build L={steps:,} (expression + grad): {a:.3f} s cpu thread-safe, "
                f"{b:.3f} s without lock and thread-local state: {r:.3f}x")
    print(rows[-1], flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
