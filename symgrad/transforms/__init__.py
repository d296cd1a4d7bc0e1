"""Transforms: graph -> larger graph. Reverse mode appends the derivative subgraph B
(:mod:`.reverse`), forward mode the tangent nodes (:mod:`.forward`); :mod:`.derivatives`
builds grad, vjp, jvp, jacobian, hessian, hvp and n-th derivatives on them."""

from .derivatives import derivative, grad, hessian, hvp, jacfwd, jacobian, jvp, vjp
from .forward import Tangents, tangents
from .reverse import Backprop, backprop, sum_to_shape

__all__ = ["Backprop", "Tangents", "backprop", "derivative", "grad", "hessian", "hvp", "jacfwd",
           "jacobian", "jvp", "sum_to_shape", "tangents", "vjp"]
