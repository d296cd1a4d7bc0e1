"""SciPy's sparse matrices meeting symgrad: as operands of Expr operators and of symgrad's and
NumPy's functions (values against SciPy's), gradients against JAX on the densified problem,
and, inside ``sg.grad(fun)``, a captured matrix read at every call and a gradient with respect
to a sparse argument that is a matrix of its class on its pattern (against finite
differences)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

import symgrad as sg
import symgrad.numpy as snp
from symgrad.errors import UnsupportedError
from symgrad.frontend.sparse import SparseArray, SparseMatrix
from tests.support.finite_differences import central
from tests.support.sparse_matrices import operands

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

RNG, A_ARR, A_MAT, X0, Y0 = operands(34)


@pytest.mark.parametrize("A", [A_ARR, A_MAT, A_ARR.tocsc(), A_ARR.tocoo(), A_ARR.todia()],
                         ids=["csr_array", "csr_matrix", "csc", "coo", "dia"])
def test_products_with_a_scipy_matrix_equal_scipys(A):
    x, y = sg.var("x", shape=(5,)), sg.var("y", shape=(6,))
    X = sg.var("X", shape=(5, 3))
    at = {"x": X0, "y": Y0, "X": RNG.standard_normal((5, 3))}
    cases = [(A @ x, A @ X0), (A.T @ y, A.T @ Y0), (y @ A, Y0 @ A), (x @ A.T, X0 @ A.T),
             (A @ X, A @ at["X"]), (np.dot(A, x), A.dot(X0)), (sg.matmul(A, x), A @ X0),
             (snp.dot(A, x), A @ X0), (sg.const(A) @ x, A @ X0), (sg.const(A).dot(x), A @ X0)]
    if A.format != "coo":  # SciPy's coo.dot refuses what it cannot convert; the others use @
        cases.append((A.dot(x), A.dot(X0)))
    else:
        with pytest.raises(UnsupportedError, match="write it with operators"):
            A.dot(x)
    for got, want in cases:
        np.testing.assert_allclose(sg.evaluate(got, at, unknown="ignore"), want, rtol=1e-13)


def test_star_is_scipys_product_for_matrices_and_elementwise_for_arrays():
    x = sg.var("x", shape=(5,))
    np.testing.assert_allclose(sg.evaluate(A_MAT * x, {"x": X0}), A_MAT * X0, rtol=1e-13)
    np.testing.assert_allclose(sg.evaluate(x * A_MAT.T, {"x": X0}), X0 * A_MAT.T, rtol=1e-13)
    product = A_ARR * x  # a sparse array times a row: sparse, on A's pattern
    assert isinstance(product, SparseArray) and not isinstance(product, SparseMatrix)
    np.testing.assert_allclose(sg.evaluate(product.toarray(), {"x": X0}),
                               (A_ARR * X0).toarray(), rtol=1e-13)


def test_reductions_diagonal_and_sums_with_dense_arrays():
    A = sg.const(A_ARR)
    m = sg.const(A_MAT)
    x = sg.var("x", shape=(5,))
    dense = A_ARR.toarray()
    at = {"x": X0}
    checks = [(A.sum(axis=0), dense.sum(0)), (A.sum(axis=1), dense.sum(1)),
              (A.sum(), dense.sum()), (m.sum(axis=0), A_MAT.sum(axis=0)),
              (A.mean(axis=1), dense.mean(1)), (A.diagonal(), A_ARR.diagonal()),
              (A.diagonal(1), A_ARR.diagonal(1)), (A.diagonal(-2), A_ARR.diagonal(-2)),
              (A.trace(), A_ARR.trace()), (sg.sum(A_ARR, axis=0), dense.sum(0)),
              ((A_ARR + x), dense + X0), ((x - A_ARR), X0 - dense),
              ((A.multiply(x)).toarray(), A_ARR.multiply(X0).toarray()),
              ((A / 2.0).toarray(), dense / 2.0), (abs(-A).toarray(), dense),
              (A.sqrt().toarray(), np.sqrt(dense)), (np.sin(A).toarray(), np.sin(dense))]
    for got, want in checks:
        np.testing.assert_allclose(sg.evaluate(got, at, unknown="ignore"), want, rtol=1e-13,
                                   atol=1e-15)


def test_gradients_equal_jax_on_the_densified_problem(x64):
    A, D = A_ARR, RNG.standard_normal((6, 5))
    x, y = sg.var("x", shape=(5,)), sg.var("y", shape=(6,))
    f = (sg.sum(sg.sin(A @ x) * y) + sg.sum(sg.const(A).multiply(D).sum(axis=0) * x ** 2)
         + sg.const(A).diagonal() @ sg.tanh(x[:5]) + sg.sum((y @ A) ** 3))
    dense = jnp.asarray(A.toarray())

    def ref(x, y):
        return (jnp.sum(jnp.sin(dense @ x) * y) + jnp.sum((dense * D).sum(0) * x ** 2)
                + jnp.diagonal(dense) @ jnp.tanh(x) + jnp.sum((y @ dense) ** 3))

    at = {"x": X0, "y": Y0}
    got = sg.evaluate(list(sg.grad(f, [x, y])), at)
    want = jax.grad(ref, argnums=(0, 1))(X0, Y0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)
    hess = sg.evaluate(sg.hessian(f, x), at)
    np.testing.assert_allclose(hess, jax.hessian(ref)(X0, Y0), rtol=1e-11, atol=1e-12)
    sg.check_grads(f, [x, y], at, order=3)


def test_a_captured_matrix_is_an_input_read_at_every_call(x64):
    A = A_ARR.copy()

    def loss(x):
        return np.sum((A @ np.sin(x)) ** 2) + np.sum(A.multiply(np.cos(x)).sum(axis=1))

    g = sg.grad(loss)

    def ref(data, x):
        dense = jnp.zeros(A.shape).at[A.tocoo().row, A.tocoo().col].add(data)
        return jnp.sum((dense @ jnp.sin(x)) ** 2) + jnp.sum(dense * jnp.cos(x))

    np.testing.assert_allclose(g(X0), jax.grad(ref, 1)(A.tocoo().data, X0), rtol=1e-12)
    A.data[:] *= 3.0  # the values are read at every call
    np.testing.assert_allclose(g(X0), jax.grad(ref, 1)(A.tocoo().data, X0), rtol=1e-12)
    assert "(6, 5)" not in g.source.replace("'csr', (6, 5)", "")  # never densified
    A = A_ARR[:, [1, 0, 2, 3, 4]]  # another pattern: traced again, not a stale one
    np.testing.assert_allclose(g(X0), jax.grad(ref, 1)(A.tocoo().data, X0), rtol=1e-12)


@pytest.mark.parametrize("A", [A_ARR, A_MAT, A_ARR.tocoo(), A_MAT.tocsc()],
                         ids=["csr_array", "csr_matrix", "coo", "csc_matrix"])
def test_a_gradient_with_respect_to_a_sparse_argument_is_a_matrix_on_its_pattern(A):
    def loss(A, x):
        return np.sum(np.tanh(A @ x) * np.arange(6.0))

    gA, gx = sg.grad(loss, argnums=(0, 1))(A, X0)
    assert type(gA) is type(A) and gA.nnz == A.nnz
    coo = A.tocoo()

    def by_values(v):
        B = scipy.sparse.coo_array((v, (coo.row, coo.col)), shape=A.shape)
        return float(np.sum(np.tanh(B @ X0) * np.arange(6.0)))

    fd = central(by_values, coo.data.astype(float))
    np.testing.assert_allclose(gA.tocoo().data, fd, rtol=1e-7, atol=1e-9)
    dense = A.toarray()
    want = dense.T @ ((1 - np.tanh(dense @ X0) ** 2) * np.arange(6.0))
    np.testing.assert_allclose(gx, want, rtol=1e-12)
