"""NaN guards: ``(a - a) + y`` keeps its NaN for less work (exact, bit for bit).

``a - a`` is +0 where ``a`` is finite and NaN where it is not. The reverse transform builds
it where two contributions cancel: a loop step ``h <- sin(h) h + cos(h)`` gives ``h`` the
contributions ``g sin(h)`` (product rule) and ``-g sin(h)`` (``cos``), so its VJP is
``(g sin(h) - g sin(h)) + g h cos(h)``. Dropping the guard is fast_math's (the sum is
NaN where ``g`` is infinite, not ``inf``); this pass keeps the same values and drops the
work that only decided *where* the NaN goes:

* a guard on ``a`` is a guard on the values whose non-finiteness makes ``a`` non-finite:
  ``sin(u)`` and ``cos(u)`` are finite exactly where ``u`` is, and ``u * v`` with
  ``|u| <= 1`` (``sin``, ``cos``, ``tanh``, ``sigmoid``, ``erf``) exactly where ``u`` and
  ``v`` are (the product cannot overflow);
* a guard on ``s`` is dropped where ``y`` is NaN anyway wherever ``s`` is not finite:
  ``y`` reads ``sin(s)``, ``cos(s)``, ``tan(s)`` or ``s - s`` through NaN-propagating
  elementwise arithmetic;
* at least a ``+ 0.0`` stays, so a ``-0.0`` in ``y`` still comes out ``+0.0``.

What an op does with inf and NaN is stated in its stanza (the ``ieee`` field of
:class:`~symgrad.ir.op.Op`: ``bounded``, ``finite_with``, ``nan_at_inf``,
``nan_in_nan_out``); an op that states nothing stops the search, so a new op is safe.

So that step's VJP becomes ``(g - g) + g h cos(h)``: no ``sin``, one product fewer.

Runs where the exact passes run on adjoints (``reverse``, ``compile``,
``simplify_adjoint``); ``fast_math`` drops guards outright.

>>> import symgrad as sg
>>> x = sg.var("x")
>>> g = sg.grad(sg.sin(x) * x + sg.cos(x), x)       # (sin(x) - sin(x)) + x cos(x)
>>> [g.graph.nodes[i].op for i in g.graph.ancestors([g.node])]   # x cos(x) + 0.0
['var', 'cos', 'multiply', 'const', 'add']
>>> sg.evaluate(g, {"x": float("inf")})             # NaN, as the guard said
nan
"""

from __future__ import annotations

from ..ir.expr import Expr
from ..ir.graph import Graph
from ..ir.op import REGISTRY
from ..ir.shapes import is_complex, is_float
from .pattern import Pass, Rule

DEPTH = 8  # operand levels looked through (the pass stays linear)
MAX_LEAVES = 8  # guards one guard may become (more: left as it is)
PRODUCT = Rule(("multiply", "u", "v"), lambda u, v: None)  # matched, never built
GUARD = Rule(("subtract", "s", "s"), lambda s: None)


def _has(graph: Graph, i: int, fact: str) -> bool:
    """Whether node ``i``'s op states ``fact`` about inf and NaN (its stanza's ``ieee``)."""
    op = REGISTRY.get(graph.nodes[i].op)
    if fact == "bounded" and is_complex(graph.nodes[i].dtype):
        return False  # sin, cos and erf are bounded on the real line only
    return op is not None and fact in op.ieee


def _leaves(graph: Graph, a: int) -> list[int]:
    """Nodes finite together exactly where ``a`` is finite, elementwise (``a`` itself when
    nothing smaller is known)."""
    out, todo = [], [(a, 0)]
    while todo:
        i, depth = todo.pop()
        n = graph.nodes[i]
        product = depth < DEPTH and PRODUCT.match(graph, i)
        if depth < DEPTH and _has(graph, i, "finite_with"):
            todo.append((n.args[0], depth + 1))
        elif product and any(_has(graph, k, "bounded") for k in n.args):
            todo += [(k, depth + 1) for k in reversed(n.args)]
        elif i not in out:
            out.append(i)
    return out if len(out) <= MAX_LEAVES else [a]


def _nan_where_not_finite(graph: Graph, y: int, s: int) -> bool:
    """Whether ``y`` is NaN at every element where ``s`` is not finite."""
    if graph.nodes[s].shape != graph.nodes[y].shape:  # the walk keeps y's shape throughout
        return False
    todo, seen = [(y, 0)], set()
    while todo:
        i, depth = todo.pop()
        n = graph.nodes[i]
        if n.args == (s,) and _has(graph, i, "nan_at_inf"):
            return True
        if (GUARD.match(graph, i) or {}).get("s") == s:
            return True
        if depth < DEPTH and _has(graph, i, "nan_in_nan_out") and i not in seen:
            seen.add(i)
            todo += [(k, depth + 1) for k in n.args if graph.nodes[k].shape == n.shape]
    return False


def _guarded(a: Expr, y: Expr) -> Expr | None:
    """``(a - a) + y`` with the smallest guards that give the same values (None: no
    smaller form)."""
    graph = a.graph
    if not is_float(y.dtype):
        return None
    leaves = _leaves(graph, a.node)
    kept = [s for s in leaves if not _nan_where_not_finite(graph, y.node, s)]
    if kept == [a.node]:
        return None
    guards = [Expr(graph, s) - Expr(graph, s) for s in kept]
    total = guards[0] if guards else None
    for g in guards[1:]:
        total = total + g
    return y + 0.0 if total is None else total + y


NAN_GUARDS = Pass(
    "nan_guards",
    "(a - a) + y: the guard on fewer values, dropped where y is NaN anyway (exact)",
    rules=(
        Rule(("add", ("subtract", "a", "a"), "y"), _guarded),
        Rule(("add", "y", ("subtract", "a", "a")), _guarded),
    ),
    stages=("reverse", "compile", "simplify_adjoint"),
)
