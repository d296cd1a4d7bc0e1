"""The optional simplifier: the graph rebuilt through the rewrite passes, provenance kept.

The pipeline is correct without it. ``simplify`` copies the outputs' ancestors into a fresh
graph in topological order, each node offered to the passes as it is built — forward nodes
to the exact passes and :mod:`~symgrad.passes.stability`, adjoint nodes also to the adjoint
cleanup — then rebuilds again until nothing changes (:data:`CSE`: identical subexpressions
become one node, dead nodes are dropped). With ``sympy=True`` the :data:`SYMPY` pass runs
first. Adjoint nodes keep their role and origin; ``adjoint_of`` and every transform's
record are carried over.
"""

from __future__ import annotations

from typing import Any

from ..base.errors import SymgradError
from ..ir.expr import Expr
from .rebuild import _copy_var, gc_paused, rebuild  # noqa: F401 - their old home
from .registry import query

_MAX_ROUNDS = 4
FORWARD = query("simplify")  # the passes forward nodes are offered
ADJOINT = query("simplify_adjoint")  # the passes adjoint (and tangent) nodes are offered


def simplify(exprs: Any, sympy: bool = False) -> Any:
    """Simplified copies of ``exprs`` (an Expr, or a list/tuple of them: same structure back).

    With ``sympy=True``, every maximal elementwise region (ops with a sympy translation,
    shared subexpressions included) also goes through ``sympy.simplify`` and
    ``sympy.cse``; sympy's answer is kept when it is cheaper by the cost model, agrees
    numerically (and is NaN/inf exactly where the original is) and came within the time
    and size budget — a region over budget is left as it was, with a warning
    (:mod:`symgrad.passes.sympy_bridge`). ``sg.passes()`` lists the passes.

    >>> import symgrad as sg
    >>> x = sg.var("x")
    >>> str(sg.simplify(sg.log(1 + sg.exp(x) * 1.0) - 0.0))
    'softplus(x)'
    >>> str(sg.simplify(sg.sin(x) ** 2 + sg.cos(x) ** 2, sympy=True))
    '1.0'
    """
    single = isinstance(exprs, Expr)
    if not single and not (isinstance(exprs, (list, tuple))
                           and all(isinstance(e, Expr) for e in exprs)):
        raise SymgradError("simplify needs a symgrad expression (an Expr) or a list or tuple "
                           "of them")
    if type(sympy) not in (bool, int):
        raise SymgradError("simplify: sympy must be True or False")
    outs = [exprs] if single else list(exprs)
    if not outs:
        return exprs
    graph = max((e.graph for e in outs), key=len)
    ids = [graph.find(e) for e in outs]
    if sympy:
        from .sympy_bridge import region_hook

        graph, ids = rebuild(graph, ids, FORWARD, ADJOINT, region_hook(graph, ids))
    for _ in range(_MAX_ROUNDS):  # until a rebuild changes nothing
        size = len(graph)
        graph, ids = rebuild(graph, ids, FORWARD, ADJOINT)
        if len(graph) == size:
            break
    result = [Expr(graph, i) for i in ids]
    return result[0] if single else type(exprs)(result)
