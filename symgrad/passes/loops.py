"""The loop passes, and where they run: :mod:`.rolling` (a run of identical steps becomes a
``scan``; bit for bit) and :mod:`.reductions` (a chain over consecutive elements becomes one
``sum``/``prod``/``max``/``min``; up to reassociation).

The derivative transforms (``grad``, ``vjp``, ``jvp`` and what is built on them) run both on
the function before differentiating it, so a traced Python loop is differentiated as one
loop; ``compile`` and ``to_source`` run the rolling before emitting (and the reductions too
with ``fast_math=True``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ir.expr import Expr
from .pattern import Pass
from .reductions import reduce_chains
from .rolling import roll
from .steps import forget_walk


def loop_passes(outputs: Sequence[Expr], reassociate: bool = True) -> list[Expr]:
    """``outputs`` with chains reduced (if ``reassociate``) and runs of steps rolled."""
    outs = list(outputs)
    try:
        if reassociate:
            outs = reduce_chains(outs)
        return roll(outs)
    finally:
        if outs:
            forget_walk(outs[0].graph)  # (shared by the two passes, not needed after)


REDUCTIONS = Pass(
    "reductions", "t(x[0]) + t(x[1]) + ... -> sum(t(x)); prod, max, min too (sum, prod: "
    "reassociated)",
    run=reduce_chains, stages=("loops",))

ROLLING = Pass(
    "rolling", "a run of identical steps (a traced Python loop) -> one scan (exact)",
    run=roll, stages=("loops",))
