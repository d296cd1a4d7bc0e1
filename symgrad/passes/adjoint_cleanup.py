"""The adjoint cleanup: rewrites for the nodes the backprop rules build, and only those.

The reverse transform installs it while it builds B (``grad(..., cleanup=False)`` leaves it
out); the simplifier applies it to adjoint nodes. It never sees a forward node being built,
so a forward expression means what NumPy means whatever was differentiated before it.

* Masks: ``where(c, g, 0) * d -> where(c, g * d, 0)`` (and for ``/``, unary ``-`` and sums of
  masked terms). A ``where`` rule hands its unselected branch an exact-zero adjoint; the
  next rule would multiply that zero by a local derivative that may be inf or NaN there
  (``sqrt'(0)``, ``exp(1000)``). Re-applying the mask after the product keeps the zero exact
  (NumPy would give ``0 * inf = nan``).
* Scatters: ``index_add(a, k1) + index_add(b, k2)`` (the adjoint of an array used through
  many slices) becomes one ``scatter_sum`` writing every part into one buffer. The reverse
  transform sums a node's contributions with :func:`sum_contributions`, which merges all
  of them at once (linear in their number; merging pairwise would rebuild a growing parts
  tuple at every ``+``: quadratic).
* Sum first: ``sum(a @ b, rows) -> sum(a, rows) @ b`` and ``sum(-x) -> -sum(x)`` when
  ``sum_to_shape`` undoes a broadcast (equal up to rounding; fewer full-size passes).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce

from ..ir.expr import Expr, F
from ..ops.indexing import scatter_parts
from .pattern import Const, Pass, Rule

ZERO = Const("z", 0.0)


def _masked(op: str) -> tuple[Rule, ...]:
    """``where(c, a, 0) <op> d -> where(c, a <op> d, 0)``, for each operand position that
    carries the adjoint (the first only for ``divide``)."""
    fn = getattr(F, op)
    rules = [Rule((op, ("where", "c", "a", ZERO), "d"), lambda c, a, z, d: F.where(c, fn(a, d), z)),
             Rule((op, ("where", "c", ZERO, "b"), "d"), lambda c, z, b, d: F.where(c, z, fn(b, d)))]
    if op == "multiply":
        rules += [
            Rule((op, "d", ("where", "c", "a", ZERO)), lambda d, c, a, z: F.where(c, d * a, z)),
            Rule((op, "d", ("where", "c", ZERO, "b")), lambda d, c, z, b: F.where(c, z, d * b)),
        ]
    return tuple(rules)


def _merged_scatters(u: Expr, v: Expr) -> Expr | None:
    """``u + v`` as one ``scatter_sum`` when both are scatters into one buffer shape."""
    pu, pv = scatter_parts(u.data), scatter_parts(v.data)
    if pu is None or pv is None or u.shape != v.shape or pu[2:] != pv[2:]:
        return None
    operands = [Expr(u.graph, a) for a in pu[0] + pv[0]]
    return F.scatter_sum(*operands, parts=pu[1] + pv[1], shape=pu[2], batch=pu[3])


def sum_contributions(terms: Sequence[Expr]) -> Expr:
    """The sum of one node's adjoint contributions, with every scatter among them merged
    into ONE ``scatter_sum`` in a single step (it takes the place of the first scatter; the
    other terms are added left to right, each offered to the rules as usual).

    >>> import symgrad as sg
    >>> v = sg.var("v", shape=(5,))
    >>> g = sg.grad(v[0] * v[1] + v[2] * v[3], v)
    >>> g.op, sg.evaluate(g, {"v": [1.0, 2.0, 3.0, 4.0, 5.0]})
    ('scatter_sum', array([2., 1., 4., 3., 0.]))
    """
    if len(terms) == 1:
        return terms[0]
    scatters = [(k, t, p) for k, t in enumerate(terms)
                if (p := scatter_parts(t.data)) is not None]
    first = scatters[0][2] if scatters else None
    group = [(k, t, p) for k, t, p in scatters if p[2:] == first[2:] and t.shape == terms[0].shape]
    if len(group) < 2:
        return reduce(lambda a, b: a + b, terms)
    operands = [Expr(terms[0].graph, a) for _, _, p in group for a in p[0]]
    parts = tuple(part for _, _, p in group for part in p[1])
    merged = F.scatter_sum(*operands, parts=parts, shape=first[2], batch=first[3])
    merged_at = {k for k, _, _ in group}
    rest = [merged if k == group[0][0] else t for k, t in enumerate(terms)
            if k == group[0][0] or k not in merged_at]
    return reduce(lambda a, b: a + b, rest)


def _sum_of_matmul(a: Expr, b: Expr, axis: tuple, keep: bool) -> Expr | None:
    """``sum(a @ b)`` over the rows (kept) or over leading batch axes of ``a``, reduced
    before the product."""
    if a.ndim < 2 or b.ndim < 2:
        return None
    rows = axis == (-2,) and keep
    lead = b.ndim == 2 and all(k < -2 for k in axis)
    return F.sum(a, axis=axis, keepdims=keep) @ b if rows or lead else None


ATTRS = {"axis": "axis", "keepdims": "keep"}
SCATTERS = ("index_add", "scatter_sum")  # the driver offers only sums of two of these

ADJOINT_CLEANUP = Pass(
    "adjoint_cleanup",
    "inside B only: where-masks kept exact through products, scatters merged, sums first",
    rules=(
        *_masked("multiply"), *_masked("divide"),
        Rule(("negative", ("where", "c", "a", ZERO)), lambda c, a, z: F.where(c, -a, z)),
        Rule(("negative", ("where", "c", ZERO, "b")), lambda c, z, b: F.where(c, z, -b)),
        Rule(("add", ("where", "c", ZERO, "a"), ("where", "c", Const(None, 0.0), "b")),
             lambda c, z, a, b: F.where(c, z, a + b)),
        Rule(("add", ("where", "c", "a", ZERO), ("where", "c", "b", Const(None, 0.0))),
             lambda c, a, b, z: F.where(c, a + b, z)),
        Rule(("add", "u", "v"), _merged_scatters, children=SCATTERS),
        Rule(("sum", ("negative", "x"), ATTRS), lambda x, axis, keep: -F.sum(x, axis, keep)),
        Rule(("sum", ("matmul", "a", "b"), ATTRS), _sum_of_matmul),
    ),
    stages=("reverse", "fast_math", "simplify_adjoint"),
)
