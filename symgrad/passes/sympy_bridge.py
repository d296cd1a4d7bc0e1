"""The sympy pass of ``simplify(..., sympy=True)``: the only module importing sympy.

Translations both ways are the one translator's (:mod:`symgrad.frontend.sympy_io`, read
from the registry): the bridge adds only which nodes form a region and which leaves stand
for the rest of the graph.

A **region** is everything elementwise and translatable under a root — a node used by
something that is not (or an output) — including the subexpressions it shares: sympy
receives the DAG (sympy's expressions are shared as well), and what comes back goes
through ``sympy.cse`` so that a repeated subexpression becomes one graph node again.
sympy's answer replaces the root only if

* it is cheaper by the cost model (:mod:`.cost`: flops, not node count alone);
* a numeric spot check passes: at points where the leaves take ordinary values (zero and
  negative ones included) it agrees with the original to 1e-9, and is NaN or ±inf exactly
  where the original is — so ``exp(log(x)) -> x``, ``sqrt(x)**2 -> x`` and ``x/x -> 1``
  are refused (they would turn NaN into numbers) — and at large values (±40, ±1000) it is
  finite wherever the original is (so it never trades a stable form for an overflowing
  one; it may remove an overflow: ``log(exp(x)) -> x`` is 1000 at x = 1000, which the
  written form gives as inf);
* it arrives within the budget: at most :data:`MAX_REGION` nodes and :data:`MAX_TREE`
  operations written as a tree, no integer power above :data:`MAX_EXPONENT`, and
  ``sympy.simplify`` stopped after :data:`TIME_BUDGET` seconds. A region over budget is
  left as it was, with a :class:`SympyBudgetWarning` naming it.
"""

from __future__ import annotations

import ctypes
import threading
import warnings
from itertools import product

import numpy as np
import sympy as sp

from ..base.errors import SymgradError
from ..frontend.sympy_forms import number, sympy_form
from ..frontend.sympy_io import FromSympy, back_table
from ..ir.expr import Expr, call
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.shapes import is_float
from .cost import node_cost

MAX_REGION = 200  # nodes of one region
MAX_TREE = 4000  # operations of a region written out as a tree
MAX_EXPONENT = 64  # integer powers above this are not expanded by sympy
TIME_BUDGET = 2.0  # seconds of sympy.simplify per region
_MODERATE = (-2.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.5)
_LARGE = (-1000.0, -40.0, 40.0, 1000.0)


class SympyBudgetWarning(UserWarning):
    """A region ``simplify(sympy=True)`` left as it was: over its size or time budget."""


class Untranslatable(Exception):
    """A sympy result that has no symgrad op."""


class _Timeout(BaseException):
    """Raised inside the thread running sympy when its time budget is spent."""


# -- regions ------------------------------------------------------------------------------------


def region_hook(graph: Graph, outputs: list[int]):
    """A ``simplify.rebuild`` hook that replaces each region root by sympy's simplification
    (when it passes the checks of the module docstring)."""
    order = graph.ancestors(outputs)
    nodes = graph.nodes

    def translatable(i: int) -> bool:
        n = nodes[i]
        op = REGISTRY.get(n.op)
        return (op is not None and op.elementwise and op.sympy is not None
                and is_float(n.dtype))

    inside = {i for i in order if translatable(i)}
    outer_use = set(outputs)
    for i in order:
        if i not in inside:
            outer_use.update(a for a in nodes[i].args if a in inside)
    roots = inside & outer_use
    tree = _tree_sizes(graph, order, inside)

    def hook(i: int, mapping: dict[int, int], target: Graph) -> int | None:
        if i not in roots:
            return None
        return _replace(graph, i, inside, tree.get(i, 0), mapping, target)

    return hook


def _tree_sizes(graph: Graph, order: list[int], inside: set[int]) -> dict[int, int]:
    size: dict[int, int] = {}
    for i in order:
        if i in inside:
            size[i] = min(1 + sum(size.get(a, 0) for a in graph.nodes[i].args), 1 << 40)
    return size


def _region(graph: Graph, root: int, inside: set[int]) -> list[int]:
    """The region's nodes under ``root``, in topological order."""
    seen, stack = set(), [root]
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        stack.extend(a for a in graph.nodes[i].args if a in inside)
    return sorted(seen)


