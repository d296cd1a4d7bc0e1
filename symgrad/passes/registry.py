"""Every pass, once, in the order they run: :data:`PASSES`; where each runs, by its
``stages`` tags (:data:`STAGES`). A stage's pipeline is the query of its tag, in
:data:`PASSES` order (as PyTensor's ``optdb.query``), and every runner — ``compile``'s
:func:`~.pipeline.optimize`, the derivative transforms, reverse mode, ``simplify`` —
runs its stages through :mod:`.pipeline`, one after the other, so the order listed here is
the order run. ``sg.passes()`` lists the passes with their one-line docs.

The stages, where each runs, and the passes of each (generated from :data:`STAGES` and the
passes' tags):

"""

from __future__ import annotations

from .adjoint_cleanup import ADJOINT_CLEANUP
from .array_targets import SUMS_AS_SUMS
from .calls import MERGE_CALLS
from .exact import CONSTANT_FOLDING, IDENTITIES, NEGATIONS
from .fast_math import FAST_MATH
from .idioms import IDIOMS
from .lowering import LOWERING
from .nan_guards import NAN_GUARDS
from .normal_form import CANONICAL_ORDER, NORMAL_FORM
from .pattern import Pass
from .promotion import PROMOTE
from .rebuild import CSE, SYMPY
from .reductions import REDUCTIONS
from .rolling import ROLLING
from .stability import STABILITY

__all__ = ["PASSES", "STAGES", "query"]

STAGES: dict[str, str] = {
    "loops": "before differentiating (grad, vjp, jvp, ...); first in compile(fast_math=True)",
    "rolling": "first in compile and to_source (the rolling alone: bit for bit)",
    "reverse": "reverse and forward mode: on the forward nodes, then on B as it is built",
    "sympy": "simplify(..., sympy=True), before the simplify stage",
    "compile": "compile and to_source: the exact passes (bit for bit)",
    "fast_math": "compile(..., fast_math=True), in place of the compile stage",
    "simplify": "simplify: the forward nodes",
    "simplify_adjoint": "simplify: the adjoint and tangent nodes",
    "arrays": "compile(..., backend='jax'|'torch'), after the compile stage",
    "promote": "compile(..., backend='array_api'|'jax'|'torch'), with or without optimize",
    "calls": "compile and to_source, last, with or without optimize: one run per loop",
}
"""Each stage and where it runs, in the order a pipeline that has several runs them."""

PASSES: tuple[Pass, ...] = (
    REDUCTIONS, ROLLING, IDIOMS, SYMPY, CONSTANT_FOLDING, IDENTITIES, NEGATIONS, NORMAL_FORM,
    CANONICAL_ORDER, FAST_MATH, ADJOINT_CLEANUP, NAN_GUARDS, LOWERING, STABILITY, CSE,
    SUMS_AS_SUMS, PROMOTE, MERGE_CALLS,
)
"""Every pass that runs anywhere, in the order every stage runs its own."""


def query(stage: str) -> tuple[Pass, ...]:
    """The passes tagged ``stage``, in :data:`PASSES` order: the pipeline of that stage.

    >>> [p.name for p in query("compile")]
    ['constant_folding', 'identities', 'negations', 'normal_form', 'canonical_order', 'nan_guards']
    """
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; the stages are {', '.join(STAGES)}")
    return tuple(p for p in PASSES if stage in p.stages)


def _table() -> str:
    """The stages as a reStructuredText table: each with where it runs and its passes."""
    rows = [(f"``{s}``", f"{where}: {', '.join(p.name for p in query(s))}")
            for s, where in STAGES.items()]
    width = max(len(r[0]) for r in rows)
    rule = "=" * width + "  " + "=" * 60
    lines = [rule, f"{'stage':{width}}  where it runs: its passes, in order", rule]
    lines += [f"{a:{width}}  {b}" for a, b in rows]
    return "\n".join([*lines, rule])


__doc__ = (__doc__ or "") + _table() + "\n"
