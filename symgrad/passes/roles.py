"""A traced loop's roles, for :mod:`.rolling`: a *role* is one node of the loop's step,
its nodes the chain of ``prev`` (node -> the node it repeats one step earlier); roles linked
by operands are one loop. Here: the loops found from ``prev`` (:func:`role_groups`) and a
loop's roles as arrays, by step (:class:`RoleArrays`, :class:`ByStep`, :class:`Steps`).

>>> m = ByStep([11, 12, 13], np.array([11, 12, 13]), 1, 0)  # nodes 12, 13: steps 0, 1
>>> m[-1] = 7  # the step before, taken in
>>> m[-1], m[0], m.nodes(-1, 1).tolist()
(7, 12, [7, 12, 13])
"""

from __future__ import annotations

import numpy as np

from ..ir.graph import Graph
from .steps import Walk


class RoleArrays:
    """A loop's roles as arrays, whatever the cut: each role's nodes (``chains``) and their
    operands (``args``: one row a node), and where each node is (:meth:`where`)."""

    def __init__(self, graph: Graph, roles: dict[int, list[int]], table: Walk) -> None:
        nodes = graph.nodes
        self.chains = {r: np.asarray(c, dtype=np.int64) for r, c in roles.items()}
        self.args = {r: table.args(self.chains[r], len(nodes[c[0]].args))
                     for r, c in roles.items()}
        size = 1 + max(c[-1] for c in roles.values())
        self._role = np.full(size, -1, dtype=np.int64)  # node id -> its role, or -1
        self._index = np.zeros(size, dtype=np.int64)  # node id -> its index in the role
        for r, c in self.chains.items():
            self._role[c] = r
            self._index[c] = np.arange(len(c))

    def where(self, v: int) -> tuple[int, int] | None:
        """``(role, index)`` of node ``v`` in its role, or None."""
        if v >= len(self._role) or self._role[v] < 0:
            return None
        return int(self._role[v]), int(self._index[v])


class ByStep:
    """A role's node by step (``m[s]``): its nodes from the ``first_index``-th on are steps
    ``first_step, first_step + 1, ...``; steps taken in before them (``_Run._extend`` in
    :mod:`.rolling`) are set beside (``extra``)."""

    __slots__ = ("chain", "array", "first_index", "first_step", "stop", "extra")

    def __init__(self, chain: list[int], array: np.ndarray, first_index: int,
                 first_step: int) -> None:
        self.chain, self.array = chain, array
        self.first_index, self.first_step = first_index, first_step
        self.stop = first_step + len(chain) - first_index
        self.extra: dict[int, int] = {}

    def __getitem__(self, s: int) -> int:
        if self.extra and s in self.extra:
            return self.extra[s]
        if self.first_step <= s < self.stop:
            return self.chain[self.first_index + s - self.first_step]
        raise KeyError(s)

    def __setitem__(self, s: int, v: int) -> None:
        self.extra[s] = v

    def nodes(self, s0: int, s1: int) -> np.ndarray:
        """The nodes of steps ``s0..s1`` (all set)."""
        lo = max(s0, self.first_step)
        at = self.first_index - self.first_step  # a step's position in ``array``, less s
        before = np.array([self[s] for s in range(s0, min(lo, s1 + 1))], dtype=np.int64)
        out = np.concatenate([before, self.array[at + lo:at + s1 + 1]])
        for s, v in self.extra.items():
            if lo <= s <= s1:
                out[s - s0] = v
        return out


