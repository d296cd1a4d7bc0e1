"""Transforms: graph -> larger graph. Reverse mode appends the derivative subgraph B
(:mod:`.reverse`); :mod:`.derivatives` builds grad, vjp, jacobian, hessian, hvp and n-th
derivatives on it."""

from .derivatives import derivative, grad, hessian, hvp, jacobian, vjp
from .reverse import Backprop, backprop, sum_to_shape

__all__ = ["Backprop", "backprop", "derivative", "grad", "hessian", "hvp", "jacobian",
           "sum_to_shape", "vjp"]
