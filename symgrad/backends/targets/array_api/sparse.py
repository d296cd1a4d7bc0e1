"""The array API targets' forms of the sparse ops (:mod:`symgrad.ops.sparse`): gathers and
a scatter-add (JAX's ``.at[].add``, PyTorch's ``index_add``, NumPy's ``add.at``), the
matrix kept as its stored values and index arrays, never densified. The solves have no
form here (the standard, JAX on a CPU and PyTorch have no sparse LU; SciPy's Krylov
solvers report an ``info`` these libraries do not): :data:`UNSUPPORTED` says so.

The helpers use only the standard's functions on ``xp`` (and ``_sg_xp_add_at``'s faster
routes); the pattern's index arrays come from the module's data as int64 arrays on the
inputs' device (under ``jax.jit``: constants of the trace).

>>> import numpy as np, array_api_compat.numpy as xp
>>> from symgrad.ir.sparse_pattern import make_pattern
>>> p = make_pattern("csr", (2, 2), [0, 1, 2], [1, 0])
>>> _sg_xp_sparse_matmul(xp, xp.asarray([2.0, 3.0]), xp.asarray([1.0, 10.0]), p, False, -1)
array([20.,  3.])
"""

from __future__ import annotations

from typing import Any

from ...template import Template
from ..numpy.sparse import pattern_text
from .helpers import _sg_xp_add_at, _sg_xp_device

_REASON = ("a sparse solve: the array API standard, JAX on a CPU and PyTorch have no sparse "
           "LU, and SciPy's Krylov solvers report an info they do not")
UNSUPPORTED: dict[str, str] = dict.fromkeys(
    ("sparse_solve", "sparse_iterative", "sparse_iterative_info"), _REASON)


def _sg_xp_sparse_coords(xp, pattern, device):
    """The row and column (int64 arrays of ``xp`` on ``device``) of each stored entry."""
    import sys

    kind, (m, n), dtype, first, second = pattern
    if sys.byteorder != "little":
        raise RuntimeError("symgrad's sparse patterns are little-endian bytes")

    def ints(raw):
        if not raw:
            return xp.zeros((0,), dtype=xp.int64, device=device)
        typed = memoryview(bytearray(raw)).cast("i" if dtype == "int32" else "q")
        return xp.astype(xp.asarray(typed, dtype=getattr(xp, dtype), device=device), xp.int64)

    a, b = ints(first), ints(second)
    if kind == "coo":
        return a, b
    at = xp.arange(b.shape[0], dtype=xp.int64, device=device)
    major = xp.searchsorted(a, at, side="right") - 1
    return (major, b) if kind == "csr" else (b, major)


def _sg_xp_sparse_matmul(xp, data, x, pattern, transpose, axis):
    """``A @ x`` along ``axis`` of ``x`` (``A.T`` if ``transpose``): each stored entry's
    product with the element of ``x`` it reads, added into its row."""
    rows, cols = _sg_xp_sparse_coords(xp, pattern, _sg_xp_device(data, x))
    size = pattern[1][1] if transpose else pattern[1][0]
    rows, cols = (cols, rows) if transpose else (rows, cols)
    trail = -axis - 1
    z = xp.reshape(data, tuple(data.shape) + (1,) * trail) * xp.take(x, cols, axis=axis)
    z = xp.moveaxis(z, axis, -1)
    lead, count = tuple(z.shape[:-1]), rows.shape[0]
    flat = xp.reshape(z, (-1, count))
    out = xp.zeros((flat.shape[0], size), dtype=flat.dtype, device=_sg_xp_device(flat))
    y = xp.reshape(_sg_xp_add_at(xp, out, rows, flat), lead + (size,))
    return xp.moveaxis(y, -1, axis)


def _sg_xp_sparse_sample(xp, u, v, pattern, transpose, axis):
    """``z[.., p] = sum u[.., r_p, ..] v[.., c_p, ..]`` over the axes after ``axis``."""
    rows, cols = _sg_xp_sparse_coords(xp, pattern, _sg_xp_device(u, v))
    rows, cols = (cols, rows) if transpose else (rows, cols)
    z = xp.take(u, rows, axis=axis) * xp.take(v, cols, axis=axis)
    trail = tuple(range(axis + 1, 0))
    return xp.sum(z, axis=trail) if trail else z


def _sg_xp_sparse_flat(xp, pattern, shape, device):
    """The flat position in a ``shape`` matrix (1 for a broadcast axis) of each entry."""
    rows, cols = _sg_xp_sparse_coords(xp, pattern, device)
    rows = rows if shape[0] != 1 else rows * 0
    cols = cols if shape[1] != 1 else cols * 0
    return rows * shape[1] + cols


def _sg_xp_sparse_gather(xp, d, pattern):
    """``d[.., r_p, c_p]`` for every stored entry ``p`` (a length-1 axis broadcasts)."""
    shape = tuple(d.shape[-2:])
    pos = _sg_xp_sparse_flat(xp, pattern, shape, _sg_xp_device(d))
    flat = xp.reshape(d, tuple(d.shape[:-2]) + (shape[0] * shape[1],))
    return xp.take(flat, pos, axis=-1)


def _sg_xp_sparse_scatter(xp, data, pattern, shape):
    """The dense ``shape`` matrix of ``data`` on ``pattern`` (duplicates added)."""
    dev = _sg_xp_device(data)
    pos = _sg_xp_sparse_flat(xp, pattern, shape, dev)
    lead = tuple(data.shape[:-1])
    flat = xp.reshape(data, (-1, data.shape[-1]))
    out = xp.zeros((flat.shape[0], shape[0] * shape[1]), dtype=data.dtype, device=dev)
    return xp.reshape(_sg_xp_add_at(xp, out, pos, flat), lead + tuple(shape))


_BASE = (_sg_xp_sparse_coords, _sg_xp_add_at, _sg_xp_device)


def _along(kernel: Any) -> Template:
    def text(names: list[str], attrs: dict) -> str:
        args = ", ".join(["xp", *names, pattern_text(attrs["pattern"]),
                          repr(attrs["transpose"]), repr(attrs["axis"])])
        return f"{kernel.__name__}({args})"

    return Template(text, (kernel, *_BASE))


def _gather(names: list[str], attrs: dict) -> str:
    return f"_sg_xp_sparse_gather(xp, {names[0]}, {pattern_text(attrs['pattern'])})"


def _scatter(names: list[str], attrs: dict) -> str:
    return (f"_sg_xp_sparse_scatter(xp, {names[0]}, {pattern_text(attrs['pattern'])}, "
            f"{attrs['shape']!r})")


SPARSE: dict[str, Template | None] = {
    "sparse_matmul": _along(_sg_xp_sparse_matmul),
    "sparse_sample": _along(_sg_xp_sparse_sample),
    "sparse_gather": Template(_gather, (_sg_xp_sparse_gather, _sg_xp_sparse_flat, *_BASE)),
    "sparse_scatter": Template(_scatter, (_sg_xp_sparse_scatter, _sg_xp_sparse_flat, *_BASE)),
    **dict.fromkeys(UNSUPPORTED),
}
