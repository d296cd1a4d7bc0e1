"""The fusion planner: which elementwise nodes one compiled loop computes together.

Pure graph analysis, run by the Numba emitter (:mod:`.numba_source`) on each function's
body after the compile passes. A :class:`Region` is a set of nodes computed by one loop
over a static shape: elementwise ops of that shape with a scalar form in the table, and
possibly, as its last node (its *root*), a ``sum`` of one of them (a full or partial
reduction accumulated in the same pass). Broadcasting is resolved from the static shapes:
an operand of another shape is read at the loop indices aligned to the right, index 0
along its axes of length 1.

Regions are grown from the outputs down (reverse topological order): a node of the
region's loop shape joins the region of one of its consumers when every consumer outside
that region comes after the region's root (node ids are topological); it is then also an
*extra output* of the region (stored by the loop: a forward value the adjoint lines read),
else it lives only inside the loop. So a region is convex: a path leaving it (from the root
or an extra output) reaches only ids above the root and cannot come back, and one call at
the root's place computes the whole region. A region is kept
only if the cost model (:func:`pays`) says one loop beats NumPy's calls; it holds at most
:data:`MAX_OPS` ops, since Numba's compile time grows faster than linearly with a
function's size.

Kernels of straight-line code (:func:`segments`: runs of consecutive lines that compile)
may then hand a cheap elementwise result to the one later kernel that reads it, which
computes it again rather than reading it back (:func:`recompute`).

>>> import symgrad as sg
>>> x = sg.var("x", shape=(1000,))
>>> f = sg.sum(sg.exp(x) * x + 1.0)
>>> g = f.graph
>>> from symgrad.backends.targets.numba.table import NUMBA
>>> [(r.root == f.node, len(r.members)) for r in plan(g.nodes, g.ancestors([f.node]),
...                                                 {f.node}, NUMBA)]
[(True, 4)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ....ir.shapes import DTYPES, FLOATS
from . import costs

MAX_OPS = 32  # ops per compiled loop: Numba's compile time is superlinear in function size
REDUCTIONS = frozenset({"sum"})  # reductions a region may end with (accumulated in its loop)


@dataclass
class Region:
    """Nodes computed by one loop: ``members`` in topological order (the ``root`` last),
    ``inputs`` (the values it reads, first use first, 0-d constants left out: they are
    inlined), ``shape`` (the loop's) and, for a region ending in a reduction,
    ``axes`` (the summed axes of the loop) and ``keepdims``."""

    root: int
    shape: tuple[int, ...]
    members: list[int] = field(default_factory=list)
    extras: list[int] = field(default_factory=list)  # members also used outside
    inputs: list[int] = field(default_factory=list)
    axes: tuple[int, ...] | None = None
    keepdims: bool = False
    sums: list[int] = field(default_factory=list)  # a merged nest's sums (:func:`merge`)

    @property
    def reduces(self) -> bool:
        return self.axes is not None


def elementwise(n: Any, nodes: Sequence, table: dict) -> bool:
    """Whether node ``n`` is an elementwise op with a scalar form, of dtypes a loop holds
    (an entry of ``table`` that is a function of the node says whether it has one; a form
    exact for some result dtypes only is one for those)."""
    if n.is_var or n.is_const or n.dtype not in DTYPES:
        return False
    form = table.get(n.op)
    if callable(form):
        form = form(n, nodes)
    return (form is not None and n.dtype in getattr(form, "dtypes", DTYPES)
            and all(nodes[a].dtype in DTYPES for a in n.args))


def _reduction(n: Any, nodes: Sequence, table: dict) -> bool:
    """A ``sum`` of an elementwise node, in floating point: a region may end with it."""
    if n.is_var or n.is_const or n.op not in REDUCTIONS or len(n.args) != 1:
        return False
    return n.dtype in FLOATS and elementwise(nodes[n.args[0]], nodes, table)


def axes_of_sum(n: Any, ndim: int) -> tuple[int, ...]:
    """The summed axes of sum node ``n`` over a loop of ``ndim`` axes (its operand's)."""
    return _axes(n, ndim)


def _axes(n: Any, ndim: int) -> tuple[int, ...]:
    axis = n.attrs.get("axis")
    if axis is None:
        return tuple(range(ndim))
    axis = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(sorted({a % ndim for a in axis}))


def plan(nodes: Sequence, body: Sequence[int], escapes: set[int], table: dict,
         contiguous: bool = False, keep: Callable[[Sequence, Region], bool] | None = None
         ) -> list[Region]:
    """The regions of ``body`` (node ids in topological order) worth a compiled loop.

    ``escapes``: nodes used outside ``body`` (the function's outputs): always roots.
    ``contiguous``: members must be consecutive lines of ``body`` (long functions name
    their values like registers, reused once dead: nothing may run between a region's
    first member and its root). ``keep``: which regions are worth a loop (default: all).
    """
    pos = {i: k for k, i in enumerate(body)}
    consumers: dict[int, list[int]] = {}
    for i in body:
        for a in dict.fromkeys(nodes[i].args):
            consumers.setdefault(a, []).append(i)
    region_of: dict[int, Region] = {}
    first: dict[int, int] = {}  # id(region) -> position of its first member so far
    regions: list[Region] = []
    for i in reversed(body):
        n = nodes[i]
        if not elementwise(n, nodes, table) and not _reduction(n, nodes, table):
            continue
        home, extra = _home(i, n, consumers.get(i, ()), region_of, escapes)
        if (home is not None and len(home.members) < MAX_OPS and
                (not contiguous or first[id(home)] == pos[i] + 1)):
            home.members.append(i)
            if extra:
                home.extras.append(i)
            region_of[i] = home
            first[id(home)] = pos[i]
            continue
        if n.op in REDUCTIONS:  # the loop runs over the summed operand
            shape = nodes[n.args[0]].shape
            r = Region(i, shape, [i], axes=_axes(n, len(shape)),
                       keepdims=bool(n.attrs.get("keepdims")))
        else:
            r = Region(i, n.shape, [i])
        regions.append(r)
        region_of[i] = r
        first[id(r)] = pos[i]
    kept = []
    for r in reversed(regions):
        r.members.reverse()
        r.extras.reverse()
        r.inputs = _inputs(nodes, r)
        if keep is None or keep(nodes, r):
            kept.append(r)
    return kept


def _home(i: int, n: Any, users: Sequence[int], region_of: dict[int, Region],
          escapes: set[int]) -> tuple[Region | None, bool]:
    """The region ``i`` may join (one of its consumers'), and whether ``i`` is then an
    extra output of it (used outside it too)."""
    if n.op in REDUCTIONS:
        return None, False
    for u in users:
        home = region_of.get(u)
        if home is None or home.shape != n.shape:
            continue
        outside = [v for v in users if region_of.get(v) is not home]
        if all(v > home.root for v in outside):
            return home, bool(outside) or i in escapes
    return None, False


def mergeable(group: Sequence[Region], b: Region) -> bool:
    """Whether region ``b``, printed right after the regions of ``group``, can share their
    loop nest: all loop over one shape (``b`` reads their elementwise results at the index
    it computes them at; they never read ``b``'s members, which come after their roots),
    and ``b`` reads no sum of theirs (complete only once the nest ends). A sum is
    accumulated in the nest as it is in a region of its own: several sums of one nest
    read their operands' arrays once."""
    a = group[-1]
    if a.shape != b.shape or a.shape == ():
        return False
    sums = {r.root for r in group if r.reduces}
    return not any(x in sums for x in b.inputs)


def merge(nodes: Sequence, group: Sequence[Region], used: Callable[[int], bool]) -> Region:
    """One region computing the regions of ``group`` (consecutive, :func:`mergeable`) in one
    loop nest: their members in order; their roots and extras that ``used`` (read after the
    nest, or an output) are its results, the last root first; their sums its ``sums``
    (each accumulated over its own axes)."""
    last = group[-1]
    members = [m for r in group for m in r.members]
    held = [m for r in group for m in (r.root, *r.extras) if m != last.root and used(m)]
    merged = Region(last.root, last.shape, members, held,
                    sums=[r.root for r in group if r.reduces])
    merged.inputs = _inputs(nodes, merged)
    return merged


def _inputs(nodes: Sequence, r: Region) -> list[int]:
    inside = set(r.members)
    out: dict[int, None] = {}
    for i in r.members:
        for a in nodes[i].args:
            if a not in inside and not (nodes[a].is_const and nodes[a].shape == ()):
                out[a] = None
    return list(out)


@dataclass
class Segment:
    """Consecutive lines of a function computed by one compiled call (a kernel):
    ``members`` in order, ``inputs`` (the values it reads, first use first, 0-d constants
    left out: they are inlined) and ``outputs`` (the members read after it or returned);
    its first ``again`` members are results of earlier kernels it computes again
    (:func:`recompute`), the others its lines."""

    members: list[int]
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    again: int = 0

    @property
    def line(self) -> int:
        """Its first line's node: where the function calls it."""
        return self.members[self.again]


def segments(nodes: Sequence, body: Sequence[int], escapes: set[int],
             why: Callable[[Any], str | None],
             loose: Callable[[Any], str | None] | None = None
             ) -> tuple[list[Segment], dict[int, str]]:
    """The kernels of ``body`` (node ids in the order the function computes them): each
    maximal run of consecutive nodes that compile (``why(node)`` None) is one, if one
    call pays (:func:`pays`); and why each other node is NumPy's call (node -> reason).
    A run of consecutive lines is convex: one call at its place computes it.

    ``loose(node)``: why a node of a run that no later member of it reads is better
    NumPy's call (a view, which a kernel would return as a copy), or None. Such a node
    leaves the run (a line of its own after the kernel's call, reading its results) and
    so may the members only it read, in turn."""
    last_use: dict[int, int] = {}
    for k, i in enumerate(body):
        for a in nodes[i].args:
            last_use[a] = k
    kept: list[Segment] = []
    reasons: dict[int, str] = {}
    run: list[int] = []
    for k, i in enumerate([*body, None]):
        reason = None if i is None else why(nodes[i])
        if i is not None and reason is None:
            run.append(i)
            continue
        if i is not None:
            reasons[i] = reason
        if run and loose is not None:
            run, freed = _peel(nodes, run, loose)
            reasons.update(freed)
            for j in freed:  # what a freed line reads is read after the kernel
                for a in nodes[j].args:
                    last_use[a] = max(last_use.get(a, -1), k)
        if run:
            seg = _segment(nodes, run, escapes, last_use, k)
            if pays(nodes, seg):
                kept.append(seg)
            else:
                reasons.update(dict.fromkeys(run, unpaid(nodes, seg)))
            run = []
    return kept, reasons


def _peel(nodes: Sequence, run: list[int], loose: Callable[[Any], str | None]
          ) -> tuple[list[int], dict[int, str]]:
    """``run`` without its loose nodes that no kept member reads (last first), and why
    each of those is NumPy's call."""
    read: set[int] = set()
    kept: list[int] = []
    freed: dict[int, str] = {}
    for i in reversed(run):
        reason = None if i in read else loose(nodes[i])
        if reason is None:
            kept.append(i)
            read.update(nodes[i].args)
        else:
            freed[i] = reason
    kept.reverse()
    return kept, freed


def _segment(nodes: Sequence, run: list[int], escapes: set[int], last_use: dict[int, int],
             end: int) -> Segment:
    """The segment of ``run`` (its lines end before position ``end``)."""
    outputs = [i for i in run if i in escapes or last_use.get(i, -1) >= end]
    return Segment(run, _segment_inputs(nodes, run), outputs)


def pays(nodes: Sequence, seg: Segment) -> bool:
    """Whether one compiled call of segment ``seg`` is estimated faster than its nodes'
    NumPy calls (:func:`unpaid` says why not)."""
    return unpaid(nodes, seg) is None


def unpaid(nodes: Sequence, seg: Segment) -> str | None:
    """Why segment ``seg`` is not a kernel (:func:`.costs.unpaid`: a kernel of one op never
    pays), or None where one compiled call of it is estimated faster than NumPy's."""
    arrays = sum(1 for a in (*seg.inputs, *seg.outputs) if nodes[a].shape)
    return costs.unpaid([nodes[m] for m in seg.members], nodes, arrays, len(seg.inputs))


def recompute(nodes: Sequence, kernels: list[Segment], escapes: set[int],
              readers: dict[int, list[int]], table: dict) -> None:
    """Kernels' results cheaper computed again where they are read than stored and read
    back: an elementwise result of kernel ``a`` that only one later kernel ``b`` reads
    (besides ``a``'s own members), whose operands ``b`` can read (the function's inputs,
    kernels' results, what ``b`` computes), at most one of them an array of its size that
    ``b`` did not read already, and whose scalar form costs no more than a plain loop's:
    ``b`` computes it in its own loop (one array written and read back less; the same
    operations, the same values), where what ``a`` keeps still pays as a kernel. Changes
    ``kernels`` in place.

    ``readers``: node -> the nodes of the function that read it."""
    owner = {m: k for k, seg in enumerate(kernels) for m in seg.members}
    made = {o for seg in kernels for o in seg.outputs}
    for k, seg in enumerate(kernels):
        for o in list(seg.outputs):
            later = {owner.get(u) for u in readers.get(o, ()) if owner.get(u) != k}
            if o in escapes or len(later) != 1 or None in later:
                continue
            (j,) = later
            b = kernels[j]
            if j < k or not _cheap_again(nodes, o, b, made, table):
                continue
            rest = Segment([m for m in seg.members if m != o or any(
                o in nodes[u].args for u in seg.members)], [], [v for v in seg.outputs if v != o])
            rest.inputs = _segment_inputs(nodes, rest.members)
            if not rest.outputs or not pays(nodes, rest):
                continue  # what ``a`` keeps must still pay as a kernel
            seg.members, seg.inputs, seg.outputs = rest.members, rest.inputs, rest.outputs
            made.discard(o)
            b.members.insert(b.again, o)  # after those moved before it: in order
            b.again += 1
            owner[o] = j
            b.inputs = _segment_inputs(nodes, b.members)


def _cheap_again(nodes: Sequence, o: int, b: Segment, made: set[int], table: dict) -> bool:
    """Whether segment ``b`` can compute result ``o`` of an earlier kernel again for less
    than reading it (see :func:`recompute`)."""
    n = nodes[o]
    if not elementwise(n, nodes, table) or \
            costs.compiled_per_element(n, nodes) > costs.PLAIN_COMPILED:
        return False
    size = costs.size(n)
    fresh = 0
    for x in n.args:
        arg = nodes[x]
        if arg.is_const and arg.shape == ():
            continue
        if not (arg.is_var or arg.is_const or x in made or x in b.members[:b.again]):
            return False  # not kept, or a NumPy line (a view: a kernel would copy it)
        if costs.size(arg) >= size and x not in b.inputs and x not in b.members[:b.again]:
            fresh += 1
    return fresh <= 1


def _segment_inputs(nodes: Sequence, members: list[int]) -> list[int]:
    """What lines ``members`` read from outside them, in order (scalar constants are
    written in)."""
    inside = set(members)
    inputs: dict[int, None] = {}
    for i in members:
        for a in nodes[i].args:
            if a not in inside and not (nodes[a].is_const and nodes[a].shape == ()):
                inputs[a] = None
    return list(inputs)
