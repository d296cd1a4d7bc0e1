"""What the loop passes share: per-step slices of one array, lifting them to the whole
slice, and rebuilding the users of replaced nodes.

A *slot* is a node ``x[key]`` with static basic indexing (:func:`~symgrad.ops.indexing.
static_key`) of a value ``x`` that does not change from step to step, one int entry of the
key (position ``p``) advancing by ``delta`` from one step to the next: ``x[i]``,
``obs[k, 0]``. Over ``count`` steps it is one slice of ``x`` with the step axis first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain as concat
from typing import Any

import numpy as np

from ..base.errors import SymgradError
from ..ir.custom import CustomRule
from ..ir.expr import Expr, F
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ops.indexing import static_key


def slot_step(graph: Graph, a: int, b: int) -> tuple[int, int] | None:
    """``(p, delta)`` when nodes ``a`` and ``b`` are slices of one value whose keys differ
    in exactly one int entry ``p`` (by ``delta``, not 0), else None."""
    na, nb = graph.nodes[a], graph.nodes[b]
    ka, kb = static_key(na), static_key(nb)
    if ka is None or kb is None or na.args != nb.args or len(ka) != len(kb):
        return None
    found = None
    for p, (ea, eb) in enumerate(zip(ka, kb)):
        if ea == eb and type(ea) is type(eb):
            continue
        if found is not None or type(ea) is not int or type(eb) is not int:
            return None
        found = (p, eb - ea)
    return found


def lifted_slot(graph: Graph, node: int, p: int, delta: int, count: int) -> Expr:
    """The ``count`` steps of slot ``node`` (its key's entry ``p`` advancing by ``delta``)
    as one array, the step axis first."""
    n = graph.nodes[node]
    key = list(static_key(n))
    start = key[p]
    stop = start + delta * count
    key[p] = slice(start, stop if stop >= 0 else None, delta)
    axis = sum(1 for e in key[:p] if e is None or isinstance(e, slice))
    x = Expr(graph, n.args[0])[tuple(key)]
    if axis:
        x = F.transpose(x, (axis, *range(axis), *range(axis + 1, x.ndim)))
    return x


class Unbatchable(SymgradError):
    """A graph with a node that cannot be rebuilt for a batch in one pass."""


def rows_lifted(graph: Graph, order: list[int], ids: list[int], lifted: dict[int, Expr],
                size: int) -> list[Expr]:
    """Nodes ``ids`` rebuilt with each node of ``lifted`` replaced by its Expr, which has a
    leading axis of ``size`` (row k the node's value in the k-th case: a batch of ``vmap``,
    a step of a loop); ``order`` the ancestors of ``ids``. Results that depend on none of
    them are broadcast. Ops act on their trailing axes, so most nodes are rebuilt as they
    are; an op whose stanza says how (:attr:`~symgrad.ir.op.Op.batch`) does so. A node
    whose op would mix the rows is found first on a trial graph with a *probe* length that
    no axis of the graph has (there such an op fails its shape rule or gives the wrong
    shape): raises :class:`Unbatchable`, never a wrong result."""
    nodes = graph.nodes
    probe = 2 + max((d for i in order for d in nodes[i].shape), default=1)
    probe = max(probe, size + 1)
    trial = Graph()
    fresh = {i: Expr(trial, trial.var(f"_sg_probe{k}", (probe, *nodes[i].shape), nodes[i].dtype))
             for k, i in enumerate(lifted)}
    stand_ins: dict[int, Expr] = {}

    def stand_in(a: int) -> Expr:  # the probe needs shapes only (constants kept: cheap)
        if a not in stand_ins:
            n = nodes[a]
            stand_ins[a] = (Expr(trial, trial.find(Expr(graph, a))) if n.is_const else
                            Expr(trial, trial.var(f"_sg_in{len(stand_ins)}", n.shape, n.dtype)))
        return stand_ins[a]

    _rows(graph, order, fresh, probe, stand_in)
    home = next(iter(lifted.values())).graph
    memo = dict(lifted)
    _rows(graph, order, memo, size, lambda a: Expr(home, home.find(Expr(graph, a))))
    out = []
    for i in ids:
        e = memo.get(i)
        if e is None:
            e = F.broadcast_to(Expr(home, home.find(Expr(graph, i))), (size, *nodes[i].shape))
        out.append(e)
    return out


def _rows(graph: Graph, order: list[int], memo: dict[int, Expr], size: int,
          outside: Callable[[int], Expr]) -> None:
    """Fill ``memo`` with the lifted form of every node of ``order`` that depends on it;
    ``outside(a)`` is operand ``a`` where it does not."""
    nodes = graph.nodes
    for i in order:
        n = nodes[i]
        if i in memo or not any(a in memo for a in n.args):
            continue
        if isinstance(n.attrs.get("rule"), CustomRule):
            raise Unbatchable(f"a call of {n.attrs['rule'].name} (a custom rule)")
        args = [memo[a] if a in memo else outside(a) for a in n.args]
        memo[i] = _row_node(n, args, tuple(a in memo for a in n.args), size)


def _row_node(n: Any, args: list[Expr], flags: tuple[bool, ...], size: int) -> Expr:
    op = REGISTRY[n.op]
    home = args[0].graph
    if op.elementwise:  # lifted operands of lower rank: unit axes after the row axis
        args = [F.reshape(e, (size, *(1,) * (len(n.shape) - e.ndim + 1), *e.shape[1:]))
                if f and e.ndim - 1 < len(n.shape) else e for e, f in zip(args, flags)]
    try:
        if op.batch is not None:
            new = home.find(op.batch(args, flags, n.attrs, n.shape))
        else:
            new = home.add(op, tuple(home.find(e) for e in args), n.attrs)
    except SymgradError as err:
        raise Unbatchable(f"{n.op}: {err}") from None
    got = home.nodes[new]
    if got.shape != (size, *n.shape) or got.dtype != n.dtype:
        raise Unbatchable(f"{n.op} mixes the rows")
    return Expr(home, new)


def replaced(graph: Graph, ids: Sequence[int], new: dict[int, int]) -> list[int]:
    """``ids`` with nodes ``new`` maps replaced, their users rebuilt (one walk)."""
    if not new:
        return list(ids)
    nodes = graph.nodes
    for i in _between(nodes, ids, new):
        n = nodes[i]
        args = tuple(new.get(a, a) for a in n.args)
        if args != n.args:
            new[i] = graph.add(REGISTRY[n.op], args, n.attrs)
    return [new.get(i, i) for i in ids]


def _between(nodes: Sequence, ids: Sequence[int], new: dict[int, int]) -> list[int]:
    """The ancestors of ``ids`` that may use a node ``new`` replaces, in topological order:
    those made after the first replaced node, not reached through a replaced node (a walk
    of the graph's tail only: operands are always made before their users)."""
    lo = min(new)
    seen: set[int] = set()
    stack = [i for i in ids if i > lo and i not in new]
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(a for a in nodes[i].args if a > lo and a not in new)
    return sorted(seen)


class Walk:
    """The ancestors of some outputs as arrays, each node read once: ``order`` (ascending
    ids; ``ids`` the same as an array), where each node is in it (``at``: node id ->
    position, or -1) and its operands (``flat``: node ids; a node's are ``flat[starts[k]:
    starts[k] + counts[k]]``)."""

    def __init__(self, graph: Graph, order: Sequence[int]) -> None:
        nodes = graph.nodes
        self.order = order
        self.ns = ns = [nodes[i] for i in order]
        self.ids = np.asarray(order, dtype=np.int64)
        self.counts = np.fromiter(map(len, (m.args for m in ns)), dtype=np.int64, count=len(ns))
        self.flat = np.fromiter(concat.from_iterable(m.args for m in ns), dtype=np.int64,
                                count=int(self.counts.sum()))
        self.starts = np.cumsum(self.counts) - self.counts
        self.at = np.full(len(nodes), -1, dtype=np.int64)
        self.at[self.ids] = np.arange(len(ns))

    def args(self, vs: np.ndarray, width: int) -> np.ndarray:
        """The operands of nodes ``vs`` (each with ``width`` of them), one row a node."""
        return self.flat[self.starts[self.at[vs]][:, None] + np.arange(width)]

    def uses(self, outputs: Sequence[int]) -> list[int]:
        """How many times each node (by id) is an operand here or one of ``outputs``."""
        uses = np.bincount(self.flat, minlength=len(self.at))
        np.add.at(uses, np.asarray(outputs, dtype=np.int64), 1)
        return uses.tolist()
