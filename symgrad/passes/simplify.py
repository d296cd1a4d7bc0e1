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

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from ..errors import SymgradError
from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from .adjoint_cleanup import ADJOINT_CLEANUP
from .exact import CONSTANT_FOLDING, IDENTITIES, NEGATIONS
from .lowering import LOWERING
from .normal_form import NORMAL_FORM
from .pattern import Pass, rewriter
from .stability import STABILITY

_MAX_ROUNDS = 4
Hook = Callable[[int, dict, Graph], "int | None"]
FORWARD = (CONSTANT_FOLDING, IDENTITIES, NEGATIONS, NORMAL_FORM, STABILITY)
ADJOINT = (CONSTANT_FOLDING, IDENTITIES, NEGATIONS, NORMAL_FORM, ADJOINT_CLEANUP, LOWERING,
           STABILITY)


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


@contextmanager
def gc_paused() -> Iterator[None]:
    """No garbage collection inside: building or emitting a graph allocates many small
    objects and makes no cycles, and a collection would walk the whole (large) heap."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def rebuild(source: Graph, ids: list[int], forward: Sequence[Pass] = (),
            adjoint: Sequence[Pass] = (), hook: Hook | None = None) -> tuple[Graph, list[int]]:
    """Copy the ancestors of ``ids`` (and the forward nodes their adjoint nodes were made
    for) into a new graph, each node offered to the passes of its role; returns the graph
    and the new ids. ``hook(i, mapping, target)`` may supply the new id of node ``i``."""
    with gc_paused():
        return _rebuild(source, ids, forward, adjoint, hook)


def _rebuild(source: Graph, ids: list[int], forward: Sequence[Pass],
             adjoint: Sequence[Pass], hook: Hook | None) -> tuple[Graph, list[int]]:
    target = Graph()
    hooks = {"forward": rewriter(target, forward) if forward else None,
             "adjoint": rewriter(target, adjoint) if adjoint else None}
    hooks["tangent"] = hooks["adjoint"]  # tangent nodes get what B gets (transforms/forward)
    nodes = source.nodes
    mapping: dict[int, int] = {}
    context = None  # (role, origin) of the contexts entered: consecutive nodes share them
    with ExitStack() as outer:
        stack = outer
        for i in source.ancestors(ids, origins=True):
            n = nodes[i]
            if n.is_var:  # a variable is made outside any provenance
                stack.close()
                context = None
                mapping[i] = _copy_var(target, n)
                continue
            if context != (n.role, n.origin):
                stack.close()
                stack = outer.enter_context(ExitStack())
                if n.origin is not None:
                    stack.enter_context(target.provenance(mapping[n.origin], n.role))
                stack.enter_context(target.rewriting(hooks[n.role]))
                context = (n.role, n.origin)
            new = hook(i, mapping, target) if hook is not None else None
            if new is None:
                new = target.add(REGISTRY[n.op], tuple(mapping[a] for a in n.args), n.attrs)
            mapping[i] = new
    target.adjoint_of = _remap(source.adjoint_of, mapping)
    target.transforms = [t.remap(mapping) for t in source.transforms]
    return target, [mapping[i] for i in ids]


def _copy_var(target: Graph, n) -> int:
    """Variable ``n`` in ``target``, as it is (its name was accepted where it was made)."""
    found = target.variables.get(n.name)
    if found is None:
        found = target._new(("var", n.name), "var", (), dict(n.attrs), n.shape, n.dtype, n.name)
        target.variables[n.name] = found
    return found


def _remap(table: dict[int, int], mapping: dict[int, int]) -> dict[int, int]:
    return {mapping[f]: mapping[a] for f, a in table.items() if f in mapping and a in mapping}


def _cse(graph: Graph, ids: list[int]) -> tuple[Graph, list[int]]:
    return rebuild(graph, ids)


def _sympy(graph: Graph, ids: list[int]) -> tuple[Graph, list[int]]:
    from .sympy_bridge import region_hook

    return rebuild(graph, ids, hook=region_hook(graph, ids))


CSE = Pass("cse", "rebuilt through hash-consing: identical subexpressions shared, dead nodes "
           "dropped", run=_cse, stages=("simplify",))
SYMPY = Pass("sympy", "sympy.simplify on each elementwise region, kept when it has fewer ops",
             run=_sympy, stages=("simplify(sympy=True)",))
