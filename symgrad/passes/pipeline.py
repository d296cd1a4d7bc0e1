"""What ``compile`` and ``to_source`` run before emitting: the exact passes by default, more
with ``fast_math=True``.

By default (:data:`COMPILE`) the outputs' graph is rebuilt through the passes that are exact
in IEEE arithmetic — constant folding, identities, negations and the exact normal form — so
the emitted code computes what the graph says bit for bit (the payload of a NaN aside),
with commutative operands in one order (``100 * t`` and ``t * 100`` become one line) and
identical subexpressions computed once.

``fast_math=True`` runs :data:`FAST` instead: also :data:`~.fast_math.FAST_MATH` and the
rewrites that change results where the written form overflowed or gave NaN: the idioms
written as their ops (``1 / (1 + exp(-x)) -> sigmoid(x)``), the stability rewrites of
``simplify`` and the lowering of B applied to every node, plus ``a - a -> 0``, ``0 * x ->
0`` and ``x + 0 -> x``. Values then agree with the default to about 1e-12 relative (not bit
for bit; NaN/inf where the written form overflowed may become numbers). For JAX and
PyTorch :data:`ARRAYS` runs after them (:mod:`.array_targets`).

Each pipeline is a query of the passes' own ``stages`` tags (:mod:`.registry`).
"""

from __future__ import annotations

from ..ir.graph import Graph
from .fast_math import FAST_MATH
from .rebuild import rebuilt
from .registry import query

COMPILE = query("compile")
FAST = query("fast_math")
ARRAYS = query("arrays")


def optimize(graph: Graph, groups: list[list[int]], fast_math: bool = False,
             arrays: bool = False) -> tuple[Graph, list[list[int]]]:
    """The graph of ``groups`` (lists of output ids) rebuilt through the compile passes
    (then, if ``arrays``, through :data:`ARRAYS`); returns the new graph and the outputs'
    new ids, group by group."""
    groups = _loops_rolled(graph, groups, fast_math)
    graph, groups = rebuilt(graph, groups, FAST if fast_math else COMPILE)
    if arrays:
        graph, groups = rebuilt(graph, groups, ARRAYS)
    return graph, groups


__all__ = ["ARRAYS", "COMPILE", "FAST", "FAST_MATH", "optimize", "rebuilt"]


def _loops_rolled(graph: Graph, groups: list[list[int]], fast_math: bool) -> list[list[int]]:
    """The outputs with traced loops rolled (:mod:`.loops`), chains reduced if
    ``fast_math``; the same ids where nothing changes."""
    from ..ir.expr import Expr
    from .loops import loop_passes

    flat = [Expr(graph, i) for group in groups for i in group]
    if not flat:
        return groups
    ids = [e.node for e in loop_passes(flat, reassociate=fast_math)]
    out, k = [], 0
    for group in groups:
        out.append(ids[k:k + len(group)])
        k += len(group)
    return out
