"""The JAX backend's table: the array API table, with JAX's own NumPy-style indexing.

``jax.numpy`` is an array API namespace, so the array API templates run on it unchanged
(its scatter-add is the functional ``.at[...].add``, taken by the shared helper); integer
array keys use JAX's indexing, which follows NumPy's rules.

>>> JAX["index"].render(["x", "i"], {"key": ("i", slice(1, None)), "batch": 0})
'x[i, 1:]'
"""

from __future__ import annotations

from ..ops.indexing import key_source
from .array_api_table import ARRAY_API
from .template import Template

UNSUPPORTED: dict[str, str] = {}
"""Ops this backend cannot write, with the reason (none)."""


def _index(names: list[str], attrs: dict) -> str:
    return f"{names[0]}[{key_source(attrs['key'], names[1:], attrs['batch'])}]"


JAX: dict[str, Template | None] = {**ARRAY_API, "index": Template(_index)}
