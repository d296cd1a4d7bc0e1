"""What every target's constants share: the line limit, lists of items wrapped to it, and
large arrays written as their bytes.

A 0-d constant is inlined as a literal, an array constant hoisted to module level, each as
its target writes it (NumPy: :mod:`.targets.numpy.literals`; the array API:
:mod:`.targets.array_api.literals`), bit for bit. Module data (an attribute holding bytes: a
sparse pattern) is plain Python, the same for every target (:func:`data_source`).

>>> wrap_items(["1.0", "2.0", "3.0"], 9)
['1.0, 2.0,', '3.0']
>>> data_text(np.array([1.0, 2.0]))
"b'AAAAAAAA8D8AAAAAAAAAQA=='"
"""

from __future__ import annotations

import numpy as np

__all__ = ["DATA_FROM", "LINE", "as_data", "data_helpers", "data_source", "data_text",
           "wrap_items"]

LINE = 100  # maximum line length of the emitted text (ruff's limit for this project)
# an array constant of at least this many elements is written as its bytes (base64 text,
# decoded once at import), not as a list of numbers: CPython's compiler reads a long list
# of numbers slowly, with memory growing with its length
DATA_FROM = 4096
BYTES_SHOWN = 64  # bytes of module data (a sparse pattern) written as a literal; more: base64


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


def as_data(value: np.ndarray) -> bool:
    """Whether array constant ``value`` is written as its bytes (see :data:`DATA_FROM`)."""
    return value.size >= DATA_FROM


def data_text(value: np.ndarray) -> str:
    """The little-endian bytes of ``value`` as a base64 ``bytes`` literal (exact, and
    about 1.33 characters a byte where a float's ``repr`` takes 20)."""
    import base64

    raw = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()
    return repr(base64.b64encode(raw))


def data_source(value: tuple) -> str:
    """Module data (a tuple of built-ins holding bytes: a sparse pattern) as Python source
    that rebuilds it exactly: numbers, strings and tuples as their ``repr``, bytes of more
    than :data:`BYTES_SHOWN` as base64 text decoded once at import (``_sg_bytes``).

    >>> data_source(("csr", (2, 2), b"\\x00"))
    "('csr', (2, 2), b'\\\\x00')"
    """
    if type(value) is bytes:
        if len(value) <= BYTES_SHOWN:
            return repr(value)
        import base64

        return f"_sg_bytes({base64.b64encode(value)!r})"
    if type(value) is tuple:
        items = [data_source(v) for v in value]
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
    if type(value) in (int, str, bool, type(None)):
        return repr(value)
    raise TypeError(f"cannot emit module data holding {type(value).__name__}")


def data_helpers(values: list[tuple]) -> list:
    """The helpers the source of module data ``values`` calls (``_sg_bytes``)."""
    todo, big = list(values), False
    while todo and not big:
        v = todo.pop()
        big = type(v) is bytes and len(v) > BYTES_SHOWN
        todo += list(v) if type(v) is tuple else []
    return [_sg_bytes] if big else []


def _sg_bytes(text):
    """Module data's bytes from their base64 text.

    >>> _sg_bytes(b"AAE=")
    b'\\x00\\x01'
    """
    import base64

    return base64.b64decode(text)
