"""The NumPy target's constants as exact source text: a 0-d value as a literal typed as
the graph says (:func:`numpy_literal`), an array as source that rebuilds it bit for bit
(:func:`array_source`; a large one from its bytes, :func:`_sg_data`).

>>> array_source(np.array([1.0, 2.0]))
'np.array([1.0, 2.0], dtype=np.float64)'
"""

from __future__ import annotations

import numpy as np

from ....base.errors import SymgradError
from ...literals import LINE, as_data, data_text, wrap_items
from .table import NUMPY_TYPE, scalar_source

__all__ = ["_sg_data", "array_source", "numpy_literal"]


def numpy_literal(value: np.ndarray, others: list[str], strong: bool = False) -> str:
    """A 0-d constant as a literal beside operands of dtypes ``others``, typed exactly as
    the graph says.

    Python literals are "weak" under NumPy's promotion rules (``float32 * 2.0`` stays float32)
    while the graph's constant is a float64 array; where that would change the result dtype
    (or where ``strong``) the literal is wrapped (``np.float64(2.0)``).

    >>> numpy_literal(np.array(2.0), ["float32"]), numpy_literal(np.array(-1.0), ["float64"])
    ('np.float64(2.0)', '(-1.0)')
    """
    dtype = value.dtype.name
    py = value.item()
    if dtype in ("float64", "int64", "bool") or (others and dtype in NUMPY_TYPE):
        weak_ok = not others or np.result_type(*others, dtype) == np.result_type(*others, py)
        if weak_ok and not strong:
            text = scalar_source(py)
        else:
            text = f"{NUMPY_TYPE[dtype]}({scalar_source(py)})"
    elif dtype in NUMPY_TYPE:
        text = f"{NUMPY_TYPE[dtype]}({scalar_source(py)})"
    else:
        raise SymgradError(f"cannot emit a constant of dtype {dtype}")
    return f"({text})" if text.startswith("-") else text


def array_source(value: np.ndarray, indent: str = "") -> str:
    """Source that rebuilds array ``value`` bit for bit, wrapped to the line limit."""
    dtype = value.dtype.name
    if dtype not in NUMPY_TYPE:
        raise SymgradError(f"cannot emit a constant of dtype {dtype}")
    typ = NUMPY_TYPE[dtype]
    raw = value.tobytes()
    size, item = value.size, value.dtype.itemsize
    if size > 1 and raw == raw[:item] * size:
        first = scalar_source(value.reshape(-1)[0].item())
        return f"np.full({value.shape!r}, {first}, dtype={typ})"
    k = int(round(size ** 0.5))
    if dtype == "float64" and size > 1 and k * k == size and raw == np.eye(k).tobytes():
        half = value.shape[: value.ndim // 2]
        if value.ndim % 2 == 0 and int(np.prod(half)) == k:
            tail = "" if value.shape == (k, k) else f".reshape({value.shape!r})"
            return f"np.eye({k}){tail}"
    if as_data(value):
        return f"_sg_data({data_text(value)}, {dtype!r}, {value.shape!r})"
    flat = value.ravel().tolist()
    if value.dtype.kind == "f" and np.isfinite(value).all():
        items = list(map(repr, flat))  # repr of a Python float is exact
    else:
        items = [scalar_source(v) for v in flat]
    text = f"np.array([{', '.join(items)}], dtype={typ})"
    if value.ndim != 1:
        text += f".reshape({value.shape!r})"
    if len(indent) + len(text) <= LINE - 10:
        return text
    inner = "\n".join(f"    {line}" for line in wrap_items(items, LINE - 8))
    tail = f"], dtype={typ})" + ("" if value.ndim == 1 else f".reshape({value.shape!r})")
    return f"np.array([\n{inner}\n{tail}"


def _sg_data(text, dtype, shape):
    """A module constant from its bytes (base64, little-endian), read only.

    >>> _sg_data(b"AAAAAAAA8D8AAAAAAAAAQA==", "float64", (2,))
    array([1., 2.])
    """
    import base64

    import numpy as np

    raw = base64.b64decode(text)
    out = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"))
    return out.astype(dtype, copy=False).reshape(shape)
