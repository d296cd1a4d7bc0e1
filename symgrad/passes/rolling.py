"""Rolling: a run of structurally identical steps in a traced graph becomes one ``scan``.

A Python ``for`` loop over ``range(T)`` traced on symbolic values unrolls: step ``k+1``
repeats step ``k``'s ops on step ``k``'s results. This pass finds such a run and replaces
it by a ``scan`` whose body is one step, so what comes after the trace — differentiating,
emitting, compiling — costs the same for 10 steps or 10^5.

How (linear in the graph; every walk iterative):

1. Each node gets a structural hash of its neighbourhood ``ROUNDS`` operands deep (op,
   attributes, shape, dtype; per-step slices ``x[k]`` with the int positions blanked).
2. In creation order, each node is paired with an earlier node of the same hash whose
   operands are its own operands one step back (``prev``), the same node (a value shared by
   every step), a slice of the same array one position back (a per-step input), or another
   constant of the same shape and dtype (per-step constants, stacked into one input).
3. Chains of ``prev`` are *roles* (one node of the step each); roles linked by operands are
   one loop. Steps are cut where its longest role's nodes were created; every step of the
   run must use the same roles the same way: an operand of the same step, of the step
   before (a carry), a slice (a scanned input), a constant that changes from step to step
   (its values stacked: a scanned input) or a shared value (captured).
4. The run becomes ``sg.scan(step, init, xs)``; uses of its nodes after it read the final
   carry or the stacked per-step results.

The scan runs the same ops on the same values in the same order, so the rolled graph gives
the unrolled graph's values bit for bit. What does not roll (it stays unrolled, correct):
steps whose ops or attributes change from step to step (``x ** k``), indices that do not
advance by a fixed step, a value computed in one step and used two or more steps later,
runs shorter than ``MIN_STEPS``.

>>> import symgrad as sg
>>> x = sg.var("x")
>>> h = x
>>> for _ in range(20):
...     h = sg.sin(h) * h + sg.cos(h)
>>> (r,) = roll([h])
>>> [h.graph.nodes[i].op for i in h.graph.ancestors([r.node])]   # one loop of 20 steps
['var', 'scan', 'result']
>>> sg.evaluate(r, {"x": 0.5}) == sg.evaluate(h, {"x": 0.5})
True
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir.expr import TRACES, Expr
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.values import freeze
from ..ops.indexing import static_key
from .context import Context
from .pattern import Pass
from .roles import ByStep, RoleArrays, Steps, role_groups
from .steps import Walk, lifted_slot, replaced, slot_step

MIN_STEPS = 8  # steps from which a run becomes a loop (short loops stay as written)
ROUNDS = 3  # operand levels the structural hash sees
TRIES = 6  # earlier nodes of the same hash tried as a node's previous step
MAX_LOOPS = 16  # runs rolled per call (each one a walk of the graph)


def roll(outputs: Sequence[Expr]) -> list[Expr]:
    """``outputs`` (of one graph) with every run of at least ``MIN_STEPS`` identical steps
    rolled into a ``scan`` (new nodes in their graph; the outputs themselves if nothing
    rolls): the :data:`ROLLING` pass on its own."""
    if not outputs:
        return []
    graph = outputs[0].graph
    _, ids = _rolled(graph, [graph.find(o) for o in outputs], Context())
    return [Expr(graph, i) for i in ids]


def _rolled(graph: Graph, ids: list[int], ctx: Context) -> tuple[Graph, list[int]]:
    """The pass: new nodes in ``graph``, the outputs' new ids (the same where nothing
    rolls; nothing rolls while a loop body is being traced)."""
    if not ids or TRACES.graphs:
        return graph, ids
    with graph.lock:  # one search per graph at a time (threads share what it remembers)
        return graph, _roll(graph, ids, ctx)


def _roll(graph: Graph, ids: list[int], ctx: Context) -> list[int]:
    memo = ctx.rolled(graph)
    if memo.replaced:  # what was rolled before (by grad, say) is not searched again
        ids = replaced(graph, ids, dict(memo.replaced))
    if all(i in memo.settled for i in ids):
        return ids
    for _ in range(MAX_LOOPS):
        new = _roll_one(graph, ids, ctx)
        if not new:
            break
        memo.replaced.update(new)
        ids = replaced(graph, ids, new)
    memo.settled.update(ids)
    return ids


ROLLING = Pass("rolling", "a run of identical steps (a traced Python loop) -> one scan (exact)",
               run=_rolled, stages=("loops", "rolling"))


def _roll_one(graph: Graph, ids: list[int], ctx: Context) -> dict[int, int]:
    """Replacements for the longest run found among the ancestors of ``ids`` (or {})."""
    table = ctx.walk(graph, ids)
    prev = _match(graph, table)
    if not prev:
        return {}
    loops = _loops(graph, table, prev)
    for lp in sorted(loops, key=lambda lp: -lp.size):
        run = lp.run()
        if run is not None:
            return run.build(graph, table, ids)
    return {}


# -- 1, 2: hashes and pairing ---------------------------------------------------------------

def _signature(n: Any) -> Any:
    if n.is_const:  # per-step constants may differ (stacked into a scanned input)
        return ("const", n.shape, n.dtype)
    if n.is_var:
        return n.id
    if not n.attrs:
        return (n.op, (), n.shape, n.dtype, len(n.args))
    attrs = freeze(n.attrs)
    key = static_key(n)
    if key is not None:
        attrs = tuple("#" if type(e) is int else (e.start, e.stop, e.step)
                      if isinstance(e, slice) else e for e in key)
    return (n.op, attrs, n.shape, n.dtype, len(n.args))


def _hashes(table: Walk) -> np.ndarray:
    """Each node's hash (of ``order``'s, by position) of its signature and its operands'
    hashes, ``ROUNDS`` levels deep (whole-array passes: a round is a few NumPy operations,
    not a loop over the nodes)."""
    ns, counts, starts = table.ns, table.counts, table.starts
    h0 = np.array([hash(_signature(m)) for m in ns], dtype=np.int64).view(np.uint64)
    flat = table.at[table.flat]  # operands as positions in order (ancestors hold them)
    nonempty = counts > 0
    rank = np.arange(len(flat)) - np.repeat(starts, counts)  # which operand of its node
    weight = _mix(rank.astype(np.uint64) + np.uint64(1))
    h = h0
    for _ in range(ROUNDS):
        mixed = h0.copy()
        if len(flat):
            sums = np.add.reduceat(_mix(h[flat] ^ weight), starts[nonempty])
            mixed[nonempty] = _mix(h0[nonempty] ^ _mix(sums))
        h = mixed
    return h.view(np.int64)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, elementwise (uint64, wrapping)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _period(ids: np.ndarray, h: np.ndarray) -> int:
    """The most common distance (in node ids) from a node to an earlier node of the same
    hash (one of the ``TRIES`` latest), the shortest of equals: in a traced loop, the nodes
    one step creates. Nodes ``ids`` (ascending) with hashes ``h``."""
    by_hash = np.argsort(h, kind="stable")  # each hash's nodes in order
    sampled = by_hash % 4 == 0  # a sample of the nodes is enough to find the period
    found = []
    for lag in range(1, TRIES + 1):
        cur, before = by_hash[lag:], by_hash[:-lag]
        same = (h[cur] == h[before]) & sampled[lag:]
        found.append(ids[cur[same]] - ids[before[same]])
    distances, votes = np.unique(np.concatenate(found), return_counts=True)
    if not len(votes):
        return 0
    best = int(np.lexsort((distances, -votes))[0])
    return int(distances[best]) if votes[best] * 4 >= MIN_STEPS else 0  # too few repeats


def _match(graph: Graph, table: Walk) -> dict[int, int]:
    """``prev``: node -> the node it repeats, one step (``period`` node ids) earlier."""
    nodes = graph.nodes
    h = _hashes(table)
    ids = table.ids
    period = _period(ids, h)
    prev: dict[int, int] = {}
    if not period:
        return prev
    back = table.at[np.maximum(ids - period, 0)]
    same = (ids >= period) & (back >= 0)
    same[same] = h[back[same]] == h[same]  # one period back: a node of the same hash
    taken: set[int] = set()
    get = prev.get
    for v in ids[same].tolist():
        u = v - period
        if v in prev or u in taken:
            continue
        nv, nu = nodes[v], nodes[u]
        if not nv.args or not _same_kind(nv, nu):
            continue
        for a, b in zip(nv.args, nu.args):  # most often every operand pair is known
            if a != b and get(a) != b:
                break
        else:
            prev[v] = u
            taken.add(u)
            continue
        pairs = _pairs(graph, nv.args, nu.args, prev, taken, period)
        if pairs is not None:
            for a, b in [(v, u), *pairs]:
                prev[a] = b
                taken.add(b)
    return prev


def _stackable(na: Any, nb: Any) -> bool:
    """Whether ``na`` and ``nb`` are constants one scanned input can hold (the same shape
    and dtype; their values may differ)."""
    return (na.is_const and nb.is_const and na.shape == nb.shape and na.dtype == nb.dtype
            and na.attrs.keys() == nb.attrs.keys())


def _same_kind(na: Any, nb: Any) -> bool:
    return (na.op == nb.op and na.shape == nb.shape and na.dtype == nb.dtype
            and len(na.args) == len(nb.args) and na.attrs == nb.attrs)


def _pairs(graph: Graph, v_args: tuple[int, ...], u_args: tuple[int, ...],
           prev: dict[int, int], taken: set[int], period: int) -> list[tuple[int, int]] | None:
    """Whether a node of operands ``v_args`` repeats one of the same kind with ``u_args``
    one step on: the operand pairs it implies that are not known yet (slices one position
    on; nodes one period apart, checked later), or None."""
    nodes = graph.nodes
    get = prev.get
    pairs: list[tuple[int, int]] = []
    for a, b in zip(v_args, u_args):
        if a == b or get(a) == b or (a, b) in pairs or _stackable(nodes[a], nodes[b]):
            continue
        if a in prev or b in taken or nodes[a].is_var or nodes[a].is_const:
            return None
        if any(x == a or y == b for x, y in pairs):
            return None
        if slot_step(graph, b, a) is None and not (a - b == period
                                                   and _same_kind(nodes[a], nodes[b])):
            return None
        pairs.append((a, b))
    return pairs


# -- 3: roles, loops, the run ---------------------------------------------------------------

class _Loop:
    """Roles linked by operands: each role's nodes by step."""

    def __init__(self, graph: Graph, roles: dict[int, list[int]], table: Walk) -> None:
        self.graph, self.roles, self.table = graph, roles, table
        self.size = sum(len(c) for c in roles.values())
        self._arrays: RoleArrays | None = None

    def run(self) -> _Run | None:
        """The checked run of the cut carrying fewest values; of equal cuts, the one whose
        run reaches furthest back (the cut where the Python loop's iterations begin)."""
        best = None
        for ref in self._cuts(max(self.roles.values(), key=len)):
            run = self._run_at(ref)
            if run is not None and (best is None or run.start < best.start):
                best = run
        return best

    def _run_at(self, ref: list[int]) -> _Run | None:
        if self._arrays is None:
            self._arrays = RoleArrays(self.graph, self.roles, self.table)
        arrays = self._arrays
        cut = np.asarray(ref, dtype=np.int64)
        at: dict[int, ByStep] = {}
        placed: dict[int, tuple[int, int]] = {}
        for r, chain in self.roles.items():
            ks = np.searchsorted(cut, arrays.chains[r], side="right") - 1
            i0 = int(np.searchsorted(ks, 0))  # before the first cut: a prefix
            if i0 == len(ks) or (len(ks) - i0 > 1 and bool((np.diff(ks[i0:]) != 1).any())):
                return None
            k0 = int(ks[i0])
            at[r] = ByStep(chain, arrays.chains[r], i0, k0)
            placed[r] = (i0, k0)
        first = max(k0 for _, k0 in placed.values())
        last = min(k0 + len(self.roles[r]) - i0 - 1 for r, (i0, k0) in placed.items())
        if last - first + 1 < MIN_STEPS:
            return None
        return _Run.check(self.graph, at, Steps(arrays, placed), first, last)

    def _cuts(self, ref: list[int]) -> list[list[int]]:
        """The nodes of the roles to cut steps before: the cuts that carry fewest values
        from one step to the next (at most ``TRIES``; steps first cut at ``ref``'s)."""
        nodes = self.graph.nodes
        sm = len(ref) // 2  # the middle step: each role's last node in it
        lo, hi = ref[sm], ref[sm + 1] if sm + 1 < len(ref) else len(nodes)
        here = {}
        for r, c in self.roles.items():
            k = bisect_left(c, hi)
            if k and c[k - 1] >= lo:
                here[r] = c[k - 1]
        if len(here) != len(self.roles):
            return []
        ranked = sorted(self.roles, key=lambda r: here[r])
        rank = {r: k for k, r in enumerate(ranked)}
        size = len(ranked)
        if self._arrays is None:
            self._arrays = RoleArrays(self.graph, self.roles, self.table)
        where = self._arrays.where
        reach = dict.fromkeys(ranked, 0)  # how far (in role positions) a value is used
        for r in ranked:
            v = here[r]
            for a in nodes[v].args:
                ra = where(a)
                if ra is not None:
                    ra = ra[0]
                    span = (sm - bisect_right(ref, a) + 1) * size + rank[r] - rank[ra]
                    reach[ra] = max(reach[ra], span)
        carried, twice = [0] * (size + 1), [0] * (size + 1)
        for r, span in reach.items():
            laps, rest = divmod(span, size)  # a cut is crossed once per lap, +1 in ``rest``
            if laps >= 2:
                return []  # used two steps on whatever the cut
            if laps == 1:
                carried[0] += 1
                carried[size] -= 1
            _spread(twice if laps == 1 else carried, rank[r] + 1, rest, size)
        counts, bad, c, t = [], [], 0, 0
        for k in range(size):
            c, t = c + carried[k], t + twice[k]
            counts.append(c)
            bad.append(t > 0)
        good = [k for k in range(size) if not bad[k]]
        fewest = min((counts[k] for k in good), default=0)
        return [self.roles[ranked[k]] for k in good if counts[k] == fewest][:TRIES]


