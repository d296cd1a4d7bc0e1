"""How one op is written in one target: a :class:`Template`, the entry of every table.

Every backend table (:mod:`.numpy_table`, :mod:`.math_table`, :mod:`.array_api_table`,
:mod:`.jax_table`, :mod:`.torch_table`) maps op names to templates; a printer
(:mod:`symgrad.backends.targets`) renders a node by filling its op's template with the
operands' names and the node's attributes.

>>> Template("np.add({0}, {1})").render(["x", "y"], {})
'np.add(x, y)'
>>> Template(lambda names, attrs: f"{names[0]}.T").render(["W"], {})
'W.T'
"""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

__all__ = ["Template", "helpers_of", "imports_of"]


@dataclass(frozen=True)
class Template:
    """How one op is written: ``text`` (pattern or callable), the helpers it calls and the
    modules it ``imports`` beyond the target's own (``scipy.special``)."""

    text: str | Callable[[list[str], dict], str]
    helpers: tuple[Callable, ...] = ()
    imports: tuple[str, ...] = ()

    def render(self, names: list[str], attrs: dict) -> str:
        """The text for operands ``names`` and the node's attributes."""
        if callable(self.text):
            return self.text(names, dict(attrs))
        return self.text.format(*names, **{k: _as_source(v) for k, v in attrs.items()})

    def namespace(self) -> dict:
        """The names the text may use: ``np``, ``math``, the helpers and its imports."""
        mods = {}
        for module in self.imports:
            importlib.import_module(module)
            mods[module.split(".")[0]] = sys.modules[module.split(".")[0]]
        return {"np": np, "math": math, **{fn.__name__: fn for fn in self.helpers}, **mods}


class _Literal(float):
    """A non-finite float that formats as Python source (``float('inf')``), as ``repr`` or
    ``str``, alone or inside a tuple, list or dict: ``{attr!r}`` in a template stays valid
    code (a bare ``inf`` would be a NameError when the function runs)."""

    def __repr__(self) -> str:
        return f"float('{float.__repr__(self)}')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self) if not spec else float.__format__(self, spec)


def _as_source(value):
    """An attribute value whose non-finite floats format as source (see :class:`_Literal`)."""
    t = type(value)
    if t is float:
        return value if math.isfinite(value) else _Literal(value)
    if t in (tuple, list):
        return t(_as_source(v) for v in value)
    if t is dict:
        return {k: _as_source(v) for k, v in value.items()}
    return value


def helpers_of(table: dict[str, Template | None], ops: Iterable[str]) -> list[Callable]:
    """The helper functions the templates of ``ops`` call, once each, sorted by name."""
    found = {fn.__name__: fn for op in set(ops) if table.get(op) is not None
             for fn in table[op].helpers}
    return [found[k] for k in sorted(found)]


def imports_of(table: dict[str, Template | None], ops: Iterable[str]) -> list[str]:
    """The modules the templates of ``ops`` import (``scipy.special``), sorted."""
    return sorted({m for op in set(ops) if table.get(op) is not None
                   for m in table[op].imports})
