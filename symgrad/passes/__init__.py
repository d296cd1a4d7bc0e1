"""Every rewrite symgrad does, as named passes; the builder builds, passes rewrite.

=====================  ================================================================
``constant_folding``   ops on small constants computed once (exact)
``identities``         ops that change nothing dropped (exact)
``negations``          negations folded into sums, moved out of products (exact)
``adjoint_cleanup``    inside B only: where-masks, merged scatters, sums before products
``stability``          stable/cheaper forms (``log1p``, ``softplus``, ``logsumexp``, ...)
``sympy``              ``sympy.simplify`` on elementwise regions (``simplify(sympy=True)``)
``cse``                rebuilt through hash-consing; dead nodes dropped
=====================  ================================================================

The reverse transform runs :data:`REVERSE` on the nodes it builds (B); :func:`simplify`
runs the rest on request. Rules are data (:mod:`.pattern`): op names appear in patterns,
and the driver applies them to each node as it is built.
"""

from __future__ import annotations

from .adjoint_cleanup import ADJOINT_CLEANUP, sum_contributions
from .exact import CONSTANT_FOLDING, IDENTITIES, NEGATIONS
from .pattern import Const, Pass, Rule, rewriter
from .simplify import CSE, SYMPY, simplify
from .stability import STABILITY

REVERSE = (CONSTANT_FOLDING, IDENTITIES, NEGATIONS, ADJOINT_CLEANUP)
PASSES = (CONSTANT_FOLDING, IDENTITIES, NEGATIONS, ADJOINT_CLEANUP, STABILITY, SYMPY, CSE)


def passes() -> list[Pass]:
    """The rewrite passes, in pipeline order: each has ``name``, a one-line ``doc`` and the
    ``stages`` that run it (``"reverse"``: on B as it is built; ``"simplify"``).

    >>> import symgrad as sg
    >>> [p.name for p in sg.passes()]  # doctest: +NORMALIZE_WHITESPACE
    ['constant_folding', 'identities', 'negations', 'adjoint_cleanup', 'stability', 'sympy',
     'cse']
    >>> print(sg.passes()[2])
    negations          negations folded into sums, moved out of products: a + (-b) -> a - b (exact)
    """
    return list(PASSES)


__all__ = ["ADJOINT_CLEANUP", "CONSTANT_FOLDING", "CSE", "Const", "IDENTITIES", "NEGATIONS",
           "PASSES", "Pass", "REVERSE", "Rule", "STABILITY", "SYMPY", "passes", "rewriter",
           "simplify", "sum_contributions"]
