"""Transforms: graph -> larger graph. Reverse mode appends the derivative subgraph B
(:mod:`.reverse`), forward mode the tangent nodes (:mod:`.forward`); :mod:`.derivatives`
builds grad, vjp, jvp, jacobian, hessian, hvp and n-th derivatives on them; :mod:`.sparsity`,
:mod:`.colouring` and :mod:`.sparse` find sparsity patterns, colour them and build sparse
Jacobians and Hessians from a few batched passes."""

# the rules of loop steps, custom derivatives and solver calls
from . import custom, implicit, loop_sparsity, loops, sensitivity, while_loop  # noqa: F401
from .derivatives import (
    derivative,
    grad,
    hessian,
    hessian_sparsity,
    hvp,
    jacfwd,
    jacobian,
    jacobian_sparsity,
    jvp,
    vjp,
)
from .forward import Tangents, tangents
from .reverse import Backprop, backprop, sum_to_shape
from .sparse import SparseExpr

__all__ = ["Backprop", "SparseExpr", "Tangents", "backprop", "derivative", "grad", "hessian",
           "hessian_sparsity", "hvp", "jacfwd", "jacobian", "jacobian_sparsity", "jvp",
           "sum_to_shape", "tangents", "vjp"]
