"""Bad input gets a SymgradError (or simply works); compiled functions raise what evaluate
raises; evaluate notices input names no variable has."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import symgrad as sg
from symgrad.ops.indexing import IndexOutOfRangeError


@pytest.mark.parametrize("make,error", [
    (lambda: sg.const([[1.0, 2.0], [3.0]]), sg.ShapeError),
    (lambda: sg.sum(sg.var("x", (3, 3)), axis=1.5), sg.ShapeError),
    (lambda: sg.grad(3, "x"), sg.DifferentiationError),
    (lambda: sg.jacobian("f", "x"), sg.DifferentiationError),
    (lambda: sg.evaluate(sg.var("x"), [1.0]), sg.EvaluationError),
    (lambda: sg.evaluate(3), sg.EvaluationError),
    (lambda: sg.evaluate("x"), sg.EvaluationError),
    (lambda: sg.simplify(3), sg.SymgradError),
    (lambda: sg.simplify([sg.var("x"), 2]), sg.SymgradError),
    (lambda: sg.broadcast_to(sg.var("x"), (2**40, 2**40)), sg.ShapeError),
    (lambda: sg.const(np.uint64(2**64 - 1)), sg.ShapeError),
    (lambda: sg.var("x", "34"), sg.ShapeError),
    (lambda: sg.var("x", (2**62, 2**62)), sg.ShapeError),
    (lambda: sg.var("x", 2.5), sg.ShapeError),
    (lambda: sg.var(3), sg.NameConflictError),
    (lambda: sg.to_source(sg.var("x") * 2, name=3), sg.SymgradError),
    (lambda: sg.to_source(sg.var("x") * 2, inputs=[3]), sg.SymgradError),
    (lambda: sg.to_source(sg.var("x") * 2, output_names=5), sg.SymgradError),
    (lambda: sg.compile(sg.var("x") * 2, check_inputs="yes"), sg.SymgradError),
    (lambda: sg.evaluate(sg.var("x"), {"x": 1.0}, unknown="maybe"), sg.EvaluationError),
    (lambda: sg.check_grads(sg.var("x") ** 2, "x", {"x": 1.0}, order=0), sg.SymgradError),
    (lambda: sg.check_grads(sg.var("x") ** 2, "x", [1.0]), sg.SymgradError),
    (lambda: sg.explain(3), sg.SymgradError),
])
def test_bad_input_is_a_symgrad_error(make, error):
    with pytest.raises(error) as info:
        make()
    assert isinstance(info.value, sg.SymgradError)
    assert 0 < len(str(info.value)) < 600


def test_old_exception_types_still_catch_the_new_errors():
    with pytest.raises(ValueError):  # ShapeError is a ValueError, as before
        sg.const([[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError):  # check_grads raised ValueError for a bad order
        sg.check_grads(sg.var("x") ** 2, "x", {"x": 1.0}, order=0)


def test_a_number_or_an_array_as_vjp_seed_simply_works():
    v = sg.var("v", (3,))
    f = v * v
    at = {"v": np.array([1.0, 2.0, 3.0])}
    np.testing.assert_array_equal(sg.evaluate(sg.vjp(f, "v", 1.5), at), [3.0, 6.0, 9.0])
    np.testing.assert_array_equal(sg.evaluate(sg.vjp(f, v, np.array([1.0, 0.0, 2.0])), at),
                                  [2.0, 0.0, 12.0])
    assert sg.evaluate(sg.vjp(sg.sum(f), "v", 2), at).tolist() == [4.0, 8.0, 12.0]


def test_unsigned_integers_that_fit_int64_are_fine():
    assert sg.evaluate(sg.const(np.uint64(5)) + 1) == 6
    np.testing.assert_array_equal(sg.evaluate(sg.const(np.arange(3, dtype=np.uint32)) * 2),
                                  [0, 2, 4])


def test_compiled_functions_raise_what_evaluate_raises():
    x = sg.var("x", (3,))
    i = sg.var("i", dtype="int64")
    f = x[i] * 2.0
    fn = sg.compile(f, inputs=["x", "i"])
    for k in (3, -4, 100):
        with pytest.raises(IndexOutOfRangeError) as ev:
            sg.evaluate(f, {"x": [1.0, 2.0, 3.0], "i": k})
        with pytest.raises(IndexOutOfRangeError) as cf:
            fn([1.0, 2.0, 3.0], k)
        assert isinstance(ev.value, sg.EvaluationError) and isinstance(cf.value, IndexError)
    assert fn([1.0, 2.0, 3.0], -1) == sg.evaluate(f, {"x": [1.0, 2.0, 3.0], "i": -1}) == 6.0
    for bad in ([1.0, 2.0], [[1.0, 2.0, 3.0]], ["a", "b", "c"]):
        with pytest.raises(sg.EvaluationError):
            sg.evaluate(f, {"x": bad, "i": 0})
        with pytest.raises(sg.EvaluationError):
            fn(bad, 0)


def test_a_variable_named_self_can_be_passed_by_keyword():
    s = sg.var("self")
    fn = sg.compile(s * 2.0)
    assert fn(self=1.5) == 3.0 and fn(1.5) == 3.0


def test_evaluate_notices_input_names_no_variable_has():
    x = sg.var("x")
    f = x * 2.0
    with pytest.warns(sg.SymgradWarning, match="'y'.*unknown='ignore'"):
        assert sg.evaluate(f, {"x": 1.0, "y": 2.0}) == 2.0
    with pytest.raises(sg.InputError, match="no variable named 'xx'"):
        sg.evaluate(f, {"x": 1.0, "xx": 2.0}, unknown="error")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sg.evaluate(f, {"x": 1.0, "y": 2.0}, unknown="ignore") == 2.0
        assert sg.evaluate(f, {x: 1.0}) == 2.0


def test_a_numpy_failure_is_the_same_error_from_evaluate_and_compiled_code():
    A = sg.var("A", (2, 2))
    f = sg.linalg.inv(A)
    fn = sg.compile(f)
    caught = []
    for call in (lambda: sg.evaluate(f, {"A": np.zeros((2, 2))}), lambda: fn(np.zeros((2, 2)))):
        with pytest.raises(sg.EvaluationError) as info:
            call()
        assert isinstance(info.value, np.linalg.LinAlgError)  # as NumPy raised it
        caught.append(type(info.value))
    assert caught[0] is caught[1]
