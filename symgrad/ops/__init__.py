"""The op registry and its families. Importing this package registers every op."""

from . import creation, elementwise, indexing, linalg, reductions, shaping  # noqa: F401  (registration side effects)  # noqa: F401
from .registry import ALIASES, REGISTRY, F, Op, SignatureError, call, lookup, register

__all__ = ["ALIASES", "REGISTRY", "F", "Op", "SignatureError", "call", "lookup", "register"]
