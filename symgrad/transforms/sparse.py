"""Sparse Jacobians and Hessians by colouring: a few batched passes, then recovery.

With a sparsity pattern (:mod:`.sparsity`) and a colouring of it (:mod:`.colouring`),
``p`` seed directions replace ``n``: columns of one colour never share a row, so ``J S``
(one batched forward pass with the ``p`` rows of ``S^T`` as tangents) holds every non-zero
of ``J``, and a reverse pass with a row colouring holds them in ``S^T J``. A Hessian's
``H S`` is one batched forward pass over the gradient graph (forward over reverse), with a
star colouring (fewer colours, entries read by symmetry) or a distance-2 one. The
non-zeros are then one gather from the compressed result, at positions known when the graph
is built: ``data`` is an Expr of shape ``(nnz,)`` in the pattern's row-major order. Here:
the plans (:func:`jacobian_plan`, :func:`hessian_plan`), their :func:`seeds` and the
gather (:func:`compressed`); :mod:`.derivatives` runs the batched products between them.

>>> import numpy as np, symgrad as sg
>>> x = sg.var("x", shape=(50,))
>>> H = sg.hessian(sg.sum((x[1:] - x[:-1] ** 2) ** 2), x, sparse=True)
>>> H.colours, H.nnz, H.shape
(3, 148, (50, 50))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.errors import DifferentiationError
from ..ir.expr import Expr, F
from ..ir.shapes import fmt
from ..ir.values import exact
from .colouring import column_colouring, recovery, seed_rows, star_colouring
from .sparsity import Pattern, hessian_pattern, jacobian_pattern

MODES = (None, "forward", "reverse")
METHODS = (None, "star", "distance2")


@dataclass(frozen=True)
class SparseExpr:
    """A sparse derivative: ``data`` (an Expr of shape ``(nnz,)``) holds the entries of
    ``pattern`` in row-major order. The matrix is ``pattern.shape`` (output elements x
    input elements, flattened); ``shape`` is the derivative's full shape
    (``f.shape + wrt.shape``). ``colours`` seed directions were used (``method``).

    ``sg.evaluate`` gives a ``scipy.sparse.csr_matrix`` (a :class:`SparseValue` without
    SciPy); ``sg.to_source``/``sg.compile`` emit a function returning ``data``, with the
    pattern as module constants ``ROWS``, ``COLS``, ``SHAPE``.
    """

    data: Expr
    pattern: Pattern
    shape: tuple[int, ...]
    colours: int
    method: str

    @property
    def graph(self):
        return self.data.graph

    @property
    def rows(self) -> np.ndarray:
        return self.pattern.rows

    @property
    def cols(self) -> np.ndarray:
        return self.pattern.cols

    @property
    def nnz(self) -> int:
        return self.pattern.nnz

    def todense(self) -> Expr:
        """The dense derivative (shape ``shape``) filled from ``data``: one scatter into
        zeros (each position once)."""
        m, n = self.pattern.shape
        graph = self.data.graph
        with graph.provenance(self.data.node, "tangent"):  # flat positions: one index array
            flat = Expr(graph, graph.const(self.rows * n + self.cols))
            dense = F.index_add(self.data, flat, key=("@",), shape=(m * n,), unique=True)
            return F.reshape(dense, self.shape)

    def __repr__(self) -> str:
        return (f"<SparseExpr {fmt(self.shape)}: {self.nnz} entries of a "
                f"{self.pattern.shape[0]}x{self.pattern.shape[1]} matrix, {self.colours} "
                f"colours ({self.method})>")


@dataclass(frozen=True)
class Plan:
    """A pattern, its colouring and where each entry is read: decided before building."""

    pattern: Pattern
    colour: np.ndarray
    positions: np.ndarray
    method: str

    @property
    def colours(self) -> int:
        return int(self.colour.max()) + 1 if self.colour.size else 0


def jacobian_plan(f: Expr, w: Expr, mode: str | None = None) -> Plan:
    """Pattern and colouring of ``df/dw``: columns (forward mode) or rows (reverse mode),
    whichever needs fewer colours unless ``mode`` says."""
    mode = exact(mode)
    if mode not in MODES:
        raise DifferentiationError(f"sparse jacobian: mode must be 'forward', 'reverse' or "
                                   f"None, got {mode!r}")
    pattern = jacobian_pattern([f], [w])
    plans = []
    if mode in (None, "forward"):
        colour = column_colouring(pattern)
        plans.append(Plan(pattern, colour, recovery(pattern, colour, False), "forward"))
    if mode is None and plans[0].colours <= _widest(pattern.T):
        return plans[0]  # a row colouring needs at least a column's length: no better
    if mode in (None, "reverse"):
        pt = pattern.T
        colour = column_colouring(pt)
        positions_t = recovery(pt, colour, False)
        keys_t = pt.rows * pattern.shape[0] + pt.cols  # sorted: row-major in P^T
        where = np.searchsorted(keys_t, pattern.cols * pattern.shape[0] + pattern.rows)
        plans.append(Plan(pattern, colour, positions_t[where], "reverse"))
    return min(plans, key=lambda p: p.colours)


def hessian_plan(w: Expr, g: Expr, method: str | None = None) -> Plan:
    """Symmetric pattern of the Hessian of a scalar whose gradient with respect to ``w`` is
    ``g``, and a star or distance-2 colouring (fewer colours unless ``method`` says)."""
    method = exact(method)
    if method not in METHODS:
        raise DifferentiationError(f"sparse hessian: method must be 'star', 'distance2' or "
                                   f"None, got {method!r}")
    pattern = hessian_pattern(w, g)
    plans = []
    if method in (None, "star"):
        colour = star_colouring(pattern)
        plans.append(Plan(pattern, colour, recovery(pattern, colour, True), "star"))
    if method is None and plans[0].colours <= _widest(pattern):
        return plans[0]  # a distance-2 colouring needs at least a row's length: no better
    if method in (None, "distance2"):
        colour = column_colouring(pattern)
        plans.append(Plan(pattern, colour, recovery(pattern, colour, False), "distance2"))
    return min(plans, key=lambda p: p.colours)


def _widest(pattern: Pattern) -> int:
    """The most entries of a row: the fewest colours a column colouring can have."""
    return int(np.max(np.diff(pattern.indptr), initial=0))


def _seed(w: Expr, colour: np.ndarray, lead: tuple[int, ...]) -> Expr:
    """The colouring's seed directions as a constant of shape ``(p,) + lead``."""
    graph = w.graph
    rows = seed_rows(colour).astype(w.dtype)
    return Expr(graph, graph.const(rows.reshape((rows.shape[0],) + lead)))


