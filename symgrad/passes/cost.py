"""The cost model: estimated floating-point operations and bytes written, per node.

Used by the sympy bridge (a rewrite is kept only when cheaper) and by ``sg.stats``. An
estimate, not a measurement: elementwise arithmetic costs one flop per element, a
transcendental function :data:`TRANSCENDENTAL` flops (the order of a libm call), a
reduction one flop per input element, a matrix product two per multiply-add; shape ops
that NumPy does as views (reshape, transpose, broadcast, slicing) cost nothing and write
nothing. Bytes are those of each computed (non-view) result. :data:`COSTS` is the table,
keyed by op name; an op it does not list (a user's ``defop``) costs a flop per element.

>>> import symgrad as sg
>>> from symgrad.passes.cost import cost
>>> x = sg.var("x", shape=(1000,))
>>> c = cost(sg.exp(x) * 2.0)
>>> c.flops, c.bytes
(21000, 16000)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir.expr import Expr
from ..ir.graph import Graph

TRANSCENDENTAL = 20  # flops per element of exp, log, sin, tanh, **, ...

# (graph, node) -> flops; a node not listed costs one flop per element of its result.
Rule = Callable[[Graph, Any], int]


def _per_element(k: float) -> Rule:
    return lambda graph, n: int(k * math.prod(n.shape))


def _per_input(k: float) -> Rule:
    return lambda graph, n: int(k * math.prod(graph.nodes[n.args[0]].shape))


def _view(graph: Graph, n: Any) -> None:
    return None  # a view: no flops, no bytes


def _product(graph: Graph, n: Any) -> int:
    a = graph.nodes[n.args[0]].shape
    return 2 * math.prod(n.shape) * (a[-1] if a else 1)


def _einsum(graph: Graph, n: Any) -> int:
    ins, out = n.attrs["spec"].split("->")
    shapes = [graph.nodes[a].shape for a in n.args]
    sizes = {c: d for term, s in zip(ins.split(","), shapes) for c, d in zip(term, s)}
    return 2 * math.prod(n.shape) * (math.prod(d for c, d in sizes.items() if c not in out) or 1)


def _index(graph: Graph, n: Any) -> int | None:
    return None if len(n.args) == 1 else int(math.prod(n.shape))  # a slice is a view


COSTS: dict[str, Rule] = {
    **dict.fromkeys(("divide", "sqrt"), _per_element(4)),
    **dict.fromkeys(("exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sinh",
                     "cosh", "power"), _per_element(TRANSCENDENTAL)),
    **dict.fromkeys(("sigmoid", "softplus"), _per_element(2 * TRANSCENDENTAL + 1)),
    **dict.fromkeys(("sum", "mean", "max", "min"), _per_input(1)),
    "logsumexp": _per_input(2 + TRANSCENDENTAL), "softmax": _per_input(3 + TRANSCENDENTAL),
    "log_softmax": _per_input(3 + 2 * TRANSCENDENTAL),
    **dict.fromkeys(("matmul", "dot"), _product), "einsum": _einsum,
    **dict.fromkeys(("reshape", "broadcast_to", "expand_dims", "squeeze", "transpose",
                     "matrix_transpose"), _view),
    "index": _index,
    "result": _view,  # a projection: its call computes it
}
_DEFAULT = _per_element(1)


@dataclass
class Cost:
    """Totals over a set of nodes: ``nodes``, ``flops``, ``bytes`` and ``ops`` (a histogram
    of op names)."""

    nodes: int = 0
    flops: int = 0
    bytes: int = 0
    ops: Counter = field(default_factory=Counter)

    def __lt__(self, other: Cost) -> bool:
        return (self.flops, self.bytes, self.nodes) < (other.flops, other.bytes, other.nodes)


def node_cost(graph: Graph, i: int) -> tuple[int, int]:
    """``(flops, bytes written)`` of computing node ``i`` from its operands."""
    n = graph.nodes[i]
    if n.is_var or n.is_const:
        return 0, 0
    if n.is_call:  # several results: a flop per element of each, unless its op is listed
        sizes = [(math.prod(s), np.dtype(d).itemsize) for s, d in n.dtype]
        rule = COSTS.get(n.op)
        flops = rule(graph, n) if rule is not None else sum(k for k, _ in sizes)
        return flops or 0, sum(k * b for k, b in sizes)
    flops = COSTS.get(n.op, _DEFAULT)(graph, n)
    if flops is None:
        return 0, 0
    return flops, math.prod(n.shape) * np.dtype(n.dtype).itemsize


def cost(exprs: Any, graph: Graph | None = None) -> Cost:
    """The total :class:`Cost` of the nodes ``exprs`` (an Expr, a list of them, or node
    ids of ``graph``) depend on."""
    if isinstance(exprs, Expr):
        exprs = [exprs]
    ids = list(exprs)
    if graph is None:
        graph = max((e.graph for e in ids), key=len)
        ids = [graph.find(e) for e in ids]
    total = Cost()
    for i in graph.ancestors(ids):
        n = graph.nodes[i]
        total.nodes += 1
        total.ops[n.op] += 1
        flops, written = node_cost(graph, i)
        total.flops += flops
        total.bytes += written
    return total
