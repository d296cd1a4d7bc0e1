"""NumPy's functions built from ops, with NumPy's keyword arguments: ``where=``, ``mean=``,
``keepdims``, ``ddof``, ``returned=``, ``select`` and ``trace`` offsets give NumPy's values
and differentiate as central finite differences say (``check_grads``); keywords that cannot
be honoured are refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
import symgrad.numpy as snp

R = np.random.default_rng(11)
A = R.standard_normal((3, 4))
MASK = np.array([[True, False, True, True], [True, True, False, True], [False, True, True, True]])


KEYWORD_CASES = {
    "mean_where": ("mean", (), {"axis": 1, "where": MASK}),
    "var_given_mean": ("var", (), {"axis": 1, "keepdims": True,
                                   "mean": np.mean(A, axis=1, keepdims=True)}),
    "std_ddof_keepdims": ("std", (), {"axis": 0, "ddof": 1, "keepdims": True}),
    "quantile_linear": ("quantile", ([0.25, 0.6],), {"axis": 1, "method": "linear"}),
    "percentile_keepdims": ("percentile", ([10.0, 90.0],), {"axis": 1, "keepdims": True}),
    "cov_bias": ("cov", (), {"bias": True}),
    "cov_columns_ddof": ("cov", (), {"rowvar": False, "ddof": 2}),
    "trace_offset": ("trace", (), {"offset": 1}),
    "ptp_keepdims": ("ptp", (), {"axis": 0, "keepdims": True}),
    "average_weights_keepdims": ("average", (), {"axis": 1, "weights": np.arange(1.0, 5.0),
                                                 "keepdims": True}),
}


@pytest.mark.parametrize("name", KEYWORD_CASES)
def test_keyword_arguments_give_numpys_values_and_gradients(name):
    fname, args, kw = KEYWORD_CASES[name]
    a = sg.var("a", shape=A.shape)
    got = getattr(snp, fname)(a, *args, **kw)
    want = getattr(np, fname)(A, *args, **kw)
    value = sg.evaluate(got, {"a": A})
    assert np.shape(value) == np.shape(want)
    np.testing.assert_allclose(value, want, rtol=1e-12, atol=1e-14)
    weights = np.arange(1.0, np.size(want) + 1).reshape(np.shape(want))
    sg.check_grads(sg.sum(got * weights), a, {"a": A}, order=1)


@pytest.mark.parametrize("call, match", [
    (lambda a: snp.var(a, axis=1, where=MASK), "where= is not supported.*sg.where"),
    (lambda a: snp.std(a, where=MASK), "where= is not supported.*sg.where"),
    (lambda a: snp.quantile(a, 0.4, method="nearest"), "method='nearest'.*only 'linear'"),
    (lambda a: snp.cov(a, fweights=[1, 2, 1, 3]), "fweights and aweights"),
])
def test_keywords_it_cannot_honour_are_refused_by_name(call, match):
    with pytest.raises(sg.UnsupportedError, match=match):
        call(sg.var("a", shape=A.shape))


def test_average_returned_gives_the_sum_of_weights():
    w = np.array([0.2, 0.3, 0.5])
    a = sg.var("a", shape=A.shape)
    avg, total = snp.average(a, axis=0, weights=w, returned=True)
    want_avg, want_total = np.average(A, axis=0, weights=w, returned=True)
    np.testing.assert_allclose(sg.evaluate(avg, {"a": A}), want_avg, rtol=1e-14)
    np.testing.assert_allclose(sg.evaluate(total, {"a": A}), want_total, rtol=1e-14)


def test_select_takes_the_first_true_condition_and_its_gradient_follows():
    a = sg.var("a", shape=A.shape)
    conds = [A > 0.5, A < -0.5]
    got = snp.select(conds, [a * 2.0, a ** 2], default=-1.0)
    want = np.select(conds, [A * 2.0, A ** 2], default=-1.0)
    np.testing.assert_allclose(sg.evaluate(got, {"a": A}), want, rtol=1e-15)
    grad = sg.evaluate(sg.grad(sg.sum(got), a), {"a": A})
    np.testing.assert_allclose(grad, np.select(conds, [np.full_like(A, 2.0), 2 * A], 0.0))
