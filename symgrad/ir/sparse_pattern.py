"""Sparse patterns: which entries of a matrix are stored, as an attribute value of built-ins.

A pattern is ``(format, (m, n), index_dtype, first, second)``: ``format`` ``"csr"``
(``first`` the row pointers, ``second`` the column indices), ``"csc"`` (the same by
columns) or ``"coo"`` (``first`` the rows, ``second`` the columns of the entries); the
index arrays as the little-endian bytes of ``index_dtype`` (``"int32"`` where it holds
every index, as SciPy chooses, else ``"int64"``). Built-ins only, so it is hashed and
compared exactly, and emitted code holds it as module data; duplicate entries are allowed
(they add up, as in SciPy). The sparse ops (:mod:`symgrad.ops.sparse`) take one as their
``pattern`` attribute; :func:`make_pattern` is the only way to make one.

>>> p = make_pattern("csr", (2, 3), [0, 2, 3], [0, 2, 1])  # [[a, 0, b], [0, c, 0]]
>>> describe(p), [c.tolist() for c in coordinates(p)]
('csr 2x3, 3 stored', [[0, 0, 1], [0, 2, 1]])
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..base.errors import ArgumentError, ShapeError

__all__ = ["FORMATS", "Pattern", "coordinates", "describe", "make_pattern", "nnz",
           "pattern_of", "transposed", "unpack"]

Pattern = tuple  # (format, (m, n), index dtype, first: bytes, second: bytes)
FORMATS = ("csr", "csc", "coo")
_INT32_MAX = 2**31 - 1


def make_pattern(format: str, shape: tuple[int, int], first: Any, second: Any,
                 check: bool = True) -> Pattern:
    """The pattern of a ``format`` matrix of ``shape`` from its index arrays (``indptr`` and
    ``indices`` for csr/csc, ``row`` and ``col`` for coo), checked: pointers from 0, never
    decreasing, ending at the number of entries; every index inside the shape
    (``check=False`` skips the checks: an op checks its pattern once when it is built).

    >>> make_pattern("coo", (2, 2), [0, 1], [1, 0])[:3]
    ('coo', (2, 2), 'int32')
    """
    if format not in FORMATS:
        raise ArgumentError(f"sparse pattern: format must be one of {FORMATS}, got {format!r}")
    m, n = (int(d) for d in shape)
    if m < 0 or n < 0:
        raise ShapeError(f"sparse pattern: invalid shape ({m}, {n})")
    a, b = _indices(first, "first"), _indices(second, "second")
    if check:
        _check(format, m, n, a, b)
    big = max(m, n, a.size, b.size) > _INT32_MAX
    dtype = np.dtype("<i8" if big else "<i4")
    return (format, (m, n), "int64" if big else "int32", a.astype(dtype, copy=False).tobytes(),
            b.astype(dtype, copy=False).tobytes())


def _check(format: str, m: int, n: int, a: np.ndarray, b: np.ndarray) -> None:
    if format == "coo":
        if a.size != b.size:
            raise ShapeError(f"sparse pattern: {a.size} rows but {b.size} columns")
        _within(a, m, "row"), _within(b, n, "column")
        return
    major, minor = (m, n) if format == "csr" else (n, m)
    if a.size != major + 1 or (a.size and (a[0] != 0 or a[-1] != b.size)):
        raise ShapeError(f"sparse pattern: {format} index pointers must have {major + 1} "
                         f"entries, from 0 to the {b.size} indices")
    if np.any(np.diff(a) < 0):
        raise ShapeError(f"sparse pattern: {format} index pointers decrease")
    _within(b, minor, "index")


def _indices(values: Any, what: str) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise ArgumentError(f"sparse pattern: the {what} index array must be 1-D integers, "
                            f"got an array of shape {a.shape} and dtype {a.dtype}")
    return a if a.size else a.astype(np.int64)


def _within(a: np.ndarray, size: int, what: str) -> None:
    if a.size and (int(a.min()) < 0 or int(a.max()) >= size):
        raise ShapeError(f"sparse pattern: a {what} index lies outside 0..{size - 1}")


def unpack(pattern: Pattern) -> tuple[str, tuple[int, int], np.ndarray, np.ndarray]:
    """``(format, (m, n), first, second)``, the index arrays read-only views of the bytes."""
    kind, shape, dtype, first, second = pattern
    dt = np.dtype(dtype).newbyteorder("<")
    return kind, shape, np.frombuffer(first, dt), np.frombuffer(second, dt)


def nnz(pattern: Pattern) -> int:
    """The number of stored entries."""
    return len(pattern[4]) // np.dtype(pattern[2]).itemsize


def coordinates(pattern: Pattern) -> tuple[np.ndarray, np.ndarray]:
    """The row and column of every stored entry, in the order of ``data``."""
    kind, (m, n), first, second = unpack(pattern)
    if kind == "coo":
        return first, second
    major = np.repeat(np.arange(first.size - 1, dtype=first.dtype), np.diff(first))
    return (major, second) if kind == "csr" else (second, major)


def transposed(pattern: Pattern) -> Pattern:
    """The pattern of the transpose with the same ``data``: csr and csc swap (the arrays
    stay), coo swaps its rows and columns."""
    kind, (m, n), dtype, first, second = pattern
    if kind == "coo":
        return ("coo", (n, m), dtype, second, first)
    return ("csc" if kind == "csr" else "csr", (n, m), dtype, first, second)


def describe(pattern: Pattern) -> str:
    """``csr 3x4, 7 stored``: a pattern as people read it."""
    kind, (m, n) = pattern[0], pattern[1]
    return f"{kind} {m}x{n}, {nnz(pattern)} stored"


@functools.lru_cache(maxsize=8)
def _checked(pattern: Any) -> Pattern:
    """``pattern`` if it is a pattern :func:`make_pattern` makes (checked once per pattern)."""
    ok = (type(pattern) is tuple and len(pattern) == 5 and pattern[0] in FORMATS
          and type(pattern[1]) is tuple and len(pattern[1]) == 2
          and all(type(d) is int for d in pattern[1]) and pattern[2] in ("int32", "int64")
          and type(pattern[3]) is bytes and type(pattern[4]) is bytes)
    if not ok:
        raise ArgumentError("a sparse op's pattern is the tuple make_pattern builds "
                            "(symgrad.scipy.sparse makes it); got something else")
    try:
        again = make_pattern(*unpack(pattern))
    except (ShapeError, ValueError) as e:
        raise ArgumentError(f"a sparse op's pattern is not one make_pattern builds: {e}"
                            ) from None
    if again[2:] != pattern[2:]:
        raise ArgumentError("a sparse op's pattern is not in make_pattern's normal form")
    return pattern


def pattern_of(attrs: dict) -> Pattern:
    """The checked pattern of a sparse op's attributes."""
    try:
        return _checked(attrs["pattern"])
    except TypeError:  # unhashable: not a pattern
        raise ArgumentError("a sparse op's pattern is the tuple make_pattern builds") from None
