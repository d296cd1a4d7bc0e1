"""Time the pictures: ``python -m benchmarks.pictures``.

For graphs of about 300 nodes (a 300-step chain, which collapses, and a 300-box graph that
does not) and the network of the notes, it times ``sg.draw`` to PNG, ``sg.to_dot``,
``sg.to_html`` and, as the reference run in the same process, Graphviz's ``dot -Tpng`` of
the same DOT text (when installed). Also the cost of progress reporting on the reverse-mode
transform of a 10^5-step chain (reports on against off). Best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import symgrad as sg
from symgrad import progress

SHAPES = {"W": (4, 3), "x": (3,), "b": (4,), "V": (2, 4), "g": (2,)}


def chain(n: int):
    """``n`` nested sin and cos and the gradient: collapses into a few boxes. The two
    alternate in the Thue-Morse order, which never repeats a block three times running, so
    the chain is not rolled into a loop (symgrad.passes.rolling)."""
    x = sg.var("x")
    h = x
    for k in range(n):
        h = sg.cos(h) if bin(k).count("1") % 2 else sg.sin(h)
    return [h, sg.grad(h, x)]


def wide(boxes: int):
    """About ``boxes`` boxes that do not collapse: a sum of products of distinct variables."""
    xs = [sg.var(f"x{k}") for k in range(boxes // 4)]
    f = xs[0] * xs[1]
    for k in range(2, len(xs)):
        f = f + xs[k] * xs[k - 1]
    return [f, *sg.grad(f, xs)]


def network():
    f = sg.parse("-log_softmax(V @ tanh(W @ x + b) + g)[y]", shapes=SHAPES,
                 dtypes={"y": "int64"})
    return [f, *sg.grad(f, ["W", "b", "V", "g"])]


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _row(name: str, exprs: list, collapse, tmp: Path, repeat: int) -> str:
    scene = sg.printing.scene.build_scene(exprs, collapse=collapse)
    nodes = len(exprs[0].graph)
    t_draw = best(lambda: sg.draw(exprs, str(tmp / "g.png"), collapse=collapse), repeat)
    t_dot = best(lambda: sg.to_dot(exprs, collapse=collapse), repeat)
    t_html = best(lambda: sg.printing.to_html(exprs, collapse=collapse), repeat)
    text = sg.to_dot(exprs, collapse=collapse)
    if shutil.which("dot"):
        t_gv = best(lambda: subprocess.run(["dot", "-Tpng", "-o", str(tmp / "d.png")],
                                           input=text, text=True, check=True), repeat)
        gv, ratio = f"{t_gv:9.3f}s", f"{t_draw / t_gv:8.2f}x"
    else:
        gv, ratio = f"{'-':>10}", f"{'-':>9}"
    return (f"{name:<30} {nodes:>6} {len(scene.boxes):>6} {t_draw:8.3f}s {t_dot:7.3f}s "
            f"{t_html:7.3f}s {gv} {ratio}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    cases = {"chain of 300 sin (collapses)": (chain(300), "auto"),
             "300 boxes, no collapse": (wide(300), False),
             "network of the notes": (network(), "auto")}
    print(f"{'graph':<30} {'nodes':>6} {'boxes':>6} {'draw png':>9} {'to_dot':>8} "
          f"{'to_html':>8} {'dot -Tpng':>10} {'draw/dot':>9}")
    for name, (exprs, collapse) in cases.items():
        print(_row(name, exprs, collapse, tmp, args.repeat))
    x = sg.var("x")
    h = x
    for _ in range(100_000):
        h = sg.sin(h)
    quiet = best(lambda: sg.grad(h, x), 1)
    progress.enable(logging.INFO, bar=False)
    try:
        loud = best(lambda: sg.grad(h, x), 1)
    finally:
        progress.disable()
    print(f"reverse mode on a 10^5 chain: {quiet:.2f} s quiet, {loud:.2f} s reporting "
          f"({loud / quiet:.2f}x)")


if __name__ == "__main__":
    main()
