"""Exact rewrites: results equal bit for bit to what the graph computed before.

* ``constant_folding`` — an op whose operands are all small constants becomes the constant
  the interpreter would compute (``2.0 * 3.0`` -> ``6.0``); an elementwise op on broadcast
  small constants is computed on the small values and broadcast (``ones * 100``).
* ``identities`` — ops that change nothing (``x * 1``, ``x ** 1``, a reshape to the same
  shape, ``where`` on a constant condition, a transpose undoing a transpose, a reduction
  over no axes).
* ``negations`` — ``-(-a) -> a``, ``a + (-b) -> a - b``, ``a - (-b) -> a + b`` and negations
  moved out of products (``(-a) * b -> -(a * b)``) so the next sum absorbs them.

``0 * x`` is never folded (it is NaN for infinite ``x``), nor is ``x + 0`` (it turns -0.0
into 0.0): those are :mod:`~symgrad.passes.stability`'s, which allows such differences.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.expr import Expr, F
from .pattern import Const, Pass, Proposed, Rule, constant_value, stored_constant

FOLD_LIMIT = 64  # elements: constants up to this size are computed when built


def _size(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def _all_constant(n: Proposed) -> dict | None:
    nodes = n.graph.nodes
    if not n.arg_ids or n.op.impl is None or _size(n.shape) > FOLD_LIMIT:
        return None
    if not all(nodes[a].is_const for a in n.arg_ids):
        return None
    return {"n": n, "values": [nodes[a].attrs["value"] for a in n.arg_ids]}


def _repeated_constants(n: Proposed) -> dict | None:
    """Elementwise op, all operands small constants, some broadcast: compute small."""
    if not n.op.elementwise or not n.arg_ids or _size(n.shape) <= FOLD_LIMIT:
        return None
    values = []
    for a in n.arg_ids:
        small = stored_constant(n.graph, a)
        if small is None or small.size > FOLD_LIMIT:
            return None
        values.append(small)
    return {"n": n, "values": values}


def _computed(n: Proposed, values: list) -> Expr:
    with np.errstate(all="ignore"):
        value = np.asarray(n.op.impl(*values, **n.attrs))
    return Expr(n.graph, n.graph.const(value))


def _broadcast(n: Proposed, values: list) -> Expr | None:
    small = _computed(n, values)
    return F.broadcast_to(small, n.shape) if small.dtype == n.dtype else None


CONSTANT_FOLDING = Pass(
    "constant_folding",
    "ops on small constants computed once, as the interpreter would (exact)",
    rules=(Rule(_all_constant, _computed, children=("const",)),
           Rule(_repeated_constants, _broadcast, children=("const", "broadcast_to"))),
    stages=("reverse", "compile", "fast_math", "simplify", "simplify_adjoint"),
)


def _select(c: Expr, a: Expr, b: Expr) -> Expr | None:
    value = constant_value(c.graph, c.node)
    return a if value.all() else b if not value.any() else None


def _undoes(p: tuple, q: tuple) -> bool:
    """Whether permutation ``q`` applied after ``p`` gives the identity."""
    return [p[a] for a in q] == sorted(q)


IDENTITIES = Pass(
    "identities",
    "ops that change nothing dropped: x * 1, x ** 1, same-shape reshape, constant where (exact)",
    rules=(
        Rule(("multiply", "x", 1), lambda x: x),
        Rule(("multiply", 1, "x"), lambda x: x),
        Rule(("divide", "x", 1), lambda x: x),
        Rule(("power", "x", 1), lambda x: x),
        Rule(("where", Const("c"), "a", "b"), _select),
        Rule(("transpose", "x", {"axes": "p"}), lambda x, p: x if list(p) == sorted(p) else None),
        Rule(("transpose", ("transpose", "x", {"axes": "p"}), {"axes": "q"}),
             lambda x, p, q: x if _undoes(p, q) else None),
        Rule(("matrix_transpose", ("matrix_transpose", "x")), lambda x: x),
        *(Rule((op, "x"), lambda x: x)  # the driver keeps x only where the shape is x's
          for op in ("reshape", "broadcast_to", "expand_dims", "squeeze", "concatenate")),
        Rule(("index", "x", {"key": "k"}),
             lambda x, k: x if all(e == slice(None) for e in k) else None),
        *(Rule((op, "x", {"axis": "a"}), lambda x, a: x if a == () else None)
          for op in ("sum", "mean", "max", "min", "logsumexp")),
    ),
    stages=("reverse", "compile", "fast_math", "simplify", "simplify_adjoint"),
)

NEGATIONS = Pass(
    "negations",
    "negations folded into sums, moved out of products: a + (-b) -> a - b (exact)",
    rules=(
        Rule(("negative", ("negative", "a")), lambda a: a),
        Rule(("add", "a", ("negative", "b")), lambda a, b: a - b),
        Rule(("add", ("negative", "a"), "b"), lambda a, b: b - a),
        Rule(("subtract", "a", ("negative", "b")), lambda a, b: a + b),
        *(rule for op in ("multiply", "divide") for rule in (
            Rule((op, ("negative", "a"), ("negative", "b")),
                 lambda a, b, op=op: getattr(F, op)(a, b)),
            Rule((op, ("negative", "a"), "b"), lambda a, b, op=op: -getattr(F, op)(a, b)),
            Rule((op, "a", ("negative", "b")), lambda a, b, op=op: -getattr(F, op)(a, b)),
        )),
    ),
    stages=("reverse", "compile", "fast_math", "simplify", "simplify_adjoint"),
)
