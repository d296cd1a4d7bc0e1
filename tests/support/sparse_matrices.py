"""SciPy matrices with their symgrad patterns, for the sparse op tests."""

from __future__ import annotations

import scipy.sparse

from symgrad.ir import sparse_pattern as P


def spd(rng, n, kind="csr"):
    """A diagonally dominant symmetric n x n SciPy matrix of `kind`, its pattern and data."""
    a = scipy.sparse.random(n, n, density=0.3, random_state=rng)
    a = (a + a.T + n * scipy.sparse.eye(n)).asformat(kind)
    if kind == "coo":
        return a, P.make_pattern("coo", a.shape, a.row, a.col), a.data
    return a, P.make_pattern(kind, a.shape, a.indptr, a.indices), a.data
