"""The exact normal form: rewrites whose results equal the original bit for bit.

* Commutative operands in a canonical order (computed values, variables, constants), so that
  ``100 * t`` and ``t * 100`` are one node once hash-consed (IEEE ``+`` and ``*`` are
  commutative; only the payload of a NaN may differ, which NumPy does not promise either).
* ``x + x -> 2 * x`` (both round once, to the same value; ``-0.0`` stays ``-0.0``);
  ``-1 * x -> -x``, ``-(x * c) -> x * (-c)`` for a constant ``c``, ``x + (-0.0) -> x``.
* Broadcasts fused into their consumer: ``broadcast_to(x, s) * y -> x * y`` (and reshapes or
  ``expand_dims`` that only add leading unit axes), when NumPy's broadcasting gives the same
  shape: the same elements meet, without the view; a constant ``[100.0]`` of leading unit
  axes becomes the scalar ``100.0`` (written inline) where that keeps the shape, and an
  integer scalar next to a float64 operand the float it is converted to.
* Reshape chains: ``reshape(reshape(x)) -> reshape(x)``.

``compile``/``to_source`` run these passes by default (with the other exact passes: the
``compile`` stage of :mod:`symgrad.passes.registry`); reverse mode and ``simplify`` run all
but the canonical order (so that derivatives print as the rules write them: ``cos(x) * y``,
not ``y * cos(x)``).
"""

from __future__ import annotations

import numpy as np

from ..ir.expr import Expr, F
from ..ir.op import REGISTRY
from .pattern import Const, Pass, Rule, stored_constant

COMMUTATIVE = ("add", "multiply", "equal", "not_equal")
_WRAPPERS = ("broadcast_to", "reshape", "expand_dims", "squeeze")


def _order(n) -> tuple[int, int]:
    """Computed values first (the later one first), then variables (in the order they were
    made), then constants: ``t1 + b``, ``x * y``, ``x * 2.0``."""
    return (2, n.id) if n.is_const else (1, n.id) if n.is_var else (0, -n.id)


def _canonical(op: str):
    fn = getattr(F, op)

    def build(n) -> Expr | None:
        a, b = n.arg_ids
        nodes = n.graph.nodes
        if _order(nodes[b]) < _order(nodes[a]):
            return fn(Expr(n.graph, b), Expr(n.graph, a))
        return None

    return build


def _twice(x: Expr) -> Expr | None:
    if x.dtype == "bool":
        return None
    two = Expr(x.graph, x.graph.const(np.asarray(2, dtype=x.dtype)))
    return F.multiply(x, two)


def _plus_negative_zero(x: Expr, z: Expr) -> Expr | None:
    """``x + (-0.0) -> x``: exact for every x (``-0.0 + -0.0 = -0.0``); ``x + 0.0`` is not."""
    value = stored_constant(z.graph, z.node)
    if value is None:
        return None
    value = np.asarray(value)
    parts = (value.real, value.imag) if value.dtype.kind == "c" else (value,)  # -0.0-0.0j
    return x if all(bool(np.all(np.signbit(p))) for p in parts) else None


def _strip(shape: tuple) -> tuple:
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return tuple(shape[k:])


def _fused(op: str, position: int, arity: int, broadcasts: bool):
    """``op(..., w, ...)`` with the shape op ``w`` replaced by its operand, where NumPy's
    broadcasting lines the elements up the same way: ``w`` is a ``broadcast_to`` without
    batch axes, or only adds or drops leading unit axes (the driver keeps the result only
    if it has the node's shape)."""

    def build(**caps) -> Expr | None:
        args = [caps[f"a{k}"] for k in range(arity)]
        w, x = args[position], caps["x"]
        if w.data.attrs.get("batch", 0) != 0:
            return None
        if not broadcasts and _strip(w.shape) != _strip(x.shape):
            return None
        args[position] = x
        return getattr(F, op)(*args)

    return build


def _fusion_rules() -> list[Rule]:
    """``op(..., wrapper(x), ...) -> op(..., x, ...)`` for every elementwise op of the
    registry with two or three operands, every operand position and every wrapper."""
    rules = []
    for name, op in sorted(REGISTRY.items()):
        if not op.elementwise or op.arity not in (2, 3):
            continue
        for k in range(op.arity):
            for wrapper in _WRAPPERS:
                operands: list = [f"a{j}" for j in range(op.arity)]
                operands[k] = (wrapper, "x", {"@": f"a{k}"})
                rules.append(Rule((name, *operands),
                                  _fused(name, k, op.arity, wrapper == "broadcast_to")))
    return rules


