"""The op registry and its families. Importing this package registers every op."""

from . import creation, elementwise  # noqa: F401  (registration side effects)
from . import linalg, reductions, shaping, indexing  # noqa: F401
from .registry import ALIASES, REGISTRY, F, Op, SignatureError, call, lookup, register

__all__ = ["ALIASES", "REGISTRY", "F", "Op", "SignatureError", "call", "lookup", "register"]
