"""Emitted source for sparse derivatives: a function returning ``data`` (the non-zeros, in
a fixed row-major pattern) and the pattern as module constants ``ROWS``, ``COLS`` and
``SHAPE``, so that ``scipy.sparse.csr_matrix((data, (ROWS, COLS)), SHAPE)`` or an
IPOPT-style ``(iRow, jCol, values)`` interface can use it directly.

>>> import numpy as np, symgrad as sg
>>> x = sg.var("x", shape=(4,))
>>> src = sg.to_source(sg.jacobian(x[1:] * x[:-1], x, sparse=True), name="jac")
>>> "ROWS = " in src and "COLS = " in src and "SHAPE = (3, 4)" in src
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import BackendError
from ..transforms.sparse import SparseExpr
from .source import Module, _Plan
from .target import TARGETS, Target

__all__ = ["is_sparse", "sparse_module"]


def is_sparse(outputs: Any) -> bool:
    """Whether ``outputs`` is a sparse derivative (emitted as data plus pattern)."""
    return isinstance(outputs, SparseExpr)


def sparse_module(s: SparseExpr, inputs: Sequence[Any] | None, name: str,
                  scalars: str = "numpy", target: Target = TARGETS["numpy"]
                  ) -> tuple[Module, _Plan]:
    """A module with ``def name(*inputs) -> data`` and the constants ``ROWS``, ``COLS``,
    ``SHAPE``; also returns the function's plan. NumPy only: the pattern is NumPy arrays."""
    if not target.is_numpy:
        raise BackendError(
            f"sparse derivatives are emitted for backend='numpy' only (their pattern is NumPy "
            f"arrays), not {target.name!r}; emit the dense derivative for {target.name!r}, or "
            "use backend='numpy'")
    module = Module(s.data.graph, scalars)
    plan = module.add(name, [s.data.node], inputs, True, ["data"])
    add_pattern(module, s)
    return module, plan


def add_pattern(module: Module, s: SparseExpr, prefix: str = "") -> None:
    """``ROWS``, ``COLS`` and ``SHAPE`` (with ``prefix``) as constants of ``module``."""
    module.constants += [(f"{prefix}ROWS", s.rows), (f"{prefix}COLS", s.cols),
                         (f"{prefix}SHAPE", tuple(s.pattern.shape))]
