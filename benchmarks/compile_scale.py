"""Compiling a large graph: W4's chain at 25,000 steps (10^5 forward nodes) and its
gradient, ``sg.compile`` timed (wall and CPU) with the peak memory of the process.

The expression and its gradient are built first (not timed here: W4 times those); then
one call of ``sg.compile([h, dh], inputs=[x])`` — the compile passes, the emitter
(register names, parts) and CPython compiling the parts — is timed. Peak memory is the
process's maximum resident set size after the call (it includes the graph itself), and
the growth during the call. The chain is a traced Python loop, so ``compile`` first rolls
it back into one ``scan`` (symgrad.passes.rolling): this times that pass and a small emit,
no longer the emitter on 10^5 straight-line nodes.
"""

from __future__ import annotations

import resource
import time

TITLE = "Compiling 10^5 forward nodes with their gradient"
CONFIGS = {"L25000": {"L": 25_000}}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(cfg: dict, system: str, budget: float) -> list[dict]:
    import symgrad as sg

    from .w4_chain import X0, chain

    x = sg.var("x")
    h = chain(sg, x, cfg["L"])
    dh = sg.grad(h, x)
    forward = len(h.graph.ancestors([h.node]))
    nodes = len(h.graph.ancestors([h.node, dh.node]))
    before = _rss_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    fn = sg.compile([h, dh], inputs=[x])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    value, _ = fn(X0)
    return [{"system": "symgrad", "task": "compile", "L": cfg["L"],
             "forward_nodes": forward, "nodes": nodes, "compile_s": wall, "compile_cpu_s": cpu,
             "lines": fn.source.count("\n"), "peak_mb": _rss_mb(),
             "growth_mb": _rss_mb() - before, "value": float(value)}]
