"""The sympy pass of ``simplify(..., sympy=True)``: the only module importing sympy.

Translations both ways are read from the registry: an elementwise op whose ``sympy`` field
is a name translates to that sympy class and back; a callable translates one way. Regions
are trees of translatable nodes cut at shared nodes, so a DAG is never expanded.
"""

from __future__ import annotations

from functools import reduce

import numpy as np
import sympy as sp

from ..ir.expr import Expr, call
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.shapes import is_float

MAX_NODES = 40  # sympy.simplify is super-linear: keep each region small


class Untranslatable(Exception):
    """A sympy result that has no symgrad op."""


def _back_table() -> dict[str, str]:
    return {op.sympy: op.name for op in REGISTRY.values()
            if op.elementwise and isinstance(op.sympy, str)}


def region_hook(graph: Graph, outputs: list[int]):
    """A ``simplify.rebuild`` hook that replaces each region root by sympy's simplification."""
    order = graph.ancestors(outputs)
    users: dict[int, int] = {}
    for i in order:
        for a in set(graph.nodes[i].args):
            users[a] = users.get(a, 0) + 1
    roots = set(outputs)

    def translatable(i: int) -> bool:
        n = graph.nodes[i]
        op = REGISTRY.get(n.op)  # None for a variable
        return op is not None and op.elementwise and op.sympy is not None and is_float(n.dtype)

    def interior(i: int) -> bool:
        return translatable(i) and users.get(i, 0) == 1 and i not in roots

    def hook(i: int, mapping: dict[int, int], target: Graph) -> int | None:
        if not translatable(i) or interior(i):
            return None
        try:
            expr, leaves, size = _to_sympy(graph, i, interior)
        except Untranslatable:
            return None
        simple = sp.simplify(expr)
        if sp.count_ops(simple) >= size:
            return None
        try:
            out = _from_sympy(simple, {s: Expr(target, mapping[a]) for s, a in leaves.items()},
                              target)
        except Untranslatable:
            return None
        n = graph.nodes[i]
        if out.shape != n.shape or out.dtype != n.dtype:
            out = call("broadcast_to", out, n.shape) if out.dtype == n.dtype else None
        return None if out is None else out.node

    return hook


def _to_sympy(graph: Graph, root: int, interior) -> tuple[sp.Expr, dict[sp.Symbol, int], int]:
    """The tree under ``root`` as sympy, its leaf symbols -> node ids, and its op count."""
    leaves: dict[sp.Symbol, int] = {}
    size = 0
    done: dict[int, sp.Expr] = {}
    stack = [(root, False)]
    while stack:
        i, ready = stack.pop()
        if i in done:
            continue
        n = graph.nodes[i]
        if i != root and not interior(i):
            done[i] = _leaf(n, leaves)
        elif not ready:
            stack.append((i, True))
            stack.extend((a, False) for a in n.args)
        else:
            if len(done) > MAX_NODES:
                raise Untranslatable("region too large")
            fn = REGISTRY[n.op].sympy
            args = [done[a] for a in n.args]
            size += 1
            done[i] = getattr(sp, fn)(*args) if isinstance(fn, str) else fn(sp, *args)
    return done[root], leaves, size


def _leaf(n, leaves: dict) -> sp.Expr:
    if n.is_const and n.attrs["value"].ndim == 0 and n.attrs["value"].dtype.kind in "fi":
        v = float(n.attrs["value"])
        if np.isfinite(v):
            return sp.Integer(int(v)) if v.is_integer() else sp.Float(v, 17)
    sym = sp.Symbol(f"n{n.id}", real=True)
    leaves[sym] = n.id
    return sym


def _from_sympy(expr: sp.Expr, leaves: dict[sp.Symbol, Expr], graph: Graph) -> Expr:
    table = _back_table()
    done: dict[sp.Basic, Expr] = {}
    stack = [(expr, False)]
    while stack:
        e, ready = stack.pop()
        if e in done:
            continue
        if e.is_Symbol:
            done[e] = leaves[e]
        elif e.is_number:
            v = complex(e)
            if v.imag or not np.isfinite(v.real):
                raise Untranslatable(str(e))
            done[e] = Expr(graph, graph.const(v.real))
        elif not ready:
            stack.append((e, True))
            stack.extend((a, False) for a in e.args)
        else:
            name = table.get(type(e).__name__)
            if name is None:
                raise Untranslatable(type(e).__name__)
            done[e] = reduce(lambda a, b: call(name, a, b), [done[a] for a in e.args]) \
                if REGISTRY[name].arity == 2 else call(name, *[done[a] for a in e.args])
    return done[expr]
