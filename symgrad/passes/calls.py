"""One run per loop: calls equal but for the results they give become one call.

A call whose last results are chosen by an attribute (:attr:`~symgrad.ir.op.Op.selects`:
a scan's ``stacked`` nodes) may appear several times over the same operands: the primal
``sg.scan`` gives the final carries and the ys, reverse mode asks for the same loop with
the stored carries and residuals its backward scan reads. They are one loop. The interpreter
(:func:`families`) and the compile pipeline (:func:`merged`, the
``calls`` stage, last in every compile) run one call giving the union of their results, so a
value and its gradient run each forward loop once.

>>> import symgrad as sg
>>> x = sg.var("x", shape=(3,))
>>> c, _ = sg.scan(lambda c, _: (sg.sin(c) * x, None), x, length=5)
>>> outs = [c, sg.grad(sg.sum(c), x)]
>>> graph, ids = outs[0].graph, [e.node for e in outs]
>>> def loops(g, ids):
...     return [g.nodes[i].op for i in g.ancestors(ids) if g.nodes[i].op == "scan"]
>>> len(loops(graph, ids))   # the primal's call, reverse mode's forward call, the reverse one
3
>>> new, (ids,) = merged(graph, [ids])
>>> len(loops(new, ids))     # one forward call, the reverse one
2
"""

from __future__ import annotations

from typing import Any

from ..ir.graph import Graph
from ..ir.op import REGISTRY, RESULT
from ..ir.values import freeze
from .context import Context
from .pattern import Pass
from .rebuild import rebuild

__all__ = ["MERGE_CALLS", "families", "merged"]


def families(graph: Graph, order: list[int]) -> dict[int, tuple[dict, list[int], int]]:
    """For each call among ``order`` that shares its loop with another call there (equal
    but for the attribute its op :attr:`~symgrad.ir.op.Op.selects`): the attributes of the
    call giving all their results, where its own results are among that call's, and the
    first call of its family (in ``order``)."""
    nodes = graph.nodes
    groups: dict[tuple, list[int]] = {}
    for i in order:
        n = nodes[i]
        field = REGISTRY[n.op].selects if n.is_call else None
        if field is not None:
            rest = freeze({k: v for k, v in n.attrs.items() if k != field})
            groups.setdefault((n.op, n.args, rest), []).append(i)
    out: dict[int, tuple[dict, list[int], int]] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        field = REGISTRY[nodes[members[0]].op].selects
        union = tuple(sorted({x for m in members for x in nodes[m].attrs[field]}))
        attrs = {**nodes[members[0]].attrs, field: union}
        for m in members:
            out[m] = (attrs, _positions(nodes[m], field, union), members[0])
    return out


def _positions(n: Any, field: str, union: tuple) -> list[int]:
    """Where the results of call ``n`` are among those of the call selecting ``union``."""
    labels = n.attrs[field]
    fixed = len(n.dtype) - len(labels)
    return [k if k < fixed else fixed + union.index(labels[k - fixed])
            for k in range(len(n.dtype))]


def merged(graph: Graph, groups: list[list[int]]) -> tuple[Graph, list[list[int]]]:
    """The graph of ``groups`` (lists of output ids) with each family of calls (see
    :func:`families`) one call; the same graph and ids where there is none to merge."""
    flat = [i for group in groups for i in group]
    found = families(graph, graph.ancestors(flat))
    if not found:
        return graph, groups
    nodes = graph.nodes

    def hook(i: int, mapping: dict[int, int], target: Graph) -> int | None:
        n = nodes[i]
        if i in found:
            return target.add(REGISTRY[n.op], tuple(mapping[a] for a in n.args), found[i][0])
        if n.op == RESULT and n.args[0] in found:
            where = found[n.args[0]][1][n.attrs["index"]]
            return target.add(REGISTRY[RESULT], (mapping[n.args[0]],), {"index": where})
        return None

    new, ids = rebuild(graph, flat, hook=hook)
    for v in graph.variables.values():  # inputs the outputs do not use stay inputs
        if graph.nodes[v].name not in new.variables:
            new.var(graph.nodes[v].name, graph.nodes[v].shape, graph.nodes[v].dtype)
    out, k = [], 0
    for group in groups:
        out.append(ids[k:k + len(group)])
        k += len(group)
    return new, out


def _merge_run(graph: Graph, ids: list[int], ctx: Context) -> tuple[Graph, list[int]]:
    new, (out,) = merged(graph, [ids])
    return new, out


MERGE_CALLS = Pass("merge_calls", "calls equal but for the results they give -> one call",
                   run=_merge_run, stages=("calls",))
