"""High-order derivatives and the node budget: ``python -m benchmarks.taylor [--quick]``.

* **orders**: ``sg.derivative(sg.sin(x) * sg.exp(x), x, n)`` for n = 10, 20, 30, 50: the
  nodes it adds and its CPU seconds, by Taylor mode (what ``derivative`` does for a scalar
  ``x``) and by repeated reverse mode (``sg.grad`` n times: what it did before), the latter
  under a budget of 100,000 nodes in all (``> budget`` where it runs into it).
* **budget**: the CPU cost per node of building to the ``transform_nodes`` budget: repeated
  reverse mode on ``sin(x) * exp(x)`` stopped by a budget of 100,000 nodes (the figure of
  ``benchmarks/measured/scale.json``), and Taylor mode on a composition
  (``h <- tanh(h) * h`` eight times, order 80) stopped by the same budget.

CPU seconds (``time.process_time``): the machine is shared, so CPU time is the steadier
figure; each figure is the median of ``--repeats`` runs, each in a fresh graph.
"""

from __future__ import annotations

import argparse
import statistics
import time

import symgrad as sg


def _cpu(fn) -> tuple[float, object]:
    c = time.process_time()
    out = fn()
    return time.process_time() - c, out


def taylor_order(n: int) -> tuple[int, float]:
    """Nodes added and CPU seconds of Taylor mode's n-th derivative of sin(x) exp(x)."""
    x = sg.var("x")
    f = sg.sin(x) * sg.exp(x)
    before = len(f.graph)
    dt, _ = _cpu(lambda: sg.derivative(f, x, n))
    return len(f.graph) - before, dt


class _Stopped(Exception):
    """Repeated reverse mode ran past the benchmark's total node budget."""


def reverse_order(n: int, budget: int = 100_000) -> tuple[int | None, float]:
    """The same by n reverse passes (None for the nodes where ``budget`` nodes in all, over
    the n passes, stopped it)."""
    x = sg.var("x")
    f = sg.sin(x) * sg.exp(x)
    before = len(f.graph)

    def run():
        g = f
        with f.graph.budget(budget, _Stopped):
            for _ in range(n):
                g = sg.grad(g, x)
        return g

    try:
        dt, _ = _cpu(run)
    except _Stopped:
        return None, float("nan")
    return len(f.graph) - before, dt


def to_budget(kind: str, budget: int = 100_000) -> tuple[int, float]:
    """Nodes built and CPU seconds until a budget of ``budget`` nodes stops ``kind``:
    ``reverse`` (sg.grad again and again, one budget over all the passes, as
    ``derivative`` had) or ``taylor`` (one ``derivative`` call)."""
    x = sg.var("x")
    if kind == "reverse":
        f = sg.sin(x) * sg.exp(x)

        def run():
            g = f
            with f.graph.budget(budget, _Stopped):
                for _ in range(60):
                    g = sg.grad(g, x)
    else:
        f = x
        for _ in range(8):
            f = sg.tanh(f) * f

        def run():
            with sg.limits(transform_nodes=budget):
                sg.derivative(f, x, 80)

    def counted():
        try:
            run()
        except (_Stopped, sg.LimitError):  # raised as node budget + 1 was about to be built
            return
        raise AssertionError("the budget did not stop it")

    dt, _ = _cpu(counted)
    return budget, dt


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="orders 10 and 20, budget 20,000")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    orders = (10, 20) if args.quick else (10, 20, 30, 50)
    budget = 20_000 if args.quick else 100_000
    print("order  taylor nodes  taylor s  reverse nodes  reverse s")
    for n in orders:
        t = [taylor_order(n) for _ in range(args.repeats)]
        r = [reverse_order(n) for _ in range(1 if n >= 20 else args.repeats)]
        rn = "> budget" if r[0][0] is None else f"{r[0][0]:,}"
        print(f"{n:5}  {t[0][0]:12,}  {statistics.median(s for _, s in t):8.4f}  {rn:>13}  "
              f"{statistics.median(s for _, s in r):9.3f}")
    print(f"\nbuilding to a budget of {budget:,} nodes")
    for kind in ("reverse", "taylor"):
        runs = [to_budget(kind, budget) for _ in range(args.repeats)]
        nodes = runs[0][0]
        sec = statistics.median(s for _, s in runs)
        print(f"{kind:8} {nodes:9,} nodes  {sec:6.2f} s CPU  {sec / nodes * 1e6:6.1f} us a node")


if __name__ == "__main__":
    main()
