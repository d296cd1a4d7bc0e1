"""The NumPy target's loops over Python floats (symgrad.backends.targets.numpy.loops):
stacked floats pass between loops as lists, single-use values are written into the line
that uses them, and every value stays what the NumPy version and the interpreter compute,
bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

import symgrad as sg


def _hand_w4(x: float, steps: int) -> tuple[float, float]:
    """W4's value and derivative with Python floats, the step VJP as the chain rule writes
    it (``t - t`` kept; the exact passes keep its NaN with fewer ops, the same bits)."""
    hs, h = [], x
    for _ in range(steps):
        hs.append(h)
        h = math.sin(h) * h + math.cos(h)
    d = 1.0
    for hk in reversed(hs):
        t = math.sin(hk) * d
        d = (t - t) + d * hk * math.cos(hk)
    return h, d


def _w4(steps: int):
    x = sg.var("x")
    h, _ = sg.scan(lambda h, _: (sg.sin(h) * h + sg.cos(h), None), x, length=steps)
    return x, [h, sg.grad(h, x)]


def _math_function(src: str, name: str) -> str:
    start = src.index(f"def {name}_math(")
    return src[start:src.index(f"def {name}(", start)]


def test_the_stored_carries_pass_to_the_backward_loop_as_a_list():
    x, outs = _w4(30)
    src = sg.to_source(outs, [x])
    forward = _math_function(src, "_sg_loop1")
    assert "np.array(" not in forward  # the tape stays a list of floats
    assert "for c1 in reversed(_x0):" in _math_function(src, "_sg_loop2")
    fn = sg.compile(outs, [x])
    slow = sg.compile(outs, [x], scalars="numpy")
    for x0 in (0.3, -1.7, 2.5):
        got, want = [float(v) for v in fn(x0)], [float(v) for v in slow(x0)]
        assert got == want == list(_hand_w4(x0, 30))
        assert got == [float(v) for v in sg.evaluate(outs, {"x": x0})]


def test_a_list_reaching_the_numpy_version_is_made_the_array_it_stands_for():
    """The first loop runs over floats and hands its per-step results on as a list; the
    second divides by one of them (zero): ``math`` raises, the NumPy version gives inf."""
    x = sg.var("x")
    _, ys = sg.scan(lambda h, _: (h * 0.5, h - 1.0), x, length=4)
    total, _ = sg.scan(lambda c, y: (c + 1.0 / y, None), sg.const(0.0), ys)
    src = sg.to_source([total], [x])
    assert "np.array(_y0" not in _math_function(src, "_sg_loop1")
    fn = sg.compile([total], [x])
    for x0, inf in ((1.0, True), (3.0, False)):  # 1.0: the first result is 0.0
        with np.errstate(all="ignore"):
            want = sg.evaluate(total, {"x": x0})
            (got,) = fn(x0)
        assert np.array_equal(got, want) and isinstance(got, np.float64)
        assert bool(np.isinf(got)) == inf


def test_a_loop_result_a_function_returns_stays_an_array():
    x = sg.var("x")
    h, ys = sg.scan(lambda h, _: (sg.sin(h), h * 2.0), x, length=5)
    total, _ = sg.scan(lambda c, y: (c * y, None), sg.const(1.0), ys)
    fn = sg.compile([total, ys], [x])
    got_total, got_ys = fn(0.7)
    assert isinstance(got_ys, np.ndarray) and got_ys.dtype == np.float64
    want_total, want_ys = sg.evaluate([total, ys], {"x": 0.7})
    assert np.array_equal(got_ys, want_ys) and got_total == want_total


def test_single_use_values_are_written_into_their_line():
    x, outs = _w4(30)
    forward = _math_function(sg.to_source(outs, [x]), "_sg_loop1")
    body = forward[forward.index("for "):].splitlines()[1:]
    steps = [ln for ln in body if ln.startswith("        ")]
    assert len(steps) <= 3  # append the carry, the step in one line, move the carry on


@pytest.mark.parametrize("op", [sg.relu, sg.square, sg.sign, sg.floor, sg.softplus])
def test_a_template_that_writes_its_operand_twice_gets_a_name(op):
    """relu/square/sign/floor/softplus write their operand more than once: it is not
    inlined (it would be computed twice), and values stay the interpreter's."""
    x = sg.var("x")
    h, ys = sg.scan(lambda h, _: (op(sg.sin(h) * 1.5) + h * 0.25, h), x, length=6)
    outs = [h, ys, sg.grad(h, x)]
    src = _math_function(sg.to_source(outs, [x]), "_sg_loop1")
    assert "math.sin(c0) * 1.5" not in src.replace("(", "").replace(")", "") or \
        src.count("math.sin(") == 1
    fn = sg.compile(outs, [x])
    for x0 in (0.4, -0.9):
        for got, want in zip(fn(x0), sg.evaluate(outs, {"x": x0})):
            assert np.array_equal(got, want)


