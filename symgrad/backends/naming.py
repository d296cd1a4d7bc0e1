"""Names in emitted code: which user names may be emitted as they are, and unique fresh
names for everything else (``dx``, then ``dx_1``, ...).

>>> n = Namer(["x"])
>>> n.fresh("x"), n.fresh("dx"), n.fresh("dx"), n.counter("t", 1)
('x_1', 'dx', 'dx_1', ('t1', 2))
"""

from __future__ import annotations

import builtins
import keyword
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from ..base.errors import SymgradError

__all__ = ["Namer", "check_function_name", "is_safe_name", "sanitize"]

_BUILTINS = frozenset(dir(builtins))
_SOFT_KEYWORDS = frozenset(getattr(keyword, "softkwlist", ())) | {"_", "case", "match", "type"}
_RESERVED = frozenset({"np", "numpy", "math", "_numpy_math", "cmath", "_numpy_cmath"})


def is_safe_name(name: Any) -> bool:
    """Whether ``name`` can be emitted as-is: an identifier that shadows nothing we use.

    >>> [is_safe_name(n) for n in ("W", "x_1", "sum", "lambda", "np", "__x", "a-b")]
    [True, True, False, False, False, False, False]
    """
    return (
        isinstance(name, str)
        and name.isidentifier()
        and unicodedata.normalize("NFKC", name) == name
        and not keyword.iskeyword(name)
        and name not in _SOFT_KEYWORDS
        and name not in _BUILTINS
        and name not in _RESERVED
        and not name.startswith("__")
    )


def sanitize(name: Any) -> str:
    """A safe base for a user name: the name itself, or its word characters (``x_1`` style)."""
    if is_safe_name(name):
        return name
    text = name if isinstance(name, str) else "v"
    text = re.sub(r"[^0-9A-Za-z_]", "_", text)[:64].strip("_")
    if not text or text[0].isdigit():
        text = "v_" + text if text else "v"
    return text


class Namer:
    """Hands out unique safe names: ``fresh("dx")`` gives ``dx``, then ``dx_1``, ..."""

    def __init__(self, taken: Sequence[str] = ()) -> None:
        self.taken: set[str] = set(taken)

    def fresh(self, base: str) -> str:
        cand, k = base, 0
        while cand in self.taken or not is_safe_name(cand):
            k += 1
            cand = f"{base}_{k}"
        self.taken.add(cand)
        return cand

    def counter(self, prefix: str, start: int) -> tuple[str, int]:
        k = start
        while f"{prefix}{k}" in self.taken:
            k += 1
        self.taken.add(f"{prefix}{k}")
        return f"{prefix}{k}", k + 1


def check_function_name(name: Any) -> None:
    """Raise unless ``name`` can name a generated function (safe, not private)."""
    if not is_safe_name(name) or (isinstance(name, str) and name.startswith("_")):
        raise SymgradError(
            f"function name {name!r} cannot be used: give a Python identifier that is not a "
            "keyword, a builtin, 'np'/'numpy', or private (leading underscore)"
        )
