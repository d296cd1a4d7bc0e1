"""The sparse solves on (data, pattern, b): solutions checked against the dense matrix, along
an axis and with the transpose; SuperLU's factors reused only for equal values; a singular
matrix raising NumPy's error; the iterative solves reporting SciPy's info, and their derivative
refusing an unconverged solution."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.errors import EvaluationError
from symgrad.ir import sparse_pattern as P
from symgrad.ops import F
from symgrad.ops import sparse as S
from symgrad.ops import sparse_solve as SS
from tests.support.sparse_matrices import spd as _spd


@pytest.mark.parametrize("kind", ["csr", "csc", "coo"])
def test_solve_along_an_axis_and_with_the_transpose(kind, rng):
    a, p, data = _spd(rng, 6, kind)
    data = data * (1.0 + 0.1 * rng.random(data.size))  # no longer symmetric
    dense = S._sg_sparse_matrix(p, data).toarray()
    b = rng.standard_normal((2, 6, 3))
    x = SS._sg_sparse_solve(data, b, p, False, -2)
    np.testing.assert_allclose(np.einsum("ij,bjk->bik", dense, x), b, atol=1e-12)
    xt = SS._sg_sparse_solve(data, b[:, :, 0], p, True, -1)
    np.testing.assert_allclose(xt @ dense, b[:, :, 0], atol=1e-12)


def test_the_factorisation_is_reused_only_for_equal_values(rng):
    _, p, data = _spd(rng, 6)
    data = data.copy()
    lu = SS._sg_sparse_lu(p, data)
    assert SS._sg_sparse_lu(p, data.copy()) is lu  # equal values: the same factors
    b = rng.standard_normal(6)
    before = SS._sg_sparse_solve(data, b, p, False, -1)
    data *= 2.0  # changed in place: factorised again, never the stale factors
    assert SS._sg_sparse_lu(p, data) is not lu
    np.testing.assert_allclose(SS._sg_sparse_solve(data, b, p, False, -1), before / 2.0,
                               rtol=1e-12)


def test_a_singular_matrix_raises_numpys_error():
    p = P.make_pattern("csr", (2, 2), [0, 1, 1], [0])
    d, b = sg.var("d", shape=(1,)), sg.var("b", shape=(2,))
    x = F.sparse_solve(d, b, pattern=p)
    with pytest.raises(EvaluationError, match="Singular") as info:
        sg.evaluate(x, {"d": [1.0], "b": [1.0, 1.0]})
    assert isinstance(info.value, np.linalg.LinAlgError)


def test_an_iterative_solve_reports_info_and_its_derivative_checks_convergence(rng):
    _, p, data = _spd(rng, 8)
    d, b = sg.var("d", shape=(data.size,)), sg.var("b", shape=(8,))
    attrs = dict(pattern=p, method="cg", rtol=1e-14, atol=0.0, maxiter=1)
    x = F.sparse_iterative(d, b, F.zeros(shape=(8,)), **attrs)
    info = F.sparse_iterative_info(d, b, F.zeros(shape=(8,)), **attrs)
    at = {"d": data, "b": rng.standard_normal(8)}
    got_x, got_info = sg.evaluate([x, info], at)
    assert got_info == 1  # SciPy's iteration count: not converged in one step
    assert got_x.shape == (8,)
    with pytest.raises(EvaluationError, match="cg in a derivative did not converge"):
        sg.evaluate(sg.grad(sg.sum(x), b), at)
