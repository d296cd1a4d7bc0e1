"""W4 in forward mode: the deep scalar chain ``h <- sin(h) * h + cos(h)``.

``python -m benchmarks.w4_forward [--quick]`` builds ``[h, sg.jvp(h, x, 1.0)]`` (the value
and its derivative by forward mode: one tangent line per forward line, no tape), emits it
with ``scalars="math"``, and times it against the hand-written ``math`` loop of
``w4_chain`` (forward tape, reverse sweep), paired and interleaved in one process. Also the
build time (expression, forward transform, source, compile) per step, for linearity, and
the reverse-mode emitted gradient for comparison. Writes
``benchmarks/results/w4_forward.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from . import common, w4_chain

LADDER = (1000, 10_000, 100_000)


def build(L: int, mode: str = "forward") -> dict:
    import symgrad as sg

    from .gradcell import sg_compile

    t0 = time.perf_counter()
    x = sg.var("x")
    h = w4_chain.chain(sg, x, L)
    t1 = time.perf_counter()
    d = sg.jvp(h, x, 1.0) if mode == "forward" else sg.grad(h, x)
    t2 = time.perf_counter()
    fn = sg_compile([h, d], [x], scalars="math")
    t3 = time.perf_counter()
    return {"fn": fn, "build_s": t3 - t0, "expr_s": t1 - t0, "transform_s": t2 - t1,
            "compile_s": t3 - t2, "nodes": len(h.graph.ancestors([h.node, d.node]))}


def measure(L: int, budget: float) -> dict:
    fwd = build(w4_chain.CHECK_L)
    err = common.rel_err([float(v) for v in fwd["fn"](w4_chain.X0)],
                         list(w4_chain.hand_loop(w4_chain.X0, w4_chain.CHECK_L)))
    fwd, rev = build(L), build(L, "reverse")
    x0 = w4_chain.X0
    fns = [lambda: fwd["fn"](x0), lambda: rev["fn"](x0), lambda: w4_chain.hand_loop(x0, L)]
    t_fwd, t_rev, t_hand = common.interleaved(fns, budget, warmup=1)
    return {"L": L, "err_L5": err, "forward_s": common.median(t_fwd),
            "reverse_s": common.median(t_rev), "hand_s": common.median(t_hand),
            "forward_vs_hand": common.paired_ratio(t_fwd, t_hand),
            "reverse_vs_hand": common.paired_ratio(t_rev, t_hand),
            **{k: fwd[k] for k in ("build_s", "expr_s", "transform_s", "compile_s", "nodes")},
            "reverse_build_s": rev["build_s"]}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="L = 1000 and 10^4 only")
    parser.add_argument("--budget", type=float, default=3.0, help="seconds per L")
    args = parser.parse_args(argv)
    ladder = LADDER[:2] if args.quick else LADDER
    rows = []
    for L in ladder:
        row = measure(L, args.budget)
        rows.append(row)
        print(f"L={L:>6}  forward/hand={row['forward_vs_hand']:.2f}x  "
              f"reverse/hand={row['reverse_vs_hand']:.2f}x  build={row['build_s']:.2f}s "
              f"(transform {row['transform_s']:.2f}s)  nodes={row['nodes']}  "
              f"err(L=5)={row['err_L5']:.1e}", flush=True)
    per = [r["build_s"] / r["L"] for r in rows]
    print(f"build time per step, L={ladder[-1]} / L={ladder[0]}: {per[-1] / per[0]:.2f}x")
    out = Path(__file__).resolve().parent / "results" / "w4_forward.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=1, default=float))
    return rows


if __name__ == "__main__":
    common.with_thread_env("benchmarks.w4_forward")
    main()
