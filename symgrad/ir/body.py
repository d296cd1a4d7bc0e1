"""A loop body: a graph of its own, held by a ``scan`` node as an attribute.

:func:`trace` calls a Python function on fresh variables in a graph of its own and keeps
what its results depend on. Values the function *captures* (an Expr of the user's graph, an
array constant) become explicit inputs of the body: the scan node takes them as operands,
so every transform sees them. A :class:`Body` is immutable and compares by its structure
(ops, operand positions, attributes, shapes, dtypes), so two scans of the same step are one
node (hash-consing), whatever the Python function objects were.

While a body is traced its graph is on :data:`symgrad.ir.expr.TRACES`: an operation mixing
it with the user's graph is built in the body's graph (the user's value is imported there
and later recognised as captured), never the other way round.

>>> import symgrad as sg
>>> from symgrad.ir.body import trace
>>> w = sg.var("w")
>>> body, captured = trace(lambda c: [sg.sin(c) * w], [((), "float64")])
>>> body, [str(e) for e in captured]
(<loop body: 1 inputs + 1 captured -> 1 outputs, 4 nodes>, ['w'])
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base.errors import ShapeError, SymgradError
from .expr import TRACES, Expr, operand_id, projections
from .graph import Graph
from .op import REGISTRY
from .values import freeze

Aval = tuple[tuple[int, ...], str]  # (shape, dtype) of a body input
_COUNT = itertools.count()


class Body:
    """A traced loop body: ``graph`` with input variables ``inputs`` (the ``n_in`` traced
    ones, then the captured ones) and result nodes ``outputs``.

    Equal bodies have equal ``key`` (their nodes in order, with operand positions, frozen
    attributes, shapes and dtypes). Nothing changes a body once built: what is derived from
    it (the step's JVP and VJP, its optimised form) is remembered by :meth:`memo`, a pure
    function of the body and the key asked, outside its ``key``.
    """

    __slots__ = ("graph", "inputs", "outputs", "n_in", "key", "_hash", "_memo", "_program",
                 "_lock")

    def __init__(self, graph: Graph, inputs: Sequence[int], outputs: Sequence[int],
                 n_in: int) -> None:
        self.graph, self.inputs, self.outputs = graph, tuple(inputs), tuple(outputs)
        self.n_in = n_in
        nodes = graph.nodes
        self.key = (tuple((n.op, n.args, freeze(n.attrs) if n.attrs else (), n.shape,
                           n.dtype) for n in nodes), self.inputs, self.outputs, n_in)
        self._hash = hash(self.key)
        self._memo: dict[Any, Any] = {}
        self._program: list | None = None
        self._lock = threading.Lock()

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Body) and self._hash == other._hash
                                 and self.key == other.key)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        k = len(self.inputs) - self.n_in
        return (f"<loop body: {self.n_in} inputs + {k} captured -> {len(self.outputs)} "
                f"outputs, {len(self.graph)} nodes>")

    def avals(self, ids: Sequence[int] | None = None) -> list[Aval]:
        """``(shape, dtype)`` of nodes ``ids`` (default: the inputs)."""
        nodes = self.graph.nodes
        return [(nodes[i].shape, nodes[i].dtype) for i in (self.inputs if ids is None else ids)]

    def inline(self, inputs: Sequence[Expr]) -> list[Expr]:
        """The body's results built from ``inputs`` (Exprs of one graph, in order)."""
        graph, memo = self.inline_map(inputs)
        return [Expr(graph, memo[o]) for o in self.outputs]

    def inline_map(self, inputs: Sequence[Expr]) -> tuple[Graph, dict[int, int]]:
        """Every node of the body built from ``inputs``: their graph and a map from each
        body node to its node there."""
        graph = inputs[0].graph if inputs else Graph()
        memo = {v: graph.find(e) for v, e in zip(self.inputs, inputs)}
        for n in self.graph.nodes:
            if n.id not in memo:
                op = REGISTRY[n.op]
                memo[n.id] = graph.add(op, tuple(memo[a] for a in n.args), n.attrs)
        return graph, memo

    def memo(self, key: Any, build: Callable[[], Any]) -> Any:
        """``build()``, made once per ``key`` and remembered: what is derived from this
        body (its JVP, its VJP, its optimised form), which ``key`` determines."""
        try:
            return self._memo[key]
        except KeyError:
            pass
        value = build()
        with self._lock:
            return self._memo.setdefault(key, value)

    def with_outputs(self, extra: Sequence[int]) -> Body:
        """This body with its nodes ``extra`` as further outputs."""
        if not extra:
            return self
        extra = tuple(extra)
        return self.memo(("outputs", extra), lambda: Body(
            self.graph, self.inputs, (*self.outputs, *extra), self.n_in))

    def run(self, values: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The results for input arrays ``values`` (each op's NumPy implementation)."""
        program = self._program
        if program is None:
            program = self._program = self._compile()
        env = dict(zip(self.inputs, values))
        for i, impl, args, attrs in program:
            env[i] = impl(*[env[a] for a in args], **attrs)
        return [np.asarray(env[o]) for o in self.outputs]

    def _compile(self) -> list:
        nodes = self.graph.nodes
        return [(n.id, REGISTRY[n.op].impl, n.args, n.attrs) for n in nodes
                if n.id not in self.inputs]


def trace(fn: Callable[..., Sequence[Any]], avals: Sequence[Aval]) -> tuple[Body, list[Expr]]:
    """Trace ``fn(*inputs) -> results`` on fresh variables of shapes/dtypes ``avals``.

    Returns the body and the captured values (Exprs outside the body that it uses, in order
    of first use): the body's inputs are ``avals`` then one per captured value.
    """
    tg = Graph()
    tag = next(_COUNT)
    names = [f"_sg_loop{tag}_{k}" for k in range(len(avals))]
    try:
        args = [Expr(tg, tg.var(nm, s, d)) for nm, (s, d) in zip(names, avals)]
    except SymgradError as e:
        raise ShapeError(f"loop body input: {e}") from None
    TRACES.graphs.append(tg)
    try:
        results = fn(*args)
        outs = [operand_id(tg, r) for r in results]
    finally:
        TRACES.graphs.pop()
    return _canonical(tg, [a.node for a in args], outs)


def _canonical(tg: Graph, inputs: list[int], outs: list[int]) -> tuple[Body, list[Expr]]:
    """The body graph: the results' ancestors that depend on ``inputs``; what they use
    from outside becomes a captured input (0-d constants are copied in)."""
    nodes = tg.nodes
    order = tg.ancestors(outs)
    inner = tg.descendants(inputs, order)
    captured: list[int] = []
    seen: set[int] = set()

    def capture(a: int) -> None:
        if a not in inner and a not in seen and not (nodes[a].is_const and nodes[a].shape == ()):
            seen.add(a)
            captured.append(a)

    for i in order:
        if i in inner:
            for a in nodes[i].args:
                capture(a)
    for o in outs:
        capture(o)
    body = Graph()
    memo: dict[int, int] = {}
    ids = []
    for k, i in enumerate(inputs + captured):
        n = nodes[i]
        memo[i] = body.var(f"{'c' if k < len(inputs) else 'k'}{k}", n.shape, n.dtype)
        ids.append(memo[i])
    scalars = {a for i in [*order, *outs] if i in inner for a in nodes[i].args
               if a not in inner and nodes[a].is_const and nodes[a].shape == ()}
    for i in order:
        if i not in memo and (i in inner or i in outs or i in scalars):
            n = nodes[i]
            memo[i] = body.add(REGISTRY[n.op], tuple(memo[a] for a in n.args), n.attrs)
    result = Body(body, ids, [memo[o] for o in outs], len(inputs))
    return result, [Expr(tg, c) for c in captured]


def scan_call(graph: Any, body: Body, nc: int, nx: int, length: int, reverse: bool,
              operands: Sequence[Expr], stacked: Sequence[int] = ()) -> tuple[Expr, ...]:
    """The results of the scan call of ``body`` over ``operands`` (with the per-step values
    of body nodes ``stacked`` as further results), built in ``graph`` (operands of other
    graphs are imported into it): one projection per result
    (:class:`~symgrad.ops.loops.ScanParts`)."""
    body, arrays = hoisted(body)
    attrs = {"body": body, "carries": nc, "xs": nx, "length": length, "reverse": reverse,
             "stacked": tuple(sorted(set(stacked)))}
    ids = tuple(graph.find(e) for e in operands)
    ids += tuple(graph.add(REGISTRY["const"], (), {"value": v}) for v in arrays)
    return projections(Expr(graph, graph.add(REGISTRY["scan"], ids, attrs)))


def hoisted(body: Body) -> tuple[Body, list[Any]]:
    """``body`` with its array constants as further captured inputs (loop-invariant
    operands of its loop, after the others), and their values in that order.

    :func:`trace` captures the arrays a traced function reads; a body a transform builds
    (a step's JVP with unit seeds, a solver's sensitivity system scanned again) may hold
    array constants, which a loop step cannot print: the loop passes them in instead, as
    it does every captured value. 0-d constants stay (steps write them inline).

    >>> import numpy as np
    >>> from symgrad.ir.graph import Graph
    >>> g = Graph()
    >>> x = g.var("c0", (2,))
    >>> y = g.add(REGISTRY["add"], (x, g.const(np.array([1.0, 2.0]))), {})
    >>> new, arrays = hoisted(Body(g, [x], [y], 1))
    >>> new, arrays
    (<loop body: 1 inputs + 1 captured -> 1 outputs, 3 nodes>, [array([1., 2.])])
    """
    nodes = body.graph.nodes
    if not any(n.is_const and n.shape != () for n in nodes):
        return body, []
    return body.memo(("hoisted",), lambda: _hoist(body))


def _hoist(body: Body) -> tuple[Body, list[Any]]:
    nodes = body.graph.nodes
    taken = set(body.graph.variables)
    new = Graph()
    memo: dict[int, int] = {}
    extra: list[int] = []
    arrays: list[Any] = []
    for n in nodes:  # creation order: operands come first
        if n.is_var:
            memo[n.id] = new.copy_var(n)
        elif n.is_const and n.shape != ():
            name = f"_sg_hoisted{len(extra)}"
            while name in taken:
                name = "_" + name
            memo[n.id] = new.var(name, n.shape, n.dtype)
            extra.append(memo[n.id])
            arrays.append(n.attrs["value"])
        else:
            memo[n.id] = new.add(REGISTRY[n.op], tuple(memo[a] for a in n.args), n.attrs)
    inputs = [memo[i] for i in body.inputs] + extra
    return Body(new, inputs, [memo[o] for o in body.outputs], body.n_in), arrays


DEFAULT_SNAPSHOTS = 32  # a while_loop's stored carries for its reverse sweep


def while_call(graph: Any, cond: Body, body: Body, nc: int, operands: Sequence[Expr],
               snapshots: int = DEFAULT_SNAPSHOTS, tape: bool = False) -> tuple[Expr, ...]:
    """The results of the ``while_loop`` call of ``cond`` and ``body`` over ``operands``
    (the ``nc`` initial carries, ``body``'s captured values, ``cond``'s), built in
    ``graph``: the final carries, the trip count, then (``tape``) the record of at most
    ``snapshots`` carries its reverse sweep reads."""
    attrs = {"cond_fun": cond, "body_fun": body, "carries": nc,
             "body_args": len(body.inputs) - nc,
             "dtypes": tuple(d for _, d in body.avals()[:nc]), "snapshots": snapshots,
             "tape": ("tape",) if tape else ()}
    return call_results(graph, "while_loop", operands, attrs)


def call_results(graph: Any, name: str, operands: Sequence[Expr], attrs: dict
                 ) -> tuple[Expr, ...]:
    """The results of one call of op ``name`` over ``operands`` built in ``graph``."""
    ids = tuple(graph.find(e) for e in operands)
    return projections(Expr(graph, graph.add(REGISTRY[name], ids, attrs)))
