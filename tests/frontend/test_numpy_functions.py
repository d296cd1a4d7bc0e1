"""NumPy's functions built from ops, with NumPy's keyword arguments: ``where=``, ``mean=``,
``keepdims``, ``ddof``, ``returned=``, ``select`` and ``trace`` offsets give NumPy's values
and differentiate as central finite differences say (``check_grads``); keywords that cannot
be honoured are refused by name. On complex values, the ones that conjugate (vdot, vecdot,
cov, correlate) or take |.|^2 (var, std) give NumPy's values, and their gradients JAX's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import symgrad as sg
import symgrad.numpy as snp
from tests.support.complex_order import draw, same

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


# -- complex values ---------------------------------------------------------------------------

ZRNG = np.random.default_rng(5)
ZA = ZRNG.standard_normal((3, 4)) + 1j * ZRNG.standard_normal((3, 4))
ZB = ZRNG.standard_normal((3, 4)) + 1j * ZRNG.standard_normal((3, 4))
ZV = ZRNG.standard_normal(6) + 1j * ZRNG.standard_normal(6)
ZU = ZRNG.standard_normal(4) + 1j * ZRNG.standard_normal(4)

COMPLEX_CASES = [
    ("var", lambda m, a, b: m.var(a, axis=1), ZA, ZB),
    ("std", lambda m, a, b: m.std(a, ddof=1), ZA, ZB),
    ("vdot", lambda m, a, b: m.vdot(a, b), ZA, ZB),
    ("vecdot", lambda m, a, b: m.vecdot(a, b), ZA, ZB),
    ("cov", lambda m, a, b: m.cov(a), ZA, ZB),
    ("corrcoef", lambda m, a, b: m.corrcoef(a, b), ZA, ZB),
    ("correlate", lambda m, a, b: m.correlate(a, b, mode="full"), ZV, ZU),
    ("correlate-swapped", lambda m, a, b: m.correlate(b, a, mode="same"), ZV, ZU),
    ("trace", lambda m, a, b: m.trace(a @ b.T), ZA, ZB),
]


@pytest.mark.parametrize("name, f, a, b", COMPLEX_CASES, ids=[c[0] for c in COMPLEX_CASES])
def test_complex_values_equal_numpys_and_gradients_jaxs(name, f, a, b, x64):
    x = sg.var("x", shape=a.shape, dtype="complex128")
    y = sg.var("y", shape=b.shape, dtype="complex128")
    out = f(np, x, y)
    want = f(np, a, b)
    got = sg.evaluate(out, {"x": a, "y": b})
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    if name == "corrcoef":
        return  # jnp.corrcoef clips the parts to [-1, 1]: no gradient to compare
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    w = np.asarray(want) * (0.5 - 0.25j)
    g = sg.grad(sg.sum(sg.real(out * w)), [x, y])
    ref = jax.grad(lambda p, q: jnp.sum(jnp.real(f(jnp, p, q) * w)), argnums=(0, 1))(a, b)
    for got_g, want_g in zip(sg.evaluate(list(g), {"x": a, "y": b}), ref):
        np.testing.assert_allclose(got_g, want_g, rtol=1e-10, atol=1e-12)


def test_iscomplex_and_isreal_read_the_imaginary_part():
    z0 = np.array([1.0 + 0j, 2.0 - 1e-300j, 0.5j])
    z = sg.var("z", shape=(3,), dtype="complex128")
    x = sg.var("x", shape=(3,))
    for f in (np.iscomplex, np.isreal):
        np.testing.assert_array_equal(sg.evaluate(f(z), {"z": z0}), f(z0))
        np.testing.assert_array_equal(sg.evaluate(f(x), {"x": z0.real}), f(z0.real))


def test_median_clip_and_nan_extremes_of_complex_values_are_numpys():
    """In NumPy's lexicographic order; a slice holding NaN: median's last sorted value,
    nanmax/nanmin's NaN where the slice holds nothing else (real slices too)."""
    rng = np.random.default_rng(23)
    z = sg.var("z", shape=(3, 4), dtype="complex128")
    x = sg.var("x", shape=(3, 4))
    cases = [(snp.median(z, axis=a), lambda v, a=a: np.median(v, axis=a)) for a in (None, 0, 1)]
    cases += [(getattr(snp, f)(z, axis=a), lambda v, f=f, a=a: getattr(np, f)(v, axis=a))
              for f in ("nanmax", "nanmin") for a in (None, 0)]
    cases.append((snp.clip(z, 0.5 + 1j, 1 + 2.5j), lambda v: np.clip(v, 0.5 + 1j, 1 + 2.5j)))
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's all-NaN slices warn
        for _ in range(40):
            zv = draw(rng, (3, 4))
            for e, ref in cases:
                assert same(sg.evaluate(e, {"z": zv}), ref(zv)), zv
            xv = np.where(rng.random((3, 4)) < 0.5, np.nan, rng.standard_normal((3, 4)))
            for f in ("nanmax", "nanmin"):
                assert same(sg.evaluate(getattr(snp, f)(x, axis=0), {"x": xv}),
                            getattr(np, f)(xv, axis=0)), xv
    with pytest.raises(sg.UnsupportedError, match="real numbers only"):
        snp.percentile(z, 50)
