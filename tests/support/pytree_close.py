"""A test helper (not a test module): two pytrees of arrays equal in structure and close
in every leaf, as test_function_api, test_custom and test_vmap compare symgrad with JAX."""

from __future__ import annotations

import numpy as np


def close(a, b, rtol: float = 1e-11, atol: float = 1e-12) -> None:
    """Assert ``a`` and ``b`` have one structure (JAX's pytree rules: the tests importing
    this need JAX) and leaves within ``rtol``/``atol``."""
    from jax.tree_util import tree_flatten

    la, ta = tree_flatten(a)
    lb, tb = tree_flatten(b)
    assert ta == tb, (ta, tb)
    for p, q in zip(la, lb):
        np.testing.assert_allclose(np.asarray(p), np.asarray(q), rtol=rtol, atol=atol)
