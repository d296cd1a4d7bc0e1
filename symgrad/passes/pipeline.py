"""What ``compile`` and ``to_source`` run before emitting: the exact passes by default, more
with ``fast_math=True``.

By default (:data:`COMPILE`) the outputs' graph is rebuilt through the passes that are exact
in IEEE arithmetic — constant folding, identities, negations and the exact normal form — so
the emitted code computes what the graph says bit for bit (the payload of a NaN aside),
with commutative operands in one order (``100 * t`` and ``t * 100`` become one line) and
identical subexpressions computed once.

``fast_math=True`` adds :data:`FAST_MATH` and the rewrites that change results where the
written form overflowed or gave NaN: the idioms written as their ops (``1 / (1 + exp(-x))
-> sigmoid(x)``), the stability rewrites of ``simplify`` and the lowering of B applied to
every node, plus ``a - a -> 0``, ``0 * x -> 0`` and ``x + 0 -> x``. Values then agree
with the default to about 1e-12 relative (not bit for bit; NaN/inf where the written form
overflowed may become numbers).
"""

from __future__ import annotations

from ..ir.expr import Expr, F
from ..ir.graph import Graph
from .adjoint_cleanup import ADJOINT_CLEANUP
from .exact import CONSTANT_FOLDING, IDENTITIES, NEGATIONS
from .lowering import LOWERING
from .normal_form import CANONICAL_ORDER, NORMAL_FORM
from .pattern import Const, Pass, Rule
from .simplify import _copy_var, rebuild
from .stability import STABILITY


def _zeros(x: Expr) -> Expr:
    zero = Expr(x.graph, x.graph.const(0.0))
    return zero if x.shape == () else F.broadcast_to(zero, x.shape)


FAST_MATH = Pass(
    "fast_math",
    "opt-in, not IEEE-exact: a - a -> 0, 0 * x -> 0, x + 0 -> x (NaN/inf inputs differ)",
    rules=(
        Rule(("subtract", "a", "a"), lambda a: _zeros(a)),
        Rule(("multiply", Const("z", 0.0), "x"), lambda z, x: _zeros(x)),
        Rule(("multiply", "x", Const("z", 0.0)), lambda x, z: _zeros(x)),
        Rule(("add", ("negative", "a"), "a"), lambda a: _zeros(a)),
        Rule(("add", "a", ("negative", "a")), lambda a: _zeros(a)),
    ),
    stages=("compile(fast_math=True)",),
)

COMPILE = (CONSTANT_FOLDING, IDENTITIES, NEGATIONS, NORMAL_FORM, CANONICAL_ORDER)
FAST = (*COMPILE, FAST_MATH, ADJOINT_CLEANUP, LOWERING, STABILITY)


def optimize(graph: Graph, groups: list[list[int]], fast_math: bool = False
             ) -> tuple[Graph, list[list[int]]]:
    """The graph of ``groups`` (lists of output ids) rebuilt through the compile passes;
    returns the new graph and the outputs' new ids, group by group."""
    passes = FAST if fast_math else COMPILE
    return rebuilt(graph, _loops_rolled(graph, groups, fast_math), passes)


def _loops_rolled(graph: Graph, groups: list[list[int]], fast_math: bool) -> list[list[int]]:
    """The outputs with traced loops rolled (:mod:`.loops`), chains reduced if
    ``fast_math``; the same ids where nothing changes."""
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


def rebuilt(graph: Graph, groups: list[list[int]], passes: tuple
            ) -> tuple[Graph, list[list[int]]]:
    """The graph of ``groups`` rebuilt through ``passes`` (every node), keeping every
    variable; the new graph and the outputs' new ids, group by group."""
    flat = [i for group in groups for i in group]
    new, ids = rebuild(graph, flat, passes, passes)
    for i in graph.variables.values():  # inputs the outputs do not use stay inputs
        _copy_var(new, graph.nodes[i])
    out, k = [], 0
    for group in groups:
        out.append(ids[k:k + len(group)])
        k += len(group)
    return new, out
