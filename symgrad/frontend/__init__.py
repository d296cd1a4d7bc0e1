"""Front ends: text (:mod:`.parse`, a safe parser of its own over Python's tokenizer, reading
with :mod:`.syntax`) and Python code on symbolic variables — the op functions
(:mod:`.functions`) and NumPy's functions that are not one op (:mod:`.numpy_functions`,
:mod:`.numpy_arrays`, :mod:`.numpy_calculus`, :mod:`.numpy_einsum`), all registered under
NumPy's names, where ``symgrad.numpy``, the array protocols and the parser find them. Both
front ends build the same graph for the same expression."""

from . import (  # noqa: F401  (registration)
    numpy_arrays,
    numpy_calculus,
    numpy_einsum,
    numpy_extra,
    numpy_fft,
    numpy_functions,
    sparse_calls,
    while_loops,
)
from .functions import function_for
from .parse import parse

__all__ = ["function_for", "parse"]
