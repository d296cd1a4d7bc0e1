"""The ``arrays`` stage: what ``compile``/``to_source`` run for ``backend="jax"`` and
``"torch"`` after the compile passes.

The lowering of B (:mod:`.lowering`) writes some sums as products with a vector of ones
(``ones @ x``), where NumPy's measured costs say BLAS beats ``np.add.reduce``. Where ``x``
has batch axes the product broadcasts the ones over them, which XLA and PyTorch run as a
batched product, slower there than the reduction: those are written back as sums (equal up
to rounding, as the lowering was). Unbatched products stay, as on these libraries too the
product is the faster kernel (measured in ``benchmarks/backends.py``). The ``array_api``
backend keeps NumPy's choice (on NumPy arrays, its main use, the products are faster).

>>> import numpy as np, symgrad as sg
>>> from symgrad.ir.expr import Expr
>>> x = sg.var("x", shape=(2, 4, 3))
>>> e = Expr(x.graph, x.graph.const(np.ones((1, 4)))) @ x
>>> from symgrad.passes.context import Context
>>> from symgrad.passes.pipeline import run_stage
>>> g, ids = run_stage("arrays", e.graph, [e.node], Context())
>>> g.nodes[ids[0]].op, g.nodes[ids[0]].attrs["axis"]
('sum', (-2,))
"""

from __future__ import annotations

from ..ir.expr import Expr, F
from .pattern import Const, Pass, Rule


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

