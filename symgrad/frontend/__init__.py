"""Front ends: text (:mod:`.parse`, a safe parser over Python's ``ast``) and Python code on
symbolic variables — the op functions (:mod:`.functions`) and NumPy's functions that are
not one op (:mod:`.numpy_functions`, :mod:`.numpy_arrays`), all registered under NumPy's
names, where ``symgrad.numpy``, the array protocols and the parser find them. Both front
ends build the same graph for the same expression."""

from . import numpy_arrays, numpy_extra, numpy_fft, numpy_functions  # noqa: F401  (registration)
from .functions import function_for
from .parse import parse

__all__ = ["function_for", "parse"]
