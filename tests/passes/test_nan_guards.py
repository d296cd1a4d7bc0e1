"""The nan_guards pass: ``(a - a) + y`` rewritten to fewer ops, values bit for bit alike
(NaN where the guard was NaN, +0.0 where ``y`` was -0.0), against the interpreter, which
runs no pass, and against NumPy written by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import symgrad as sg

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN and inf on purpose

SPECIAL = [0.0, -0.0, 0.5, -2.0, 1e300, -1e300, np.inf, -np.inf, np.nan]


def _same(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    both_nan = np.isnan(a) & np.isnan(b)
    return bool(np.all(both_nan | ((a == b) & (np.signbit(a) == np.signbit(b)))))


def _forms(x, y):
    """Guards the reverse transform builds, written as forward expressions."""
    s = sg.sin(x) * y
    c = sg.cos(x) * y
    return {
        "w4 step": (s - s) + (y * x) * sg.cos(x),
        "guard on the right": y * x * sg.cos(x) + (s - s),
        "bounded tanh factor": (sg.tanh(x) * y - sg.tanh(x) * y) + y * 3.0,
        "nothing strict": (c - c) + y * x,
        "all dropped": (sg.sin(x) - sg.sin(x)) + sg.cos(x) * y,
        "unbounded factor stays": (sg.exp(x) * y - sg.exp(x) * y) + sg.cos(x),
    }


@pytest.mark.parametrize("name", list(_forms(sg.var("x"), sg.var("y"))))
def test_rewritten_guards_give_the_same_bits_everywhere(name):
    x, y = sg.var("x"), sg.var("y")
    e = _forms(x, y)[name]
    fn = sg.compile(e, [x, y])  # the compile pipeline runs the pass
    for a, b in itertools.product(SPECIAL, SPECIAL):
        with np.errstate(all="ignore"):
            want = sg.evaluate(e, {"x": a, "y": b})  # the graph as written
        assert _same(fn(a, b), want), (name, a, b)


def test_the_work_that_only_placed_the_nan_is_gone():
    x, y = sg.var("x"), sg.var("y")
    forms = _forms(x, y)
    src = sg.to_source(forms["w4 step"], [x, y])
    body = src.split("def _f_scalar")[1].split("return")[0]
    assert "sin" not in body and "y - y" in body
    src = sg.to_source(forms["unbounded factor stays"], [x, y])
    assert "exp" in src.split("def _f_scalar")[1]  # exp(x) * y can overflow: kept


def test_arrays_broadcast_guards_keep_their_shape():
    x, y = sg.var("x", (4,)), sg.var("y")
    s = sg.sin(x) * y
    e = (s - s) + y * sg.cos(x)
    xv = np.array([0.5, np.inf, -0.0, 2.0])
    for yv in (1.5, np.inf, -0.0):
        with np.errstate(all="ignore"):
            want = (np.sin(xv) * yv - np.sin(xv) * yv) + yv * np.cos(xv)
        got = sg.compile(e, [x, y])(xv, yv)
        assert got.shape == (4,) and _same(got, want)


def test_w4_reverse_step_reads_no_sin_and_matches_the_hand_loop():
    from benchmarks.w4_chain import hand_loop

    x = sg.var("x")
    h, _ = sg.scan(lambda h, _: (sg.sin(h) * h + sg.cos(h), None), x, length=50)
    dx = sg.grad(h, x)
    src = sg.to_source([h, dx], [x])
    reverse = src.split("def _sg_loop2_math")[1].split("return")[0]
    assert "sin" not in reverse
    assert [float(v) for v in sg.compile([h, dx], [x])(0.5)] == list(hand_loop(0.5, 50))
    assert np.isnan(sg.compile(dx, [x])(np.inf))


def test_fast_math_still_drops_the_guard():
    x, y = sg.var("x"), sg.var("y")
    src = sg.to_source(_forms(x, y)["w4 step"], [x, y], fast_math=True)
    assert "y - y" not in src.split("def _f_scalar")[1]
