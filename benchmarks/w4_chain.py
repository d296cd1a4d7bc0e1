"""W4: the deep scalar chain ``h <- sin(h) * h + cos(h)``, L = 10 ... 10^5 steps.

Measured per system and L: the time to build the derivative (symgrad: expression + grad +
source + compile; JAX: trace + jit first call; PyTorch and autograd: one forward and
backward) and the time to evaluate value and derivative afterwards, against a hand-written
loop with Python floats and ``math``. ``sympy.diff`` of the same expression is timed with its
``count_ops`` while it finishes within 60 s; ``derivative(f, x, n)`` node counts for
n = 1..4 are recorded at small L.

The step's derivative is ``h cos(h)``; the chain converges to pi/2, where that vanishes, so
the exact gradient underflows to 0 from L ~ 100 on. Correctness is checked at L = 5 in every
cell; large L are for timing only.
"""

from __future__ import annotations

import math
import time

from . import common

TITLE = "W4 deep scalar chain"
CONFIGS = {f"L{n}": {"L": n} for n in (10, 100, 1000, 10_000, 100_000)}
SMOKE_CONFIG = {"L": 5}
CHECK_L = 5
X0 = 0.5
SYMPY_LADDER = (5, 10, 11, 12, 13, 14, 15)
SYMPY_LIMIT = 60.0


def hand_loop(x: float, L: int) -> tuple[float, float]:
    """Hand-written value and derivative with Python floats (forward tape, reverse sweep)."""
    sin, cos = math.sin, math.cos
    hs = [0.0] * L
    h = x
    for k in range(L):
        hs[k] = h
        h = sin(h) * h + cos(h)
    d = 1.0
    for k in range(L - 1, -1, -1):
        hk = hs[k]
        d *= hk * cos(hk)
    return h, d


def chain(xp, x, L: int):
    """The chain written once for symgrad / jax.numpy / torch / autograd.numpy / sympy."""
    h = x
    for _ in range(L):
        h = xp.sin(h) * h + xp.cos(h)
    return h


def _symgrad_build(L: int) -> dict:
    import symgrad as sg

    from .gradcell import sg_compile

    t0 = time.perf_counter()
    x = sg.var("x")
    h = chain(sg, x, L)
    t1 = time.perf_counter()
    dx = sg.grad(h, x)
    t2 = time.perf_counter()
    fn = sg_compile([h, dx], [x], scalars="math")  # all-scalar: Python floats + math
    t3 = time.perf_counter()
    return {"fn": fn, "exprs": [h, dx], "build_s": t3 - t0, "expr_s": t1 - t0,
            "grad_s": t2 - t1, "compile_s": t3 - t2,
            "nodes": len(h.graph.ancestors([h.node, dx.node]))}


def _builders():
    """system -> function(L) returning (build_s, evaluate-callable returning (value, grad))."""

    def symgrad(L):
        b = _symgrad_build(L)
        keep = ("expr_s", "grad_s", "compile_s", "nodes", "exprs")
        return b["build_s"], lambda: b["fn"](X0), {k: b[k] for k in keep}

    def jax(L):
        j = common.load("jax")
        vg = j.jit(j.value_and_grad(lambda x: chain(j.numpy, x, L)))
        t, _ = common.once(lambda: j.block_until_ready(vg(X0)))
        return t, lambda: j.block_until_ready(vg(X0)), {}

    def torch(L):
        tc = common.load("torch")

        def run():
            x = tc.tensor(X0, requires_grad=True)
            h = chain(tc, x, L)
            (g,) = tc.autograd.grad(h, x)
            return h.item(), g.item()

        t, _ = common.once(run)
        return t, run, {}

    def autograd(L):
        ag = common.load("autograd")
        import autograd.numpy as anp

        vg = ag.value_and_grad(lambda x: chain(anp, x, L))
        t, _ = common.once(lambda: vg(X0))
        return t, lambda: vg(X0), {}

    return {"symgrad": symgrad, "jax": jax, "torch": torch, "autograd": autograd}


def _check(system: str) -> float:
    """Relative error of value and derivative at L = CHECK_L against the hand loop."""
    _, fn, _ = _builders()[system](CHECK_L)
    got = [float(v) for v in fn()]
    return common.rel_err(got, list(hand_loop(X0, CHECK_L)))


def measure(cfg: dict, system: str, budget: float) -> list[dict]:
    if system == "sympy":
        return [sympy_cell(cfg["L"])]
    L = cfg["L"]
    err = _check(system)
    build_s, fn, extra = _builders()[system](L)
    exprs = extra.pop("exprs", None)
    hand = lambda: hand_loop(X0, L)  # noqa: E731
    slow = build_s > 1.0
    opts = {"warmup": 0 if slow else 2, "min_samples": 1 if slow else 5}
    t_sys, t_hand = common.interleaved([fn, hand], budget, **opts)
    row = {"system": system, "task": "chain", "L": L, "build_s": build_s,
           "eval_s": common.median(t_sys), "hand_s": common.median(t_hand),
           "vs_hand": common.paired_ratio(t_sys, t_hand), "err_L5": err,
           "samples": int(len(t_sys))}
    row.update(extra)
    rows = [row]
    if system == "symgrad":
        rows += _symgrad_extras(L, exprs, budget)
    return rows


def _symgrad_extras(L: int, exprs: list, budget: float) -> list[dict]:
    """sg.evaluate timing (small L) and derivative(f, x, n) node counts (L <= 100)."""
    import symgrad as sg

    rows = []
    if L <= 10_000:
        (t_ev,) = common.interleaved(
            [lambda: sg.evaluate(exprs, {"x": X0})], budget / 2, min_samples=1,
            warmup=1,
        )
        rows.append({"system": "symgrad-eval", "task": "chain", "L": L,
                     "eval_s": common.median(t_ev), "samples": int(len(t_ev))})
    if L <= 100:
        x = sg.var("x")
        h = chain(sg, x, L)
        for n in range(1, 5):
            t, d = common.once(lambda n=n: sg.derivative(h, x, n))
            rows.append({"system": "symgrad", "task": "derivative_n", "L": L, "n": n,
                         "nodes": len(h.graph.ancestors([d.node])), "build_s": t})
    return rows


def sympy_cell(L: int) -> dict:
    """sympy.diff of the chain: build, diff and count_ops times (run under a timeout)."""
    import sympy

    x = sympy.Symbol("x")
    t0 = time.perf_counter()
    h = chain(sympy, x, L)
    t1 = time.perf_counter()
    d = sympy.diff(h, x)
    t2 = time.perf_counter()
    ops = int(sympy.count_ops(d))
    t3 = time.perf_counter()
    value = float(d.subs(x, X0).evalf()) if L <= CHECK_L else None
    err = abs(value - hand_loop(X0, L)[1]) / abs(hand_loop(X0, L)[1]) if value is not None else None
    return {"system": "sympy", "task": "chain", "L": L, "expr_s": t1 - t0, "diff_s": t2 - t1,
            "count_ops_s": t3 - t2, "build_s": t2 - t0, "count_ops": ops, "err_L5": err}