_INT_TO_FLOAT = ("add", "subtract", "multiply", "divide")  # not power: x ** 2 reads better


def _scalar_constant(op: str, position: int, arity: int):
    """``op(..., c, ...)`` with a constant ``c`` of leading unit axes (``[100.0]``) or of
    one repeated value as the 0-d constant when the result keeps its shape (then it is
    written inline), and an
    integer scalar next to a float64 operand as the float it is converted to anyway
    (``2 * x`` and ``2.0 * x`` are then one node)."""

    convert = op in _INT_TO_FLOAT

    def build(**caps) -> Expr | None:
        args = [caps[f"a{k}"] for k in range(arity)]
        value = stored_constant(args[position].graph, args[position].node)
        if value is None:
            return None
        floats = [a.dtype for k, a in enumerate(args) if k != position and a.dtype == "float64"]
        if (value.dtype.kind in "iu" and floats and value.size == 1 and convert
                and abs(value.item()) < 2**53):
            small = value.reshape(_strip(value.shape)).astype(np.float64)  # 2 -> 2.0: exact
        elif value.shape and value.shape[0] == 1:
            small = value.reshape(_strip(value.shape))
        elif value.size > 1 and bool(np.all(value == value.flat[0])) and \
                value.tobytes() == value.flat[0:1].tobytes() * value.size:
            small = value.reshape(-1)[0:1].reshape(())  # a uniform array: its one value
        else:
            return None
        args[position] = Expr(args[0].graph, args[0].graph.const(small))
        return getattr(F, op)(*args)

    return build


def _constant_rules() -> list[Rule]:
    rules = []
    for name, op in sorted(REGISTRY.items()):
        if not op.elementwise or op.arity not in (2, 3):
            continue
        for k in range(op.arity):
            operands: list = [f"a{j}" for j in range(op.arity)]
            operands[k] = Const(f"a{k}")
            rules.append(Rule((name, *operands), _scalar_constant(name, k, op.arity)))
    return rules


def _reshaped_twice(x: Expr, inner: Expr, shape: tuple, batch: int) -> Expr | None:
    if batch or inner.data.attrs["batch"]:
        return None
    return F.reshape(x, shape)


CANONICAL_ORDER = Pass(
    "canonical_order",
    "commutative operands in one order (computed, variables, constants): 100*t is t*100",
    rules=tuple(Rule((op, ...), _canonical(op)) for op in COMMUTATIVE),
    stages=("compile", "fast_math"),
)

NORMAL_FORM = Pass(
    "normal_form",
    "exact normal form: x + x -> 2*x, -1 * x -> -x, broadcasts fused, reshape chains",
    rules=(
        Rule(("add", "x", "x"), _twice),
        Rule(("add", "x", Const("z", -0.0)), _plus_negative_zero),  # x + (-0.0) is x
        Rule(("add", Const("z", -0.0), "x"), lambda z, x: _plus_negative_zero(x, z)),
        Rule(("multiply", -1.0, "x"), lambda x: -x),  # exact: only the sign changes
        Rule(("multiply", "x", -1.0), lambda x: -x),
        Rule(("negative", ("multiply", "x", Const("c"))), lambda x, c: x * (-c)),
        Rule(("negative", ("multiply", Const("c"), "x")), lambda c, x: (-c) * x),
        # a transpose of a matrix undone by a matrix transpose (or the other way round)
        Rule(("matrix_transpose", ("transpose", "x", {"axes": (-1, -2)})),
             lambda x: x if x.ndim == 2 else None),
        Rule(("transpose", ("matrix_transpose", "x"), {"axes": (-1, -2)}),
             lambda x: x if x.ndim == 2 else None),
        Rule(("reshape", ("reshape", "x", {"@": "inner"}), {"shape": "shape", "batch": "batch"}),
             _reshaped_twice),
        *_fusion_rules(),
        *_constant_rules(),
    ),
    stages=("reverse", "compile", "fast_math", "simplify", "simplify_adjoint"),
)
