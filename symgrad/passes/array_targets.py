"""What ``compile``/``to_source`` run before emitting for ``backend="jax"`` and
``"torch"``, after the compile passes.

The lowering of B (:mod:`.lowering`) writes some sums as products with a vector of ones
(``ones @ x``), where NumPy's measured costs say BLAS beats ``np.add.reduce``. Where ``x``
has batch axes the product broadcasts the ones over them, which XLA runs as a batched
product, 1.3x slower than the reduction (W2 under JAX); those are written back as sums
(equal up to rounding, as the lowering was). Unbatched products stay: there XLA's product
is the faster kernel too (W5: written back as sums, 1.8x slower). The ``array_api``
backend keeps NumPy's choice (on NumPy arrays, its main use, the products are faster).

>>> import numpy as np, symgrad as sg
>>> from symgrad.ir.expr import Expr
>>> x = sg.var("x", shape=(2, 4, 3))
>>> e = Expr(x.graph, x.graph.const(np.ones((1, 4)))) @ x
>>> g, (ids,) = for_arrays(e.graph, [[e.node]])
>>> g.nodes[ids[0]].op, g.nodes[ids[0]].attrs["axis"]
('sum', (-2,))
"""

from __future__ import annotations

from ..ir.expr import Expr, F
from ..ir.graph import Graph
from .pattern import Const, Pass, Rule
from .rebuild import rebuilt


def _rows(c: Expr, x: Expr) -> Expr | None:
    """``ones((1, n)) @ x -> sum(x, axis=-2, keepdims=True)``."""
    if x.ndim < 3 or c.shape != (1, x.shape[-2]) or x.dtype != c.dtype:
        return None
    return F.sum(x, axis=-2, keepdims=True)


def _cols(x: Expr, c: Expr) -> Expr | None:
    """``x @ ones((m, 1)) -> sum(x, axis=-1, keepdims=True)``."""
    if x.ndim < 3 or c.shape != (x.shape[-1], 1) or x.dtype != c.dtype:
        return None
    return F.sum(x, axis=-1, keepdims=True)


SUMS_AS_SUMS = Pass(
    "sums_as_sums",
    "jax/torch: batched products with a vector of ones (NumPy's faster sums) as sums",
    rules=(Rule(("matmul", Const("c", 1.0), "x"), _rows),
           Rule(("matmul", "x", Const("c", 1.0)), _cols)),
    stages=("arrays",),
)


def for_arrays(graph: Graph, groups: list[list[int]]) -> tuple[Graph, list[list[int]]]:
    """The graph of ``groups`` rebuilt through :data:`SUMS_AS_SUMS`; the new graph and the
    outputs' new ids, group by group."""
    return rebuilt(graph, groups, (SUMS_AS_SUMS,))
