"""The optional simplifier: the graph rebuilt through the rewrite passes, provenance kept.

The pipeline is correct without it. ``simplify`` runs the ``sympy`` stage first if asked
(:data:`~.rebuild.SYMPY`), then the ``simplify`` stage: the outputs' ancestors copied into
a fresh graph in topological order, each node offered as it is built to the passes of its
role — forward nodes to those tagged ``simplify`` (the exact passes and
:mod:`~symgrad.passes.stability`), adjoint and tangent nodes to those tagged
``simplify_adjoint`` (the adjoint cleanup too) — again until a rebuild changes nothing
(identical subexpressions become one node, dead nodes are dropped: :data:`~.rebuild.CSE`).
Adjoint nodes keep their role and origin; ``adjoint_of`` and every transform's record are
carried over.
"""

from __future__ import annotations

from typing import Any

from ..base.errors import SymgradError
from ..ir.expr import Expr
from ..ir.graph import Graph
from .context import Context
from .pipeline import run_stage
from .rebuild import rebuild
from .registry import query

_MAX_ROUNDS = 4


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
        graph, ids = run_stage("sympy", graph, ids, Context())
    graph, ids = _rounds(graph, ids)
    result = [Expr(graph, i) for i in ids]
    return result[0] if single else type(exprs)(result)


def _rounds(graph: Graph, ids: list[int]) -> tuple[Graph, list[int]]:
    """The ``simplify`` stage: rebuilds through its passes (and, for adjoint and tangent
    nodes, those of ``simplify_adjoint``) until one changes nothing."""
    forward, adjoint = query("simplify"), query("simplify_adjoint")
    for _ in range(_MAX_ROUNDS):
        size = len(graph)
        graph, ids = rebuild(graph, ids, forward, adjoint)
        if len(graph) == size:
            break
    return graph, ids
