"""Colourings and sparse Jacobians and Hessians (the patterns they start from are tested in
``test_sparsity.py``).

* sparse results equal the dense ones (same float64 values up to summation order);
* colourings are valid, checked by brute force on small graphs, and reach the known optimum
  on banded, arrow-head and block-diagonal families;
* the emitted sparse source, ``scipy_functions(hess="sparse")`` with ``trust-constr``, the
  automatic choice of ``sg.hessian``, and the budgets.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import symgrad as sg
from symgrad.errors import LimitError
from symgrad.ops import structure
from symgrad.transforms import sparsity
from symgrad.transforms.colouring import column_colouring, recovery, seed_rows, star_colouring
from symgrad.transforms.sparsity import Pattern
from tests.support.sparse_close import sparse_close

scipy = pytest.importorskip("scipy")


# -- colourings -----------------------------------------------------------------------------


def _random_symmetric(rng, n, density):
    a = rng.random((n, n)) < density
    a = a | a.T | np.eye(n, dtype=bool)
    rows, cols = np.nonzero(a)
    return Pattern.from_pairs((n, n), rows, cols)


def _is_distance1(pattern, colour):
    return all(len(set(colour[pattern.row(i)].tolist())) == pattern.row(i).size
               for i in range(pattern.shape[0]))


def _is_star(pattern, colour):
    """Proper, and every path on four vertices (a-b-c-d) uses at least three colours."""
    n = pattern.shape[0]
    adj = [set(pattern.row(i).tolist()) - {i} for i in range(n)]
    if any(colour[v] == colour[w] for v in range(n) for w in adj[v]):
        return False
    for b in range(n):
        for c in adj[b]:
            for a in adj[b] - {c}:
                for d in adj[c] - {a, b}:
                    if colour[a] == colour[c] and colour[b] == colour[d]:
                        return False
    return True


@pytest.mark.parametrize("seed", range(30))
def test_colourings_are_valid_by_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 14))
    p = _random_symmetric(rng, n, float(rng.uniform(0.05, 0.5)))
    star, d2 = star_colouring(p), column_colouring(p)
    assert _is_star(p, star) and _is_distance1(p, d2)
    a = rng.standard_normal((n, n)) * p.toarray()
    a = a + a.T
    for colour, symmetric in ((star, True), (d2, False)):
        compressed = seed_rows(colour) @ a  # (colours, n): row c is sum of columns of c
        np.testing.assert_array_equal(compressed.ravel()[recovery(p, colour, symmetric)],
                                      a[p.rows, p.cols])
    rect = Pattern.from_pairs((n + 2, n), rng.integers(0, n + 2, 3 * n),
                              rng.integers(0, n, 3 * n))
    assert _is_distance1(rect, column_colouring(rect))


def test_a_colouring_that_does_not_fit_is_refused():
    p = _random_symmetric(np.random.default_rng(1), 6, 0.6)
    with pytest.raises(ValueError, match="does not fit"):
        recovery(p, np.zeros(6, dtype=np.int64), False)


def _band(n, beta):
    pairs = [(i, j) for i in range(n) for j in range(max(0, i - beta), min(n, i + beta + 1))]
    r, c = np.array(pairs).T
    return Pattern.from_pairs((n, n), r, c)


def _arrow(n):
    pairs = {(i, i) for i in range(n)} | {(0, i) for i in range(n)} | {(i, 0) for i in range(n)}
    r, c = np.array(sorted(pairs)).T
    return Pattern.from_pairs((n, n), r, c)


def _blocks(n, k):
    pairs = [(i, j) for i in range(n) for j in range(n) if i // k == j // k]
    r, c = np.array(pairs).T
    return Pattern.from_pairs((n, n), r, c)


def _star_optimum(pattern):
    """The fewest colours of any star colouring (exhaustive: small graphs only)."""
    n = pattern.shape[0]
    for k in range(1, n + 1):
        for colour in itertools.product(range(k), repeat=n):
            if colour[0] == 0 and _is_star(pattern, np.array(colour)):
                return k
    return n


@pytest.mark.parametrize("beta", [1, 2, 3])
def test_band_colourings_reach_the_optimum(beta):
    """A band of half-bandwidth beta: each row has 2 beta + 1 entries, so a distance-2
    colouring needs 2 beta + 1 colours (and the cyclic one has that many); greedy finds it.
    Star colourings need as many for long bands (exhaustive search at n = 9)."""
    p = _band(200, beta)
    assert column_colouring(p).max() + 1 == 2 * beta + 1
    assert star_colouring(p).max() + 1 == 2 * beta + 1
    if beta <= 2:
        assert _star_optimum(_band(9, beta)) == 2 * beta + 1


def test_arrow_head_and_block_colourings_reach_the_optimum():
    arrow = _arrow(300)
    assert star_colouring(arrow).max() + 1 == 2  # the hub, then every leaf
    assert column_colouring(arrow).max() + 1 == 300  # every column meets row 0
    assert _star_optimum(_arrow(6)) == 2
    blocks = _blocks(300, 5)
    assert star_colouring(blocks).max() + 1 == column_colouring(blocks).max() + 1 == 5


# -- sparse derivatives end to end ------------------------------------------------------------


def _rosenbrock(n):
    x = sg.var("x", shape=(n,))
    return sg.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2), x


def test_sparse_hessian_of_rosenbrock_matches_scipy(rng):
    from scipy.optimize import rosen_hess

    f, x = _rosenbrock(60)
    H = sg.hessian(f, x, sparse=True)
    assert (H.colours, H.method) == (3, "star") and H.nnz == 3 * 60 - 2
    point = rng.uniform(-1, 2, 60)
    np.testing.assert_allclose(sg.evaluate(H, {"x": point}).toarray(), rosen_hess(point),
                               rtol=1e-13, atol=1e-11)


def test_hessian_takes_the_sparse_path_by_itself_when_it_pays(rng):
    f, x = _rosenbrock(64)
    auto = sg.hessian(f, x)
    assert any(n.op == "index_add" and n.attrs["shape"] == (64 * 64,) for n in f.graph.nodes)
    dense = sg.hessian(f, x, sparse=False)
    at = {"x": rng.uniform(-1, 2, 64)}
    sparse_close(sg.evaluate(auto, at), sg.evaluate(dense, at))
    small, y = _rosenbrock(8)  # few variables: the one dense pass
    assert sg.hessian(small, y).data.role == "adjoint"
    full = sg.var("z", shape=(40,))  # a dense Hessian: colouring does not pay
    g = sg.sum(full) ** 2
    assert sg.hessian(g, full).data.role == "adjoint"


def test_sparse_jacobian_picks_rows_or_columns():
    x = sg.var("x", shape=(30,))
    dense_row = sg.concatenate([sg.sum(x)[None], x[1:] * x[:-1]])
    J = sg.jacobian(dense_row, x, sparse=True)
    assert J.method == "reverse" and J.colours <= 4
    dense_col = x * x[0]
    J2 = sg.jacobian(dense_col, x, sparse=True)
    assert J2.method == "forward" and J2.colours <= 3
    at = {"x": np.linspace(-1, 1, 30)}
    for sparse, f in ((J, dense_row), (J2, dense_col)):
        sparse_close(sg.evaluate(sparse, at), sg.evaluate(sg.jacobian(f, x, mode="reverse"), at))


def test_emitted_sparse_source_returns_data_and_the_pattern(rng):
    f, x = _rosenbrock(40)
    H = sg.hessian(f, x, sparse=True)
    src = sg.to_source(H, name="rosen_hess")
    assert "ROWS = " in src and "COLS = " in src and "SHAPE = (40, 40)" in src
    namespace: dict = {}
    exec(compile(src, "<sparse>", "exec"), namespace)  # the test's own generated text
    point = rng.uniform(-1, 2, 40)
    data = namespace["rosen_hess"](point)
    m = scipy.sparse.csr_matrix((data, (namespace["ROWS"], namespace["COLS"])),
                                shape=namespace["SHAPE"])
    sparse_close(m, sg.evaluate(sg.hessian(f, x, sparse=False), {"x": point}))
    fn = sg.compile(H)
    np.testing.assert_array_equal(fn(point), data)
    assert fn.shape == (40, 40) and np.array_equal(fn.rows, H.rows)


def test_trust_constr_with_the_sparse_hessian_solves_a_banded_problem():
    from scipy.optimize import minimize

    n = 200
    x = sg.var("x", shape=(n,))
    # a discretised 1-D boundary value problem: -u'' + u^3 = 1, u(0) = u(1) = 0
    h = 1.0 / (n + 1)
    u = sg.concatenate([sg.zeros(1), x, sg.zeros(1)])
    energy = sg.sum((u[1:] - u[:-1]) ** 2) / (2 * h) + h * sg.sum(x ** 4 / 4 - x)
    s = sg.scipy_functions(energy, x, hess="sparse")
    H = s.hess(np.zeros(n))
    assert scipy.sparse.issparse(H) and H.nnz == 3 * n - 2
    r = minimize(s.fun, np.zeros(n), jac=True, hess=s.hess, method="trust-constr",
                 options={"gtol": 1e-10, "xtol": 1e-14})
    assert r.success
    lap = (2 * r.x - np.r_[r.x[1:], 0] - np.r_[0, r.x[:-1]]) / h ** 2
    np.testing.assert_allclose(lap + r.x ** 3, 1.0, atol=1e-5)


def test_budgets_end_in_limit_errors_and_the_automatic_choice_falls_back(monkeypatch):
    x = sg.var("x", shape=(40,))
    f = sg.sum(sg.outer(x, x) ** 2)
    monkeypatch.setattr(structure, "PAIR_LIMIT", 100)
    with pytest.raises(LimitError, match="limit"):
        sg.hessian(f, x, sparse=True)
    assert sg.hessian(f, x).shape == (40, 40)  # the dense pass instead
    monkeypatch.setattr(sparsity, "NNZ_LIMIT", 10)
    with pytest.raises(LimitError):
        sg.jacobian_sparsity(sg.exp(x), x)


def test_sparse_derivatives_refuse_several_variables():
    a, b = sg.var("a", shape=(2,)), sg.var("b", shape=(2,))
    with pytest.raises(sg.DifferentiationError, match="one variable"):
        sg.hessian(sg.sum(a * b), [a, b], sparse=True)
    with pytest.raises(sg.DifferentiationError, match="one variable"):
        sg.jacobian(a * b, [a, b], sparse=True)


def test_docs_forward_mode_and_sparsity_example_runs():
    """The sparsity page's boundary value problem prints what it says."""
    import contextlib
    import io

    from tests.support import docs

    block = docs.block("guide/forward-and-sparsity", "trust-constr")
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(block, "docs/guide/forward-and-sparsity.md", "exec"), namespace)
    assert out.getvalue().split() == ["3", "1198", "True"]
    assert "1198 entries" in repr(namespace["H"]) and "3 colours" in repr(namespace["H"])
