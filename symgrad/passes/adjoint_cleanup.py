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
  ``sum_to_shape`` undoes a broadcast (equal up to rounding; fewer full-size passes);
  ``sum(where(c, 0, b)) -> where(c, 0, sum(b))`` where ``c`` is one value along the summed
  axes (the mask of an untaken branch survives the sum of a reduction's rule: a Hessian
  through an untaken ``logsumexp`` stays exact).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce

from ..ir.expr import Expr, F, build
from ..ir.op import REGISTRY
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


def _masked_reduction(c: Expr, a: Expr, b: Expr, axis: tuple, keep: bool,
                      zero_first: bool) -> Expr | None:
    """``sum(where(c, 0, b)) -> where(c, 0, sum(b))`` (and ``where(c, a, 0)``) where ``c``
    is one value along the summed axes: the mask stays a ``where`` after the sum, so the
    next product re-applies it (the value is the same; otherwise the sum is a plain 0, and
    0 times a NaN derivative of the untaken branch is NaN in a Hessian)."""
    kept = b if zero_first else a
    shape = F.where(c, a, b).shape
    cs = (1,) * (len(shape) - c.ndim) + c.shape
    if any(cs[k] != 1 for k in axis):
        return None
    mask = F.reshape(c, cs if keep else tuple(d for k, d in enumerate(cs)
                                               if k - len(cs) not in axis))
    total = F.sum(F.broadcast_to(kept, shape), axis, keep)
    return F.where(mask, 0.0, total) if zero_first else F.where(mask, total, 0.0)


def _masks_added(c: Expr, a: Expr, d: Expr, b: Expr, zero_first: bool,
                 sign: float = 1.0) -> Expr:
    """``where(c, 0, a) + where(d, 0, b)`` (masks of two conditions: an untaken branch's
    adjoint meeting another mask) as one mask, ``where(c & d, 0, ...)`` (``where(c | d,
    ..., 0)`` for the other form), so the next product re-applies it; ``sign=-1``: ``-``."""
    both = a + b if sign > 0 else a - b
    second = b if sign > 0 else -b
    if zero_first:
        return F.where(c & d, 0.0, F.where(c, second, F.where(d, a, both)))
    return F.where(c | d, F.where(c, F.where(d, both, a), second), 0.0)


def _shaped_mask(op: str, c: Expr, b: Expr, attrs: dict, zero_first: bool) -> Expr | None:
    """``reshape(where(c, 0, b))`` (``broadcast_to``) of a scalar condition: the mask of
    the reshaped value, as the ``sum`` rule's adjoint spreads an untaken branch's zero."""
    if c.ndim:
        return None
    moved = build(REGISTRY[op], [b], attrs)
    return F.where(c, 0.0, moved) if zero_first else F.where(c, moved, 0.0)


def _shape_rules(op: str, attrs: dict) -> tuple[Rule, ...]:
    """``op(where(c, 0, b))`` and ``op(where(c, b, 0))`` rules for a shaping op whose
    attributes are captured as ``attrs`` (attribute -> capture name)."""
    def picked(caps: dict) -> dict:
        return {k: caps[v] for k, v in attrs.items()}

    return (Rule((op, ("where", "c", ZERO, "b"), attrs),
                 lambda c, z, b, **caps: _shaped_mask(op, c, b, picked(caps), True)),
            Rule((op, ("where", "c", "b", ZERO), attrs),
                 lambda c, b, z, **caps: _shaped_mask(op, c, b, picked(caps), False)))


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
        Rule(("where", "c", ZERO, ("where", "d", Const(None, 0.0), "b")),
             lambda c, z, d, b: F.where(c | d, z, b)),
        Rule(("where", "c", ("where", "d", Const(None, 0.0), "b"), ZERO),
             lambda c, d, b, z: F.where(~c | d, z, b)),
        Rule(("where", "c", ("where", "d", "b", Const(None, 0.0)), ZERO),
             lambda c, d, b, z: F.where(c & d, b, z)),
        Rule(("add", ("where", "c", ZERO, "a"), ("where", "d", "b", Const(None, 0.0))),
             lambda c, z, a, d, b: _masks_added(c, a, ~d, b, True)),
        Rule(("add", ("where", "c", "a", ZERO), ("where", "d", Const(None, 0.0), "b")),
             lambda c, a, z, d, b: _masks_added(~c, a, d, b, True)),
        Rule(("negative", ("where", "c", "a", ZERO)), lambda c, a, z: F.where(c, -a, z)),
        Rule(("negative", ("where", "c", ZERO, "b")), lambda c, z, b: F.where(c, z, -b)),
        Rule(("add", ("where", "c", ZERO, "a"), ("where", "c", Const(None, 0.0), "b")),
             lambda c, z, a, b: F.where(c, z, a + b)),
        Rule(("add", ("where", "c", "a", ZERO), ("where", "c", "b", Const(None, 0.0))),
             lambda c, a, b, z: F.where(c, a + b, z)),
        Rule(("add", ("where", "c", ZERO, "a"), ("where", "d", Const(None, 0.0), "b")),
             lambda c, z, a, d, b: _masks_added(c, a, d, b, True)),
        Rule(("add", ("where", "c", "a", ZERO), ("where", "d", "b", Const(None, 0.0))),
             lambda c, a, z, d, b: _masks_added(c, a, d, b, False)),
        Rule(("subtract", ("where", "c", ZERO, "a"), ("where", "d", Const(None, 0.0), "b")),
             lambda c, z, a, d, b: _masks_added(c, a, d, b, True, -1.0)),
        Rule(("subtract", ("where", "c", "a", ZERO), ("where", "d", "b", Const(None, 0.0))),
             lambda c, a, z, d, b: _masks_added(c, a, d, b, False, -1.0)),
        *_shape_rules("broadcast_to", {"shape": "shape", "batch": "batch"}),
        *_shape_rules("reshape", {"shape": "shape", "src_ndim": "src_ndim", "batch": "batch"}),
        Rule(("add", "u", "v"), _merged_scatters, children=SCATTERS),
        Rule(("sum", ("negative", "x"), ATTRS), lambda x, axis, keep: -F.sum(x, axis, keep)),
        Rule(("sum", ("where", "c", ZERO, "b"), ATTRS),
             lambda c, z, b, axis, keep: _masked_reduction(c, z, b, axis, keep, True)),
        Rule(("sum", ("where", "c", "a", ZERO), ATTRS),
             lambda c, a, z, axis, keep: _masked_reduction(c, a, z, axis, keep, False)),
        Rule(("sum", ("matmul", "a", "b"), ATTRS), _sum_of_matmul),
    ),
    stages=("reverse", "fast_math", "simplify_adjoint"),
)
