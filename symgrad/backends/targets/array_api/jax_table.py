"""The JAX backend's table: the array API table, with JAX's own NumPy-style indexing.

``jax.numpy`` is an array API namespace, so the array API templates run on it unchanged
(its scatter-add is the functional ``.at[...].add``, taken by the shared helper); integer
array keys use JAX's indexing, which follows NumPy's rules, where an out-of-range index gives
NaN (for integers the most negative value) rather than JAX's clamped element: NumPy raises
there, and XLA code cannot.

>>> JAX["index"].render(["x", "i"], {"key": ("i", slice(1, None)), "batch": 0})
"x.at[i, 1:].get(mode='fill')"
"""

from __future__ import annotations

from ....ops.indexing import key_source
from ...template import Template
from .sparse import UNSUPPORTED as SPARSE_UNSUPPORTED
from .table import (
    ARRAY_API,
    SOLVER_UNSUPPORTED,
    SPECIAL_BINARY,
    SPECIAL_TERNARY,
    SPECIAL_UNARY,
)

UNSUPPORTED: dict[str, str] = {**SPARSE_UNSUPPORTED, **SOLVER_UNSUPPORTED}
"""Ops this backend cannot write, with the reason (the sparse solves, SciPy's solvers)."""
COMPLEX_UNSUPPORTED: dict[str, str] = dict.fromkeys(
    ("erf", "erfc"), "jax.scipy.special has no complex erf (SciPy's is Faddeeva's)")
"""Ops this backend cannot write for complex operands, with the reason."""


def _index(names: list[str], attrs: dict) -> str:
    key = key_source(attrs["key"], names[1:], attrs["batch"])
    if len(names) == 1:  # static ints and slices, checked when built
        return f"{names[0]}[{key}]"
    # JAX clamps an out-of-range index array; "fill" gives NaN (the most negative int) there
    return f"{names[0]}.at[{key}].get(mode='fill')"


def _special(name: str, arity: int = 1) -> Template:
    args = ", ".join(f"{{{k}}}" for k in range(arity))
    return Template(f"jax.scipy.special.{name}({args})", imports=("jax.scipy.special",))


SPECIAL: dict[str, Template] = {
    **{name: _special(name) for name in SPECIAL_UNARY if name != "erfcinv"},
    **{name: _special(name, 2) for name in SPECIAL_BINARY},
    **{name: _special(name, 3) for name in SPECIAL_TERNARY},
    # erfcinv(y) = -ndtri(y / 2) / sqrt(2): JAX has no erfcinv
    "erfcinv": Template("-jax.scipy.special.ndtri({0} * 0.5) * 0.7071067811865476",
                        imports=("jax.scipy.special",)),
    "polygamma": Template("jax.scipy.special.polygamma({n!r}, {0})",
                          imports=("jax.scipy.special",)),
    "expm": Template("jax.scipy.linalg.expm({0})", imports=("jax.scipy.linalg",)),
    # jax.lax.linalg.lu: (packed factors, pivots, permutation), int32 indices
    "lu_factor": Template("jax.lax.linalg.lu({0})[0]", imports=("jax.lax.linalg",)),
    "lu_pivots": Template("xp.astype(jax.lax.linalg.lu({0})[1], xp.int64)",
                          imports=("jax.lax.linalg",)),
    "lu_permutation": Template("xp.astype(jax.lax.linalg.lu({0})[2], xp.int64)",
                               imports=("jax.lax.linalg",)),
}
"""SciPy's special functions (ops/special.py) as ``jax.scipy.special``'s."""

JAX: dict[str, Template | None] = {**ARRAY_API, **SPECIAL, "index": Template(_index)}
