"""JAX's function API on Python functions: ``grad``, ``value_and_grad``, ``jacrev``,
``jacfwd``, ``jacobian``, ``hessian``, ``jvp``, ``vjp``, ``hvp``, ``linearize``, ``vmap`` and
``jit`` (:mod:`.transforms`, :mod:`.vmap`), over pytrees of arrays (:mod:`symgrad.tree_util`).
A transformed function (:mod:`.traced`) is traced once per argument specification and
compiled; :mod:`.builders` says what each transform builds from the trace, :mod:`.arguments`
and :mod:`.checks` read and check what users pass."""

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
)
from .vmap import vmap

__all__ = ["Transformed", "grad", "hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jit",
           "jvp", "linearize", "value_and_grad", "vjp", "vmap"]
