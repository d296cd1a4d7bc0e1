"""The dtype helpers of ``ir/shapes`` take a dtype's name, a NumPy dtype or a scalar type,
and answer the same for each; anything else is a ShapeError naming it."""

from __future__ import annotations

import numpy as np
import pytest

from symgrad.errors import ShapeError
from symgrad.ir import shapes
from symgrad.ir.shapes import DTYPES

HELPERS = ("dtype_name", "float_dtype", "is_float", "is_complex", "real_dtype",
           "complex_dtype")


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("helper", HELPERS)
def test_a_numpy_dtype_or_scalar_type_answers_as_its_name(helper, name):
    f = getattr(shapes, helper)
    for spelling in (np.dtype(name), np.dtype(name).type, np.dtype(name).str):
        assert f(spelling) == f(name), (helper, spelling)
        assert type(f(spelling)) is type(f(name))


def test_the_answers_are_numpys():
    """real_dtype agrees with NumPy's ``.real``, complex_dtype with ``np.fft.fft``'s result
    dtype, result_dtype with np.result_type, float_dtype with ``np.exp``'s
    result dtype (float64 where that is float16, a dtype symgrad has not)."""
    for name in DTYPES:
        d = np.dtype(name)
        part = np.zeros(1, d).real.dtype.name
        assert shapes.real_dtype(d) == part
        assert shapes.complex_dtype(d) == np.fft.fft(np.ones(2, d)).dtype.name
        exp = np.exp(np.ones(1, d)).dtype.name
        assert shapes.float_dtype(d) == ("float64" if exp == "float16" else exp)  # no float16
        assert shapes.is_complex(d) == (d.kind == "c")
        assert shapes.is_float(d) == (d.kind in "fc")
        for other in DTYPES:
            assert shapes.result_dtype(d, np.dtype(other).type) == np.result_type(name,
                                                                                   other).name


@pytest.mark.parametrize("bad", [None, "no such dtype", 1.5])
def test_what_is_not_a_dtype_is_a_shape_error_naming_it(bad):
    with pytest.raises(ShapeError, match="is not a dtype"):
        shapes.real_dtype(bad)


def test_the_predicates_answer_false_for_what_is_no_dtype():
    """A call with several results has a Results as its dtype: neither float nor complex."""
    from symgrad.ir.op import Results

    several = Results([((3,), "float64"), ((3, 3), "complex128")])
    for value in (several, None, "no such dtype"):
        assert not shapes.is_float(value) and not shapes.is_complex(value)
