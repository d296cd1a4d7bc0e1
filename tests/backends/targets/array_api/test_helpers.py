"""The array API helpers on ``array-api-strict`` (the standard and nothing more): each gives
NumPy's numbers (indexing by keys explicit over every axis, as the emitter writes them, with
integer arrays, reversed slices and ``None``; scatters whose duplicate positions accumulate;
stable log-sum-exp and softmax; einsum by broadcasting; ``dot``, ``take``, ``cbrt``,
``logaddexp2``, ``fmod``, ``round``, bands, ``solve`` with broadcast stacks, ``lstsq``), and
no helper writes into an array it was given."""

from __future__ import annotations

import numpy as np
import pytest

from symgrad.backends.targets.array_api import helpers as H

xp = pytest.importorskip("array_api_strict")

R = np.random.default_rng(37)
X = R.standard_normal((4, 5, 3))


def _np(a):
    return np.asarray(a) if not isinstance(a, tuple) else tuple(np.asarray(v) for v in a)


S = slice(None)
KEYS = [(1, S, S), (slice(None, None, -1), 2, S), (None, slice(1, 3), S, S),
        (np.array([0, 3, 3]), S, np.array([2, 0, 1])), (S, np.array([[1, 4], [-1, 0]]), S),
        (np.array([-1, 0]), np.array([1, 2]), S), (S, S, np.array([0, 0, 2]))]


@pytest.mark.parametrize("key", KEYS, ids=range(len(KEYS)))
def test_index_is_numpys(key):
    strict_key = tuple(xp.asarray(k) if isinstance(k, np.ndarray) else k for k in key)
    got = H._sg_xp_index(xp, xp.asarray(X), strict_key)
    np.testing.assert_array_equal(_np(got), X[key])


def test_scatter_adds_duplicates_and_leaves_its_inputs_alone():
    g1, g2 = R.standard_normal((2, 3)), R.standard_normal((2, 2))
    a1, a2 = xp.asarray(g1), xp.asarray(g2)
    key2 = (xp.asarray([1, 1]),)
    got = H._sg_xp_scatter(xp, (4,), 1, [(a1, (slice(0, 3),)), (a2, key2)])
    want = np.zeros((2, 4))
    want[:, 0:3] += g1
    np.add.at(want, (slice(None), [1, 1]), g2)
    np.testing.assert_allclose(_np(got), want, rtol=1e-15)
    np.testing.assert_array_equal(_np(a1), g1)
    np.testing.assert_array_equal(_np(a2), g2)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # log(0) of the -inf row
def test_reductions_are_stable_where_the_naive_formula_overflows():
    scipy_special = pytest.importorskip("scipy.special")
    x = np.array([[1000.0, 1000.0, -5.0], [-np.inf, -np.inf, -np.inf], [0.0, 1.0, 2.0]])
    got = _np(H._sg_xp_logsumexp(xp, xp.asarray(x), 1, False))
    with np.errstate(divide="ignore", invalid="ignore"):
        want = scipy_special.logsumexp(x, axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-15)
    finite = x[[0, 2]]
    np.testing.assert_allclose(_np(H._sg_xp_softmax(xp, xp.asarray(finite), -1)),
                               scipy_special.softmax(finite, axis=-1), rtol=1e-15)
    np.testing.assert_allclose(_np(H._sg_xp_log_softmax(xp, xp.asarray(finite), -1)),
                               scipy_special.log_softmax(finite, axis=-1), rtol=1e-14)


@pytest.mark.parametrize("spec, shapes", [("ij,jk->ik", [(3, 4), (4, 2)]),
                                          ("ii->i", [(3, 3)]), ("bij,bj->bi", [(2, 3, 4), (2, 4)]),
                                          ("i,j->ji", [(3,), (2,)]), ("iij->j", [(3, 3, 2)])])
def test_einsum_by_broadcasting_is_numpys(spec, shapes):
    ops = [R.standard_normal(s) for s in shapes]
    got = H._sg_xp_einsum(xp, spec, *[xp.asarray(o) for o in ops])
    np.testing.assert_allclose(_np(got), np.einsum(spec, *ops), rtol=1e-13, atol=1e-14)


def test_elementwise_helpers_are_numpys():
    a = np.array([-7.5, -1.0, 0.0, 2.25, 8.0, 1e-300])
    b = np.array([2.0, -3.0, 1.5, 2.25, -3.0, 7.0])
    A, B = xp.asarray(a), xp.asarray(b)
    np.testing.assert_allclose(_np(H._sg_xp_cbrt(xp, A)), np.cbrt(a), rtol=1e-13)
    np.testing.assert_allclose(_np(H._sg_xp_logaddexp2(xp, A, B)), np.logaddexp2(a, b),
                               rtol=1e-15)
    np.testing.assert_array_equal(_np(H._sg_xp_fmod(xp, A, B)), np.fmod(a, b))
    v = np.array([0.125, -2.675, 1234.5678, 2.5, -0.5])
    for d in (0, 2, -2):
        np.testing.assert_allclose(_np(H._sg_xp_round(xp, xp.asarray(v), d)), np.round(v, d),
                                   rtol=1e-15)


def test_products_takes_and_bands_are_numpys():
    a, b = R.standard_normal((3, 4)), R.standard_normal((2, 4, 5))
    np.testing.assert_allclose(_np(H._sg_xp_dot(xp, xp.asarray(a), xp.asarray(b))),
                               np.dot(a, b), rtol=1e-13)
    np.testing.assert_allclose(_np(H._sg_xp_outer(xp, xp.asarray(a[0]), xp.asarray(a[1]))),
                               np.multiply.outer(a[0], a[1]), rtol=1e-15)
    idx = np.array([[2, -1], [0, 0]])
    np.testing.assert_array_equal(_np(H._sg_xp_take(xp, xp.asarray(X), xp.asarray(idx), 1)),
                                  np.take(X, idx, axis=1))
    np.testing.assert_array_equal(_np(H._sg_xp_take(xp, xp.asarray(X), xp.asarray(idx), None)),
                                  np.take(X, idx))
    m = R.standard_normal((2, 4, 4))
    np.testing.assert_array_equal(_np(H._sg_xp_band(xp, xp.asarray(m), -1, 2, 1.0)),
                                  np.triu(np.tril(m, 2), -1))
    np.testing.assert_array_equal(_np(H._sg_xp_sym(xp, xp.asarray(m), "L")),
                                  np.tril(m) + np.swapaxes(np.tril(m, -1), -1, -2))


def test_linear_algebra_helpers_are_numpys():
    a = R.standard_normal((2, 1, 3, 3)) + 3 * np.eye(3)
    b = R.standard_normal((4, 3, 2))
    np.testing.assert_allclose(_np(H._sg_xp_solve(xp, xp.asarray(a), xp.asarray(b))),
                               np.linalg.solve(a, b), rtol=1e-12)
    c = R.standard_normal((6, 3))
    c[:, 2] = c[:, 0]  # rank deficient
    y = R.standard_normal(6)
    got = H._sg_xp_lstsq(xp, xp.asarray(c), xp.asarray(y), None)
    want = np.linalg.lstsq(c, y, rcond=None)
    np.testing.assert_allclose(_np(got[0]), want[0], rtol=1e-10, atol=1e-12)
    assert int(_np(got[2])) == want[2] == 2
    np.testing.assert_allclose(_np(got[3]), want[3], rtol=1e-12)
