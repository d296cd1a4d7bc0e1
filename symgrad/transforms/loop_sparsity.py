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

Integers the body reads are bound where they are known: a captured integer constant
(``c[perm]``) for every step, and a constant scanned integer array (``fori_loop``'s index,
``x[i]``) at each step. Then the pattern of the nodes that read them (the *cut* nodes) is
found again at each step, the rest of the body's once, and the carries are followed step
by step (up to :data:`STEP_PATTERNS` steps; a longer loop gets the pattern without the
steps' integers, a superset).

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
from ..ir.graph import Graph
from ..ir.nodeview import NodeView
from ..ir.op import REGISTRY, define_rules
from ..ir.shapes import is_float
from ..ops.loops import ScanParts
from .sparsity import Pattern, compose, jacobian_pattern, local_maps, pair_budget

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
    repeats or ``d`` reaches the loop's length; :meth:`index` places any ``d`` in it."""

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
            key = _key(nxt)
            was = seen.get(key)
            if was is not None:
                self.start, self.period = was, len(self.seq) - was
                break
            seen[key] = len(self.seq)
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
    """``p`` as bytes (equal keys: equal patterns of one shape)."""
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


def _local(body: Body, parts: ScanParts, fixed: dict[int, np.ndarray]) -> Pattern:
    """The body's pattern: its carries, per-step results and stacked nodes (in the scan's
    result order) against its inputs, with the integer inputs ``fixed`` (body input
    position -> value) known, so an indexing op sees its index."""
    def build() -> Pattern:
        if fixed:
            steps = _StepPatterns(body, parts, fixed)
            if steps.cut:
                return steps.at({})
        g = body.graph
        return jacobian_pattern([Expr(g, parts.node(k)) for k in range(len(parts))],
                                [Expr(g, v) for v in body.inputs])
    return body.memo(("sparsity", parts.stacked, *((j, v.dtype.str, v.shape, v.tobytes())
                                                   for j, v in sorted(fixed.items()))), build)


def _known_integers(body: Body, attrs: dict, args: Sequence[Any]
                    ) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """The body's integer inputs whose values are known: ``(every step, per step)``, each
    body input position -> value (a captured constant; a constant scanned array, whose
    slice each step reads)."""
    nc, nx = attrs["carries"], attrs["xs"]
    fixed, scanned = {}, {}
    for j in range(nc, len(body.inputs)):
        data = args[j].data
        if data.is_const and not is_float(data.dtype):
            (fixed if j >= nc + nx else scanned)[j] = np.asarray(data.attrs["value"])
    return fixed, scanned


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
    fixed, scanned = _known_integers(body, attrs, n.args)
    steps = (_StepPatterns(body, parts, {**fixed, **dict.fromkeys(scanned)})
             if scanned and length <= STEP_PATTERNS else None)
    if steps is not None and steps.varies:
        found = _stepwise(steps, parts, layout, scanned, starts, wanted)
    else:
        found = _uniform(_local(body, parts, fixed), parts, layout, starts, wanted)
    bounds = np.cumsum([0, *layout.operand_sizes])
    return [_per_operand(*found[k], bounds, n.args) if k in found else none
            for k in range(len(parts))]


def _uniform(local: Pattern, parts: ScanParts, layout: _Layout, starts: np.ndarray,
             wanted: Sequence[int]) -> dict[int, Pairs]:
    """The pairs of results ``wanted`` of a loop whose steps have one pattern ``local``."""
    powers = _Powers(local, layout)
    length = layout.length
    out = {}
    for k in wanted:
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
        out[k] = emit.pairs()
    return out


class _StepPatterns:
    """The body's pattern at each step of a loop whose integer inputs ``bound`` are known
    (body input position -> value at every step, or None for a scanned one, given per
    step). Only the *cut* nodes (float nodes with an operand computed from the bound
    integers alone: ``x[i]``) have a pattern that depends on the step: the rest of the body
    is found once with each cut node as a variable of its own, and a step composes each cut
    node's own rule (its integers bound) into it."""

    def __init__(self, body: Body, parts: ScanParts, bound: dict[int, Any]) -> None:
        nodes = body.graph.nodes
        self.nodes, self.bound = nodes, {body.inputs[j]: v for j, v in bound.items()}
        self.scanned = {body.inputs[j]: j for j, v in bound.items() if v is None}
        known: list[int] = []  # integers computed from the bound ones (and constants) alone
        reach = set(self.bound)
        for n in nodes:
            if (n.id not in reach and n.args and not is_float(n.dtype) and not n.is_call
                    and all(a in reach or nodes[a].is_const for a in n.args)):
                reach.add(n.id)
                known.append(n.id)
        self.known, self.reach = known, reach
        self.cut = [n.id for n in nodes if is_float(n.dtype) and not n.is_call
                    and any(a in reach for a in n.args)]
        moving = set(self.scanned)  # what changes from step to step
        for i in known:
            if any(a in moving for a in nodes[i].args):
                moving.add(i)
        self.varies = any(a in moving for c in self.cut for a in nodes[c].args)
        if not self.cut:
            return
        graph, ids = Graph(), {}
        for j, v in enumerate(body.inputs):
            ids[v] = graph.var(f"_sg_input{j}", nodes[v].shape, nodes[v].dtype)
        cuts = [graph.var(f"_sg_cut{k}", nodes[c].shape, nodes[c].dtype)
                for k, c in enumerate(self.cut)]
        ids.update(zip(self.cut, cuts))
        for n in nodes:
            if n.id not in ids:
                ids[n.id] = graph.add(REGISTRY[n.op], tuple(ids[a] for a in n.args), n.attrs)
        rows = [parts.node(k) for k in range(len(parts))]
        self.n_out = sum(math.prod(nodes[r].shape) for r in rows)
        self.operands: list[list[tuple[int, int, int]]] = []  # per cut: (position, lo, hi)
        at = self.n_out
        for c in self.cut:
            mine = []
            for k, a in enumerate(nodes[c].args):
                if is_float(nodes[a].dtype):
                    size = math.prod(nodes[a].shape)
                    mine.append((k, at, at + size))
                    rows.append(a)
                    at += size
            self.operands.append(mine)
        self.static = jacobian_pattern([Expr(graph, ids[r]) for r in rows],
                                       [Expr(graph, ids[v]) for v in body.inputs]
                                       + [Expr(graph, c) for c in cuts])
        self.n_in = sum(math.prod(nodes[v].shape) for v in body.inputs)
        self.scratch = Graph()  # each cut node with its step's integers, for its rule
        self.free = {(c, k): self.scratch.var(f"_sg_operand{i}_{k}", nodes[a].shape,
                                              nodes[a].dtype)
                     for i, c in enumerate(self.cut) for k, a in enumerate(nodes[c].args)}

    def at(self, values: dict[int, np.ndarray]) -> Pattern:
        """The body's pattern with the scanned inputs' values ``values`` (body input
        position -> this step's slice)."""
        nodes, n_in = self.nodes, self.n_in
        env: dict[int, Any] = {v: (values[self.scanned[v]] if v in self.scanned else val)
                               for v, val in self.bound.items()}
        for i in self.known:
            n = nodes[i]
            try:
                env[i] = np.asarray(REGISTRY[n.op].impl(
                    *(env[a] if a in self.reach else nodes[a].attrs["value"] for a in n.args),
                    **n.attrs), dtype=n.dtype)
            except Exception:  # noqa: BLE001 - not known at this step: its users stay dense
                env.pop(i, None)
        ext_r = [np.arange(n_in, dtype=np.int64)]  # inputs and cut nodes -> inputs
        ext_c = [np.arange(n_in, dtype=np.int64)]
        ext = Pattern.from_pairs((n_in, n_in), ext_r[0], ext_c[0])
        offset = n_in
        for k, (c, operands) in enumerate(zip(self.cut, self.operands)):
            maps = local_maps(self._view(k, c, env))
            size = math.prod(nodes[c].shape)
            pr, pc = [], []
            for position, lo, hi in operands:
                m = maps[position]
                if m is None:
                    continue
                sub = _rows(self.static, lo, hi)
                q = Pattern.from_pairs((hi - lo, n_in), *compose(sub.rows, sub.cols, ext))
                r, col = compose(m[0], m[1], q)
                pr.append(r)
                pc.append(col)
            if pr:
                ext_r.append(np.concatenate(pr) + offset)
                ext_c.append(np.concatenate(pc))
            offset += size
            ext = Pattern.from_pairs((offset, n_in), np.concatenate(ext_r),
                                     np.concatenate(ext_c))
        out = _rows(self.static, 0, self.n_out)
        return Pattern.from_pairs((self.n_out, n_in), *compose(out.rows, out.cols, ext))

    def _view(self, k: int, c: int, env: dict[int, Any]) -> NodeView:
        """Cut node ``c`` in the scratch graph, its known integers as constants."""
        n, g = self.nodes[c], self.scratch
        args = tuple(g.const(env[a]) if a in env else self.free[(c, j)]
                     for j, a in enumerate(n.args))
        return NodeView(g, g.nodes[g.add(REGISTRY[n.op], args, n.attrs)])


def _stepwise(steps: _StepPatterns, parts: ScanParts, layout: _Layout,
              scanned: dict[int, np.ndarray], starts: np.ndarray, wanted: Sequence[int]
              ) -> dict[int, Pairs]:
    """The pairs of results ``wanted`` of a loop whose step pattern depends on the step
    (``scanned``: constant integer arrays it scans, body input position -> array): each
    step's pattern, with its slices bound, applied to the carries step by step."""
    length, nc, nx = layout.length, layout.nc, layout.nx
    total = int(sum(layout.operand_sizes))
    carry = Pattern.identity(nc, 0, total)
    fed = np.arange(nc, layout.n_in, dtype=np.int64)  # the rows of a step's x and k
    x_ids = np.arange(nx, dtype=np.int64)
    k_cols = layout.k_base + np.arange(layout.n_in - nc - nx, dtype=np.int64)
    out: dict[int, list[Pairs]] = {k: [] for k in wanted}
    patterns: dict[bytes, Pattern] = {}  # the step's integers -> its body pattern
    count = 0
    for t in range(length):
        at = int(layout.step_index(np.array(t)))
        values = {j: v[at] for j, v in scanned.items()}
        key = b"".join(np.ascontiguousarray(v).tobytes() for _, v in sorted(values.items()))
        local = patterns.get(key)
        if local is None:
            local = patterns[key] = steps.at(values)
        step_cols = np.concatenate([layout.x_cols(x_ids, np.full(nx, t)), k_cols])
        inputs = Pattern.from_pairs((layout.n_in, total), np.concatenate([carry.rows, fed]),
                                    np.concatenate([carry.cols, step_cols]))
        res = Pattern.from_pairs((local.shape[0], total),
                                 *compose(local.rows, local.cols, inputs))
        count += res.nnz
        _over(count, f"a loop of {length:,} steps")
        for k in wanted:
            if k >= parts.carries:
                lo, hi = int(starts[k]), int(starts[k + 1])
                own = _rows(res, lo, hi)
                out[k].append((own.rows + at * (hi - lo), own.cols))
        carry = _rows(res, 0, nc)
    found = {}
    for k, got in out.items():
        if k < parts.carries:
            own = _rows(carry, int(starts[k]), int(starts[k + 1]))
            got = [(own.rows, own.cols)]
        found[k] = ((np.concatenate([r for r, _ in got]), np.concatenate([c for _, c in got]))
                    if got else (_EMPTY, _EMPTY))
    return found


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
