"""``fast_math``: the opt-in rewrites that are not IEEE-exact (``compile(...,
fast_math=True)``): ``a - a -> 0``, ``0 * x -> 0``, ``x + 0 -> x``; results differ where an
input is NaN or infinite."""

from __future__ import annotations

from ..ir.expr import Expr, F
from .pattern import Const, Pass, Rule


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
    stages=("fast_math",),
)
