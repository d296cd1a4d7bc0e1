"""The C target's translation of the Numba target's loop-nest text into C99: Python's
semantics where C's differ (negative indices, floor division and remainder of integers,
integer arithmetic in 64 bits), a loop's carries updated in place, and what has no C form
refused by name (its lines then stay NumPy's)."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from symgrad.backends.targets.c import build
from symgrad.backends.targets.c.scalars import PRELUDE, Unsupported
from symgrad.backends.targets.c.translate import translate

needs_cc = pytest.mark.skipif(
    shutil.which(os.environ.get("CC") or "cc") is None and shutil.which("gcc") is None,
    reason="no C compiler (cc, gcc) on PATH")


def _run(source, inputs, outputs, args, tmp_path, monkeypatch):
    """Translate, compile and call ``source``; its results (NumPy arrays)."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path))
    fn = translate(source, inputs, outputs)
    kinds = list(fn.params)
    params = [f"void *x{k}" if p == "p" else f"int64_t x{k}" if p == "int64" else
              f"double x{k}" for k, p in enumerate(kinds)]
    call = [f"SG_DATA(x{k})" if p == "p" else f"x{k}" for k, p in enumerate(kinds)]
    entry = f"int entry({', '.join(params)}) {{ return {fn.name}({', '.join(call)}); }}"
    lib = build.load_library("\n".join([PRELUDE, *fn.lines, entry]), {"entry": tuple(kinds)})
    outs = [np.empty(shape, dtype) for dtype, shape in fn.outs]
    assert lib.entry(*args, *outs) == 0
    return [o[()] for o in outs]


def test_negative_literal_indices_count_from_the_end():
    src = "def k(x):\n    t = np.empty((2,), dtype=np.float64)\n" \
          "    t[0] = x[-1]\n    t[-1] = x[-3]\n    return t\n"
    fn = translate(src, {"x": ("float64", (3,))}, ["t"])
    assert "    o0[0] = p_x[2];" in fn.lines and "    o0[1] = p_x[0];" in fn.lines


def test_what_has_no_c_form_is_refused_by_name():
    src = "def k(x):\n    t = np.sort(x)\n    return t\n"
    with pytest.raises(Unsupported, match="sort"):
        translate(src, {"x": ("float64", (3,))}, ["t"])
    src = "def k(x):\n    t = x[0].real\n    return t\n"
    with pytest.raises(Unsupported, match="real"):
        translate(src, {"x": ("float64", (3,))}, ["t"])


@needs_cc
def test_integer_floor_division_and_remainder_are_pythons(tmp_path, monkeypatch):
    """C truncates toward zero; the translation keeps Python's (and NumPy's) floor."""
    src = ("def k(a, b):\n    q = a // b\n    r = a % b\n    f = a / b\n"
           "    return q, r, f\n")
    ints = {"a": ("int64", ()), "b": ("int64", ())}
    for a, b in [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, -3)]:
        q, r, f = _run(src, ints, ["q", "r", "f"], [a, b], tmp_path, monkeypatch)
        assert (q, r, f) == (a // b, a % b, a / b)


@needs_cc
def test_a_loop_updates_its_array_carry_in_place(tmp_path, monkeypatch):
    """``c = t`` inside a loop (a carry) copies into the carry's buffer, so the next
    step reads the new value; a tuple of carries swaps as Python's does."""
    src = """
def k(c, d):
    c = c.copy()
    d = d.copy()
    for _t in range(3):
        t = np.empty((2,), dtype=np.float64)
        for i in range(2):
            t[i] = c[i] * 2.0 + d[i]
        c, d = d, t
    return c, d
"""
    c, d = _run(src, {"c": ("float64", (2,)), "d": ("float64", (2,))}, ["c", "d"],
                [np.array([1.0, 2.0]), np.array([3.0, 4.0])], tmp_path, monkeypatch)
    pc, pd = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    for _ in range(3):
        pc, pd = pd, pc * 2.0 + pd
    np.testing.assert_array_equal(c, pc)
    np.testing.assert_array_equal(d, pd)
