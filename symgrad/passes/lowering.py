"""Lowering inside B: cheaper kernels for what the backprop rules build (equal up to
rounding, like every rewrite of B; the forward graph is never touched).

* A scatter whose parts tile the whole buffer along one axis is a ``concatenate`` (slices)
  or a ``stack`` (single positions): one NumPy call instead of zeros plus one write per
  part (the adjoint of ``z`` used as ``z[:H], z[H:2H], ...``, or of ``xs`` used as
  ``xs[0], xs[1], ...``).
* ``sum(index_add(g, key))`` over the whole buffer is ``sum(g)``: the scattered zeros add
  nothing.
* A sum of outer products ``outer(a1, b1) + outer(a2, b2) + ...`` (the adjoint of a matrix
  used at every step of an unrolled loop) is one product of stacked operands,
  ``stack(a)^T @ stack(b)``, in groups of at most :data:`MAX_STACK` steps (so that merging
  stays linear).
* A sum over one of the last two axes becomes a product with a vector of ones (``ones @ x``,
  ``x @ ones``) where the committed table of measured costs (:mod:`.kernel_costs`,
  ``python -m benchmarks.kernels --write``) says it is faster for that shape: summing a
  short or a non-innermost axis costs NumPy a pass per row; BLAS does it in one.
* Scalar factors collected, ``(x * d) * c -> x * (c*d)``, and the two equal contributions of
  ``x * x`` counted once, ``(a - b) - b -> a - 2*b``; a common factor taken out of a sum,
  ``a*c + b*c -> (a + b)*c``.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.expr import Expr, F
from ..ir.op import REGISTRY
from ..ops.indexing import scatter_parts, split_parts
from .pattern import Const, OneOf, Pass, Proposed, Rule, compile_pattern, stored_constant

MAX_STACK = 64


def _tiling(parts: tuple, shape: tuple) -> tuple[int, list[int], bool] | None:
    """``(axis, order, slices)`` if the static parts write every position of ``shape``
    exactly once, all along one axis: ``order`` lists the parts by position; ``slices``
    tells contiguous slices (concatenate) from single positions (stack)."""
    keys = []
    for key, n_dyn, _ in parts:
        if n_dyn or None in key or len(key) > len(shape):
            return None
        keys.append((slice(None),) * (len(shape) - len(key)) + tuple(key))
    axes = {k for key in keys for k, e in enumerate(key) if e != slice(None)}
    if len(axes) != 1:
        return None
    axis = axes.pop()
    entries = [key[axis] for key in keys]
    size = shape[axis]
    if all(isinstance(e, int) for e in entries):
        order = sorted(range(len(entries)), key=lambda k: entries[k])
        ok = [entries[k] for k in order] == list(range(size))
        return (axis, order, False) if ok else None
    if not all(isinstance(e, slice) and e.step is None for e in entries):
        return None
    spans = [(e.start or 0, size if e.stop is None else e.stop) for e in entries]
    order = sorted(range(len(spans)), key=lambda k: spans[k])
    at = 0
    for k in order:
        if spans[k][0] != at or spans[k][1] <= at:
            return None
        at = spans[k][1]
    return (axis, order, True) if at == size else None


def _joined(n: Proposed) -> Expr | None:
    """A scatter that tiles its buffer along one axis, as ``concatenate`` or ``stack``."""
    found = scatter_parts(_NodeLike(n))
    if found is None:
        return None
    operands, parts, shape, _ = found
    tiling = _tiling(parts, shape)
    if tiling is None:
        return None
    axis, order, slices = tiling
    values = [Expr(n.graph, g) for g, _ in split_parts(operands, parts)]
    arrays = [values[k] for k in order]
    negative = axis - len(shape)
    if len(arrays) == 1:
        return None
    return (F.concatenate if slices else F.stack)(arrays, axis=negative)


class _NodeLike:
    """The proposed node with the fields :func:`scatter_parts` reads."""

    def __init__(self, n: Proposed) -> None:
        self.op, self.args, self.attrs = n.op.name, n.arg_ids, n.attrs


def _sum_of_scatter(u: Expr, axis: tuple, keep: bool) -> Expr | None:
    """``sum(index_add(g, key), all axes) -> sum(g, all axes)`` (a part per scatter)."""
    found = scatter_parts(u.data)
    if found is None:
        return None
    operands, parts, shape, batch = found
    if len(parts) != 1 or len(axis) != len(shape):
        return None
    g = Expr(u.graph, operands[0])
    own = tuple(range(-(g.ndim - batch), 0))
    total = F.sum(g, axis=own) if own else g
    return F.reshape(total, total.shape + (1,) * len(shape)) if keep else total


# a stacked product: stack(a)^T @ stack(b), both stacked along a new first axis
_STACKED = ("matmul", ("matrix_transpose", ("stack", ..., {"axis": -2, "@": "sa"})),
            ("stack", ..., {"axis": -2, "@": "sb"}))
_PRODUCT: list = []  # the compiled product pattern, made on first use


def _product_matcher():
    if not _PRODUCT:
        _PRODUCT.append(compile_pattern(OneOf(("outer", "a", "b"), _STACKED), set()))
    return _PRODUCT[0]


def _rows(p: Expr) -> tuple[list[Expr], list[Expr]] | None:
    """A product's stacked operands: ``outer(a, b)`` is ``([a], [b])``."""
    caps: dict = {}
    if not _product_matcher()(p.graph, p.node, caps):
        return None
    g = p.graph
    if "sa" in caps:
        return ([Expr(g, i) for i in g.nodes[caps["sa"]].args],
                [Expr(g, i) for i in g.nodes[caps["sb"]].args])
    return [Expr(g, caps["a"])], [Expr(g, caps["b"])]


