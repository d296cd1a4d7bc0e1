"""The PyTorch backend's table: the array API table run on ``array_api_compat.torch``.

PyTorch's own namespace differs from the standard; ``array_api_compat.torch`` wraps it, so
the array API templates run unchanged (scatter-add is ``Tensor.index_add``, out of place,
taken by the shared helper).

>>> TORCH["sin"].render(["x"], {})
'xp.sin(x)'
"""

from __future__ import annotations

from .array_api_table import ARRAY_API
from .template import Template

UNSUPPORTED: dict[str, str] = {}
"""Ops this backend cannot write, with the reason (none)."""

TORCH: dict[str, Template | None] = dict(ARRAY_API)
