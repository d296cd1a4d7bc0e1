"""Any value as error-message text, without running anything the value's type defines.

A user object's ``__repr__``, ``__format__`` or ``__eq__`` may do anything; messages name its
type instead, read from the type itself, and show a value only when its type is one of the
plain built-ins (:data:`PLAIN`) or a NumPy scalar.

>>> describe((1, "a", 2.5)), describe(object())
("(1, 'a', 2.5)", '<object object>')
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["NUMPY_SCALARS", "PLAIN", "describe", "type_name"]

PLAIN = frozenset({int, float, str, bool, type(None), type(...), complex})
"""The built-in types whose values are shown (and, in :mod:`symgrad.ir.values`, kept)."""

NUMPY_SCALARS = frozenset(t for t in np.sctypeDict.values() if issubclass(t, np.generic))
"""NumPy's scalar types (``np.float64(1.0)``, ``np.int32(2)``, ...)."""


def type_name(value: Any) -> str:
    """The name of ``value``'s type, read without running anything the type defines."""
    return type.__dict__["__name__"].__get__(type(value), type)


def describe(value: Any, limit: int = 60) -> str:
    """``repr`` of a plain value (shortened), ``<T object>`` for anything else: error
    messages never call a user object's ``__repr__``."""
    if type(value) in PLAIN or type(value) in NUMPY_SCALARS:
        text = repr(value)
    elif type(value) in (tuple, list) and len(value) <= 16:
        inner = ", ".join(describe(v, limit) for v in value)
        text = f"({inner}{',' if len(value) == 1 else ''})" if type(value) is tuple \
            else f"[{inner}]"
    else:
        return f"<{type_name(value)} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
