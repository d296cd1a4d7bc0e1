"""A graph built for one example, rebuilt for a batch of them (``sg.vmap`` in one pass).

The ops act on their trailing axes (their axes are stored negative), so most nodes mean
"the same, for every row" when rebuilt on operands with one extra leading axis:
:func:`batched` rebuilds the nodes that depend on the batched variables, operand by
operand, and checks every result. A node whose op would mix the rows (``x[0]``, a
``reshape`` to a fixed shape, ``W @ x`` of a vector) is found, not guessed: the graph is
first rebuilt with a *probe* batch size no axis of the graph has, where such an op fails
its shape rule or gives a result whose shape is not ``(batch,) + its own``; then
:class:`Unbatchable` is raised and the caller maps the rows one at a time. Elementwise
operands of lower rank than the result get unit axes after the batch axis (so they
broadcast as the unbatched ones did); an op that needs more says how in its stanza
(:attr:`~symgrad.ir.op.Op.batch`: ``matmul`` of a vector, ``outer``). Calls with a
custom rule are not batched (the user's rule is written for one row).

>>> import symgrad as sg
>>> x = sg.var("x", shape=(3,))
>>> f = sg.sum(sg.sin(x) * 2.0)
>>> xs = sg.var("xs", shape=(5, 3))
>>> (fb,) = batched([f], {"x": xs}, 5)
>>> fb.shape
(5,)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..base.errors import SymgradError
from ..ir.custom import CustomRule
from ..ir.expr import Expr, F
from ..ir.graph import Graph
from ..ir.op import REGISTRY


class Unbatchable(SymgradError):
    """A graph with a node that cannot be rebuilt for a batch in one pass."""


def batched(outputs: Sequence[Expr], inputs: Mapping[str, Expr], size: int) -> list[Expr]:
    """``outputs`` rebuilt with each variable named in ``inputs`` replaced by its Expr,
    which has a leading batch axis of ``size`` (all of one graph); outputs that do not
    depend on them are broadcast. Raises :class:`Unbatchable`."""
    if not outputs:
        return []
    graph = outputs[0].graph
    ids = [graph.find(o) for o in outputs]
    given = list(inputs.values())
    inputs = {graph.variables[k]: e for k, e in inputs.items() if k in graph.variables}
    if not inputs:  # the outputs use none of them
        home = given[0].graph
        return [F.broadcast_to(Expr(home, home.find(o)), (size, *o.shape)) for o in outputs]
    order = graph.ancestors(ids)
    probe = 2 + max((d for i in order for d in graph.nodes[i].shape), default=1)
    probe = max(probe, size + 1)
    trial = Graph()
    fresh = {i: Expr(trial, trial.var(f"_sg_probe{k}", (probe, *graph.nodes[i].shape),
                                      graph.nodes[i].dtype))
             for k, i in enumerate(inputs)}
    _rebuild(graph, order, ids, fresh, probe)
    return _rebuild(graph, order, ids, dict(inputs), size)


def _rebuild(graph: Graph, order: list[int], ids: list[int], memo: dict[int, Expr],
             size: int) -> list[Expr]:
    home = next(iter(memo.values())).graph
    nodes = graph.nodes
    for i in order:
        n = nodes[i]
        if i in memo or not any(a in memo for a in n.args):
            continue
        if isinstance(n.attrs.get("rule"), CustomRule):
            raise Unbatchable(f"a call of {n.attrs['rule'].name} (a custom rule)")
        op = REGISTRY[n.op]
        args = []
        for a in n.args:
            e = memo.get(a)
            if e is None:
                e = Expr(home, home.find(Expr(graph, a)))
            elif op.elementwise and e.ndim - 1 < len(n.shape):
                lift = (1,) * (len(n.shape) - e.ndim + 1)
                e = F.reshape(e, (size, *lift, *e.shape[1:]))
            args.append(e)
        try:
            if op.batch is not None:
                new = home.find(op.batch(args, tuple(a in memo for a in n.args), n.attrs,
                                         n.shape))
            else:
                new = home.add(op, tuple(home.find(e) for e in args), n.attrs)
        except SymgradError as err:
            raise Unbatchable(f"{n.op}: {err}") from None
        got = home.nodes[new]
        if got.shape != (size, *n.shape) or got.dtype != n.dtype:
            raise Unbatchable(f"{n.op} mixes the rows")
        memo[i] = Expr(home, new)
    out = []
    for i in ids:
        e = memo.get(i)
        if e is None:
            n = nodes[i]
            e = F.broadcast_to(Expr(home, home.find(Expr(graph, i))), (size, *n.shape))
        out.append(e)
    return out


__all__ = ["Unbatchable", "batched"]