def _gather(compressed: Expr, plan: Plan, origin: int) -> Expr:
    graph = compressed.graph
    with graph.provenance(origin, "tangent"):
        flat = F.reshape(compressed, (compressed.size,))
        return F.index(flat, Expr(graph, graph.const(plan.positions)), key=("@",))


def seeds(plan: Plan, w: Expr) -> Expr:
    """The colouring's seed directions for the batched product of ``plan``: tangents of
    ``w`` (a forward plan, a Hessian's) or cotangents of ``w`` (a reverse plan: ``w`` is
    then the output), shape ``(plan.colours,) + w.shape``."""
    with w.graph.provenance(w.node, "tangent" if plan.method != "reverse" else "adjoint"):
        return _seed(w, plan.colour, w.shape)


def compressed(plan: Plan, product: Expr | None, origin: Expr, shape: tuple[int, ...],
               dtype: str) -> SparseExpr:
    """The derivative of ``shape`` whose batched ``product`` with :func:`seeds` (made for
    node ``origin``; None where the plan has no colours: no entries at all) holds its
    non-zeros, as a :class:`SparseExpr`."""
    if product is None:
        data = F.zeros((0,), dtype=dtype)
    else:
        data = _gather(product, plan, origin.node)
    return SparseExpr(data, plan.pattern, shape, plan.colours, plan.method)


@dataclass(frozen=True)
class SparseValue:
    """A sparse matrix's value without SciPy: ``data`` at ``(rows, cols)`` of ``shape``."""

    data: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    shape: tuple[int, int]

    def toarray(self) -> np.ndarray:
        out = np.zeros(self.shape, dtype=self.data.dtype)
        out[self.rows, self.cols] = self.data
        return out


def as_matrix(data: np.ndarray, pattern: Pattern) -> Any:
    """``data`` in ``pattern`` as a ``scipy.sparse.csr_matrix`` (a :class:`SparseValue`
    when SciPy is not installed)."""
    try:
        from scipy import sparse
    except ImportError:
        return SparseValue(np.asarray(data), pattern.rows, pattern.cols, pattern.shape)
    return sparse.csr_matrix((np.asarray(data), pattern.indices, pattern.indptr),
                             shape=pattern.shape)


def as_pattern(pattern: Pattern) -> Any:
    """A pattern as a boolean ``scipy.sparse.csr_matrix``, or ``(rows, cols)`` index arrays
    when SciPy is not installed."""
    try:
        from scipy import sparse
    except ImportError:
        return pattern.rows, pattern.cols
    return sparse.csr_matrix((np.ones(pattern.nnz, dtype=bool), pattern.indices,
                              pattern.indptr), shape=pattern.shape)


__all__ = ["Plan", "SparseExpr", "SparseValue", "as_matrix", "as_pattern", "compressed",
           "hessian_plan", "jacobian_plan", "seeds"]