def _replace(graph: Graph, root: int, inside: set[int], tree: int,
             mapping: dict[int, int], target: Graph) -> int | None:
    region = _region(graph, root, inside)
    if len(region) < 2:
        return None
    where = f"region of {len(region)} nodes at node {root} ({graph.nodes[root].op})"
    if len(region) > MAX_REGION or tree > MAX_TREE:
        warnings.warn(f"simplify(sympy=True): {where} left as it was: larger than the "
                      f"budget ({MAX_REGION} nodes, {MAX_TREE} operations as a tree)",
                      SympyBudgetWarning, stacklevel=2)
        return None
    try:
        expr, leaves = _to_sympy(graph, region)
    except Untranslatable:
        return None
    if _has_large_power(expr):
        warnings.warn(f"simplify(sympy=True): {where} left as it was: an integer power "
                      f"above {MAX_EXPONENT}", SympyBudgetWarning, stacklevel=2)
        return None
    try:
        simple = _with_budget(sp.simplify, expr, TIME_BUDGET)
    except _Timeout:
        warnings.warn(f"simplify(sympy=True): {where} left as it was: sympy.simplify took "
                      f"more than {TIME_BUDGET} s", SympyBudgetWarning, stacklevel=2)
        return None
    except (MemoryError, RecursionError, ValueError, TypeError, ZeroDivisionError):
        return None
    try:
        out = _from_sympy(simple, {s: Expr(target, mapping[a]) for s, a in leaves.items()},
                          target)
    except (Untranslatable, KeyError):
        return None
    n = graph.nodes[root]
    if out.dtype != n.dtype:
        return None
    if out.shape != n.shape:
        out = call("broadcast_to", out, n.shape)
    if not _cheaper(target, out.node, {mapping[a] for a in leaves.values()}, graph, region):
        return None
    if not _agrees(graph, region, leaves, target, out.node, mapping):
        return None
    return out.node


# -- budget ---------------------------------------------------------------------------------------


def _with_budget(fn, arg, seconds: float):
    """``fn(arg)``, interrupted with :class:`_Timeout` after ``seconds`` (an exception
    raised asynchronously in this thread: sympy is Python, it stops at the next bytecode)."""
    tid = threading.get_ident()
    lock = threading.Lock()
    state = {"active": True, "fired": False, "raised": False}

    def fire() -> None:
        with lock:
            if state["active"]:
                state["fired"] = True
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid),
                                                           ctypes.py_object(_Timeout))

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        return fn(arg)
    except _Timeout:
        state["raised"] = True
        raise
    finally:
        _disarm(timer, lock, state)


DRAIN = 1000  # loop turns: a pending asynchronous exception surfaces at the first


def _disarm(timer: threading.Timer, lock: threading.Lock, state: dict) -> None:
    """Stop the budget's timer; a :class:`_Timeout` it fired but that has not been raised
    yet is raised here and dropped. Clearing it with ``PyThreadState_SetAsyncExc(tid,
    NULL)`` instead would leave CPython's eval breaker signalled for good, and a later
    ``sys.settrace`` (a debugger, coverage) would spin at the next function entry."""
    while True:
        try:
            timer.cancel()
            with lock:
                state["active"] = False
            if state["fired"] and not state["raised"]:
                for _ in range(DRAIN):  # sympy may also have swallowed it: bounded
                    pass
            return
        except _Timeout:
            state["raised"] = True


def _has_large_power(expr: sp.Expr) -> bool:
    return any(p.exp.is_Integer and abs(int(p.exp)) > MAX_EXPONENT for p in expr.atoms(sp.Pow))


# -- checks ---------------------------------------------------------------------------------------


def _cheaper(target: Graph, new: int, leaves: set[int], graph: Graph, region: list[int]) -> bool:
    """Whether the candidate's new nodes cost fewer flops per element than the region
    (both are elementwise over the same shape). In a region of a derivative (its root an
    adjoint or tangent node) the forward values are free: the forward pass computes them
    anyway, so ``s * (1 - s)`` on the forward ``s = sigmoid(t)`` costs two flops, not a
    sigmoid more (sympy's ``1 / (4 cosh(t/2)**2)`` is not cheaper than that)."""
    derivative = graph.nodes[region[-1]].role != "forward"
    before = sum(_per_element(graph, i) for i in region
                 if not (derivative and graph.nodes[i].role == "forward"))
    after = sum(_per_element(target, i) for i in _cone(target, new, leaves)
                if not (derivative and target.nodes[i].role == "forward"))
    return after < before


def _cone(graph: Graph, root: int, leaves: set[int]) -> list[int]:
    """The computed nodes between ``leaves`` and ``root``, in topological order."""
    seen, stack = set(), [root]
    while stack:
        i = stack.pop()
        if i in seen or i in leaves or graph.nodes[i].is_const or graph.nodes[i].is_var:
            continue
        seen.add(i)
        stack.extend(graph.nodes[i].args)
    return sorted(seen)


def _per_element(graph: Graph, i: int) -> float:
    n = graph.nodes[i]
    size = int(np.prod(n.shape, dtype=np.int64)) if n.shape else 1
    return node_cost(graph, i)[0] / max(size, 1)


