"""Where each pass runs, said once: every pass carries ``stages`` tags, and every pipeline
is a query of them (as PyTensor's ``optdb.query``), in the one order of :data:`PASSES`.

=====================  ================================================================
stage                  where it runs
=====================  ================================================================
``reverse``            on B as reverse (and forward) mode builds it
``compile``            ``compile``/``to_source``: the exact passes (bit for bit)
``fast_math``          ``compile(..., fast_math=True)``
``arrays``             ``compile(..., backend="jax"|"torch")``, after the compile passes
``simplify``           ``simplify``: the forward nodes
``simplify_adjoint``   ``simplify``: the adjoint and tangent nodes
``sympy``              ``simplify(..., sympy=True)``, first
``loops``              before differentiating (both) and before ``compile`` emits (rolling;
                       the reductions too with ``fast_math=True``): :mod:`.loops`
=====================  ================================================================

>>> [p.name for p in query("compile")]
['constant_folding', 'identities', 'negations', 'normal_form', 'canonical_order', 'nan_guards']
"""

from __future__ import annotations

from .adjoint_cleanup import ADJOINT_CLEANUP
from .array_targets import SUMS_AS_SUMS
from .exact import CONSTANT_FOLDING, IDENTITIES, NEGATIONS
from .fast_math import FAST_MATH
from .idioms import IDIOMS
from .loops import REDUCTIONS, ROLLING
from .lowering import LOWERING
from .nan_guards import NAN_GUARDS
from .normal_form import CANONICAL_ORDER, NORMAL_FORM
from .pattern import Pass
from .rebuild import CSE, SYMPY
from .stability import STABILITY

__all__ = ["PASSES", "STAGES", "query"]

STAGES = ("reverse", "compile", "fast_math", "arrays", "simplify", "simplify_adjoint",
          "sympy", "loops")

PASSES: tuple[Pass, ...] = (
    CONSTANT_FOLDING, IDENTITIES, NEGATIONS, NORMAL_FORM, CANONICAL_ORDER, FAST_MATH,
    ADJOINT_CLEANUP, NAN_GUARDS, LOWERING, IDIOMS, STABILITY, SUMS_AS_SUMS, SYMPY, CSE,
    REDUCTIONS, ROLLING,
)
"""Every pass that runs anywhere, in the order any pipeline applies them."""


def query(stage: str) -> tuple[Pass, ...]:
    """The passes tagged ``stage``, in :data:`PASSES` order: the pipeline of that stage."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; the stages are {', '.join(STAGES)}")
    return tuple(p for p in PASSES if stage in p.stages)
