"""How one op is written in one target: a :class:`Template`, the entry of every table.

Every backend table (:mod:`.numpy_table`, :mod:`.math_table`, :mod:`.array_api_table`,
:mod:`.jax_table`, :mod:`.torch_table`) maps op names to templates; a printer
(:mod:`symgrad.backends.printers`) renders a node by filling its op's template with the
operands' names and the node's attributes.

>>> Template("np.add({0}, {1})").render(["x", "y"], {})
'np.add(x, y)'
>>> Template(lambda names, attrs: f"{names[0]}.T").render(["W"], {})
'W.T'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

__all__ = ["Template", "helpers_of"]


@dataclass(frozen=True)
class Template:
    """How one op is written: ``text`` (pattern or callable) and the helpers it calls."""

    text: str | Callable[[list[str], dict], str]
    helpers: tuple[Callable, ...] = ()

    def render(self, names: list[str], attrs: dict) -> str:
        """The text for operands ``names`` and the node's attributes."""
        if callable(self.text):
            return self.text(names, dict(attrs))
        return self.text.format(*names, **attrs)

    def namespace(self) -> dict:
        """The names the text may use: ``np``, ``math`` and the helpers."""
        return {"np": np, "math": math, **{fn.__name__: fn for fn in self.helpers}}


def helpers_of(table: dict[str, Template | None], ops: Iterable[str]) -> list[Callable]:
    """The helper functions the templates of ``ops`` call, once each, sorted by name."""
    found = {fn.__name__: fn for op in set(ops) if table.get(op) is not None
             for fn in table[op].helpers}
    return [found[k] for k in sorted(found)]
