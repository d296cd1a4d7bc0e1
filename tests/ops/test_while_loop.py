"""The run-time loops of ``while_loop`` and its reverse sweep (``symgrad.ops.while_loop``):
the binomial checkpointing schedule reverses every step exactly once, on the right carry,
with at most ``snapshots + 1`` carries held and at most ``t`` forward runs per step."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

import symgrad as sg
from symgrad.errors import ShapeError
from symgrad.ir.shapes import DTYPES, NODE_DTYPES, TAPE, is_complex, is_float
from symgrad.ops.while_loop import _sg_while, _sg_while_vjp, revolve_repeats


class _Tape:
    """A step whose carry is its step index (a Python int in a tuple with a payload), and a
    backward step that records the order it is called in; counts forward steps and the
    most carries alive at once."""

    def __init__(self, payload: int = 0) -> None:
        self.forward = 0
        self.order: list[int] = []
        self.alive = 0
        self.most = 0
        self.payload = payload

    def step(self, c, k):
        self.forward += 1
        return _Carry(self, c.t + 1)

    def vjp(self, c, k, g):
        self.order.append(c.t)
        return g * k, g * c.t


class _Carry:
    def __init__(self, tape: _Tape, t: int) -> None:
        self.tape, self.t = tape, t
        tape.alive += 1
        tape.most = max(tape.most, tape.alive)

    def __del__(self) -> None:
        self.tape.alive -= 1


@pytest.mark.parametrize(("steps", "snapshots"), [(0, 3), (1, 1), (7, 1), (100, 2),
                                                  (1000, 5), (5000, 20), (200, 300)])
def test_the_schedule_reverses_each_step_once_within_its_memory_and_repeats(steps, snapshots):
    tape = _Tape()
    start = _Carry(tape, 0)
    g, kbar = _sg_while_vjp(tape.step, tape.vjp, snapshots, np.int64(steps), (start,),
                            (1.0,), (3.0,), (((), "float64"), ((), "float64")))
    assert tape.order == list(range(steps - 1, -1, -1))
    assert float(g) == 3.0
    assert float(kbar) == 3.0 * steps * (steps - 1) / 2  # sum_t 3 t: exact in float64
    assert tape.most <= snapshots + 3  # the stored carries, the first, a step's in and out
    t = revolve_repeats(steps, snapshots)
    assert tape.forward <= t * steps  # each step run forward at most t times


def test_revolve_repeats_is_the_smallest_t_with_enough_binomial_room():
    for steps in (1, 2, 10, 231, 232, 10 ** 5):
        for s in (1, 2, 20):
            t = revolve_repeats(steps, s)
            assert math.comb(s + t, t) >= steps
            assert t == 0 or math.comb(s + t - 1, t - 1) < steps


def test_the_forward_loop_counts_its_steps_and_keeps_the_dtypes():
    out = _sg_while(lambda c, n: c < 100.0, lambda c, n, k: (c * k, n + 1),
                    (1.0, 0), (3.0,), (), ("float64", "int64"))
    assert [v.dtype.name for v in out] == ["float64", "int64", "int64"]
    assert [float(out[0]), int(out[1]), int(out[2])] == [243.0, 5, 5]


def test_reverse_sweep_memory_is_bounded_by_the_snapshots():
    """10^4 steps of a 2,000-float carry: storing every carry would take 160 MB; the sweep
    with 10 snapshots holds about 11 (peak traced memory under 2 MB)."""
    n, size = 10 ** 4, 2000
    x0 = np.linspace(0.0, 1.0, size)

    def step(c, k):
        return c * k

    def vjp(c, k, g):
        return g * k, np.sum(g * c)

    tracemalloc.start()
    try:
        g, kbar = _sg_while_vjp(step, vjp, 10, np.int64(n), (x0,), (np.float64(1.0),),
                                (np.ones(size),), (((size,), "float64"), ((), "float64")))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(g, np.ones(size))
    assert float(kbar) == pytest.approx(n * float(np.sum(x0)), rel=1e-12)
    carry = x0.nbytes
    assert peak < 25 * carry, peak  # every carry stored: n * carry = 160 MB


def _recorded(tape: _Tape, steps: int, snapshots: int):
    """The forward loop of ``steps`` steps of ``tape.step`` recording its tape."""
    start = _Carry(tape, 0)
    *_, n, record = _sg_while(lambda c: c.t < steps, tape.step, (start,), (1.0,), (),
                              ("object",), snapshots)
    return start, n, record


def _optimum(steps: int, checkpoints: int) -> int:
    """Revolve's fewest forward steps reversing ``steps`` steps with ``checkpoints`` stored
    states, the first included (Griewank and Walther 2000)."""
    t = 0
    while math.comb(checkpoints + t, t) < steps:
        t += 1
    return t * steps - math.comb(checkpoints + t, t - 1) if t else 0


@pytest.mark.parametrize(("steps", "snapshots"), [(0, 3), (1, 1), (2, 1), (7, 1), (100, 2),
                                                  (1000, 5), (5000, 20), (200, 300)])
def test_the_recorded_tape_reverses_each_step_once_near_revolves_optimum(steps, snapshots):
    """The forward loop stores at most ``snapshots`` carries, each the carry entering its
    step; the sweep from them reverses every step once on the right carry, holding at most
    the stored carries, the first and a step's in and out. The forward steps of the loop
    and the sweep together are at most one pass more than Revolve's optimum with the trip
    count known in advance, and within 15% of it from 100 steps on."""
    tape = _Tape()
    start, n, record = _recorded(tape, steps, snapshots)
    assert int(n) == steps and tape.forward == steps
    (stored,) = record
    assert len(stored) <= snapshots and all(0 < p < steps and c[0].t == p
                                            for p, c in stored.items())
    assert tape.most <= snapshots + 3
    tape.forward, tape.most = 0, tape.alive
    g, kbar = _sg_while_vjp(tape.step, tape.vjp, snapshots, n, (start,), (1.0,), (3.0,),
                            (((), "float64"), ((), "float64")), record)
    assert record == [] and tape.order == list(range(steps - 1, -1, -1))
    assert float(kbar) == 3.0 * steps * (steps - 1) / 2 and float(g) == 3.0
    assert tape.most <= snapshots + 3
    best = _optimum(steps, snapshots + 1)
    assert best < steps + tape.forward <= best + steps or steps < 2
    assert steps < 100 or steps + tape.forward <= 1.15 * best


@pytest.mark.parametrize(("steps", "snapshots"), [(2, 1), (7, 1), (100, 2), (1000, 5),
                                                  (5000, 20), (10 ** 5, 20)])
def test_with_no_tape_the_sweep_runs_revolves_optimal_number_of_steps(steps, snapshots):
    """From the first carry alone (a tape already read) the sweep is Revolve's: exactly
    ``t T - C(s + 1 + t, t - 1)`` forward steps with ``s + 1`` stored carries."""
    tape = _Tape()
    start = _Carry(tape, 0)
    for record in (None, []):
        tape.forward, tape.order = 0, []
        _sg_while_vjp(tape.step, tape.vjp, snapshots, np.int64(steps), (start,), (1.0,),
                      (3.0,), (((), "float64"), ((), "float64")), record)
        assert tape.order == list(range(steps - 1, -1, -1))
        assert tape.forward == _optimum(steps, snapshots + 1)


def test_a_plain_loop_records_nothing():
    out = _sg_while(lambda c: c < 100.0, lambda c, k: c * k, (1.0,), (3.0,), (),
                    ("float64",))
    assert len(out) == 2 and float(out[0]) == 243.0
    out = _sg_while(lambda c: c < 100.0, lambda c, k: c * k, (1.0,), (3.0,), (),
                    ("float64",), 2)
    assert len(out) == 3 and [sorted(d) for d in out[2]] == [[3, 4]]


def test_the_tape_has_the_declared_tape_dtype_which_no_value_may_have():
    """The recorded tape's node has ``ir/shapes.TAPE`` as its dtype: a node dtype
    (verify accepts it) that carries no gradient and that no variable or cast may take."""
    x = sg.var("x")
    y = sg.while_loop(lambda c: c < 100.0, lambda c: c * x + 0.5, 1.0, snapshots=4)
    g = sg.grad(y, x)
    tapes = [n for n in g.graph.nodes if not n.is_call and n.dtype not in DTYPES]
    assert [(n.op, n.shape, n.dtype) for n in tapes] == [("result", (), TAPE)]
    g.graph.verify()
    assert TAPE in NODE_DTYPES and not is_float(TAPE) and not is_complex(TAPE)
    with pytest.raises(ShapeError, match="dtype must be one of"):
        sg.var("t", dtype=TAPE)
    with pytest.raises(ShapeError, match="dtype must be one of"):
        sg.astype(x, TAPE)
    assert float(sg.evaluate(g, {"x": 1.5})) == pytest.approx(
        (float(sg.evaluate(y, {"x": 1.5 + 1e-6})) - float(sg.evaluate(y, {"x": 1.5 - 1e-6})))
        / 2e-6, rel=1e-7)