def _module(outs: list, ins: list, plain: bool) -> dict:
    """The NumPy module of ``outs``; ``plain``: as emitted before lists and inlining (every
    value a named line, stacked floats made arrays between loops)."""
    from symgrad.backends.targets.numpy import loops
    from symgrad.backends.targets.numpy.printer import NumpyPrinter

    saved = loops.INLINE, NumpyPrinter.lists_between_loops
    if plain:
        loops.INLINE, NumpyPrinter.lists_between_loops = 0, lambda pr: False
    try:
        src = sg.to_source(outs, ins)
    finally:
        loops.INLINE, NumpyPrinter.lists_between_loops = saved
    ns: dict = {}
    exec(compile(src, "<symgrad>", "exec"), ns)  # noqa: S102 (our own emitted module)
    return ns


@pytest.mark.parametrize("seed", range(12))
def test_random_scalar_steps_give_the_values_of_the_plain_emission_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    unary = (sg.sin, sg.cos, sg.tanh, sg.exp, sg.square, sg.relu)
    binary = (lambda a, b: a * b, lambda a, b: a + b, lambda a, b: a - b,
              lambda a, b: a * 0.5 + b, lambda a, b: a / (1.0 + b * b))
    plan = [(int(rng.integers(2)), int(rng.integers(len(unary))),
             int(rng.integers(len(binary)))) for _ in range(int(rng.integers(2, 7)))]

    def step(c, xk):
        a, b = c
        for which, u, bi in plan:
            new = binary[bi](unary[u](a if which else b), xk)
            a, b = (new, a) if which else (b, new)
        return (a, b), a * b

    x, y = sg.var("x"), sg.var("y")
    xs = sg.var("xs", shape=(int(rng.integers(1, 20)),))
    (a, b), ys = sg.scan(step, (x, y), xs, reverse=bool(seed % 2))
    loss = a + b + sg.sum(ys)
    outs = [loss, *sg.grad(loss, [x, y, xs])]
    args = (rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1, xs.shape))
    with np.errstate(all="ignore"):
        got = _module(outs, [x, y, xs], plain=False)["f"](*args)
        want = _module(outs, [x, y, xs], plain=True)["f"](*args)
        ref = sg.evaluate(outs, dict(zip("x y xs".split(), args)))
    for g, w, r in zip(got, want, ref):
        assert np.array_equal(g, w, equal_nan=True)
        np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-14)  # math vs NumPy ulps


def test_the_loop_binds_math_functions_and_appends_once_and_updates_its_carry_in_place():
    x, outs = _w4(30)
    src = sg.to_source(outs, [x])
    forward, backward = _math_function(src, "_sg_loop1"), _math_function(src, "_sg_loop2")
    assert "_m_sin = math.sin" in forward and "_s0_append = _s0.append" in forward
    loop = forward[forward.index("for "):]
    assert "math." not in loop and "c0 = _m_cos(c0) + (_m_sin(c0) * c0)" in loop
    assert "c0 = (c0 - c0) + ((c0 * c1) * _m_cos(c1))" in backward


@pytest.mark.parametrize("y", ["none", "old", "new", "other"])
@pytest.mark.parametrize("seed", range(3))
def test_a_single_carry_assigned_in_place_keeps_the_values_per_step_results_read(y, seed):
    """The carry is written by the step's last line only when no per-step result reads the
    old or the new value after it: each spelling gives the plain emission's bits."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0.5, 1.5, 2)

    def step(c, xk):
        new = sg.sin(c) * a + xk * sg.cos(c) * b
        ys = {"none": None, "old": c, "new": new, "other": c * xk}[y]
        return new, ys

    x, xs = sg.var("x"), sg.var("xs", shape=(9,))
    c, ys = sg.scan(step, x, xs)
    loss = c + (0.0 if ys is None else sg.sum(ys * ys))
    outs = [loss, *sg.grad(loss, [x, xs])]
    args = (rng.uniform(-1, 1), rng.uniform(-1, 1, 9))
    got = _module(outs, [x, xs], plain=False)["f"](*args)
    want = _module(outs, [x, xs], plain=True)["f"](*args)
    ref = sg.evaluate(outs, {"x": args[0], "xs": args[1]})
    for g, w, r in zip(got, want, ref):
        assert np.array_equal(g, w)
        np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-14)  # math vs NumPy ulps


def test_the_node_budget_of_a_derivative_names_sg_scan():
    """A Python loop that does not roll is differentiated step by step; the budget's error
    says how to write it so that its step is traced once."""
    x = sg.var("x")
    h = x
    for k in range(200):  # sin or tanh by the Thue-Morse sequence: it does not roll
        h = (sg.tanh if bin(k).count("1") % 2 else sg.sin)(h) * h
    with sg.limits(transform_nodes=100), pytest.raises(sg.LimitError, match="sg.scan"):
        sg.grad(h, x)
