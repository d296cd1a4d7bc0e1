"""The sparse ops on (data, pattern): patterns checked and normalised, kernels against SciPy
and dense NumPy, and emitted code that holds the pattern once as module data (the solves are
in ``test_sparse_solve.py``; the registry-driven tests check gradients, forward mode and every
table)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

import symgrad as sg
from symgrad.errors import ArgumentError, ShapeError
from symgrad.ir import sparse_pattern as P
from symgrad.ops import F
from symgrad.ops import sparse as S
from tests.support.sparse_matrices import spd as _spd


def _random(rng, m, n, kind="csr", density=0.4):
    """A SciPy matrix and its pattern (coo: unsorted, with a duplicate entry)."""
    a = scipy.sparse.random(m, n, density=density, format="coo", random_state=rng)
    rows, cols, data = a.row, a.col, a.data
    if kind == "coo":
        order = rng.permutation(rows.size)
        rows, cols, data = (np.r_[v[order], v[order][:1]] for v in (rows, cols, data))
        a = scipy.sparse.coo_array((data, (rows, cols)), shape=(m, n))
        return a, P.make_pattern("coo", (m, n), rows, cols), data
    a = scipy.sparse.csr_array(a) if kind == "csr" else scipy.sparse.csc_array(a)
    return a, P.make_pattern(kind, (m, n), a.indptr, a.indices), a.data


# -- patterns -------------------------------------------------------------------------------


def test_a_pattern_is_builtins_with_index_bytes_of_the_smallest_dtype():
    p = P.make_pattern("csr", (2, 3), np.array([0, 2, 3], dtype=np.int64), [0, 2, 1])
    kind, shape, dtype, first, second = p
    assert (kind, shape, dtype) == ("csr", (2, 3), "int32")
    assert type(first) is bytes and np.frombuffer(second, "<i4").tolist() == [0, 2, 1]
    assert hash(p) == hash(P.make_pattern("csr", (2, 3), [0, 2, 3], [0, 2, 1]))
    assert P.nnz(p) == 3 and P.describe(p) == "csr 2x3, 3 stored"
    rows, cols = P.coordinates(p)
    assert rows.tolist() == [0, 0, 1] and cols.tolist() == [0, 2, 1]
    t = P.transposed(p)
    assert t[:2] == ("csc", (3, 2)) and t[3:] == p[3:]


@pytest.mark.parametrize("kind, first, second, match", [
    ("csr", [0, 3, 2], [0, 1], "decrease"),
    ("csr", [0, 1, 3], [0, 1], "from 0 to the 2 indices"),
    ("csr", [0, 1, 2], [0, 3], "outside 0..2"),
    ("coo", [0, 2], [0, 1], "outside 0..1"),
    ("coo", [0, 1], [0], "2 rows but 1 columns"),
    ("csc", [0, 1, 1, 2, 2], [0, 1], "must have 4 entries"),
])
def test_a_broken_pattern_is_refused(kind, first, second, match):
    with pytest.raises(ShapeError, match=match):
        P.make_pattern(kind, (2, 3), first, second)


def test_index_arrays_must_be_integers_and_formats_known():
    with pytest.raises(ArgumentError, match="1-D integers"):
        P.make_pattern("coo", (2, 2), [0.5], [1])
    with pytest.raises(ArgumentError, match="format must be one of"):
        P.make_pattern("dia", (2, 2), [0], [1])


def test_an_op_takes_only_a_pattern_make_pattern_builds():
    d, x = sg.var("d", shape=(1,)), sg.var("x", shape=(2,))
    for bad in [("csr", (2, 2), "int32", [0], [1]), "pattern", ("csr", (2, 2), "int32",
                b"\x00\x00\x00\x00", b"\x00\x00\x00\x00"),
                ("csr", (2, 2), "int64", *P.make_pattern("csr", (2, 2), [0, 1, 1], [1])[3:])]:
        with pytest.raises(ArgumentError, match="pattern"):
            F.sparse_matmul(d, x, pattern=bad)


# -- kernels against SciPy ------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["csr", "csc", "coo"])
def test_matmul_is_scipys_product_along_any_axis(kind, rng):
    a, p, data = _random(rng, 5, 4, kind)
    dense = a.toarray()
    x = rng.standard_normal((3, 4, 2))
    got = S._sg_sparse_matmul(data, x, p, False, -2)
    np.testing.assert_allclose(got, np.einsum("ij,bjk->bik", dense, x), rtol=1e-13)
    y = rng.standard_normal((2, 5))
    np.testing.assert_allclose(S._sg_sparse_matmul(data, y, p, True, -1), y @ dense,
                               rtol=1e-13)
    batch = rng.standard_normal((3, data.size))  # a matrix per row of data
    want = np.stack([S._sg_sparse_matrix(p, b).toarray() @ x[k, :, 0] for k, b in
                     enumerate(batch)])
    np.testing.assert_allclose(S._sg_sparse_matmul(batch, x[:, :, 0], p, False, -1), want,
                               rtol=1e-13)


@pytest.mark.parametrize("kind", ["csr", "csc", "coo"])
def test_sample_gather_and_scatter_against_dense(kind, rng):
    a, p, data = _random(rng, 5, 4, kind)
    rows, cols = P.coordinates(p)
    u, v = rng.standard_normal((2, 5, 3)), rng.standard_normal((4, 3))
    want = np.einsum("bpk,pk->bp", u[:, rows], v[cols])
    np.testing.assert_allclose(S._sg_sparse_sample(u, v, p, False, -2), want, rtol=1e-13)
    d = rng.standard_normal((2, 5, 4))
    np.testing.assert_array_equal(S._sg_sparse_gather(d, p), d[:, rows, cols])
    np.testing.assert_array_equal(S._sg_sparse_gather(d[:, :1], p), d[:, 0, cols])
    np.testing.assert_allclose(S._sg_sparse_scatter(data, p, (5, 4)), a.toarray(), rtol=1e-15)
    col_sums = S._sg_sparse_scatter(data, p, (1, 4))
    np.testing.assert_allclose(col_sums, a.toarray().sum(axis=0, keepdims=True), rtol=1e-13)


def test_dtypes_follow_numpy(rng):
    a, p, data = _random(rng, 4, 4)
    x32 = rng.standard_normal(4).astype(np.float32)
    assert S._sg_sparse_matmul(data.astype(np.float32), x32, p, False, -1).dtype == np.float32
    assert S._sg_sparse_matmul(np.arange(data.size), x32, p, False, -1).dtype == np.float64
    d = sg.var("d", shape=(data.size,), dtype="float32")
    x = sg.var("x", shape=(4,), dtype="float32")
    assert F.sparse_matmul(d, x, pattern=p).dtype == "float32"
    assert F.sparse_solve(d, x, pattern=p).dtype == "float32"
    with pytest.raises(ShapeError, match="boolean"):
        F.sparse_matmul(sg.var("b", shape=(data.size,), dtype="bool"),
                        sg.var("c", shape=(4,), dtype="bool"), pattern=p)


def test_shape_rules_name_the_mismatch(rng):
    _, p, data = _random(rng, 5, 4)
    d = sg.var("d", shape=(data.size,))
    x5, x4 = sg.var("x5", shape=(5,)), sg.var("x4", shape=(4,))
    with pytest.raises(ShapeError, match="5x4 matrix times an operand of shape"):
        F.sparse_matmul(d, x5, pattern=p)
    with pytest.raises(ShapeError, match="stored entries"):
        F.sparse_matmul(sg.var("e", shape=(data.size + 1,)), x4, pattern=p)
    with pytest.raises(ShapeError, match="square"):
        F.sparse_solve(d, x5, pattern=p)
    with pytest.raises(ShapeError, match="axis"):
        F.sparse_matmul(d, x4, pattern=p, axis=-2)


# -- emitted code ----------------------------------------------------------------------------


def test_emitted_code_holds_the_pattern_once_as_module_data(rng):
    a, p, data = _random(rng, 300, 200, density=0.05)
    d, x = sg.var("d", shape=(data.size,)), sg.var("x", shape=(200,))
    f = sg.sum(sg.sin(F.sparse_matmul(d, x, pattern=p)))
    outs = [f, *sg.grad(f, [d, x])]
    src = sg.to_source(outs)
    held = [ln for ln in src.splitlines() if ln.startswith("_c") and "'csr', (300, 200)" in ln]
    assert len(held) == 1 and "_sg_bytes(b'" in held[0]  # one copy, as base64 bytes
    name = held[0].split(" = ")[0]
    assert src.count(name) == 4  # held once, read by the three sparse lines
    assert "(300, 200)" not in src.replace(held[0], "")  # never a dense matrix
    fn = sg.compile(outs)
    at = {"d": data, "x": rng.standard_normal(200)}
    for got, want in zip(fn(at["d"], at["x"]), sg.evaluate(outs, at)):
        np.testing.assert_array_equal(got, want)


def test_text_forms_describe_the_pattern_never_write_it(rng):
    _, p, data = _random(rng, 30, 20)
    d, x = sg.var("d", shape=(data.size,)), sg.var("x", shape=(20,))
    y = F.sparse_matmul(d, x, pattern=p, transpose=False)
    g = sg.grad(sg.sum(y * y), d)
    for text in (str(y), repr(y), sg.listing([y, g]), str(g)):
        assert "\\x" not in text and f"csr 30x20, {data.size} stored" in text
    assert len(sg.to_dot([y, g])) < 20_000
    assert sg.latex(y) == r"\operatorname{sparse\_matmul}\left(d, x\right)"


def _solve_loss(rng):
    _, p, data = _spd(rng, 6)
    d, b = sg.var("d", shape=(data.size,)), sg.var("b", shape=(6,))
    x = F.sparse_solve(d, b, pattern=p)
    y = F.sparse_matmul(d, sg.sin(x), pattern=p, transpose=True)
    f = sg.sum(y * y)
    return [f, *sg.grad(f, [d, b])], {"d": data, "b": rng.standard_normal(6)}


def test_the_numba_target_runs_the_sparse_calls_in_its_driver(rng):
    pytest.importorskip("numba")
    outs, at = _solve_loss(rng)
    fn = sg.compile(outs, inputs=["d", "b"], backend="numba")
    for got, want in zip(fn(at["d"], at["b"]), sg.evaluate(outs, at)):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    assert {"sparse_solve", "sparse_matmul"} <= set(fn.numpy_ops)


@pytest.mark.parametrize("backend", ["jax", "torch", "array_api"])
def test_array_targets_write_products_and_refuse_solves_by_name(backend, rng, x64):
    pytest.importorskip("array_api_compat")
    pytest.importorskip("torch" if backend == "torch" else "jax")
    _, p, data = _random(rng, 40, 30, density=0.1)
    d, x = sg.var("d", shape=(data.size,)), sg.var("x", shape=(30,))
    f = sg.sum(sg.tanh(F.sparse_matmul(d, x, pattern=p)) ** 2)
    outs = [f, *sg.grad(f, [d, x])]
    at = {"d": data, "x": rng.standard_normal(30)}
    fn = sg.compile(outs, inputs=["d", "x"], backend=backend)
    for got, want in zip(fn(at["d"], at["x"]), sg.evaluate(outs, at)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-14)
    solve_outs, _ = _solve_loss(rng)
    with pytest.raises(sg.BackendError, match="sparse_solve.*no sparse LU.*backend='numpy'"):
        sg.to_source(solve_outs, backend=backend)
