"""Reductions written as loops: a chain ``t0 + t1 + ... + tn`` whose terms are one
elementwise expression of consecutive elements (or rows) of one array becomes one ``sum``
of that expression on the slice; likewise ``*`` (``prod``), ``maximum`` (``max``) and
``minimum`` (``min``).

What it recognises is what Python loops over arrays build: the builtin ``sum(x)`` (which
iterates the rows of ``x`` and adds them to 0), ``total += f(x[i])``, ``sum(x[i] ** 2 for i
in range(n))``, ``p *= x[i]``, ``m = sg.maximum(m, x[i])``. Terms of a run must be the same
expression (same ops, attributes, shapes and shared values) of slices ``x[..., i, ...]``
whose index advances by the same step from one term to the next; other terms of the chain
are kept, in order, around the reduction. A term need not be elementwise: it is rebuilt with
the steps as rows (:func:`symgrad.ir.rows.rows_lifted`, what ``vmap`` does), so the pair loop of an
energy, ``e += f(r[i] - r[j])`` with ``sum`` inside ``f``, becomes one ``sum`` per ``i``; a
term whose ops would mix the rows is left as written.

Values: ``max``/``min`` give the chain's value exactly; ``sum`` and ``prod`` add (multiply)
in NumPy's pairwise order instead of left to right, so a result may differ from the chain's
in the last bits (by at most about ``n * eps * sum(|t|)``). The derivative transforms use the
reduced form (their results are rounded anyway); ``compile`` uses it with ``fast_math=True``
(by default it rolls the chain into a loop, which is bit for bit: :mod:`.rolling`).

>>> import symgrad as sg
>>> x = sg.var("x", shape=(16,))
>>> (s,) = reduce_chains([sum(x[i] ** 2 for i in range(16))])
>>> str(s)
'0 + sum(x ** 2)'
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from ..ir.custom import CustomRule
from ..ir.expr import Expr, F
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.rows import Unbatchable, rows_lifted
from ..ir.values import freeze
from ..ops.reductions import CHAIN_REDUCTIONS
from .context import Context
from .pattern import Pass
from .steps import Walk, lifted_slot, replaced, slot_step

MIN_RUN = 8  # terms from which a run becomes a reduction (short sums stay as written)
MAX_TERM = 4096  # nodes of a term compared with the next one, at most
_NUMERIC = ("float", "int", "uint")


def reduce_chains(outputs: Sequence[Expr]) -> list[Expr]:
    """``outputs`` (of one graph) with every reducible chain replaced by its reduction (new
    nodes in their graph; the outputs themselves if there is none): the
    :data:`REDUCTIONS` pass on its own."""
    if not outputs:
        return []
    graph = outputs[0].graph
    _, ids = _reduced(graph, [graph.find(o) for o in outputs], Context())
    return [Expr(graph, i) for i in ids]


def _reduced(graph: Graph, ids: list[int], ctx: Context) -> tuple[Graph, list[int]]:
    """The pass: new nodes in ``graph``, the outputs' new ids."""
    if not ids:
        return graph, ids
    return graph, replaced(graph, ids, _reductions(graph, ids, ctx))


REDUCTIONS = Pass(
    "reductions", "t(x[0]) + t(x[1]) + ... -> sum(t(x)); prod, max, min too (sum, prod: "
    "reassociated)",
    run=_reduced, stages=("loops",))


def _reductions(graph: Graph, ids: list[int], ctx: Context) -> dict[int, int]:
    found = ctx.walk(graph, ids)
    uses = found.uses(ids)
    nodes = graph.nodes
    inside: set[int] = set()
    new: dict[int, int] = {}
    for i in reversed(_tops(found, uses)):
        n = nodes[i]
        if i in inside or not n.dtype.startswith(_NUMERIC):
            continue
        terms, links = _chain(graph, i, uses)
        inside.update(links)
        if len(terms) >= MIN_RUN:
            built = _fold(graph, n.op, terms)
            if built is not None:
                new[i] = built
    return new


def _tops(found: Walk, uses: list[int]) -> list[int]:
    """The nodes of ``found`` that may end a chain of MIN_RUN terms (ascending): an op of
    CHAIN_REDUCTIONS on two operands, above MIN_RUN - 2 links (operands of the same op used
    only there; whole arrays: most nodes of a traced loop end no such chain)."""
    code = {op: k + 1 for k, op in enumerate(CHAIN_REDUCTIONS)}
    ops = np.fromiter((code.get(m.op, 0) for m in found.ns), dtype=np.int8, count=len(found.ns))
    at = np.flatnonzero((ops > 0) & (found.counts == 2))
    used_once = np.asarray(uses) == 1
    below, linked = [], []
    for j in (0, 1):
        a = found.at[found.flat[found.starts[at] + j]]  # positions in found
        below.append(a)
        linked.append(used_once[found.ids[a]] & (ops[a] == ops[at]))
    deep = np.zeros(len(found.ns), dtype=bool)
    deep[at] = True  # at least k links below, after k rounds
    for _ in range(MIN_RUN - 2):
        deep[at] = (linked[0] & deep[below[0]]) | (linked[1] & deep[below[1]])
    return found.ids[at[deep[at]]].tolist()


