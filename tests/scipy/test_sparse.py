"""symgrad.scipy.sparse and SciPy's sparse matrices in traced code: symbolic sparse matrices'
values against SciPy, gradients against finite differences and against JAX, solvers
against dense solves, a 2-D Poisson inverse problem, the 10^6 tridiagonal product in
bounded memory, and the errors that say what to use instead."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.linalg

import symgrad as sg
from symgrad.errors import ShapeError, UnsupportedError
from symgrad.scipy import sparse as sps
from symgrad.scipy.sparse import linalg as spl
from tests.support.finite_differences import central
from tests.support.sparse_matrices import operands

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

RNG, A_ARR, A_MAT, X0, Y0 = operands(34)


# -- a sparse operator's Hessian (operands: tests/frontend/test_sparse_calls.py) ----------


def test_an_energy_with_a_sparse_operator_has_a_sparse_hessian():
    """The structure rules follow the stored entries: the Hessian of ``x L x / 2 + sum x^4``
    has L's pattern, found by three colours (the vectorised stencil's count)."""
    n = 60
    L = scipy.sparse.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1],
                           format="csr")
    x = sg.var("x", shape=(n,))
    energy = 0.5 * x @ (L @ x) + sg.sum(x ** 4)
    pattern = sg.hessian_sparsity(energy, x)
    assert (pattern != (L != 0)).nnz == 0
    H = sg.hessian(energy, x, sparse=True)
    assert H.colours == 3
    xs = np.linspace(-1.0, 1.0, n)
    want = L.toarray() + np.diag(12 * xs ** 2)
    np.testing.assert_allclose(sg.evaluate(H, {"x": xs}).toarray(), want, rtol=1e-14)


# -- symbolic values on a fixed pattern ------------------------------------------------------


def test_constructors_take_symbolic_data_and_the_gradient_has_its_shape():
    d = sg.var("d", shape=(A_ARR.nnz,))
    coo = A_ARR.tocoo()
    made = [sps.csr_array((d, A_ARR.indices, A_ARR.indptr), shape=(6, 5)),
            sps.csr_matrix((d, A_ARR.indices, A_ARR.indptr)),
            sps.coo_array((d, (coo.row, coo.col)), shape=(6, 5)),
            sps.csc_array(sps.coo_array((d, (coo.row, coo.col)), shape=(6, 5)))]
    f = [sg.sum(sg.sin(M @ X0)) for M in made]
    at = {"d": A_ARR.data}
    for k, fk in enumerate(f):
        g = sg.grad(fk, d)
        assert g.shape == d.shape
        np.testing.assert_allclose(sg.evaluate(fk, at), np.sum(np.sin(A_ARR @ X0)),
                                   rtol=1e-13, err_msg=str(k))
        sg.check_grads(fk, d, at, order=2)


def test_coo_duplicates_add_up_and_conversions_keep_the_matrix():
    rows, cols = np.array([0, 2, 0, 1, 0]), np.array([1, 0, 1, 2, 0])
    d = sg.var("d", shape=(5,))
    A = sps.coo_array((d, (rows, cols)), shape=(3, 3))
    values = np.arange(1.0, 6.0)
    want = scipy.sparse.coo_array((values, (rows, cols)), shape=(3, 3)).toarray()
    for B in (A, A.tocsr(), A.tocsc(), A.tocsr().tocoo(), A.T.T, sps.csr_array(A)):
        np.testing.assert_array_equal(sg.evaluate(B.toarray(), {"d": values}), want)
    assert A.tocsr().nnz == 4  # SciPy's canonical form: duplicates added
    assert A.tocsr().indices.tolist() == scipy.sparse.csr_array(want).indices.tolist()


def test_diags_kron_and_blocks_are_scipys():
    a, b = sg.var("a", shape=(4,)), sg.var("b", shape=(3,))
    at = {"a": RNG.standard_normal(4), "b": RNG.standard_normal(3)}
    va, vb = at["a"], at["b"]
    cases = [
        (sps.diags([a, b, b], [0, 1, -1]), scipy.sparse.diags([va, vb, vb], [0, 1, -1])),
        (sps.diags(a, 2, shape=(3, 6)), scipy.sparse.diags(va, 2, shape=(3, 6))),
        (sps.diags_array([b[:1], a], offsets=[-1, 0]),
         scipy.sparse.diags_array([vb[:1], va], offsets=[-1, 0])),
        (sps.kron(sps.diags(a), A_ARR), scipy.sparse.kron(scipy.sparse.diags(va), A_ARR)),
        (sps.kron(A_MAT, sps.diags_array(b)), scipy.sparse.kron(A_MAT, scipy.sparse.diags(vb))),
        (sps.bmat([[sps.diags(a), None], [A_ARR[:, :4], sps.eye(6)]]),
         scipy.sparse.bmat([[scipy.sparse.diags(va), None], [A_ARR[:, :4], scipy.sparse.eye(6)]])),
        (sps.hstack([A_ARR, sps.diags(sg.concatenate([a, b[:2]]))]),
         scipy.sparse.hstack([A_ARR, scipy.sparse.diags(np.r_[va, vb[:2]])])),
        (sps.vstack([A_ARR.T, sps.diags(b[:2], 0, shape=(2, 6))]),
         scipy.sparse.vstack([A_ARR.T, scipy.sparse.diags(vb[:2], 0, shape=(2, 6))])),
        (sps.block_diag([sps.diags(a), A_ARR]), scipy.sparse.block_diag([np.diag(va), A_ARR])),
        (sps.identity(3) * 2.0 + sps.diags(b), 2 * scipy.sparse.identity(3)
         + scipy.sparse.diags(vb)),
    ]
    for got, want in cases:
        assert got.shape == want.shape
        np.testing.assert_allclose(sg.evaluate(got.toarray(), at, unknown="ignore"),
                                   want.toarray(), rtol=1e-13, atol=1e-15)
    f = sg.sum(sg.sin(cases[3][0] @ np.ones(20)))
    sg.check_grads(f, a, at, order=2)


def test_products_and_sums_of_symbolic_sparse_matrices():
    d = sg.var("d", shape=(A_ARR.nnz,))
    A = sps.csr_array((d, A_ARR.indices, A_ARR.indptr), shape=(6, 5))
    B = scipy.sparse.random(5, 4, density=0.5, format="csc", random_state=RNG)
    at = {"d": A_ARR.data}
    dense = A_ARR.toarray()
    C = scipy.sparse.random(6, 5, density=0.5, format="coo", random_state=RNG)
    checks = [(A @ B, dense @ B.toarray()), (A.T @ A, dense.T @ dense), (A + A, 2 * dense),
              (A - A_ARR * 0.5, 0.5 * dense), (A.multiply(A_ARR), dense * dense),
              (A.multiply(C), dense * C.toarray()), (A + C, dense + C.toarray()),
              (A * A, dense * dense), (sps.csr_matrix(A) * B, dense @ B.toarray())]
    for got, want in checks:
        np.testing.assert_allclose(sg.evaluate(got.toarray(), at), want, rtol=1e-13,
                                   atol=1e-15)
    f = sg.sum(sg.sin((A.T @ A) @ np.ones(5)))
    sg.check_grads(f, d, at, order=2)


def test_the_stored_values_get_the_gradient_and_the_pattern_never_changes():
    d = sg.var("d", shape=(A_ARR.nnz,))
    A = sps.csr_array((d, A_ARR.indices, A_ARR.indptr), shape=(6, 5))
    f = sg.sum((A @ X0) ** 2)
    g = sg.evaluate(sg.grad(f, d), {"d": A_ARR.data})
    rows = np.repeat(np.arange(6), np.diff(A_ARR.indptr))
    want = 2 * (A_ARR @ X0)[rows] * X0[A_ARR.indices]
    np.testing.assert_allclose(g, want, rtol=1e-13)


# -- solvers ----------------------------------------------------------------------------------


def _system(n=8, seed=5):
    rng = np.random.default_rng(seed)
    a = scipy.sparse.random(n, n, density=0.3, random_state=rng) + n * scipy.sparse.eye(n)
    return scipy.sparse.csr_array(a), rng.standard_normal(n)


def test_spsolve_and_its_gradients_equal_the_dense_solve(x64):
    A0, b0 = _system()
    d, b = sg.var("d", shape=(A0.nnz,)), sg.var("b", shape=(8,))
    A = sps.csr_array((d, A0.indices, A0.indptr), shape=A0.shape)
    x = spl.spsolve(A, b)
    f = sg.sum(sg.sin(x) * np.arange(8.0))
    at = {"d": A0.data, "b": b0}
    np.testing.assert_allclose(sg.evaluate(x, at), scipy.sparse.linalg.spsolve(A0, b0),
                               rtol=1e-13)
    rows = np.repeat(np.arange(8), np.diff(A0.indptr))

    def ref(data, rhs):
        dense = jnp.zeros((8, 8)).at[rows, A0.indices].add(data)
        return jnp.sum(jnp.sin(jnp.linalg.solve(dense, rhs)) * jnp.arange(8.0))

    for got, want in zip(sg.evaluate(list(sg.grad(f, [d, b])), at),
                         jax.grad(ref, (0, 1))(A0.data, b0)):
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-13)
    sg.check_grads(f, [d, b], at, order=3)


def test_spsolve_with_several_right_hand_sides_and_splu_solves_many():
    A0, _ = _system()
    B0 = RNG.standard_normal((8, 3))
    d = sg.var("d", shape=(A0.nnz,))
    A = sps.csr_matrix((d, A0.indices, A0.indptr), shape=A0.shape)
    at = {"d": A0.data}
    np.testing.assert_allclose(sg.evaluate(spl.spsolve(A, B0), at),
                               scipy.sparse.linalg.spsolve(A0.tocsc(), B0), rtol=1e-12)
    column = spl.spsolve(A, B0[:, :1])
    assert column.shape == (8,)  # SciPy's: a (n, 1) right-hand side gives a vector
    lu, lu0 = spl.splu(A), scipy.sparse.linalg.splu(A0.tocsc())
    for trans in ("N", "T"):
        np.testing.assert_allclose(sg.evaluate(lu.solve(B0, trans), at),
                                   lu0.solve(B0, trans), rtol=1e-12)
    solve = spl.factorized(A)
    f = sg.sum(solve(B0[:, 0]) * lu.solve(B0[:, 1], "T"))
    sg.check_grads(f, d, at, order=2)
    with pytest.raises(UnsupportedError, match="pivoting"):
        lu.L  # noqa: B018


@pytest.mark.parametrize("method", ["cg", "gmres", "bicgstab"])
def test_iterative_solvers_return_x_and_info_and_their_gradient(method, x64):
    A0, b0 = _system()
    A0 = scipy.sparse.csr_array(A0 + A0.T) if method == "cg" else A0
    d, b = sg.var("d", shape=(A0.nnz,)), sg.var("b", shape=(8,))
    A = sps.csr_array((d, A0.indices, A0.indptr), shape=A0.shape)
    x, info = getattr(spl, method)(A, b, rtol=1e-13, maxiter=500)
    at = {"d": A0.data, "b": b0}
    got_x, got_info = sg.evaluate([x, info], at)
    want_x, want_info = getattr(scipy.sparse.linalg, method)(A0, b0, rtol=1e-13, maxiter=500)
    assert got_info == want_info == 0
    np.testing.assert_allclose(got_x, want_x, rtol=1e-10)
    rows = np.repeat(np.arange(8), np.diff(A0.indptr))

    def ref(data, rhs):
        dense = jnp.zeros((8, 8)).at[rows, A0.indices].add(data)
        return jnp.sum(jnp.linalg.solve(dense, rhs) ** 2)

    f = sg.sum(x ** 2)
    for got, want in zip(sg.evaluate(list(sg.grad(f, [d, b])), at),
                         jax.grad(ref, (0, 1))(A0.data, b0)):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


def test_spsolve_triangular_and_norm_are_scipys():
    A0, b0 = _system()
    d = sg.var("d", shape=(A0.nnz,))
    A = sps.csr_array((d, A0.indices, A0.indptr), shape=A0.shape)
    at = {"d": A0.data}
    for lower in (True, False):
        tri = scipy.sparse.csr_array(scipy.sparse.tril(A0) if lower else scipy.sparse.triu(A0))
        for unit in (False, True):
            got = sg.evaluate(spl.spsolve_triangular(A, b0, lower=lower, unit_diagonal=unit), at)
            want = scipy.sparse.linalg.spsolve_triangular(tri, b0, lower=lower,
                                                          unit_diagonal=unit)
            np.testing.assert_allclose(got, want, rtol=1e-12)  # only the triangle is read
    for ord in (None, 1, np.inf):
        np.testing.assert_allclose(sg.evaluate(spl.norm(A, ord), at),
                                   scipy.sparse.linalg.norm(A0, ord), rtol=1e-13)


# -- the 2-D Poisson inverse problem ----------------------------------------------------------


def poisson(n: int):
    """``(D, P, h)``: the edge-node incidence of an ``n x n`` grid with u = 0 outside, and the
    averaging of node conductivities onto the edges; ``A(s) = D^T diag(P s) D / h^2``."""
    h = 1.0 / (n + 1)
    idx = np.arange(n * n).reshape(n, n)
    ends = []
    for a, b in ((np.pad(idx, ((0, 0), (1, 0)), constant_values=-1),
                  np.pad(idx, ((0, 0), (0, 1)), constant_values=-1)),
                 (np.pad(idx, ((1, 0), (0, 0)), constant_values=-1),
                  np.pad(idx, ((0, 1), (0, 0)), constant_values=-1))):
        ends.append(np.stack([a.ravel(), b.ravel()], 1))
    ends = np.concatenate(ends)
    e = np.repeat(np.arange(len(ends)), 2)
    nodes, sign = ends.ravel(), np.tile([1.0, -1.0], len(ends))
    inside = nodes >= 0
    D = scipy.sparse.csr_array((sign[inside], (e[inside], nodes[inside])),
                               shape=(len(ends), n * n))
    count = np.bincount(e[inside], minlength=len(ends))
    P = scipy.sparse.csr_array((1.0 / count[e[inside]], (e[inside], nodes[inside])),
                               shape=D.shape)
    return D, P, h


def test_poisson_inverse_problem_gradient_against_finite_differences():
    n = 5
    D, P, h = poisson(n)
    f = np.ones(n * n)
    true = 1.0 + 0.5 * np.sin(np.arange(n * n))
    K = (D.T @ scipy.sparse.diags(P @ true) @ D) / h**2
    observed = scipy.sparse.linalg.spsolve(K.tocsc(), f)

    def misfit(s):
        A = D.T @ sps.diags(P @ s) @ D / h**2
        u = spl.spsolve(A, f)
        return 0.5 * np.sum((u - observed) ** 2)

    s0 = np.ones(n * n) + 0.1 * np.cos(np.arange(n * n))
    value, grad = sg.value_and_grad(misfit)(s0)

    def plain(s):
        A = (D.T @ scipy.sparse.diags(P @ s) @ D) / h**2
        return 0.5 * np.sum((scipy.sparse.linalg.spsolve(A.tocsc(), f) - observed) ** 2)

    np.testing.assert_allclose(value, plain(s0), rtol=1e-12)
    np.testing.assert_allclose(grad, central(plain, s0), rtol=1e-6, atol=1e-12)
    hvp = sg.hvp(misfit, (s0,), (np.ones(n * n),))
    fd = (central(plain, s0 + 1e-4) - central(plain, s0 - 1e-4)) / 2e-4
    np.testing.assert_allclose(hvp, fd, rtol=1e-4, atol=1e-10)


def test_implicit_time_steps_in_a_scan_emit_one_loop_with_the_pattern_held_once():
    """Implicit Euler for the heat equation, ``u <- (I + dt L)^-1 u`` in ``sg.scan``: the
    step's solve is in the loop body, its pattern module data of the loop's module."""
    n, steps = 20, 30
    L = scipy.sparse.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    M = scipy.sparse.csr_array(scipy.sparse.eye(n) + 0.1 * L)

    def heat(u0):
        def step(u, _):
            u = spl.spsolve(M, u)
            return u, u @ u
        return np.sum(sg.scan(step, u0, None, length=steps)[1])

    def plain(u):
        total = 0.0
        for _ in range(steps):
            u = scipy.sparse.linalg.spsolve(M.tocsc(), u)
            total += u @ u
        return total

    u0 = np.sin(np.linspace(0.0, 3.0, n))
    grad = sg.grad(heat)
    np.testing.assert_allclose(grad(u0), central(plain, u0), rtol=1e-7)
    assert "for " in grad.source and grad.source.count("'csr', (20, 20)") == 1


# -- scale -----------------------------------------------------------------------------------


def test_a_million_by_million_tridiagonal_product_and_gradient_in_bounded_memory():
    """Its dense form would be 8 TB; values, gradient and their work stay O(nnz) (the
    matrix's 3 * 10^6 values and indices take about 40 MB)."""
    n = 10**6
    A = scipy.sparse.diags([np.full(n - 1, -1.0), np.full(n, 2.0), np.full(n - 1, -1.0)],
                           [-1, 0, 1], format="csr")
    x0 = np.linspace(0.0, 1.0, n)
    vg = sg.value_and_grad(lambda x: np.sum((A @ x) ** 2))
    vg(x0)  # traced and compiled (its source holds the pattern as base64 data)
    tracemalloc.start()
    try:
        value, grad = vg(x0)
        call_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        x = sg.var("x", shape=(n,))
        y = sg.sum((A @ x) ** 2)
        ev_value, ev_grad = sg.evaluate([y, sg.grad(y, x)], {"x": x0})
        evaluate_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    ax = A @ x0
    np.testing.assert_allclose(grad, 2 * (A.T @ ax), rtol=1e-12)
    np.testing.assert_allclose(ev_grad, grad, rtol=1e-12)
    assert value == pytest.approx(np.sum(ax**2), rel=1e-12) and ev_value == value
    assert call_peak < 300 * 2**20 and evaluate_peak < 400 * 2**20


# -- errors ----------------------------------------------------------------------------------


def test_what_cannot_be_traced_says_what_to_use():
    x = sg.var("x", shape=(5,))
    with pytest.raises(UnsupportedError, match=r"csr_array\(A\)\.multiply\(x\)"):
        A_ARR.multiply(x)
    with pytest.raises(UnsupportedError, match="symgrad.scipy.sparse.linalg.spsolve"):
        scipy.sparse.linalg.spsolve(A_ARR[:5].tocsc(), x)
    with pytest.raises(UnsupportedError, match="fixed"):
        sps.csr_array((np.ones(2), x[:2], [0, 1, 2]), shape=(2, 5))
    with pytest.raises(UnsupportedError, match="LinearOperator"):
        spl.cg(scipy.sparse.linalg.aslinearoperator(A_ARR[:5]), x)
    with pytest.raises(UnsupportedError, match="M= and callback="):
        spl.cg(A_ARR[:5], x, M=A_ARR[:5])
    with pytest.raises(ShapeError, match="square"):
        spl.spsolve(A_ARR, np.ones(6))
    with pytest.raises(UnsupportedError, match="sparse right-hand side"):
        spl.spsolve(A_ARR[:5], A_ARR[:5])
    with pytest.raises(UnsupportedError, match="of a sparse matrix is not supported"):
        np.exp(sg.const(A_ARR))
    with pytest.raises(UnsupportedError, match="nonzero scalar"):
        sg.const(A_ARR) + 1.0
    with pytest.raises(ShapeError, match="do not multiply"):
        A_ARR @ sg.var("z", shape=(6,))


# -- the guide -------------------------------------------------------------------------------


def test_the_sparse_guide_examples_run():
    """Every Python block of the sparse guide runs, and says what the page says."""
    import contextlib
    import io

    from tests.support import docs

    blocks = docs.blocks("guide/sparse")
    assert len(blocks) == 4 and all(b.run_by for b in blocks)
    spaces = []
    for block in blocks:
        namespace: dict = {}
        with contextlib.redirect_stdout(io.StringIO()) as out:
            exec(compile(block.code, "docs/guide/sparse.md", "exec"), namespace)  # our docs
        spaces.append((namespace, out.getvalue()))
    first = spaces[0][0]
    xs = np.linspace(0, 1, 1000)
    np.testing.assert_allclose(first["value"], first["L"] @ xs - np.sin(xs), rtol=1e-12)
    assert "_sg_sparse_matmul" in first["source"]
    assert first["source"].count("(1000, 1000)") == 1  # the pattern, held once: no dense L
    u = np.array([1.0, 2.0, 2.0, 1.0])
    assert spaces[2][1].split("\n")[0] == str(0.5 * np.diff(np.r_[0.0, u, 0.0]) ** 2)
    poisson_ns = spaces[3][0]
    assert poisson_ns["grad"].shape == (poisson_ns["D"].shape[0],)
    assert np.all(np.isfinite(poisson_ns["grad"])) and poisson_ns["value"] > 0
