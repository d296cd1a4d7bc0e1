"""``symgrad.errors``: the error types users catch, every one a :class:`SymgradError`.

The face of :mod:`symgrad.base.errors`, where they are defined.

>>> from symgrad.errors import ShapeError, SymgradError
>>> issubclass(ShapeError, SymgradError) and issubclass(ShapeError, ValueError)
True
"""

from .base.errors import (
    ArgumentError,
    BackendError,
    DifferentiationError,
    EvaluationError,
    InputError,
    LimitError,
    NameConflictError,
    ParseError,
    ShapeError,
    SymgradError,
    SymgradWarning,
    UnsupportedError,
)

__all__ = ["ArgumentError", "BackendError", "DifferentiationError", "EvaluationError",
           "InputError", "LimitError", "NameConflictError", "ParseError", "ShapeError",
           "SymgradError", "SymgradWarning", "UnsupportedError"]
