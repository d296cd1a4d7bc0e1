"""SciPy matrices with their symgrad patterns, for the sparse op tests."""

from __future__ import annotations

import numpy as np
import scipy.sparse

from symgrad.ir import sparse_pattern as P


def spd(rng, n, kind="csr"):
    """A diagonally dominant symmetric n x n SciPy matrix of `kind`, its pattern and data."""
    a = scipy.sparse.random(n, n, density=0.3, random_state=rng)
    a = (a + a.T + n * scipy.sparse.eye(n)).asformat(kind)
    if kind == "coo":
        return a, P.make_pattern("coo", a.shape, a.row, a.col), a.data
    return a, P.make_pattern(kind, a.shape, a.indptr, a.indices), a.data


def operands(seed: int):
    """A generator seeded ``seed`` and what the sparse call tests draw from it first: a 6 x 5
    CSR array, the same as a ``csr_matrix``, and vectors of 5 and 6 values."""
    rng = np.random.default_rng(seed)
    a = scipy.sparse.csr_array(scipy.sparse.random(6, 5, density=0.4, random_state=rng))
    return rng, a, scipy.sparse.csr_matrix(a), rng.standard_normal(5), rng.standard_normal(6)