def _points(count: int, values: tuple, seed: int) -> list[tuple]:
    if count == 0:
        return [()]
    if len(values) ** count <= 64:
        return list(product(values, repeat=count))
    rng = np.random.default_rng(seed)
    return [tuple(rng.choice(values, size=count)) for _ in range(64)]


def _agrees(graph: Graph, region: list[int], leaves: dict, target: Graph, new: int,
            mapping: dict[int, int]) -> bool:
    """The numeric spot check of the module docstring."""
    order = list(leaves.values())
    targets = [mapping[a] for a in order]
    cone = _cone(target, new, set(targets))
    for values, strict in ((_MODERATE, True), (_LARGE, False)):
        for point in _points(len(order), values, len(region)):
            old = _evaluate(graph, region, dict(zip(order, point)))
            got = _evaluate(target, cone, dict(zip(targets, point))) if cone else \
                _evaluate(target, [], dict(zip(targets, point)), new)
            if not _same(old, got, strict):
                return False
    return True


def _same(old: float, got: float, strict: bool) -> bool:
    if np.isfinite(old):
        return bool(np.isfinite(got)) and abs(got - old) <= 1e-9 * max(1.0, abs(old))
    if not strict:  # an overflow of the written form may go
        return True
    return (np.isnan(old) and np.isnan(got)) or old == got


def _evaluate(graph: Graph, order: list[int], known: dict[int, float],
              root: int | None = None) -> float:
    """The value of the last node of ``order`` (or of ``root``) from the leaf values
    ``known``, by the ops' NumPy implementations: the nodes are elementwise, so scalars
    stand for every element."""
    values: dict[int, object] = {k: np.float64(v) for k, v in known.items()}

    def value(i: int):
        if i not in values:
            n = graph.nodes[i]
            if not n.is_const:
                raise Untranslatable(f"node {i} has no value")
            flat = np.asarray(n.attrs["value"]).reshape(-1)
            values[i] = flat[0] if flat.size else np.float64(0.0)
        return values[i]

    with np.errstate(all="ignore"):
        for i in order:
            n = graph.nodes[i]
            values[i] = np.asarray(REGISTRY[n.op].impl(*[value(a) for a in n.args],
                                                       **n.attrs)).reshape(-1)[0]
    return float(value(order[-1] if root is None else root))


# -- translation ----------------------------------------------------------------------------------


def _to_sympy(graph: Graph, region: list[int]) -> tuple[sp.Expr, dict[sp.Symbol, int]]:
    """The region (topologically sorted, root last) as a sympy expression, and its leaf
    symbols -> node ids."""
    inside = set(region)
    leaves: dict[sp.Symbol, int] = {}
    done: dict[int, sp.Expr] = {}
    for i in region:
        n = graph.nodes[i]
        args = []
        for a in n.args:
            if a not in done and a not in inside:
                done[a] = _leaf(graph.nodes[a], leaves)
            args.append(done[a])
        try:
            done[i] = sympy_form(sp, REGISTRY[n.op], args, n.attrs, "simplify(sympy=True)")
        except (SymgradError, TypeError, ValueError) as exc:
            raise Untranslatable(str(exc)) from None
    return done[region[-1]], leaves


def _leaf(n, leaves: dict) -> sp.Expr:
    """A finite scalar constant as its number; any other operand as a symbol of its node."""
    value = n.attrs["value"] if n.is_const else None
    if value is not None and value.ndim == 0 and value.dtype.kind in "fi" \
            and np.isfinite(value):
        return number(sp, value, n.id)
    sym = sp.Symbol(f"n{n.id}", real=True)
    leaves[sym] = n.id
    return sym


def _from_sympy(expr: sp.Expr, leaves: dict[sp.Symbol, Expr], graph: Graph) -> Expr:
    """``expr`` as graph nodes: ``sympy.cse`` first, so shared subexpressions are one node."""
    if expr.has(sp.nan, sp.zoo, sp.oo, -sp.oo):  # a candidate with NaN or inf in it is no simpler
        raise Untranslatable(str(expr))
    replacements, (reduced,) = sp.cse([expr])
    into = FromSympy(sp, graph, leaves=leaves, table=back_table(sp),
                     what="simplify(sympy=True)")
    try:
        for sym, sub in replacements:
            into.done[sym] = into.tree(sub)
        out = into.tree(reduced)
    except SymgradError as exc:
        raise Untranslatable(str(exc)) from None
    if into.symbols:  # a symbol that is no leaf: sympy invented one
        raise Untranslatable(f"new symbols {sorted(into.symbols)}")
    return out
