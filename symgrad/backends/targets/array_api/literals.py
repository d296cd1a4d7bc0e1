"""The array API targets' constants as exact source text: a 0-d value as a Python literal
or an array of the call's namespace (:func:`array_literal`), an array constant as Python
data that ``_sg_xp_const`` builds in that namespace (:func:`const_spec`).

>>> const_spec(np.array([1.0, 2.0]))
"((1.0, 2.0), (2,), 'float64')"
"""

from __future__ import annotations

import numpy as np

from ....base.errors import SymgradError
from ...literals import LINE, as_data, data_text, wrap_items
from ..numpy.table import NUMPY_TYPE
from .table import ON_DEVICE, number_source

__all__ = ["array_literal", "const_spec"]


def array_literal(value: np.ndarray, others: list[str], strong: bool = False) -> str:
    """A 0-d constant for the array API targets: a Python literal beside an array operand
    where NumPy's promotion gives the same dtype, else ``xp.asarray(literal, dtype=...,
    device=dev)`` (the standard's functions take arrays; a literal alone is not one)."""
    dtype, py = value.dtype.name, value.item()
    if dtype not in NUMPY_TYPE:
        raise SymgradError(f"cannot emit a constant of dtype {dtype}")
    text = number_source(py)
    weak_ok = (any(o != "bool" for o in others)  # a literal beside masks only is typed
               and np.result_type(*others, dtype) == np.result_type(*others, py))
    if strong or not weak_ok:
        return f"xp.asarray({text}, dtype=xp.{dtype}, {ON_DEVICE})"
    return f"({text})" if text.startswith("-") else text


def const_spec(value: np.ndarray) -> str:
    """An array constant as ``((values...), shape, dtype)`` for ``_sg_xp_const``: Python
    data only, built into an array of the call's namespace (a large one: its bytes as
    base64 text, ``(b"...", shape, dtype)``)."""
    dtype = value.dtype.name
    if dtype not in NUMPY_TYPE:
        raise SymgradError(f"cannot emit a constant of dtype {dtype}")
    if as_data(value):
        return f"({data_text(value)}, {value.shape!r}, {dtype!r})"
    items = [number_source(v) for v in value.ravel().tolist()]
    tail = f"), {value.shape!r}, {dtype!r})"
    one = f"(({', '.join(items)}{',' if len(items) == 1 else ''}{tail}"
    if len(one) <= LINE - 10:
        return one
    inner = "\n".join(f"    {line}" for line in wrap_items(items, LINE - 8))
    return f"((\n{inner}\n{tail}"
