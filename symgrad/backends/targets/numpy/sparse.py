"""The NumPy target's templates for the sparse ops (:mod:`symgrad.ops.sparse`): SciPy's
sparse arrays, built around each call's ``data`` from the pattern the module holds as data.

A template receives the pattern as the name of its module constant (the printer holds each
pattern once per module: :func:`~symgrad.backends.printer.is_data`); given the pattern
itself (a template rendered outside a printer) it writes a small one out and names a large
one by a placeholder that is no module's name.

>>> SPARSE["sparse_matmul"].render(["d", "x"], {"pattern": "_c1", "transpose": False,
...                                             "axis": -1})
'_sg_sparse_matmul(d, x, _c1, False, -1)'
"""

from __future__ import annotations

from typing import Any

from ....ops.sparse import (
    _sg_sparse_arrays,
    _sg_sparse_coords,
    _sg_sparse_gather,
    _sg_sparse_matmul,
    _sg_sparse_matrix,
    _sg_sparse_sample,
    _sg_sparse_scatter,
    _sg_sparse_segments,
)
from ....ops.sparse_solve import (
    _sg_sparse_iterative,
    _sg_sparse_krylov,
    _sg_sparse_lu,
    _sg_sparse_solve,
)
from ...template import Template

_BASE = (_sg_sparse_arrays, _sg_sparse_coords, _sg_sparse_matrix, _sg_sparse_segments)
_INLINE_MAX = 1024  # characters of a pattern written into a line (outside a printer)


def pattern_text(pattern: Any) -> str:
    """The pattern as a template writes it: its module constant's name, or (rendered
    outside a printer) the tuple itself if small, else a name no module defines."""
    if isinstance(pattern, str):
        return pattern
    if sum(len(e) for e in pattern if type(e) is bytes) > _INLINE_MAX // 4:
        return "_sg_pattern_not_held"  # (a byte's repr takes up to 4 characters)
    return repr(pattern)


def _along(kernel: Any, *more: Any) -> Template:
    """``kernel(operands..., pattern, transpose, axis)``."""

    def text(names: list[str], attrs: dict) -> str:
        args = ", ".join([*names, pattern_text(attrs["pattern"]), repr(attrs["transpose"]),
                          repr(attrs["axis"])])
        return f"{kernel.__name__}({args})"

    return Template(text, (kernel, *_BASE, *more))


def _gather(names: list[str], attrs: dict) -> str:
    return f"_sg_sparse_gather({names[0]}, {pattern_text(attrs['pattern'])})"


def _scatter(names: list[str], attrs: dict) -> str:
    return (f"_sg_sparse_scatter({names[0]}, {pattern_text(attrs['pattern'])}, "
            f"{attrs['shape']!r})")


def _krylov() -> Template:
    def text(names: list[str], attrs: dict) -> str:
        args = ", ".join([*names, pattern_text(attrs["pattern"]),
                          *(repr(attrs[k]) for k in ("method", "rtol", "atol", "maxiter",
                                                     "restart", "transpose"))])
        return f"_sg_sparse_krylov({args})[1]"

    return Template(text, (_sg_sparse_krylov, *_BASE))


def _iterative(names: list[str], attrs: dict) -> str:
    keys = ("method", "rtol", "atol", "maxiter", "restart", "transpose", "checked")
    args = ", ".join([*names, f"pattern={pattern_text(attrs['pattern'])}",
                      *(f"{k}={attrs[k]!r}" for k in keys)])
    return f"_sg_sparse_iterative({args})"


SPARSE: dict[str, Template] = {
    "sparse_matmul": _along(_sg_sparse_matmul),
    "sparse_sample": _along(_sg_sparse_sample),
    "sparse_gather": Template(_gather, (_sg_sparse_gather, *_BASE)),
    "sparse_scatter": Template(_scatter, (_sg_sparse_scatter, *_BASE)),
    "sparse_solve": _along(_sg_sparse_solve, _sg_sparse_lu),
    "sparse_iterative": Template(_iterative, (_sg_sparse_iterative, _sg_sparse_krylov, *_BASE)),
    "sparse_iterative_info": _krylov(),
}
