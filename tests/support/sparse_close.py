"""A sparse derivative's value (a ``scipy.sparse`` matrix or symgrad's SparseValue) against
the dense one."""

from __future__ import annotations

import numpy as np


def dense(m) -> np.ndarray:
    """``m`` as a dense array."""
    return m.toarray() if hasattr(m, "toarray") else np.asarray(m)


def sparse_close(sparse_value, want, rtol: float = 1e-13) -> None:
    """``sparse_value`` equals ``want`` to ``rtol`` of ``want``'s largest entry."""
    want = np.asarray(want)
    scale = max(float(np.max(np.abs(want), initial=0.0)), 1e-300)
    got = dense(sparse_value)
    np.testing.assert_allclose(got, want.reshape(got.shape), rtol=0, atol=rtol * scale)
