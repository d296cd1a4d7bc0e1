"""Scatter loops folded into the loop producing their operands: the same numbers, bit for
bit (the Python text run by NumPy before and after, and its C), and no fold where an
element's terms would be added in another order or an operand is used elsewhere."""

from __future__ import annotations

import ast
import os
import shutil

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.targets.c import build
from symgrad.backends.targets.c.fuse import fused_scatters
from symgrad.backends.targets.c.scalars import PRELUDE
from symgrad.backends.targets.c.translate import translate

needs_cc = pytest.mark.skipif(
    shutil.which(os.environ.get("CC") or "cc") is None and shutil.which("gcc") is None,
    reason="no C compiler (cc, gcc) on PATH")


def _source(offsets: list[int], n: int = 7, extra: str = "") -> str:
    """A kernel filling one local array per offset (products and sums of x's elements,
    of widely different magnitudes: the order of additions shows), then a zeroed result
    and one scatter loop per offset."""
    m = n + max(offsets)
    lines = ["def k(x):"]
    lines += [f"    t{p} = np.empty(({n},), dtype=np.float64)" for p in range(len(offsets))]
    lines += [f"    for i in range({n}):", "        a = x[i]"]
    for p in range(len(offsets)):
        lines += [f"        b{p} = a * {1e8 ** p} - {p + 0.1}", f"        t{p}[i] = b{p}"]
    lines += [f"    out = np.zeros(({m},), dtype=np.float64)"]
    for p, c in enumerate(offsets):
        lines += [f"    for j in range({n}):", f"        out[{c} + j] += t{p}[j]"]
    lines += [extra, "    return out"] if extra else ["    return out"]
    return "\n".join(lines) + "\n"


def _run_python(src: str, x: np.ndarray) -> np.ndarray:
    space: dict = {"np": np}
    exec(compile(src, "<kernel>", "exec"), space)  # our own test text
    return space["k"](x)


def _folded(src: str) -> str:
    fn = ast.parse(src).body[0]
    fn.body = fused_scatters(fn.body, ["out"])
    return ast.unparse(fn)


X = np.random.default_rng(3).normal(size=12) * np.logspace(-8, 8, 12)


@pytest.mark.parametrize("offsets", [[1, 0], [0, 1], [2, 1, 0], [1, 1, 0], [3, 3]])
def test_folded_loops_give_the_same_bits(offsets):
    """Offsets that do not increase (any order for two parts) fold into one loop without
    local arrays, and the result is NumPy's on the unfolded text, bit for bit."""
    src = _source(offsets)
    folded = _folded(src)
    assert "np.empty" not in folded and folded.count("for ") == 1
    ref = _run_python(src, X)
    assert np.array_equal(_run_python(folded, X), ref)


@pytest.mark.parametrize("offsets", [[0, 1, 2], [2, 0, 1]])
def test_three_parts_in_another_order_are_not_folded(offsets):
    """Three or more parts whose offsets increase somewhere would add an element's terms
    in another order (IEEE addition is not associative): the text is left as it is."""
    src = _source(offsets)
    assert _folded(src) == ast.unparse(ast.parse(src).body[0])


def test_an_operand_or_result_used_elsewhere_is_not_folded():
    """A local array read after its scatter, or the result read before the last scatter
    loop, keeps the loops apart."""
    for extra in ("    y = t0[0]", "    out[0] = t1[3]"):
        src = _source([1, 0], extra=extra)
        assert _folded(src) == ast.unparse(ast.parse(src).body[0])
    src = _source([1, 0]).replace("np.zeros((8,), dtype=np.float64)",
                                  "np.zeros((8,), dtype=np.float32)")
    assert _folded(src) == ast.unparse(ast.parse(src).body[0])


@needs_cc
@pytest.mark.parametrize("offsets", [[1, 0], [2, 1, 0], [0, 1, 2]])
def test_the_c_of_a_folded_kernel_gives_the_same_bits(offsets, tmp_path, monkeypatch):
    """The C translation (folded where it may be) computes NumPy's result on the
    unfolded text, bit for bit, and holds no local array where it folded."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    src = _source(offsets)
    x = X[:7].copy()
    fn = translate(src, {"x": ("float64", (7,))}, ["out"])
    assert ("*)malloc(" in "\n".join(fn.lines)) == (offsets == [0, 1, 2])
    entry = f"int entry(void *x0, void *x1) {{ return {fn.name}(SG_DATA(x0), SG_DATA(x1)); }}"
    lib = build.load_library("\n".join([PRELUDE, *fn.lines, entry]), {"entry": ("p", "p")})
    out = np.empty(fn.outs[0][1])
    assert lib.entry(x, out) == 0
    assert np.array_equal(out, _run_python(src, x))


def test_a_gradient_of_shifted_slices_is_one_c_loop():
    """Rosenbrock's gradient (x[1:] and x[:-1] both read) is one C loop writing the
    result, with no local array, and equals the NumPy backend's bit for bit."""
    x = sg.var("x", (40,))
    a, b = x[:-1], x[1:]
    g = sg.grad(sg.sum(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2), x)
    text = sg.to_source(g, backend="c")
    c_text = text[text.index("_C_SOURCE"):text.index("_C_ENTRIES")]
    assert "*)malloc(" not in c_text and c_text.count("for (") == 1
    if shutil.which(os.environ.get("CC") or "cc") or shutil.which("gcc"):
        v = np.random.default_rng(0).normal(size=40) * 3
        assert np.array_equal(sg.compile(g, backend="c")(v), sg.compile(g)(v))


def test_two_results_fold_into_one_loop():
    """Two zeroed results, each adding two arrays the same loop fills, both fold into that
    loop (one pass), with NumPy's bits."""
    src = "\n".join([
        "def k(x):", *(f"    t{p} = np.empty((7,), dtype=np.float64)" for p in range(4)),
        "    for i in range(7):", "        a = x[i]",
        *(f"        t{p}[i] = a * {10.0 ** (3 * p)} - {p + 0.3}" for p in range(4)),
        "    u = np.zeros((8,), dtype=np.float64)",
        "    for j in range(7):", "        u[1 + j] += t0[j]",
        "    for j in range(7):", "        u[j] += t1[j]",
        "    w = np.zeros((9,), dtype=np.float64)",
        "    for j in range(7):", "        w[j + 2] += t2[j]",
        "    for j in range(7):", "        w[j] += t3[j]",
        "    return u, w", ""])
    fn = ast.parse(src).body[0]
    fn.body = fused_scatters(fn.body, ["u", "w"])
    folded = ast.unparse(fn)
    assert "np.empty" not in folded and folded.count("for ") == 1
    space: dict = {"np": np}
    exec(compile(src, "<kernel>", "exec"), space)  # our own test text
    ref = space["k"](X)
    exec(compile(folded, "<kernel>", "exec"), space)
    assert all(np.array_equal(a, b) for a, b in zip(space["k"](X), ref))
