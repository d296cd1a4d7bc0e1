"""The structural sparsity rule of ``scan`` (set on the op by :func:`~symgrad.ir.op.define_rules`):
which operand elements each element of each result may depend on, from the body's own
pattern composed over the steps, so a loop's Jacobian and Hessian patterns are those of the
unrolled program.

The body's pattern (its results and ``stacked`` nodes against its inputs: carries ``c``,
one step's slice of the scanned arrays ``x``, captured values ``k``) is found once, by
:func:`~symgrad.transforms.sparsity.jacobian_pattern` on the body graph. With ``A``, ``Bx``,
``Bk`` its carry rows against ``c``, ``x``, ``k``, the carry entering step ``t`` depends on

* the initial carries through ``A**t``,
* the slice of step ``t - 1 - d`` through ``A**d Bx`` (one block per lag ``d``),
* the captured values through the union of ``A**d Bk`` over ``d < t``,

and a per-step result of step ``t`` on that carry through its own rows, plus its step's
slice and the captured values directly. The boolean matrices ``G_d = A**d [I | Bx | Bk]``
are a sequence of finitely many patterns, so it repeats: it is followed until it does (the
fixed point of a carry that stops spreading, or a cycle) or until the loop's length, and a
lag past that reads the pattern it repeats. The patterns followed and the pairs a result
gets are budgeted (``LimitError``).

Where the body indexes with an integer slice of a constant scanned array (``fori_loop``'s
index, ``x[i]``), its pattern depends on the step: then each step's body pattern is found
with that step's integers bound (up to :data:`STEP_PATTERNS` steps, else the pattern
without them, a superset) and the carries are followed step by step.

>>> import symgrad as sg
>>> x = sg.var("x", shape=(5,))
>>> e, _ = sg.scan(lambda c, v: (c + (v[1] - v[0]) ** 2, None), 0.0, sg.stack([x[:-1], x[1:]], 1))
>>> sg.hessian_sparsity(e, x).nnz                 # tridiagonal, as the unrolled sum's
13
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base.errors import LimitError
from ..ir.body import Body
from ..ir.expr import Expr
from ..ir.op import define_rules
from ..ir.shapes import is_float
from ..ops.loops import ScanParts
from .sparsity import Pattern, compose, jacobian_pattern, pair_budget

STEP_PATTERNS = 4_096  # steps whose body pattern is found one by one (integer slices bound)

Pairs = tuple[np.ndarray, np.ndarray]
_EMPTY = np.zeros(0, np.int64)


def _over(count: int, what: str) -> None:
    if count > pair_budget():
        raise LimitError(f"sparsity: {what} has {count:,} dependency pairs, over the limit of "
                         f"{pair_budget():,}; the loop's derivative is too dense for a sparse "
                         "one (use the dense derivative)")


class _Layout:
    """The columns: the body's inputs (``c | x | k``, one step) and the scan's operands
    (``c | xs | k``, every step: the scanned arrays' slices one after another)."""

    def __init__(self, body: Body, nc: int, nx: int, length: int, reverse: bool) -> None:
        sizes = [math.prod(s) for s, _ in body.avals()]
        self.length, self.reverse = length, reverse
        self.nc, self.nx = sum(sizes[:nc]), sum(sizes[nc:nc + nx])
        self.n_in = sum(sizes)
        self.operand_sizes = [*sizes[:nc], *(length * s for s in sizes[nc:nc + nx]),
                              *sizes[nc + nx:]]
        # x column e of one step -> operand column base[e] + step_index * stride[e]
        starts = np.cumsum([0, *sizes[nc:nc + nx]])
        which = np.searchsorted(starts, np.arange(self.nx), side="right") - 1
        stride = np.asarray(sizes[nc:nc + nx], np.int64)
        self.x_stride = stride[which] if self.nx else _EMPTY
        self.x_base = (self.nc + length * starts[which] + np.arange(self.nx) - starts[which]
                       if self.nx else _EMPTY)
        self.k_base = self.nc + length * self.nx  # k column c -> operand column k_base + c

    def step_index(self, t: np.ndarray) -> np.ndarray:
        """The index along the scanned axis that execution step ``t`` reads and writes."""
        return self.length - 1 - t if self.reverse else t

    def x_cols(self, cols: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Operand columns of one-step x columns ``cols`` (0-based in ``x``) at ``steps``."""
        return self.x_base[cols] + self.step_index(steps) * self.x_stride[cols]

    def split(self, p: Pattern) -> tuple[Pairs, Pairs, Pairs]:
        """``p``'s pairs against ``c``, ``x`` and ``k`` (each block's columns from 0)."""
        r, c = p.rows, p.cols
        out = []
        for lo, hi in ((0, self.nc), (self.nc, self.nc + self.nx), (self.nc + self.nx,
                                                                    self.n_in)):
            pick = (c >= lo) & (c < hi)
            out.append((r[pick], c[pick] - lo))
        return out[0], out[1], out[2]


def _rows(p: Pattern, lo: int, hi: int) -> Pattern:
    """Rows ``lo:hi`` of ``p``."""
    indptr = p.indptr[lo:hi + 1]
    return Pattern((hi - lo, p.shape[1]), indptr - indptr[0], p.indices[indptr[0]:indptr[-1]])


class _Powers:
    """``G_d = A**d [I | Bx | Bk]`` for ``d = 0, 1, ...``: followed until the sequence
    repeats or ``d`` reaches the loop's length; ``at(d)`` for any ``d``."""

    def __init__(self, local: Pattern, layout: _Layout) -> None:
        carry = _rows(local, 0, layout.nc)
        a_rows, a_cols = layout.split(carry)[0]
        inputs = carry.cols >= layout.nc  # Bx and Bk
        ids = np.arange(layout.nc, dtype=np.int64)
        first = Pattern.from_pairs(carry.shape, np.concatenate([ids, carry.rows[inputs]]),
                                   np.concatenate([ids, carry.cols[inputs]]))
        self.seq: list[Pattern] = [first]
        self.start, self.period = len(self.seq), 0  # no repeat found: seq is all of it
        seen = {_key(first): 0}
        total = first.nnz
        while len(self.seq) <= layout.length:
            g = self.seq[-1]
            nxt = Pattern.from_pairs(g.shape, *compose(a_rows, a_cols, g))
            was = seen.get(_key(nxt))
            if was is not None and self.seq[was] == nxt:
                self.start, self.period = was, len(self.seq) - was
                break
            seen[_key(nxt)] = len(self.seq)
            self.seq.append(nxt)
            total += nxt.nnz
            _over(total, f"the carries of a loop of {layout.length:,} steps")
        if not self.period:
            self.start = len(self.seq)

    def index(self, d: np.ndarray) -> np.ndarray:
        """The position in ``seq`` of ``G_d`` for lags ``d``."""
        if not self.period:
            return d
        return np.where(d < self.start, d, self.start + (d - self.start) % self.period)


def _key(p: Pattern) -> tuple[bytes, bytes]:
    return p.indptr.tobytes(), p.indices.tobytes()


def _groups(which: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """``(value, positions)`` for each distinct value of ``which`` (one sort)."""
    order = np.argsort(which, kind="stable")
    values, starts = np.unique(which[order], return_index=True)
    return [(int(v), idx) for v, idx in zip(values, np.split(order, starts[1:]))]


class _Emitter:
    """Pairs (result element, operand column) gathered under the budget: at each step
    ``steps[j]``, result rows ``row_index[j] * m + r``."""

    def __init__(self, steps: np.ndarray, row_index: np.ndarray, m: int, what: str) -> None:
        self.steps, self.row_index, self.m, self.what = steps, row_index, m, what
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.count = 0

    def add(self, r: np.ndarray, at: np.ndarray, cols: np.ndarray) -> None:
        """Rows ``r`` (one step's) at steps ``at`` (positions in ``steps``), their columns
        ``cols`` (``(at.size, r.size)``, or broadcast to it)."""
        self.count += r.size * at.size
        _over(self.count, self.what)
        if r.size and at.size:
            self.rows.append((self.row_index[at][:, None] * self.m + r[None, :]).ravel())
            self.cols.append(np.broadcast_to(cols, (at.size, r.size)).ravel())

    def pairs(self) -> Pairs:
        if not self.rows:
            return _EMPTY, _EMPTY
        return np.concatenate(self.rows), np.concatenate(self.cols)


def _through_carries(rows: Pattern, direct: Pattern | None, out: _Emitter, powers: _Powers,
                     layout: _Layout) -> None:
    """Values whose rows at step ``t`` depend on the carry entering step ``t`` through
    ``rows`` (against ``c``) and on the step's inputs through ``direct`` (against
    ``c | x | k``; its ``c`` part is in ``rows``): their pairs, into ``out``."""
    steps = out.steps
    seq = [Pattern.from_pairs((rows.shape[0], layout.n_in), *compose(rows.rows, rows.cols, g))
           for g in powers.seq]
    # the initial carries, through A**t
    for e, at in _groups(powers.index(steps)):
        (r, c), _, _ = layout.split(seq[e])
        out.add(r, at, c[None, :])
    # the slice of step t - 1 - d, through A**d Bx, for each lag d < t
    lags = np.arange(int(steps.max(initial=0)))
    for e, pos in _groups(powers.index(lags)):
        _, (r, c), _ = layout.split(seq[e])
        if not r.size:
            continue
        ds = lags[pos]
        per_step = np.searchsorted(ds, steps, side="left")  # how many of them are < t
        _over(out.count + r.size * int(per_step.sum()), out.what)
        at = np.repeat(np.arange(steps.size), per_step)
        d = ds[np.arange(at.size) - np.repeat(np.cumsum(per_step) - per_step, per_step)]
        out.add(r, at, layout.x_cols(c[None, :], (steps[at] - 1 - d)[:, None]))
    # the captured values: directly, and through A**d Bk for each d < t (a growing union:
    # each pair from the first step past its lag on)
    union = _EMPTY
    width = max(layout.n_in, 1)
    for g, d in [*([(direct, -1)] if direct is not None else []), *zip(seq, range(len(seq)))]:
        _, _, (r, c) = layout.split(g)
        keys = np.setdiff1d(r * width + c, union)
        if keys.size:
            union = np.union1d(union, keys)
            r, c = np.divmod(keys, width)
            out.add(r, np.flatnonzero(steps > d), (layout.k_base + c)[None, :])
    if direct is not None:  # the step's own slice
        _, (r, c), _ = layout.split(direct)
        out.add(r, np.arange(steps.size), layout.x_cols(c[None, :], steps[:, None]))


def _local(body: Body, parts: ScanParts) -> Pattern:
    """The body's pattern: its carries, per-step results and stacked nodes (in the scan's
    result order) against its inputs."""
    def build() -> Pattern:
        g = body.graph
        return jacobian_pattern([Expr(g, parts.node(k)) for k in range(len(parts))],
                                [Expr(g, v) for v in body.inputs])
    return body.memo(("sparsity", parts.stacked), build)


def scan_sparsity(n: Any) -> list[tuple[Pairs | None, ...]]:
    """The maps of each result of scan call ``n`` (see the module docstring); for a result
    not read (``n.wants(k)`` false) or not float, none."""
    attrs = n.attrs
    parts = ScanParts.of(attrs)
    body, length = parts.body, parts.length
    layout = _Layout(body, parts.carries, attrs["xs"], length, attrs["reverse"])
    sizes = [math.prod(parts.body.avals([parts.node(k)])[0][0]) for k in range(len(parts))]
    starts = np.cumsum([0, *sizes])
    none = tuple(None for _ in n.args)
    wanted = [k for k in range(len(parts)) if n.wants(k) and is_float(parts.aval(k)[1])]
    if not wanted:
        return [none] * len(parts)
    local = _local(body, parts)
    powers = _Powers(local, layout)
    bounds = np.cumsum([0, *layout.operand_sizes])
    out: list[tuple[Pairs | None, ...]] = []
    for k in range(len(parts)):
        if k not in wanted:
            out.append(none)
            continue
        lo, hi = int(starts[k]), int(starts[k + 1])
        what = f"result {k} of a loop of {length:,} steps"
        if k < parts.carries:  # a final carry: the carry entering step ``length``
            ident = Pattern.identity(hi - lo, lo, layout.nc)
            emit = _Emitter(np.array([length]), np.zeros(1, np.int64), hi - lo, what)
            _through_carries(ident, None, emit, powers, layout)
        else:
            own = _rows(local, lo, hi)
            rows = Pattern.from_pairs((hi - lo, layout.nc), *layout.split(own)[0])
            steps = np.arange(length, dtype=np.int64)
            emit = _Emitter(steps, layout.step_index(steps), hi - lo, what)
            _through_carries(rows, own, emit, powers, layout)
        out.append(_per_operand(*emit.pairs(), bounds, n.args))
    return out


def _per_operand(rows: np.ndarray, cols: np.ndarray, bounds: np.ndarray, args: Sequence[Any]
                 ) -> tuple[Pairs | None, ...]:
    """Pairs against the operands' columns, split into one map per (float) operand."""
    which = np.searchsorted(bounds, cols, side="right") - 1
    maps: list[Pairs | None] = []
    for j, a in enumerate(args):
        if not is_float(a.data.dtype):
            maps.append(None)
            continue
        pick = which == j
        maps.append((rows[pick], cols[pick] - bounds[j]))
    return tuple(maps)


define_rules("scan", sparsity=scan_sparsity)

__all__ = ["STEP_PATTERNS", "scan_sparsity"]
