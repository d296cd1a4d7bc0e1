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
custom rule are not batched (the user's rule is written for one row). The rebuilding with
rows is :func:`symgrad.ir.rows.rows_lifted`, which the reductions pass shares.

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

from ..ir.expr import Expr, F
from ..ir.rows import Unbatchable, rows_lifted


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
    return rows_lifted(graph, graph.ancestors(ids), ids, inputs, size)


__all__ = ["Unbatchable", "batched"]