def _stacked(u: Expr, v: Expr) -> Expr | None:
    """``outer(a1, b1) + outer(a2, b2) -> stack([a1, a2])^T @ stack([b1, b2])``."""
    ru, rv = _rows(u), _rows(v)
    if ru is None or rv is None or len(ru[0]) + len(rv[0]) > MAX_STACK:
        return None
    left, right = F.stack(ru[0] + rv[0], axis=0), F.stack(ru[1] + rv[1], axis=0)
    return F.matrix_transpose(left) @ right


def _nearest(grid: tuple, value: int) -> int:
    return min(grid, key=lambda g: abs(math.log(max(value, 1)) - math.log(g)))


def cheaper_as_product(kind: str, batch: int, n: int, m: int, margin: float = 1.25) -> bool:
    """Whether the measured table says a product with ones beats ``np.add.reduce`` for a
    ``sum_rows``/``sum_cols`` of shape ``(batch, n, m)`` (by ``margin``; nearest grid
    point in log scale)."""
    from . import kernel_costs  # the measured table: loaded when first needed

    key = (_nearest(kernel_costs.BATCH, batch), _nearest(kernel_costs.N, n),
           _nearest(kernel_costs.M, m))
    reduce_cost = kernel_costs.COSTS[(f"{kind}/reduce", *key)]
    return kernel_costs.COSTS[(f"{kind}/matmul", *key)] * margin < reduce_cost


def _summed_by_product(x: Expr, axis: tuple, keep: bool) -> Expr | None:
    """``sum(x, axis=-2 or -1)`` as ``ones @ x`` or ``x @ ones`` where measured cheaper."""
    if len(axis) != 1 or axis[0] not in (-1, -2) or x.ndim < 2 or x.dtype != "float64":
        return None
    batch = math.prod(x.shape[:-2])
    n, m = x.shape[-2:]
    kind = "sum_rows" if axis == (-2,) else "sum_cols"
    if not cheaper_as_product(kind, batch, n, m):
        return None
    g = x.graph
    if kind == "sum_rows":
        out = Expr(g, g.const(np.ones((1, n)))) @ x
    else:
        out = x @ Expr(g, g.const(np.ones((m, 1))))
    return out if keep else F.reshape(out, x.shape[:axis[0]] + x.shape[len(x.shape) + axis[0] + 1:])


def _transposed_product(a: Expr, b: Expr) -> Expr | None:
    if a.ndim < 2 or b.ndim < 2:
        return None
    return F.matrix_transpose(b) @ F.matrix_transpose(a)


def _scaled_inside(x: Expr, w: Expr, c: Expr) -> Expr | None:
    """``reshape(x) * c -> reshape(x * c)`` for a scalar ``c`` (the same shape op on the
    scaled operand, which is no larger)."""
    if c.size != 1 or x.size > w.size:
        return None
    inner = x * Expr(c.graph, c.graph.const(stored_constant(c.graph, c.node).reshape(())))
    n = w.data
    return Expr(w.graph, w.graph.add(REGISTRY[n.op], (inner.node,), n.attrs))


def _orders(p, q, op: str | None = None) -> list[tuple]:
    """A commutative pair of operand patterns in both orders (as node patterns of ``op``
    when given): B is built as the rules write it, not in a canonical order."""
    pairs = [(p, q), (q, p)]
    if isinstance(p, tuple) and p[0] == "multiply":  # the inner product too
        inner = [("multiply", p[2], p[1])]
        pairs += [(i, q) for i in inner] + [(q, i) for i in inner]
    return [(op, *pair) for pair in pairs] if op else pairs


