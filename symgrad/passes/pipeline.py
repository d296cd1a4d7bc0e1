"""Running the stages: one loop over a pipeline's stages, each the query of its tag
(:mod:`.registry`), as tinygrad's ``full_rewrite_to_sink`` names each rewrite in its order.

A stage runs its passes in :data:`~.registry.PASSES` order: a whole-graph pass by its
``run(graph, ids, ctx)``; consecutive rule passes together, as one rebuild of the outputs'
ancestors through all their rules (:func:`~.rebuild.rebuilt`: identical subexpressions
shared, dead nodes dropped).

What ``compile`` and ``to_source`` run before emitting (:func:`compile_stages`):

* by default ``rolling`` then ``compile``: traced loops rolled (bit for bit), then the
  passes that are exact in IEEE arithmetic — constant folding, identities, negations, the
  exact normal form — so the emitted code computes what the graph says bit for bit (the
  payload of a NaN aside), with commutative operands in one order (``100 * t`` and ``t *
  100`` become one line) and identical subexpressions computed once;
* with ``fast_math=True`` ``loops`` then ``fast_math``: chains over consecutive elements
  reduced too, and the rewrites that change results where the written form overflowed or
  gave NaN (the idioms written as their ops, the stability rewrites of ``simplify``, the
  lowering of B on every node, ``a - a -> 0``, ``0 * x -> 0``, ``x + 0 -> x``). Values then
  agree with the default to about 1e-12 relative (not bit for bit; NaN/inf where the
  written form overflowed may become numbers);
* then the target's own stages (its ``passes``): ``arrays`` for JAX and PyTorch
  (:mod:`.array_targets`), ``promote`` for the array API targets (:mod:`.promotion`; it
  runs with ``optimize=False`` too, as the code is wrong without it);
* last, always, ``calls``: calls that are one loop made one call (:mod:`.calls`), so a
  value and its gradient run each forward loop once.

>>> import symgrad as sg
>>> compile_stages(True, False, ("arrays", "promote"))
('rolling', 'compile', 'arrays', 'promote', 'calls')
>>> compile_stages(False, False, ("arrays", "promote"))
('promote', 'calls')
"""

from __future__ import annotations

from collections.abc import Sequence

from ..base.memory import gc_paused
from ..ir.expr import Expr
from ..ir.graph import Graph
from .context import Context
from .pattern import Pass
from .rebuild import rebuilt
from .registry import query

__all__ = ["ALWAYS", "analysed", "compile_stages", "loop_stage", "optimize", "rule_passes",
           "run_stage", "run_stages"]

ALWAYS = frozenset({"promote"})  # a target's stages that run even with optimize=False


def compile_stages(optimize: bool, fast_math: bool,
                   target: Sequence[str] = ()) -> tuple[str, ...]:
    """The stages ``compile`` runs, in order, for a target whose own stages are
    ``target`` (see the module docstring)."""
    if not optimize:
        return (*(s for s in target if s in ALWAYS), "calls")
    first = ("loops", "fast_math") if fast_math else ("rolling", "compile")
    return (*first, *target, "calls")


def run_stage(stage: str, graph: Graph, ids: list[int], ctx: Context
              ) -> tuple[Graph, list[int]]:
    """The outputs ``ids`` of ``graph`` through the passes of ``stage``; the graph that
    holds their new form and their new ids."""
    rules: list[Pass] = []
    for p in query(stage):
        if p.run is None:
            rules.append(p)
            continue
        if rules:
            graph, ids = rebuilt(graph, ids, tuple(rules))
            rules = []
        graph, ids = p.run(graph, ids, ctx)
    if rules:
        graph, ids = rebuilt(graph, ids, tuple(rules))
    return graph, ids


def run_stages(stages: Sequence[str], graph: Graph, groups: list[list[int]],
               ctx: Context | None = None) -> tuple[Graph, list[list[int]]]:
    """The outputs (lists of ids) through ``stages`` in order; the new graph and the
    outputs' new ids, group by group."""
    ctx = Context() if ctx is None else ctx
    ids = [i for group in groups for i in group]
    with gc_paused():  # the passes build many small objects and no cycles
        for stage in stages:
            graph, ids = run_stage(stage, graph, ids, ctx)
    out, k = [], 0
    for group in groups:
        out.append(ids[k:k + len(group)])
        k += len(group)
    return graph, out


def optimize(graph: Graph, groups: list[list[int]], fast_math: bool = False,
             target: Sequence[str] = ()) -> tuple[Graph, list[list[int]]]:
    """The graph of ``groups`` (lists of output ids) through the stages ``compile`` runs
    (:func:`compile_stages`, optimizing); the new graph and the outputs' new ids, group
    by group."""
    return run_stages(compile_stages(True, fast_math, target), graph, groups)


def loop_stage(outputs: Sequence[Expr]) -> list[Expr]:
    """``outputs`` (of one graph) through the ``loops`` stage, as the derivative
    transforms run it before differentiating: chains reduced, runs of steps rolled (new
    nodes in their graph; the outputs themselves where nothing changes)."""
    if not outputs:
        return []
    graph = outputs[0].graph
    new, (ids,) = run_stages(("loops",), graph, [[graph.find(o) for o in outputs]])
    return [Expr(new, i) for i in ids]


def rule_passes(stage: str) -> tuple[Pass, ...]:
    """The rule passes of ``stage``, in order: what reverse mode installs while it builds B
    (:meth:`~symgrad.ir.graph.Graph.rewriting`), each node offered to them as it is built."""
    return tuple(p for p in query(stage) if p.run is None)


def analysed(stage: str, graph: Graph, ids: list[int]) -> Context:
    """The whole-graph passes of ``stage`` run on ``ids`` (analyses, which change nothing:
    reverse mode builds B on the graph as it is); the context holding what they found."""
    ctx = Context()
    for p in query(stage):
        if p.run is not None:
            new, new_ids = p.run(graph, ids, ctx)
            if new is not graph or new_ids != ids:
                raise AssertionError(f"pass {p.name} of stage {stage} changed the graph")
    return ctx
