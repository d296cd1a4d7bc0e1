"""THE op registry: one stanza per op, semantics only. Importing this package registers
every op into :data:`symgrad.ir.op.REGISTRY`.

A stanza states how the op is called, its shape/dtype rule, its NumPy implementation (what
the interpreter runs), its backprop rule, its sympy name and its test domain or examples.
How an op is emitted lives in each backend's table (:mod:`symgrad.backends`); how it is
rewritten lives in :mod:`symgrad.passes`. The ``_sg_*`` kernels defined here (stable
``logsumexp``, scatter-add, ...) are the interpreter's implementation and are emitted, as
they are, by the NumPy source backend: the two cannot disagree.
"""

from ..ir.expr import F, call
from ..ir.op import ALIASES, REGISTRY, Op, Signature, SignatureError, lookup, register, sig

# importing a family registers its ops
from . import (  # noqa: F401
    calls,
    complex,
    creation,
    cumulative,
    custom,
    eig,
    elementwise,
    fft,
    functions,
    indexing,
    loops,
    matrix_functions,
    numpy_linalg,
    products,
    reductions,
    shaping,
    signal,
    solvers,
    sorting,
    sparse,
    sparse_solve,
    special,
    stop_gradient,
    while_loop,
)

__all__ = ["ALIASES", "REGISTRY", "F", "Op", "Signature", "SignatureError", "call", "lookup",
           "register", "sig"]
