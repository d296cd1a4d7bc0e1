"""Structural sparsity: which entries of a Jacobian or a Hessian can be non-zero, found from
the graph alone.

Each node on a path from a ``wrt`` variable gets a :class:`Pattern`: for each of its
elements, the set of input elements it may depend on (a boolean sparse matrix, rows =
the node's elements, columns = the inputs). A variable's pattern is the identity; every
other node's comes from its operands' patterns through its op's sparsity rule (one rule per
kind of op, in its stanza: :mod:`symgrad.ops.structure`): the rule says which operand
elements each result element depends on, and the patterns compose as a boolean matrix
product. A call with several results gets one pattern per result (its rule gives maps per
result), which its projections take. The loop knows no op.

The Hessian's pattern is the Jacobian pattern of the gradient graph (the gradient is a graph
in the same ops), made symmetric. Every pattern is a superset of the numerical non-zeros at
any point; the sizes are budgeted (``LimitError``).

>>> import symgrad as sg
>>> x = sg.var("x", shape=(4,))
>>> P = jacobian_pattern([x[1:] * x[:-1]], [x])
>>> P.rows.tolist(), P.cols.tolist()
([0, 0, 1, 1, 2, 2], [0, 1, 1, 2, 2, 3])
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from ..base.errors import LimitError
from ..base.progress import start
from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.nodeview import NodeView
from ..ir.op import REGISTRY, RESULT
from ..ir.shapes import is_float
from ..ops.structure import dense_map, dense_maps, elementwise_maps

NNZ_LIMIT = 20_000_000  # entries a node's pattern may have
# a tighter bound for one computation (hessian's default: a pattern past it is dense anyway)
_PAIRS: ContextVar[int | None] = ContextVar("symgrad_sparsity_pairs", default=None)


def pair_budget() -> int:
    """The most dependency pairs one pattern may have here (``NNZ_LIMIT``, or the tighter
    :func:`pair_limit` in force)."""
    tighter = _PAIRS.get()
    return NNZ_LIMIT if tighter is None else min(tighter, NNZ_LIMIT)


@contextmanager
def pair_limit(n: int) -> Iterator[None]:
    """At most ``n`` dependency pairs at one node inside (and never over ``NNZ_LIMIT``):
    ``hessian`` decides against the sparse path as soon as a node is that dense, instead
    of finishing a pattern that costs seconds and gigabytes on a dense problem."""
    token = _PAIRS.set(min(int(n), pair_budget()))
    try:
        yield
    finally:
        _PAIRS.reset(token)


class Pattern:
    """A boolean sparse matrix in compressed rows: ``indptr`` (``m + 1``) and ``indices``
    (the columns of each row, sorted). ``rows``/``cols`` are the same entries as pairs, in
    row-major order (the order of ``data`` in symgrad's sparse results)."""

    __slots__ = ("shape", "indptr", "indices")

    def __init__(self, shape: tuple[int, int], indptr: np.ndarray, indices: np.ndarray):
        self.shape = (int(shape[0]), int(shape[1]))
        self.indptr = indptr
        self.indices = indices

    @classmethod
    def from_pairs(cls, shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray) -> Pattern:
        """The pattern of the pairs ``(rows[k], cols[k])`` (duplicates merged)."""
        m, n = shape
        if rows.size > pair_budget():
            raise LimitError(f"sparsity: a pattern with {rows.size:,} entries is over the limit "
                             f"of {pair_budget():,}; the derivative is too dense for a sparse one")
        keys = np.sort(rows.astype(np.int64) * max(n, 1) + cols)
        if keys.size > 1:  # unique (np.unique's hashing costs more on the many small ones)
            keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
        r, c = np.divmod(keys, max(n, 1))
        indptr = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=m), out=indptr[1:])
        return cls(shape, indptr, c.astype(np.int64))

    @classmethod
    def identity(cls, n: int, offset: int, total: int) -> Pattern:
        """Rows ``0..n-1`` depending on columns ``offset..offset+n-1`` of ``total``."""
        return cls((n, total), np.arange(n + 1, dtype=np.int64),
                   np.arange(offset, offset + n, dtype=np.int64))

    @property
    def nnz(self) -> int:
        return int(self.indices.size)

    @property
    def rows(self) -> np.ndarray:
        return np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(self.indptr))

    @property
    def cols(self) -> np.ndarray:
        return self.indices

    @property
    def density(self) -> float:
        return self.nnz / max(self.shape[0] * self.shape[1], 1)

    @property
    def T(self) -> Pattern:  # noqa: N802 - as NumPy's
        return Pattern.from_pairs(self.shape[::-1], self.cols, self.rows)

    def union(self, other: Pattern) -> Pattern:
        return Pattern.from_pairs(self.shape, np.concatenate([self.rows, other.rows]),
                                  np.concatenate([self.cols, other.cols]))

    def row(self, i: int) -> np.ndarray:
        return self.indices[self.indptr[i]:self.indptr[i + 1]]

    def toarray(self) -> np.ndarray:
        """The pattern as a dense boolean array."""
        out = np.zeros(self.shape, dtype=bool)
        out[self.rows, self.cols] = True
        return out

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Pattern) and self.shape == other.shape
                and np.array_equal(self.indptr, other.indptr)
                and np.array_equal(self.indices, other.indices))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Pattern {self.shape[0]}x{self.shape[1]}, {self.nnz} entries>"


