"""JAX's function API on Python functions: ``grad``, ``value_and_grad``, ``jacrev``,
``jacfwd``, ``jacobian``, ``hessian``, ``jvp``, ``vjp``, ``hvp``, ``linearize``, ``vmap`` and
``jit`` (:mod:`.transforms`), over pytrees of arrays (:mod:`symgrad.tree_util`)."""

from .transforms import (
    Transformed,
    grad,
    hessian,
    hvp,
    jacfwd,
    jacobian,
    jacrev,
    jit,
    jvp,
    linearize,
    value_and_grad,
    vjp,
    vmap,
)

__all__ = ["Transformed", "grad", "hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jit",
           "jvp", "linearize", "value_and_grad", "vjp", "vmap"]
