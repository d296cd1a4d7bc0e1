"""JAX's ``flatten_util.ravel_pytree``: a pytree of arrays as one flat vector, and the
function that gives the pytree back (for ``scipy.optimize``, which works on vectors).

>>> import numpy as np, symgrad as sg
>>> flat, unravel = sg.flatten_util.ravel_pytree({"W": np.ones((2, 2)), "b": np.zeros(2)})
>>> flat
array([1., 1., 1., 1., 0., 0.])
>>> unravel(flat + 1.0)["b"]
array([1., 1.])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.errors import ArgumentError
from ..base.tree_util import tree_flatten, tree_unflatten
from ..ir.expr import Expr, F

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(flat, unravel)``: the leaves of ``pytree`` raveled and joined, in flattening
    order, in the dtype NumPy promotes them to; ``unravel(flat)`` the pytree of the same
    structure, shapes and dtypes. Leaves may be arrays, numbers or symgrad expressions
    (then ``flat`` is an expression)."""
    leaves, treedef = tree_flatten(pytree)
    symbolic = any(isinstance(v, Expr) for v in leaves)
    shapes = [tuple(np.shape(v)) if not isinstance(v, Expr) else v.shape for v in leaves]
    dtypes = [v.dtype if isinstance(v, Expr) else np.asarray(v).dtype for v in leaves]
    sizes = [math.prod(s) for s in shapes]
    if symbolic:
        flat = F.concatenate([F.reshape(v, (-1,)) if isinstance(v, Expr) else
                              F.const(np.ravel(np.asarray(v))) for v in leaves]) \
            if leaves else F.zeros((0,))
    else:
        flat = np.concatenate([np.ravel(np.asarray(v)) for v in leaves]) if leaves else \
            np.zeros(0)

    def unravel(vector: Any) -> Any:
        shape = vector.shape if isinstance(vector, Expr) else np.shape(vector)
        if tuple(shape) != (sum(sizes),):
            raise ArgumentError(f"unravel takes a vector of {sum(sizes)} elements, got shape "
                                f"{tuple(shape)}")
        out, at = [], 0
        for shape, size, dtype in zip(shapes, sizes, dtypes):
            part = vector[at:at + size]
            at += size
            if isinstance(part, Expr):
                out.append(F.reshape(part, shape))
            else:
                out.append(np.asarray(part).reshape(shape).astype(dtype, copy=False))
        return tree_unflatten(treedef, out)

    return flat, unravel