def _chain(graph: Graph, top: int, uses: list[int]) -> tuple[list[int], list[int]]:
    """The terms of the chain ending at ``top`` in evaluation order, and its links."""
    nodes = graph.nodes
    n0 = nodes[top]
    links, tail = [top], []
    acc = top
    while True:
        a, b = nodes[acc].args
        if _link(nodes, a, n0, uses):
            tail.append(b)
            acc = a
        elif _link(nodes, b, n0, uses):
            tail.append(a)
            acc = b
        else:
            return [a, b, *reversed(tail)], links
        links.append(acc)


def _link(nodes, a: int, top, uses: list[int]) -> bool:
    n = nodes[a]
    return (n.op == top.op and len(n.args) == 2 and uses[a] == 1
            and n.shape == top.shape and n.dtype == top.dtype)


def _fold(graph: Graph, op: str, terms: list[int]) -> int | None:
    """The chain rebuilt with each run of at least MIN_RUN terms reduced; None if none."""
    pieces: list[int] = []
    changed = False
    k = 0
    while k < len(terms):
        skip = _no_run_before(graph, terms, k)
        if skip > k:  # no run of MIN_RUN terms starts at k..skip-1: those terms as written
            pieces.extend(terms[k:skip])
            k = skip
            continue
        end, slots = _run(graph, terms, k)
        reduced = _reduce(graph, op, terms[k], slots, end - k) if end - k >= MIN_RUN else None
        if reduced is not None:
            pieces.append(reduced)
            changed = True
            k = end
        else:
            pieces.append(terms[k])
            k += 1
    if not changed:
        return None
    acc = pieces[0]
    for p in pieces[1:]:
        acc = graph.add(REGISTRY[op], (acc, p), {})
    return acc


def _no_run_before(graph: Graph, terms: list[int], k: int) -> int:
    """The first term from ``k`` on at which a run of MIN_RUN terms may start: a run from
    ``j`` needs every pair of ``j..j+MIN_RUN-1`` to unify, so a pair that does not (the
    farthest tried first) rules out every start up to it; ``k`` where all pairs unify. A
    chain whose terms are a recurrence's steps (each term reads the next carry) fails at
    one pair in MIN_RUN - 1 instead of at every one."""
    if k + MIN_RUN > len(terms):
        return len(terms)
    for j in range(k + MIN_RUN - 2, k - 1, -1):
        if unify(graph, terms[j], terms[j + 1]) is None:
            return j + 1
    return k


def _run(graph: Graph, terms: list[int], k: int) -> tuple[int, list[tuple[int, int, int]]]:
    """The end of the run of terms starting at ``k`` and its slots ``(node in terms[k], p,
    delta)``."""
    first = None
    slots: list[tuple[int, int, int]] = []
    current: list[int] = []
    end = k + 1
    while end < len(terms):
        found = unify(graph, terms[end - 1], terms[end])
        if found is None:
            break
        order, mapping = found
        steps = [(s, step) for s, step in order]
        if first is None:
            if not steps:
                break
            first = [step for _, step in steps]
            current = [s for s, _ in steps]
            slots = [(s, p, d) for s, (p, d) in zip(current, first)]
        elif [st for _, st in steps] != first or [s for s, _ in steps] != current:
            break
        current = [mapping[s] for s in current]
        end += 1
    return end, slots


def unify(graph: Graph, t: int, u: int
          ) -> tuple[list[tuple[int, tuple[int, int]]], dict[int, int]] | None:
    """Whether term ``u`` is term ``t`` one step on: the slots of ``t`` in a fixed order,
    each with its ``(p, delta)``, and the map from ``t``'s nodes to ``u``'s; or None."""
    nodes = graph.nodes
    mapping: dict[int, int] = {}
    images: set[int] = set()
    slots: list[tuple[int, tuple[int, int]]] = []
    queue = deque([(t, u)])  # breadth first: terms that differ deep down fail early
    while queue:
        a, b = queue.popleft()
        if len(mapping) > MAX_TERM:
            return None
        if a in mapping:
            if mapping[a] != b:
                return None
            continue
        mapping[a] = b
        if a == b:
            continue
        if b in mapping or a in images:  # the terms overlap: u builds on t, not beside it
            return None
        images.add(b)
        na, nb = nodes[a], nodes[b]
        if (na.op != nb.op or na.shape != nb.shape or na.dtype != nb.dtype
                or len(na.args) != len(nb.args) or na.is_var or na.is_const):
            return None  # (two different variables or constants: not one term)
        step = slot_step(graph, a, b)
        if step is not None:
            slots.append((a, step))
            continue
        # attributes by value and type, as the graph keys them: full((), -0.0) is not 0.0's
        if freeze(na.attrs) != freeze(nb.attrs) or isinstance(na.attrs.get("rule"),
                                                               CustomRule):
            return None
        queue.extend(zip(na.args, nb.args))
    return slots, mapping


def _reduce(graph: Graph, op: str, template: int, slots: list[tuple[int, int, int]],
            count: int) -> int | None:
    """The reduction over ``count`` steps of ``template`` (its slots lifted, the term
    rebuilt with the steps as rows); None where an op of the term would mix the rows."""
    lifted = {s: lifted_slot(graph, s, p, d, count) for s, p, d in slots}
    try:
        (value,) = rows_lifted(graph, graph.ancestors([template]), [template], lifted, count)
    except Unbatchable:
        return None
    return getattr(F, CHAIN_REDUCTIONS[op])(value, axis=0).node
