"""The ``promote`` stage: NumPy's type promotion made explicit for the array API targets
(``array_api``, ``jax``, ``torch``), last before they emit: an op whose operands have
different dtypes, or another dtype than NumPy computes in (``int / int``), gets ``astype``
casts to that dtype, so every library gives ``evaluate``'s result.

The standard leaves mixed int/float promotion undefined (array-api-strict refuses
``float64 + int64``), PyTorch computes ``int64 + float32`` in float32 where NumPy gives
float64, and JAX has its own lattice. This table says which ops take their operands in one
common dtype (``None``: all of them; else the positions, as ``where``'s two values); the
pass casts the others to it. A 0-d constant is left as it is: the emitter writes it as a
literal typed for its neighbours.

>>> import numpy as np, symgrad as sg
>>> from symgrad.passes.context import Context
>>> from symgrad.passes.pipeline import run_stage
>>> i, x = sg.var("i", dtype="int64"), sg.var("x", dtype="float32")
>>> e = i + x
>>> g, (k,) = run_stage("promote", e.graph, [e.node], Context())
>>> [g.nodes[a].op for a in g.nodes[k].args], g.nodes[k].dtype
(['astype', 'astype'], 'float64')
"""

from __future__ import annotations

import numpy as np

from ..ir.expr import F, build
from .pattern import Pass, Rule

COMMON: dict[str, tuple[int, ...] | None] = {
    **dict.fromkeys((
        "add", "subtract", "multiply", "divide", "power", "float_power", "maximum", "minimum",
        "fmax", "fmin", "mod", "fmod", "floor_divide", "arctan2", "hypot", "copysign",
        "logaddexp", "logaddexp2", "heaviside", "less", "less_equal", "greater",
        "greater_equal", "equal", "not_equal", "matmul", "dot", "outer", "concatenate",
        "stack",
    )),
    "where": (1, 2),
}


def _cast(n):
    """``n`` with the operands at its op's positions cast to one dtype, or None if they
    have one already."""
    args = list(n.args)
    picked = range(len(args)) if COMMON[n.op.name] is None else COMMON[n.op.name]
    dtypes = {args[k].dtype for k in picked}
    common = n.dtype if n.dtype != "bool" else np.result_type(*dtypes).name
    if dtypes == {common}:
        return None
    changed = False
    for k in picked:
        a = args[k]
        if a.dtype != common and not (a.shape == () and a.graph.nodes[a.node].is_const):
            args[k], changed = F.astype(a, common), True
    return build(n.op, args, dict(n.attrs)) if changed else None


PROMOTE = Pass(
    "promote",
    "array API targets: operands of mixed dtypes cast to the dtype NumPy computes in",
    rules=tuple(Rule((name, ...), _cast) for name in COMMON),
    stages=("promote",),
)