def _spread(diff: list[int], start: int, length: int, size: int) -> None:
    """Add 1 to ``length`` cyclic positions from ``start`` (a difference array)."""
    for a, b in ((start, min(start + length - 1, size - 1)),
                 (max(start - size, 0), start + length - 1 - size)):
        if length and a <= b:
            diff[a] += 1
            diff[b + 1] -= 1


def _loops(graph: Graph, table: Walk, prev: dict[int, int]) -> list[_Loop]:
    return [_Loop(graph, roles, table) for roles in role_groups(graph, table, prev, MIN_STEPS)]


class _Run:
    """A checked run: steps ``first..last`` of roles ``at`` (role -> step -> node); for
    each computed role, how each operand is found (``uses``); the slices (``xs``)."""

    def __init__(self) -> None:
        self.at: dict[int, ByStep] = {}
        self.first = self.last = 0
        self.uses: dict[int, list[tuple[str, Any]]] = {}
        self.xs: dict[int, tuple[int, int]] = {}  # slice role -> (p, delta)
        self.init: dict[int, int] = {}  # carry role -> its value entering step first
        self.members = np.zeros(0, dtype=bool)  # node id -> in a computed role's steps
        self.steps: Steps | None = None

    @classmethod
    def check(cls, graph: Graph, at: dict[int, ByStep], steps: Steps,
              first: int, last: int) -> _Run | None:
        self = cls()
        self.at, self.first, self.last, self.steps = at, first, last, steps
        nodes = graph.nodes
        ref = first + 1
        for r, m in at.items():
            d = slot_step(graph, m[ref - 1], m[ref])
            if d is not None and not REGISTRY[nodes[m[ref]].op].elementwise:
                self.xs[r] = d
        for r, m in at.items():
            if r in self.xs:
                continue
            uses = []
            for j, a in enumerate(nodes[m[ref]].args):
                found = steps.of(a)
                ra, sa = found if found is not None and first - 1 <= found[1] <= last \
                    else (None, None)
                if ra is None and self._stacked(graph, r, j):
                    uses.append(("stack", (r, j)))
                elif ra is not None and sa == ref and ra in at:
                    uses.append(("x" if ra in self.xs else "same", ra))
                elif ra is not None and sa == ref - 1 and ra not in self.xs:
                    uses.append(("carry", ra))
                elif ra is None:
                    uses.append(("shared", a))
                else:
                    return None
            self.uses[r] = uses
        if not self._consistent(graph):
            return None
        while self._extend(graph):
            pass
        members = np.zeros(len(nodes), dtype=bool)
        for r, m in at.items():
            if r not in self.xs:
                members[m.nodes(self.first, last)] = True
        self.members = members
        if not self._shared_ok(graph):
            return None
        return self

    def _stacked(self, graph: Graph, r: int, j: int) -> bool:
        """Whether operand ``j`` of role ``r`` is a constant that changes from step to step
        (one scanned input of the stacked values), every step's a constant alike."""
        nodes = graph.nodes
        seen = self.steps.args(r, self.first, self.last)[:, j]
        if not (seen != seen[0]).any():
            return False
        first = nodes[int(seen[0])]
        return all(_stackable(nodes[a], first) for a in set(seen.tolist()))

    def stack(self, graph: Graph, r: int, j: int) -> Expr:
        """The constants operand ``j`` of role ``r`` takes over the run's steps, stacked
        (the step axis first; each value as it is, so the step computes the same)."""
        import numpy as np

        nodes = graph.nodes
        vals = [nodes[nodes[self.at[r][s]].args[j]].attrs["value"]
                for s in range(self.first, self.last + 1)]
        return Expr(graph, graph.const(np.stack([np.asarray(v) for v in vals])))

    @property
    def start(self) -> int:
        """The first node of the run (in creation order)."""
        return min(m[self.first] for r, m in self.at.items() if r not in self.xs)

    def _extend(self, graph: Graph) -> bool:
        """Take in the step before ``first`` when the values entering ``first`` are that
        step computed from the values before it (the first steps of a loop, which the
        hashes do not yet see as repeats); False when they are not."""
        nodes = graph.nodes
        s = self.first - 1
        found: dict[int, int] = {}  # role -> its node in step s
        entering: dict[int, int] = {}  # carry role -> the value entering step s
        for r, v in self.init.items():
            found[r] = v
        for r in sorted(self.uses, key=lambda r: -self.at[r][self.first]):
            v = found.get(r)
            if v is None or not _same_kind(nodes[v], nodes[self.at[r][self.first]]):
                return False
            for a, (kind, what) in zip(nodes[v].args, self.uses[r]):
                if kind == "shared":
                    ok = a == what
                elif kind == "carry":
                    ok = entering.setdefault(what, a) == a
                elif kind == "x":
                    ok = (found.setdefault(what, a) == a
                          and slot_step(graph, a, self.at[what][self.first]) == self.xs[what])
                elif kind == "stack":
                    ok = _stackable(nodes[a], nodes[nodes[self.at[r][self.first]].args[what[1]]])
                else:
                    ok = found.setdefault(what, a) == a
                if not ok:
                    return False
        if any((nodes[a].shape, nodes[a].dtype) != (nodes[found[r]].shape,
                                                      nodes[found[r]].dtype)
               for r, a in entering.items()) or set(entering) != set(self.init):
            return False
        for r, v in found.items():
            self.at[r][s] = v
        self.init, self.first = entering, s
        return True

    def _consistent(self, graph: Graph) -> bool:
        nodes = graph.nodes
        at = self.at
        for r, (p, d) in self.xs.items():
            m = at[r]
            if any(slot_step(graph, m[s - 1], m[s]) != (p, d)
                   for s in range(self.first + 1, self.last + 1)):
                return False
        first, last, steps = self.first, self.last, self.steps
        for r, uses in self.uses.items():
            args = steps.args(r, first, last)  # whole columns: one comparison an operand
            for j, (kind, what) in enumerate(uses):
                col = args[:, j]
                if kind == "shared":
                    ok = not (col != what).any()
                elif kind == "stack":
                    like = nodes[nodes[at[r][first]].args[what[1]]]
                    ok = all(_stackable(nodes[a], like) for a in set(col.tolist()))
                elif kind == "carry":
                    ok = (self.init.setdefault(what, int(col[0])) == col[0]
                          and not (col[1:] != steps.nodes(what, first, last - 1)).any())
                else:
                    ok = not (col != steps.nodes(what, first, last)).any()
                if not ok:
                    return False
        nodes_in = [(nodes[a], nodes[at[r][self.first]]) for r, a in self.init.items()]
        return bool(self.init) and all((a.shape, a.dtype) == (b.shape, b.dtype)
                                       for a, b in nodes_in)

    def _shared_ok(self, graph: Graph) -> bool:
        """Shared values and initial carries must not depend on the run itself (a walk
        down from them that stops below the run's first node)."""
        nodes, members = graph.nodes, self.members
        lo = int(members.argmax())  # the first
        outside = [w for uses in self.uses.values() for k, w in uses if k == "shared"]
        stack = [w for w in [*outside, *self.init.values()] if w >= lo]
        seen: set[int] = set()
        while stack:
            i = stack.pop()
            if members[i]:  # (a bool array: ``i in members`` would compare values)
                return False
            if i not in seen:
                seen.add(i)
                stack.extend(a for a in nodes[i].args if a >= lo)
        return True

    def _where(self, needed: set[int]) -> dict[int, tuple[int, int]]:
        """``(role, step)`` of each node of ``needed`` (computed roles' nodes of the run)."""
        taken_in = {v: (r, s) for r, m in self.at.items() if r not in self.xs
                    for s, v in m.extra.items() if self.first <= s <= self.last}
        return {i: taken_in[i] if i in taken_in else self.steps.of(i) for i in needed}

    # -- 4: the scan --------------------------------------------------------------------

    def build(self, graph: Graph, table: Walk, ids: list[int]) -> dict[int, int]:
        """The scan of the run, and the replacements of its nodes used after it."""
        from ..frontend.loops import scan

        nodes = graph.nodes
        members = self.members
        outside = table.flat[np.repeat(~members[table.ids], table.counts)]
        needed = set(np.unique(outside[members[outside]]).tolist())
        needed |= {i for i in ids if members[i]}
        where = self._where(needed)
        carries = sorted(self.init)
        count = self.last - self.first + 1
        ys = sorted({where[i][0] for i in needed
                     if not (where[i][0] in self.init and where[i][1] == self.last)})
        xs = sorted(self.xs)
        stacks = sorted({w for uses in self.uses.values() for k, w in uses if k == "stack"})
        steps = sorted(self.uses, key=lambda r: self.at[r][self.first])
        template = {r: nodes[self.at[r][self.first]] for r in steps}

        def body(c: Any, x: Any) -> Any:
            env: dict[tuple, Expr] = {("carry", r): v for r, v in zip(carries, c)}
            env.update({("x", r): v for r, v in zip(xs, x)})
            env.update({("stack", w): v for w, v in zip(stacks, x[len(xs):])})
            tg = TRACES.graphs[-1]
            for r in steps:
                args = []
                for kind, what in self.uses[r]:
                    e = Expr(graph, what) if kind == "shared" else env[(kind, what)]
                    args.append(tg.find(e))
                n = template[r]
                env[("same", r)] = Expr(tg, tg.add(REGISTRY[n.op], tuple(args), n.attrs))
            return (tuple(env[("same", r)] for r in carries),
                    tuple(env[("same", r)] for r in ys))

        init = tuple(Expr(graph, self.init[r]) for r in carries)
        sliced = tuple(lifted_slot(graph, self.at[r][self.first], *self.xs[r], count)
                       for r in xs) + tuple(self.stack(graph, *w) for w in stacks)
        final, stacked = scan(body, init, sliced, length=count)
        new: dict[int, int] = {}
        for i in needed:
            r, s = where[i]
            if r in self.init and s == self.last:
                new[i] = final[carries.index(r)].node
            else:
                new[i] = stacked[ys.index(r)][s - self.first].node
        return new