def compose(rows: np.ndarray, cols: np.ndarray, p: Pattern) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of ``D @ p`` for the boolean matrix ``D`` of pairs ``(rows, cols)``: result
    row ``r`` gets every column of ``p``'s row ``c``."""
    starts = p.indptr[cols]
    lens = p.indptr[cols + 1] - starts
    total = int(lens.sum())
    if total > pair_budget():
        raise LimitError(f"sparsity: {total:,} dependency pairs at one node, over the limit of "
                         f"{pair_budget():,}; the derivative is too dense for a sparse one")
    out_rows = np.repeat(rows, lens)
    first = np.repeat(starts - (np.cumsum(lens) - lens), lens)
    return out_rows, p.indices[first + np.arange(total, dtype=np.int64)]


def local_maps(n: NodeView) -> tuple[Any, ...]:
    """The sparsity rule's maps of node ``n``: its op's own rule, else the broadcasting maps
    for an elementwise op, else dense ones."""
    op = REGISTRY[n.data.op]
    if op.sparsity is not None:
        return op.sparsity(n)
    return elementwise_maps(n) if op.elementwise else dense_maps(n)


def jacobian_pattern(outputs: Sequence[Expr], wrt: Sequence[Expr]) -> Pattern:
    """The pattern of the Jacobian of ``outputs`` (flattened, one after another) with
    respect to ``wrt`` (flattened and concatenated)."""
    graph: Graph = outputs[0].graph
    total = sum(w.size for w in wrt)
    patterns: dict[int, Pattern] = {}
    offset = 0
    for w in wrt:
        patterns.setdefault(graph.find(w), Pattern.identity(w.size, offset, total))
        offset += w.size
    order = graph.ancestors([o.node for o in outputs])
    nodes = graph.nodes
    progress = start("sparsity pattern", total=len(order))
    calls: dict[int, list[Pattern | None]] = {}  # a call -> the pattern of each result
    read: dict[int, set[int]] = {}  # a call -> the results its projections here read
    for i in order:
        if nodes[i].op == RESULT:
            read.setdefault(nodes[i].args[0], set()).add(nodes[i].attrs["index"])
    for i in order:
        progress.update()
        node = nodes[i]
        if i in patterns or not node.args:
            continue
        if node.op == RESULT:  # a projection: its result's pattern
            got = calls.get(node.args[0])
            if got is not None and got[node.attrs["index"]] is not None:
                patterns[i] = got[node.attrs["index"]]
            continue
        if not (is_float(node.dtype) or node.is_call):
            continue
        if REGISTRY[node.op].backprop is None:  # locally constant (a user's op without a
            continue  # rule has one that raises: its pattern stays a dense superset)
        if not any(a in patterns for a in node.args):
            continue
        if node.is_call:
            calls[i] = _call_patterns(graph, node, patterns, total, read.get(i, set()))
        else:
            patterns[i] = _node_pattern(graph, node, patterns, total)
    progress.close()
    parts_r, parts_c, start_row = [], [], 0
    for o in outputs:
        p = patterns.get(o.node)
        if p is not None:
            parts_r.append(p.rows + start_row)
            parts_c.append(p.cols)
        start_row += o.size
    if not parts_r:
        return Pattern.from_pairs((start_row, total), np.zeros(0, np.int64),
                                  np.zeros(0, np.int64))
    return Pattern.from_pairs((start_row, total), np.concatenate(parts_r),
                              np.concatenate(parts_c))


def _node_pattern(graph: Graph, node: Any, patterns: dict[int, Pattern], total: int) -> Pattern:
    view = NodeView(graph, node)
    return _composed(node, local_maps(view), patterns, view.out.size, total)


def _call_patterns(graph: Graph, node: Any, patterns: dict[int, Pattern], total: int,
                   read: set[int]) -> list[Pattern | None]:
    """The pattern of each result of a call with several results that is ``read`` (None
    for another, or one that is not float): its op's rule gives the maps of each result
    (``wants(k)`` says which are read), else they are dense."""
    wanted = tuple(k in read and is_float(d) for k, (_, d) in enumerate(node.dtype))
    view = NodeView(graph, node, wanted=wanted)
    op = REGISTRY[node.op]
    if op.sparsity is not None:
        per_result = op.sparsity(view)
    else:
        per_result = [tuple(dense_map(a.shape, s) if is_float(a.data.dtype) and w else None
                            for a in view.args) for (s, _), w in zip(node.dtype, wanted)]
    return [_composed(node, maps, patterns, math.prod(s), total) if w else None
            for maps, (s, _), w in zip(per_result, node.dtype, wanted)]


def _composed(node: Any, maps: Sequence, patterns: dict[int, Pattern], size: int, total: int
              ) -> Pattern:
    """The pattern of a value whose local maps from ``node``'s operands are ``maps``."""
    rows, cols = [], []
    for a, m in zip(node.args, maps):
        p = patterns.get(a)
        if p is None or m is None:
            continue
        r, c = compose(m[0], m[1], p)
        rows.append(r)
        cols.append(c)
    if not rows:
        return Pattern.from_pairs((size, total), np.zeros(0, np.int64), np.zeros(0, np.int64))
    return Pattern.from_pairs((size, total), np.concatenate(rows), np.concatenate(cols))


def hessian_pattern(wrt: Expr, g: Expr) -> Pattern:
    """The symmetric pattern of the Hessian of a scalar whose gradient with respect to
    ``wrt`` is ``g``: the Jacobian pattern of ``g``, united with its transpose."""
    p = jacobian_pattern([g], [wrt])
    return p.union(p.T)


__all__ = ["NNZ_LIMIT", "Pattern", "compose", "hessian_pattern", "jacobian_pattern",
           "local_maps", "pair_budget", "pair_limit"]
