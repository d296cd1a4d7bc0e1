"""The NumPy interpreter: the notes' forward examples, the network, input validation."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.interpreter import run

SHAPES = {"W": (4, 3), "x": (3,), "b": (4,), "V": (2, 4), "g": (2,)}


def test_collins_example_2_forward():
    u1, u2 = sg.var("u1"), sg.var("u2")
    u3 = u1 + u2
    u4 = u2 * u3
    assert sg.evaluate([u3, u4], {"u1": 2.0, "u2": 3.0}) == [5.0, 15.0]
    assert isinstance(sg.evaluate(u4, {"u1": 2.0, "u2": 3.0}), float)


def network():
    """Collins Fig. 1.4: o = -LOG-SOFTMAX(V tanh(W x + b) + gamma)[y]."""
    v = {k: sg.var(k, s) for k, s in SHAPES.items()}
    y = sg.var("y", dtype="int64")
    out = -sg.log_softmax(v["V"] @ sg.tanh(v["W"] @ v["x"] + v["b"]) + v["g"])[y]
    return out, v, y


def network_inputs(rng, y=1):
    at = {k: rng.standard_normal(s) for k, s in SHAPES.items()}
    at["y"] = np.int64(y)
    return at


def numpy_network(at):
    h = np.tanh(at["W"] @ at["x"] + at["b"])
    logits = at["V"] @ h + at["g"]
    top = np.max(logits)
    q = logits - (top + np.log(np.sum(np.exp(logits - top))))
    return -q[at["y"]]


@pytest.mark.parametrize("y", [0, 1])
def test_network_value_matches_numpy(rng, y):
    f, _, _ = network()
    assert f.shape == () and f.dtype == "float64"
    for _ in range(3):
        at = network_inputs(rng, y)
        assert sg.evaluate(f, at) == pytest.approx(numpy_network(at), rel=1e-13, abs=1e-14)


def test_network_value_is_stable_for_large_logits(rng):
    f, _, _ = network()
    at = network_inputs(rng, 0)
    at["g"] = np.array([1000.0, -1000.0])
    got = sg.evaluate(f, at)
    assert np.isfinite(got) and got == pytest.approx(numpy_network(at), abs=1e-12)


def test_missing_input_names_the_variable():
    x, y = sg.var("x"), sg.var("y")
    with pytest.raises(sg.InputError, match="'y'"):
        sg.evaluate(x * y, {"x": 1.0})
    with pytest.raises(KeyError):  # InputError is also a KeyError
        sg.evaluate(x * y, {"x": 1.0})
    with pytest.raises(sg.EvaluationError):
        sg.evaluate(x * y, {})


def test_wrong_shape_names_variable_and_both_shapes():
    W = sg.var("W", (4, 3))
    with pytest.raises(sg.EvaluationError, match=r"'W'.*\(3, 4\).*\(4, 3\)") as err:
        sg.evaluate(sg.sum(W), {"W": np.zeros((3, 4))})
    assert not isinstance(err.value, sg.InputError)
    with pytest.raises(sg.EvaluationError, match=r"\(3,\)"):
        sg.evaluate(sg.var("v", (3,)) * 2.0, {"v": 1.0})


def test_wrong_dtype_float_for_int_variable():
    v = sg.var("v", (3,))
    y = sg.var("y", dtype="int64")
    f = v[y]
    assert sg.evaluate(f, {"v": [1.0, 2.0, 3.0], "y": 2}) == 3.0
    with pytest.raises(sg.EvaluationError, match="'y'.*float64.*int64"):
        sg.evaluate(f, {"v": [1.0, 2.0, 3.0], "y": 2.0})


def test_int_values_for_float_variable_are_cast():
    x = sg.var("x", (2,))
    out = sg.evaluate(x / 2, {"x": np.array([1, 3])})
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [0.5, 1.5])


def test_extra_inputs_are_ignored():
    x = sg.var("x")
    assert sg.evaluate(x + 1.0, {"x": 1.0, "unused": 5.0, "W": np.zeros(3)}) == 2.0


def test_inputs_keyed_by_expr():
    x = sg.var("x")
    assert sg.evaluate(x * 3.0, {x: 2.0}) == 6.0


def test_list_in_list_out_and_single_in_single_out():
    x = sg.var("x", (2,))
    a, b = sg.sum(x), x * 2.0
    got = sg.evaluate([a, b], {"x": [1.0, 2.0]})
    assert isinstance(got, list) and len(got) == 2
    assert got[0] == 3.0
    np.testing.assert_array_equal(got[1], [2.0, 4.0])
    assert sg.evaluate([], {}) == []
    single = sg.evaluate(b, {"x": [1.0, 2.0]})
    assert isinstance(single, np.ndarray)


def test_only_ancestors_are_computed():
    x, y = sg.var("x"), sg.var("y")
    a = sg.exp(x)
    b = a * y  # in the same graph as a, but not needed for a
    assert b.graph is a.graph
    assert sg.evaluate(a, {"x": 0.0}) == 1.0  # y is not required
    values = run(a.graph, [a.node], {"x": np.float64(0.0)})
    assert set(values) == {a.node}


def test_evaluate_is_deterministic_and_does_not_mutate_inputs(rng):
    f, _, _ = network()
    at = network_inputs(rng)
    copies = {k: np.copy(v) for k, v in at.items()}
    for v in at.values():
        if isinstance(v, np.ndarray):
            v.flags.writeable = False  # read-only inputs must work
    first = sg.evaluate(f, at)
    assert sg.evaluate(f, at) == first
    for k in at:
        np.testing.assert_array_equal(at[k], copies[k])


def test_evaluate_exprs_from_different_graphs_together():
    x, y = sg.var("x"), sg.var("y")
    a, b = x + 1.0, y * 2.0
    assert sg.evaluate([a, b], {"x": 1.0, "y": 3.0}) == [2.0, 6.0]


def test_non_expr_is_an_error():
    with pytest.raises(sg.EvaluationError):
        sg.evaluate([sg.var("x"), 3.0], {"x": 1.0})


def test_array_creation_functions_match_numpy():
    x = sg.var("x", (3,))
    cases = [
        (sg.zeros(3), np.zeros(3)), (sg.ones((2, 3)), np.ones((2, 3))),
        (sg.full((2,), 7), np.full((2,), 7.0)), (sg.arange(4), np.arange(4)),
        (sg.zeros(3, dtype="int64"), np.zeros(3, dtype=np.int64)),
        (sg.parse("x * ones(3) + arange(3)", shapes={"x": (3,)}), np.array([1.0, 2.0, 3.0])),
    ]
    for e, want in cases:
        got = np.asarray(sg.evaluate(e, {"x": np.ones(3)}))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        fn = sg.compile(e, inputs=[x] if "x" in e.graph.variables else [])
        np.testing.assert_array_equal(fn(np.ones(3)) if "x" in e.graph.variables else fn(), want)
    assert np.array_equal(sg.evaluate(sg.grad(sg.sum(x * sg.arange(3)), x), {"x": np.ones(3)}),
                          [0.0, 1.0, 2.0])
    with pytest.raises(sg.ShapeError):
        sg.zeros((2, -1))
    with pytest.raises(sg.ShapeError):
        sg.full(3, "a")


def _scan_runs(monkeypatch) -> list:
    """The bodies of the scans the interpreter runs from now on, one entry per run."""
    from symgrad.ops import loops

    runs: list = []
    real = loops.run_scan
    monkeypatch.setattr(loops, "run_scan", lambda body, *a: runs.append(body) or real(body, *a))
    return runs


def _tanh_rnn(w: np.ndarray, c: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
    """The final carry and the stacked carries of ``c <- tanh(c * w + 0.1)``, by hand."""
    ys = []
    for _ in range(length):
        ys.append(c)
        c = np.tanh(c * w + 0.1)
    return c, np.array(ys)


def test_one_scan_call_runs_its_loop_once_and_reads_changed_operands_again(monkeypatch):
    w = sg.var("w", (3,))
    c, ys = sg.scan(lambda c, _: (sg.tanh(c * w + 0.1), c), w, length=4)
    runs = _scan_runs(monkeypatch)
    v = np.array([0.5, -1.0, 2.0])
    got = sg.evaluate([c, ys, c[0] + ys[1, 2]], {"w": v})
    want_c, want_ys = _tanh_rnn(v, v, 4)
    np.testing.assert_allclose(got[0], want_c, rtol=1e-14)
    np.testing.assert_allclose(got[1], want_ys, rtol=1e-14)
    assert len(runs) == 1
    v[:] = [0.25, 0.75, -0.5]  # the same array object, changed in place by the user
    got = sg.evaluate([c, ys], {"w": v})
    want_c, want_ys = _tanh_rnn(v, v, 4)
    np.testing.assert_allclose(got[0], want_c, rtol=1e-14)
    np.testing.assert_allclose(got[1], want_ys, rtol=1e-14)
    assert len(runs) == 2


def test_the_results_of_one_scan_call_do_not_copy_its_operands():
    import tracemalloc

    xs = sg.var("xs", (3, 1 << 18))
    c, ys = sg.scan(lambda c, x: (c * x[0] + x[1], c), 1.0, xs)
    v = np.full((3, 1 << 18), 0.5)
    tracemalloc.start()
    try:
        got = sg.evaluate([c, ys, c + 1.0], {"xs": v})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got[0] == 1.0 and got[1].tolist() == [1.0, 1.0, 1.0]
    assert peak < v.nbytes / 4  # the operand's bytes were copied once per result
