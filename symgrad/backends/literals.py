"""Numbers and arrays as exact source text: every constant of a graph, bit for bit.

A 0-d constant is inlined as a literal (typed where NumPy's promotion would otherwise
change the result's dtype); an array constant is hoisted to module level, as NumPy source
(:func:`array_source`) or, for the array API targets, as Python data the call's namespace
turns into an array (:func:`const_spec`).

>>> array_source(np.array([1.0, 2.0]))
'np.array([1.0, 2.0], dtype=np.float64)'
"""

from __future__ import annotations

import numpy as np

from ..base.errors import SymgradError
from .targets.array_api.table import ON_DEVICE, number_source
from .targets.numpy.table import NUMPY_TYPE, scalar_source

__all__ = ["DATA_FROM", "LINE", "array_literal", "array_source", "as_data", "const_spec",
           "data_helpers", "data_source", "numpy_literal", "wrap_items"]

LINE = 100  # maximum line length of the emitted text (ruff's limit for this project)
# an array constant of at least this many elements is written as its bytes (base64 text,
# decoded once at import), not as a list of numbers: a 10^6-element list is 21 MB of source
# that CPython's compiler needs seconds and gigabytes to read
DATA_FROM = 4096
BYTES_SHOWN = 64  # bytes of module data written as a literal; more: base64 text


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
        return f"({_b64(value)}, {value.shape!r}, {dtype!r})"
    items = [number_source(v) for v in value.ravel().tolist()]
    tail = f"), {value.shape!r}, {dtype!r})"
    one = f"(({', '.join(items)}{',' if len(items) == 1 else ''}{tail}"
    if len(one) <= LINE - 10:
        return one
    inner = "\n".join(f"    {line}" for line in wrap_items(items, LINE - 8))
    return f"((\n{inner}\n{tail}"


def wrap_items(items: list[str], width: int) -> list[str]:
    """Comma-separated ``items`` in lines of at most ``width`` characters (linear time)."""
    lines, line = [], ""
    for item in items:
        piece = f"{item},"
        if line and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = piece
        else:
            line = f"{line} {piece}" if line else piece
    if line:
        lines.append(line[:-1])
    return lines


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
        return f"_sg_data({_b64(value)}, {dtype!r}, {value.shape!r})"
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


def data_source(value: tuple) -> str:
    """Module data (a tuple of built-ins holding bytes: a sparse pattern) as Python source
    that rebuilds it exactly: numbers, strings and tuples as their ``repr``, bytes of more
    than :data:`BYTES_SHOWN` as base64 text decoded once at import (``_sg_bytes``).

    >>> data_source(("csr", (2, 2), b"\\x00"))
    "('csr', (2, 2), b'\\\\x00')"
    """
    if type(value) is bytes:
        return f"_sg_bytes({_b64_bytes(value)})" if len(value) > BYTES_SHOWN else repr(value)
    if type(value) is tuple:
        items = [data_source(v) for v in value]
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
    if type(value) in (int, str, bool, type(None)):
        return repr(value)
    raise SymgradError(f"cannot emit module data holding {type(value).__name__}")


def data_helpers(values: list[tuple]) -> list:
    """The helpers the source of module data ``values`` calls (``_sg_bytes``)."""
    todo, big = list(values), False
    while todo and not big:
        v = todo.pop()
        big = type(v) is bytes and len(v) > BYTES_SHOWN
        todo += list(v) if type(v) is tuple else []
    return [_sg_bytes] if big else []


def _b64_bytes(raw: bytes) -> str:
    import base64

    return repr(base64.b64encode(raw))


def _sg_bytes(text):
    """Module data's bytes from their base64 text.

    >>> _sg_bytes(b"AAE=")
    b'\\x00\\x01'
    """
    import base64

    return base64.b64decode(text)


def as_data(value: np.ndarray) -> bool:
    """Whether array constant ``value`` is written as its bytes (see :data:`DATA_FROM`)."""
    return value.size >= DATA_FROM


def _b64(value: np.ndarray) -> str:
    """The little-endian bytes of ``value`` as a base64 ``bytes`` literal (exact, and
    about 1.33 characters a byte where a float's ``repr`` takes 20)."""
    import base64

    raw = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()
    return repr(base64.b64encode(raw))


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