class Steps:
    """A cut's steps: role ``r``'s node ``i`` is step ``first_step + i - first_index``
    (``placed[r] = (first_index, first_step)``; before ``first_index``: no step)."""

    def __init__(self, arrays: RoleArrays, placed: dict[int, tuple[int, int]]) -> None:
        self.arrays, self.placed = arrays, placed

    def of(self, v: int) -> tuple[int, int] | None:
        """``(role, step)`` of node ``v``, or None."""
        w = self.arrays.where(v)
        if w is None:
            return None
        r, i = w
        i0, k0 = self.placed[r]
        return (r, k0 + i - i0) if i >= i0 else None

    def nodes(self, r: int, s0: int, s1: int) -> np.ndarray:
        """Role ``r``'s nodes of steps ``s0..s1`` (all placed)."""
        i0, k0 = self.placed[r]
        return self.arrays.chains[r][s0 - k0 + i0:s1 - k0 + i0 + 1]

    def args(self, r: int, s0: int, s1: int) -> np.ndarray:
        """Their operands, one row a step."""
        i0, k0 = self.placed[r]
        return self.arrays.args[r][s0 - k0 + i0:s1 - k0 + i0 + 1]


def role_groups(graph: Graph, table: Walk, prev: dict[int, int], min_len: int
                ) -> list[dict[int, list[int]]]:
    """The loops: roles (chains of ``prev``, named by their first node) linked by operands,
    each role's nodes ascending; loops by their first node, roles likewise; only loops with
    a role of at least ``min_len`` nodes."""
    keys = np.fromiter(prev.keys(), dtype=np.int64, count=len(prev))
    vals = np.fromiter(prev.values(), dtype=np.int64, count=len(prev))
    root = _roots(len(graph.nodes), keys, vals)
    # operand j of v and of u = prev[v] (same kinds: as many operands): a link of roles
    pos_v, pos_u = table.at[keys], table.at[vals]
    cnt = table.counts[pos_v]
    row = np.repeat(np.arange(len(keys)), cnt)
    rank = np.arange(len(row)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    a = table.flat[table.starts[pos_v][row] + rank]
    b = table.flat[table.starts[pos_u][row] + rank]
    back = np.full(len(graph.nodes), -1, dtype=np.int64)
    back[keys] = vals
    hit = (a != b) & (back[a] == b)
    ra, rb = root[keys[row[hit]]], root[a[hit]]
    hit = (ra >= 0) & (rb >= 0)
    parent: dict[int, int] = {}

    def find(r: int) -> int:
        while parent.setdefault(r, r) != r:
            parent[r] = parent[parent[r]]
            r = parent[r]
        return r

    for x, y in set(zip(ra[hit].tolist(), rb[hit].tolist())):
        fx, fy = find(x), find(y)
        if fx != fy:
            parent[fx] = fy
    mark = np.zeros(len(graph.nodes), dtype=bool)  # (np.unique hashes: slower here)
    mark[keys] = mark[vals] = True
    members = np.flatnonzero(mark & (root >= 0))
    of = root[members]
    sort = np.argsort(of, kind="stable")  # by role, each role's nodes ascending
    starts = np.flatnonzero(np.diff(of[sort], prepend=-1))
    roles = of[sort][starts]
    sizes = np.diff(starts, append=len(sort))
    by_role = np.split(members[sort], starts[1:])
    groups: dict[int, list[int]] = {}  # loop -> its roles' positions in ``roles``
    for k, r in enumerate(roles.tolist()):
        groups.setdefault(find(r), []).append(k)
    loops = [ks for ks in groups.values() if max(sizes[k] for k in ks) >= min_len]
    return [{int(roles[k]): by_role[k].tolist() for k in ks}
            for ks in sorted(loops, key=lambda ks: roles[ks[0]])]


def _roots(size: int, keys: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """Each node's first node down its chain of ``prev`` (``keys`` -> ``vals``), by pointer
    doubling; -1 for nodes on a cycle of ``prev`` (slices paired both ways: no role)."""
    root = np.arange(size, dtype=np.int64)
    root[keys] = vals
    for _ in range(size.bit_length() + 1):
        nxt = root[root]
        if (nxt == root).all():
            break
        root = nxt
    first = np.ones(size, dtype=bool)
    first[keys] = False  # a chain's first node has no prev
    return np.where(first[root], root, -1)
