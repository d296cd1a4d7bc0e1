"""A graph's nodes rebuilt for many cases at once: each value given a leading axis of
rows, row k its value in the k-th case. ``vmap`` rebuilds a function for a batch this way
(:mod:`symgrad.transforms.batching`), and the reductions pass a loop's term with its steps
as rows (:mod:`symgrad.passes.reductions`).

The ops act on their trailing axes (their axes are stored negative), so most nodes mean
"the same, for every row" when rebuilt on operands with one extra leading axis; an op that
needs more says how in its stanza (:attr:`~symgrad.ir.op.Op.batch`). A node whose op would
mix the rows is found, not guessed: :func:`rows_lifted` first rebuilds on a trial graph with
a *probe* length no axis of the graph has, where such an op fails its shape rule or gives
the wrong shape, and raises :class:`Unbatchable`.

>>> import symgrad as sg
>>> x = sg.var("x", shape=(3,))
>>> f = sg.sin(x) * 2.0
>>> xs = sg.var("xs", shape=(5, 3))
>>> (fb,) = rows_lifted(f.graph, f.graph.ancestors([f.node]), [f.node], {x.node: xs}, 5)
>>> fb.shape
(5, 3)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base.errors import SymgradError
from .custom import CustomRule
from .expr import Expr, F
from .graph import Graph
from .op import REGISTRY

__all__ = ["Unbatchable", "rows_lifted"]


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
    if got.is_call:  # a call with several results: each result gets the row axis
        ok = n.is_call and tuple(got.dtype) == tuple(((size, *s), d) for s, d in n.dtype)
    else:
        ok = got.shape == (size, *n.shape) and got.dtype == n.dtype
    if not ok:
        raise Unbatchable(f"{n.op} mixes the rows")
    return Expr(home, new)
