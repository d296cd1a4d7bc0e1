"""Every rewrite symgrad does, as named passes; the builder builds, passes rewrite.

=====================  ================================================================
``constant_folding``   ops on small constants computed once (exact)
``identities``         ops that change nothing dropped (exact)
``negations``          negations folded into sums, moved out of products (exact)
``normal_form``        x + x -> 2*x, -1 * x -> -x, broadcasts fused, reshape chains (exact)
``canonical_order``    commutative operands in one order: ``t*100`` is ``100*t`` (exact)
``fast_math``          opt-in, not IEEE-exact: ``a - a -> 0``, ``0 * x -> 0``, ``x + 0 -> x``
``adjoint_cleanup``    inside B only: where-masks, merged scatters, sums before products
``nan_guards``         ``(a - a) + y``: the guard on fewer values, or none where y is NaN (exact)
``lowering``           inside B only: scatters as concatenate/stack, stacked outer products
``idioms``             hand-written sigmoid, log-sum-exp, ... differentiated by their rule
``stability``          stable/cheaper forms (``log1p``, ``softplus``, ``logsumexp``, ...)
``sums_as_sums``       jax/torch: batched products with ones written back as sums
``sympy``              ``sympy.simplify`` on elementwise regions (``simplify(sympy=True)``)
``cse``                rebuilt through hash-consing; dead nodes dropped
``reductions``         ``t(x[0]) + t(x[1]) + ...`` -> ``sum(t(x))``; ``prod``, ``max``, ``min``
``rolling``            a run of identical steps (a traced Python loop) -> one ``scan`` (exact)
=====================  ================================================================

Each pass says where it runs (its ``stages`` tags); every pipeline is a query of them
(:mod:`.registry`): the reverse transform runs :data:`REVERSE` on the nodes it builds (B);
``compile`` and ``to_source`` rebuild what they emit through :data:`COMPILE` (the exact
passes; with ``fast_math=True`` also the others, :mod:`.pipeline`); :func:`simplify` runs
the rest on request. Rules are data (:mod:`.pattern`): op names appear in patterns, and the
driver applies them to each node as it is built.
"""

from __future__ import annotations

import sys
import types

from .adjoint_cleanup import ADJOINT_CLEANUP, sum_contributions
from .array_targets import SUMS_AS_SUMS
from .exact import CONSTANT_FOLDING, IDENTITIES, NEGATIONS
from .fast_math import FAST_MATH
from .idioms import IDIOMS
from .loops import REDUCTIONS, ROLLING
from .lowering import LOWERING
from .nan_guards import NAN_GUARDS
from .normal_form import CANONICAL_ORDER, NORMAL_FORM
from .pattern import Const, Pass, Rule, rewriter
from .pipeline import COMPILE
from .rebuild import CSE, SYMPY
from .registry import PASSES, STAGES, query
from .simplify import simplify
from .stability import STABILITY

REVERSE = query("reverse")


def passes() -> list[Pass]:
    """Every rewrite pass that runs anywhere, in pipeline order: each has ``name``, a
    one-line ``doc`` and the ``stages`` that run it (see :mod:`symgrad.passes.registry`:
    ``"reverse"`` on B as it is built, ``"compile"``, ``"simplify"``, ...).

    >>> import symgrad as sg
    >>> [p.name for p in sg.passes()]  # doctest: +NORMALIZE_WHITESPACE
    ['constant_folding', 'identities', 'negations', 'normal_form', 'canonical_order',
     'fast_math', 'adjoint_cleanup', 'nan_guards', 'lowering', 'idioms', 'stability',
     'sums_as_sums', 'sympy', 'cse', 'reductions', 'rolling']
    >>> sg.passes()[5].stages
    ('fast_math',)
    >>> print(sg.passes()[2])
    negations          negations folded into sums, moved out of products: a + (-b) -> a - b (exact)
    """
    return list(PASSES)


class _Passes(types.ModuleType):
    """This package, callable: ``sg.passes()`` is :func:`passes`. One object is both, so
    ``import symgrad.passes.rolling`` (which reads ``symgrad.passes``) and ``sg.passes()``
    work in either order."""

    def __call__(self) -> list[Pass]:
        return passes()


sys.modules[__name__].__class__ = _Passes


__all__ = ["ADJOINT_CLEANUP", "CANONICAL_ORDER", "COMPILE", "CONSTANT_FOLDING", "CSE", "Const",
           "FAST_MATH", "IDENTITIES", "IDIOMS", "LOWERING", "NAN_GUARDS", "NEGATIONS",
           "NORMAL_FORM", "PASSES", "Pass", "REDUCTIONS", "REVERSE", "ROLLING", "Rule",
           "STABILITY", "STAGES", "SUMS_AS_SUMS", "SYMPY", "passes", "query", "rewriter",
           "simplify", "sum_contributions"]
