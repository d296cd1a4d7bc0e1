"""User values made exact: subclasses of str/int/float become the built-ins without running
their methods, attribute values are plain data or refused, ``freeze`` keys tell 1 from 1.0
and 0.0 from -0.0, names, shapes and dtypes are checked with messages that say what to use,
constants become read-only arrays of the supported dtypes, and Python numbers are NEP 50's
weak scalars beside typed operands."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.ir import values as V


class Loud(str):
    """A str whose methods would run user code: none of them may be called."""

    def __str__(self):
        raise AssertionError("__str__ ran")

    def __eq__(self, other):
        raise AssertionError("__eq__ ran")

    __hash__ = str.__hash__


class Sneaky(int):
    def __index__(self):
        raise AssertionError("__index__ ran")


def test_exact_turns_subclasses_into_builtins_without_calling_them():
    got = V.exact({"k": [Loud("x"), (Sneaky(3), 2.5)], "s": slice(Sneaky(1), None)})
    assert type(got["k"][0]) is str and got["k"][0] == "x"
    assert type(got["k"][1][0]) is int and got["k"][1][0] == 3
    assert type(got["s"].start) is int
    assert V.exact_str(Loud("name"), "x") == "name"
    assert V.exact_int(Sneaky(7), "n") == 7 and V.exact_int(np.int16(4), "n") == 4
    with pytest.raises(sg.SymgradError, match="n must be an int, got"):
        V.exact_int(True, "n")
    deep: object = 1
    for _ in range(70):
        deep = [deep]
    with pytest.raises(sg.ShapeError, match="nested more than 64 levels"):
        V.exact(deep)


def test_plain_accepts_data_and_refuses_objects_naming_the_attribute():
    assert V.plain({"a": [np.float32(1.5), None, ...]}, "attrs") == {"a": [1.5, None, ...]}
    assert type(V.plain(np.bool_(True), "flag")) is bool
    for bad in (np.zeros(2), object(), {1: "a"}, 1j):
        with pytest.raises(sg.ArgumentError, match="myattr cannot be .*pass arrays as operands"):
            V.plain(bad, "myattr")


def test_exact_choice_compares_exact_builtins_only():
    assert V.exact_choice(Loud("forward"), "mode", ("forward", "reverse")) == "forward"
    assert V.exact_choice(np.bool_(False), "flag", (True, False)) is False
    with pytest.raises(sg.ArgumentError, match="mode must be one of 'forward', 'reverse'"):
        V.exact_choice("sideways", "mode", ("forward", "reverse"))
    with pytest.raises(sg.ArgumentError):
        V.exact_choice(np.array(["forward"]), "mode", ("forward",))


def test_freeze_tells_apart_what_numpy_would_call_equal():
    keys = [V.freeze(v) for v in (1, 1.0, True, 0.0, -0.0, (1, 2), (1.0, 2), [1, 2],
                                  np.array([1, 2]), np.array([1.0, 2.0]), slice(1, 2))]
    assert len(set(keys)) == len(keys)
    assert V.freeze(np.float64(0.5)) == V.freeze(0.5)
    assert V.freeze(np.int32(3)) == V.freeze(3)
    assert V.freeze({"b": 1, "a": (2, 3)}) == V.freeze({"a": (2, 3), "b": 1})
    assert V.freeze(float("nan")) == V.freeze(float("nan"))  # a key, unlike the value


def test_names_shapes_and_dtypes_are_checked_with_what_to_use():
    assert V.check_name(Loud("theta")) == "theta"
    for bad, match in (("2x", "not a valid variable name"), ("lambda", "not a valid"),
                       ("__x", "reserved"), ("np", "reserved"), (3, "not a valid")):
        with pytest.raises(sg.NameConflictError, match=match):
            V.check_name(bad)
    assert V.check_shape(np.int64(3), "x") == (3,) and V.check_shape([2, 0], "x") == (2, 0)
    for bad, match in (("3", "int or a tuple"), ((2, True), "tuple of ints"),
                       ((2, -1), "non-negative"), ((2**32, 2**32), "more than 2\\*\\*63")):
        with pytest.raises(sg.ShapeError, match=match):
            V.check_shape(bad, "x")
    assert V.check_dtype(np.float32, "x") == "float32" and V.check_dtype("int64", "x") == "int64"
    with pytest.raises(sg.ShapeError, match="complex dtypes are not supported"):
        V.check_dtype("complex128", "x")
    with pytest.raises(sg.ShapeError, match="dtype must be one of"):
        V.check_dtype("float16", "x")


def test_constants_are_read_only_arrays_of_the_supported_dtypes():
    cases = [([1, 2], np.int64), (2.5, np.float64), (np.float32([1.0]), np.float32),
             (np.uint8([3]), np.int64), (np.int32([1]), np.int32), ([True], np.bool_),
             (np.float16(1.5), np.float64)]
    for value, dtype in cases:
        arr = V.as_constant(value)
        assert arr.dtype == dtype and not arr.flags.writeable
        np.testing.assert_array_equal(arr, np.asarray(value))
    for bad, match in (([[1, 2], [3]], "different lengths"), (1j, "complex numbers"),
                       (np.uint64([2**64 - 1]), "does not fit int64"), ("abc", "cannot use")):
        with pytest.raises(sg.ShapeError, match=match):
            V.as_constant(bad)


def test_python_numbers_are_weak_beside_typed_operands():
    """NEP 50: ``2.0 * x`` keeps x's float32 and ``2 * i`` its int32, as NumPy 2 computes."""
    for number, dtypes in ((2.0, ["float32"]), (2, ["int32"]), (2.5, ["int32"]),
                           (3, ["float32", "int64"])):
        got = V.weak(number, dtypes)
        want = np.result_type(*[np.ones(1, d) for d in dtypes], number)
        assert np.result_type(*dtypes, got.dtype) == want
    assert V.weak(2, None) == 2
    with pytest.raises(sg.ShapeError, match="does not fit the operands' dtype int32"):
        V.weak(2**40, ["int32"])