def _doubled(a: Expr | None, b: Expr, op: str, partial: Expr | None = None) -> Expr | None:
    """``a op 2*b`` (``2*b`` alone when ``a`` is None), where the partial sum ``a op b`` is
    B's own (a forward ``u1 + u2`` is a value computed anyway)."""
    if partial is not None and partial.data.role != "adjoint":
        return None
    two = Expr(b.graph, b.graph.const(np.asarray(2, dtype=b.dtype)))
    return b * two if a is None else getattr(F, op)(a, b * two)


def _one(a: Expr) -> Expr:
    return Expr(a.graph, a.graph.const(1.0))


def _factored(op: str, c: Expr, a: Expr, d: Expr, b: Expr) -> Expr | None:
    """``a*c op b*d``: ``(a op b)*c`` when ``c == ±d``; ``(c op d)*a`` when ``a is b``."""
    cv, dv = (stored_constant(e.graph, e.node) for e in (c, d))
    if cv.size != 1 or dv.size != 1 or a.shape != b.shape:
        return None
    if a.node == b.node:  # like terms: -2*s - s
        return getattr(F, op)(Expr(c.graph, c.graph.const(cv.reshape(()))),
                              Expr(d.graph, d.graph.const(dv.reshape(())))) * a
    if cv.item() == dv.item():
        return getattr(F, op)(a, b) * c
    if cv.item() == -dv.item():
        return getattr(F, "subtract" if op == "add" else "add")(a, b) * c
    return None


LOWERING = Pass(
    "lowering",
    "inside B: tiling scatters -> concatenate/stack, sums of outer products -> one matmul",
    rules=(
        Rule(("scatter_sum", ...), _joined),
        Rule(("sum", "u", {"axis": "axis", "keepdims": "keep"}), _sum_of_scatter),
        Rule(("sum", "x", {"axis": "axis", "keepdims": "keep"}), _summed_by_product),
        Rule(("add", "u", "v"), _stacked, children=("outer", "matmul")),  # products only
        # (a @ b)^T -> b^T @ a^T: the product written contiguous (X^T @ D, transposed, is
        # the adjoint of W in X @ W.T; D^T @ X is the same product without the view)
        Rule(("transpose", ("matmul", "a", "b"), {"axes": (-1, -2)}), _transposed_product),
        Rule(("matrix_transpose", ("matmul", "a", "b")), _transposed_product),
        # a scalar factor moved inside a shape op, towards the other scalar factors
        *(Rule(("multiply", (op, "x", {"@": "w"}), Const("c")), _scaled_inside)
          for op in ("reshape", "broadcast_to", "expand_dims", "squeeze")),
        # scalar factors collected (a product of constants folds): (x * d) * c -> x * (c*d)
        *(Rule(("multiply", *p), lambda x, d, c: x * (c * d)) for p in _orders(
            ("multiply", "x", Const("d")), Const("c"))),
        # the two equal contributions of x * x: (a - b) - b -> a - 2*b
        Rule(("subtract", ("subtract", "a", "b", {"@": "s"}), "b"),
             lambda a, b, s: _doubled(a, b, "subtract", s)),
        *(Rule(("add", *p), lambda a, b, s: _doubled(a, b, "add", s)) for p in (
            (("add", "a", "b", {"@": "s"}), "b"), (("add", "b", "a", {"@": "s"}), "b"),
            ("b", ("add", "a", "b", {"@": "s"})), ("b", ("add", "b", "a", {"@": "s"})))),
        Rule(("subtract", ("negative", "b"), "b"), lambda b: -_doubled(None, b, "")),
        # like terms collected, a common scalar factor taken out: a*c + a*d -> a*(c + d),
        # a*c + b*c -> (a + b)*c, a*c + b*(-c) -> (a - b)*c
        *(Rule((op, ("multiply", "a", Const("c")), "a"),
               lambda a, c, op=op: _factored(op, c, a, _one(a), a)) for op in ("add", "subtract")),
        *(Rule((op, ("multiply", Const("c"), "a"), "a"),
               lambda c, a, op=op: _factored(op, c, a, _one(a), a)) for op in ("add", "subtract")),
        *(Rule(("add", "a", ("multiply", "a", Const("c"))),
               lambda a, c: _factored("add", c, a, _one(a), a)),
          Rule(("add", "a", ("multiply", Const("c"), "a")),
               lambda a, c: _factored("add", c, a, _one(a), a))),
        *(Rule((op, left, right), lambda a, c, b, d, op=op: _factored(op, c, a, d, b))
          for op in ("add", "subtract")
          for left in _orders("a", Const("c"), op="multiply")
          for right in _orders("b", Const("d"), op="multiply")),
    ),
    stages=("reverse", "fast_math", "simplify_adjoint"),
)
