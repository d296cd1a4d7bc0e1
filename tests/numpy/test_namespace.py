"""symgrad.numpy against NumPy: every function built from ops gives NumPy's values, shapes
and dtypes, traces the same through real ``np`` (the array protocols), and differentiates
(central finite differences, order 2)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import symgrad as sg
import symgrad.numpy as snp
from symgrad.testing import check_grads

R = np.random.default_rng(7)
A = R.standard_normal((3, 4))
B = R.standard_normal((4, 5))
S = R.standard_normal((3, 3))
V = R.standard_normal(5)
W = R.standard_normal(3)
V3 = R.standard_normal((2, 3))
U3 = R.standard_normal((2, 3))
P = R.uniform(0.5, 2.0, (3, 4))


def c(name, *args, kw=None, grad=True, protocol=True, rtol=1e-12):
    """A case: ``name`` applied to ``args`` (arrays become variables; everything else is
    passed as it is) with keywords ``kw``."""
    _COUNT[name] = _COUNT.get(name, 0) + 1
    return pytest.param(name, args, kw or {}, grad, protocol, rtol,
                        id=f"{name}-{_COUNT[name]}")


_COUNT: dict[str, int] = {}


CASES: list = []
CASES += [
    c("var", A, kw={"axis": 0, "ddof": 1}), c("std", A, kw={"axis": 1}), c("var", A),
    c("std", A, kw={"keepdims": True, "ddof": 1}), c("ptp", A, kw={"axis": 1}),
    c("average", A, kw={"axis": 0, "weights": np.array([0.2, 0.3, 0.5])}),
    c("average", A, kw={"weights": P}), c("median", A, kw={"axis": 1}), c("median", A),
    c("quantile", A, [0.1, 0.5, 0.9], kw={"axis": 1}), c("percentile", V, 30.0),
    c("nansum", A, kw={"axis": 0}), c("nanmean", A, kw={"axis": 1}), c("nanmax", A),
    c("count_nonzero", np.array([[0.0, 1.0], [2.0, 0.0]]), kw={"axis": 0}, grad=False),
    c("sum", A, kw={"axis": 1, "initial": 2.0}), c("prod", P, kw={"axis": 0}),
    c("max", A, kw={"axis": 0, "initial": 0.5}), c("mean", A, kw={"axis": (0, 1)}),
    c("cumsum", A, kw={"axis": 1}), c("cumprod", P), c("sum", A, 1, None, None, True),
    c("fabs", A), c("positive", A), c("clip", A, -0.5, 0.5), c("clip", A, None, 0.3),
    c("nan_to_num", np.array([1.0, np.nan, np.inf, -np.inf]), grad=False),
    c("isclose", A, A + 1e-9, grad=False), c("polyval", [1.0, -2.0, 0.5], V),
    c("tensordot", A, B, kw={"axes": 1}), c("tensordot", A, A, kw={"axes": ([0, 1], [0, 1])}),
    c("inner", V3, U3), c("inner", V, V), c("vdot", A, A), c("kron", S, V3),
    c("cross", V3, U3), c("cross", V3[:, :2], U3[:, :2]), c("vecdot", V3, U3),
    c("cov", A), c("cov", A, kw={"rowvar": False, "ddof": 0}), c("corrcoef", A),
    c("fix", A, grad=False), c("arctan2", A, P), c("hypot", A, P), c("logaddexp", A, P),
    c("mod", P, 0.7),
    c("round", A, 1, grad=False), c("floor", A, grad=False), c("sign", A, grad=False),
]
CASES += [
    c("moveaxis", np.zeros((2, 3, 4)) + R.standard_normal((2, 3, 4)), 0, -1),
    c("swapaxes", A, 0, 1), c("rollaxis", R.standard_normal((2, 3, 4)), 2),
    c("permute_dims", R.standard_normal((2, 3, 4)), (1, 2, 0)), c("ravel", A),
    c("reshape", A, (2, 6)), c("atleast_2d", V), c("atleast_3d", A),
    c("atleast_1d", 3.0, protocol=False),
    c("concatenate", [A, A], kw={"axis": None}), c("stack", [A, A], 1), c("vstack", [V, V]),
    c("hstack", [A, A]), c("dstack", [A, A]), c("column_stack", [W, W]),
    c("block", [[S, S], [S, S]]), c("split", A, 2, 1), c("array_split", V, 3),
    c("hsplit", A, [1, 3]), c("vsplit", A, 3), c("append", A, A, 0), c("delete", A, [0, 2], 1),
    c("tile", V3, (2, 1, 2)), c("repeat", A, 2, 0), c("repeat", V3, [1, 2, 0], 1),
    c("pad", A, 1), c("pad", A, ((1, 0), (2, 3)), "edge"), c("pad", V, 3, "reflect"),
    c("pad", V, (2, 4), "symmetric"), c("pad", V, (6, 1), "wrap"),
    c("pad", A, 1, kw={"constant_values": 2.5}), c("roll", A, 1), c("roll", A, (1, -2), (0, 1)),
    c("flip", A), c("flip", A, 1), c("fliplr", A), c("flipud", A), c("rot90", A),
    c("rot90", A, 2), c("rot90", A, 3, (1, 0)), c("diagonal", A, 1), c("diagonal", A, -1),
    c("diag", A), c("diag", W, 1), c("diagflat", V3), c("tril", A), c("triu", A, 1),
    c("take_along_axis", A, np.argsort(A, axis=1), 1, protocol=False),
    c("where", A > 0, A, P, protocol=False), c("broadcast_arrays", V3, W),
    c("diff", A, 2, 1), c("diff", V, kw={"prepend": 0.5}), c("gradient", V),
    c("gradient", A, 2.0, kw={"axis": 1, "edge_order": 2}), c("trapezoid", A),
    c("trapezoid", V, np.cumsum(np.abs(V)) + 1.0),
    c("linspace", 0.5, 2.0, 5, grad=False, protocol=False),
    c("einsum", "...ij,...jk->...ik", R.standard_normal((2, 3, 4)), R.standard_normal((4, 2))),
    c("einsum", "i...,i...", V3, U3), c("einsum", A, [0, 1], B, [1, 2], [0, 2]),
    c("sort", A, 0), c("argsort", A, grad=False), c("argmax", A, 1, grad=False),
    c("meshgrid", W, V), c("meshgrid", W, V, kw={"indexing": "ij"}),
    c("convolve", V, W), c("convolve", W, V, "same"), c("convolve", V, W, "valid"),
    c("correlate", V, W), c("correlate", W, V, "full"),
    c("interp", np.array([-1.0, 0.5, 2.0, 3.0, 5.0]), np.array([0.0, 1.0, 2.5, 4.0]),
      np.array([1.0, 3.0, 2.0, 5.0])),
    c("searchsorted", np.sort(V), A, grad=False),
]


def _inputs(args):
    """Variables for the array arguments (nested in lists too), and their values."""
    values, k = {}, [0]

    def convert(a):
        if isinstance(a, list) and a and all(isinstance(x, np.ndarray) for x in a):
            return [convert(x) for x in a]
        if isinstance(a, list) and a and isinstance(a[0], list):
            return [convert(x) for x in a]
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            name = f"a{k[0]}"
            k[0] += 1
            values[name] = a
            return sg.var(name, a.shape, a.dtype.name)
        return a

    return [convert(a) for a in args], values


def _flat(out):
    return out if isinstance(out, (list, tuple)) else [out]


@pytest.mark.parametrize("name, args, kw, grad, protocol, rtol", CASES)
def test_symgrad_numpy_equals_numpy(name, args, kw, grad, protocol, rtol):
    exprs, values = _inputs(args)
    with warnings.catch_warnings():  # NumPy 2 deprecates cross of 2-vectors; symgrad keeps it
        warnings.simplefilter("ignore", DeprecationWarning)
        want = _flat(getattr(np, name)(*args, **kw))
    got_exprs = _flat(getattr(snp, name).symbolic(*exprs, **kw))
    got = sg.evaluate(got_exprs, values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        on_data = _flat(getattr(snp, name)(*args, **kw))  # no symbolic operand: NumPy's value
    for d, w in zip(on_data, want):
        assert not isinstance(d, sg.Expr)
        np.testing.assert_array_equal(d, w)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (name, g.shape, w.shape, g.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-12)
    if protocol:  # the same through real numpy: np.f(expr) dispatches to symgrad
        through = sg.evaluate(_flat(getattr(np, name)(*exprs, **kw)), values)
        for g, t in zip(got, through):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(t))
    floats = [e for e in got_exprs if e.dtype in ("float32", "float64")]
    if grad:
        for e in floats:
            wrt = [v for v in values if v in e.graph.variables and values[v].dtype == np.float64
                   and e.graph.variables[v] in e.graph.ancestors([e.node])]
            if wrt:
                check_grads(e, wrt, values, order=2)


# -- the array protocols ----------------------------------------------------------------------


def test_real_numpy_code_traces_through_the_protocols():
    def loss(w, X, y):  # plain NumPy, as a user writes it
        z = X @ w
        p = 1.0 / (1.0 + np.exp(-z))
        return -np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)) + 0.1 * np.sum(w ** 2)

    X, y = R.standard_normal((20, 3)), (R.random(20) < 0.5).astype(float)
    w = sg.var("w", (3,))
    f = loss(w, X, y)
    assert isinstance(f, sg.Expr)
    at = {"w": np.array([0.3, -0.2, 0.1])}
    assert sg.evaluate(f, at) == pytest.approx(loss(at["w"], X, y), rel=1e-13)
    check_grads(f, w, at, order=2)


def test_ufunc_methods_are_the_reductions_and_scans_they_mean():
    x = sg.var("x", (3, 4))
    at = {"x": A}
    cases = [(np.add.reduce(x), np.add.reduce(A)), (np.multiply.reduce(x, axis=1),
                                                    np.multiply.reduce(A, axis=1)),
             (np.maximum.reduce(x, axis=None), np.maximum.reduce(A, axis=None)),
             (np.add.accumulate(x, axis=1), np.add.accumulate(A, axis=1)),
             (np.multiply.outer(x[0], x[1]), np.multiply.outer(A[0], A[1])),
             (np.logaddexp.reduce(x, axis=0), np.logaddexp.reduce(A, axis=0))]
    for e, want in cases:
        np.testing.assert_allclose(sg.evaluate(e, at), want, rtol=1e-13)
    with pytest.raises(sg.SymgradError, match=r"numpy.add.reduceat"):
        np.add.reduceat(x, [0, 1])


@pytest.mark.parametrize("call, match", [
    (lambda x: np.nonzero(x), "depends on the data"),
    (lambda x: np.unique(x), "unique values depends on the data"),
    (lambda x: np.sin(x, out=np.zeros(3)), "out= is not supported"),
    (lambda x: np.where(x > 0), "one argument"),
    (lambda x: np.put(x, [0], 1.0), "in-place"),
    (lambda x: float(x[0]), "no value until it is evaluated.*sg.evaluate"),
    (lambda x: int(x[0]), "no value until it is evaluated"),
    (lambda x: np.asarray(x), "no value until it is evaluated"),
    (lambda x: x.sort(), "sorts in place"),
    (lambda x: x.__setitem__(0, 1.0), r"at\[index\]\.set"),
    (lambda x: (x > 0) & 1, "boolean"),
    (lambda x: sg.var(x, axis=0), "symgrad.numpy.var"),
    (lambda x: sg.var("z", dtype="complex256"), "dtype must be one of"),
    (lambda x: np.quantile(x * 1j, 0.5), "NumPy's take real numbers only"),
    (lambda x: snp.frobnicate(x), "symgrad.numpy has no 'frobnicate'"),
])
def test_what_cannot_be_traced_says_why_and_what_to_use(call, match):
    x = sg.var("x", (3,))
    with pytest.raises((sg.SymgradError, AttributeError), match=match):
        call(x)


def test_ndarray_methods_iteration_and_functional_updates():
    x = sg.var("x", (3, 4))
    at = {"x": A}
    for got, want in [(x.var(axis=0), A.var(axis=0)), (x.std(), A.std()),
                      (x.ravel(), A.ravel()), (x.flatten(), A.flatten()),
                      (x.dot(B), A.dot(B)), (x.T.dot(x), A.T @ A), (x.cumsum(1), A.cumsum(1)),
                      (x.clip(-0.5, 0.5), A.clip(-0.5, 0.5)), (x.round(2), A.round(2)),
                      (x.swapaxes(0, 1), A.swapaxes(0, 1)), (x.mT, A.mT),
                      (x.transpose(1, 0), A.transpose(1, 0)), (x.prod(axis=0), A.prod(0)),
                      (x.min(1), A.min(1)), (x.max(axis=0, keepdims=True), A.max(0, keepdims=True)),
                      (x.sum(1, keepdims=True), A.sum(1, keepdims=True)),
                      (snp.array([x[0, 0], 2.0, x[1, 1]]), np.array([A[0, 0], 2.0, A[1, 1]])),
                      (sum(row for row in x), A.sum(0))]:
        np.testing.assert_allclose(sg.evaluate(got, at), want, rtol=1e-13)
    assert x.size == 12 and len(x) == 3 and [r.shape for r in x] == [(4,)] * 3
    y = x.at[1, 2].set(9.0).at[0].add(1.0).at[:, 3].multiply(2.0)
    want = A.copy()
    want[1, 2] = 9.0
    want[0] += 1.0
    want[:, 3] *= 2.0
    np.testing.assert_array_equal(sg.evaluate(y, at), want)
    check_grads(sg.sum(y * y), x, at, order=2)
    z = x.at[[0, 0, 2], 1].add(1.0)  # duplicate indices accumulate, as np.add.at
    ref = A.copy()
    np.add.at(ref, ([0, 0, 2], 1), 1.0)
    np.testing.assert_array_equal(sg.evaluate(z, at), ref)


def test_np_equals_sg_except_var_and_the_namespaces_list_the_same_names():
    assert sg.linalg is snp.linalg
    assert snp.var is not sg.var and snp.newaxis is None and snp.pi == np.pi
    for name in ("sin", "sum", "concatenate", "einsum", "clip", "std"):
        assert getattr(sg, name) is getattr(snp, name).symbolic  # snp's computes on data
    assert "var" in dir(snp) and "nonzero" not in dir(snp)


def test_text_uses_numpy_names_and_signatures():
    x = sg.parse("var(x, 0) + std(x, ddof=1) * ptp(x)", shapes={"x": (3, 4)})
    at = {"x": A}
    want = A.var(0) + A.std(ddof=1) * np.ptp(A)
    np.testing.assert_allclose(sg.evaluate(x, at), want, rtol=1e-13)
    y = sg.parse("clip(pad(x, 1), -0.5, 0.5)", shapes={"x": (3, 4)})
    np.testing.assert_allclose(sg.evaluate(y, at), np.clip(np.pad(A, 1), -0.5, 0.5))


def test_dtype_rules_are_numpy_2s():
    z = sg.var("z", (3,), "float32")
    zv = np.array([0.5, -1.0, 2.0], np.float32)
    f = snp.sum(snp.tanh(2.0 * z) ** 2 / 3) + snp.var(z)
    assert f.dtype == "float32"
    g, h = sg.grad(f, z), sg.hessian(f, z)
    assert g.dtype == h.dtype == "float32"
    value, grad = sg.evaluate([f, g], {"z": zv})  # a 0-d result comes back as a float
    assert grad.dtype == np.float32
    ref = np.sum(np.tanh(2.0 * zv) ** 2 / 3) + np.var(zv)
    assert value == pytest.approx(float(ref), rel=1e-6)
    fn = sg.compile([f, g, h])
    out = fn(zv)
    assert [np.asarray(o).dtype for o in out] == [np.float32] * 3
    np.testing.assert_array_equal(out[1], grad)
    i = sg.var("i", (2,), "int32")
    assert (i + 1).dtype == "int32" and (i * 2.5).dtype == "float64"
    assert (z * np.float64(2.0)).dtype == "float64"  # a NumPy scalar is not weak
    with pytest.raises(sg.ShapeError, match="does not fit"):
        i + 2**40


def test_the_docs_list_what_is_covered_as_the_registry_says():
    """The NumPy support page's list is generated: symgrad.numpy.support_markdown()."""
    from tests.support import docs

    assert docs.marked("guide/numpy", "numpy-support") == snp.support_markdown(), (
        "regenerate: python -c 'import symgrad.numpy as s; print(s.support_markdown())'")


def test_numpy_2_spellings_and_numpys_random():
    """np.atan2 (NumPy 2's name of arctan2) and the other array-API spellings; NumPy's
    random generators for data code."""
    x = sg.var("x")
    for new, old in [("atan2", "arctan2"), ("acos", "arccos"), ("asin", "arcsin"),
                     ("atan", "arctan"), ("acosh", "arccosh"), ("asinh", "arcsinh"),
                     ("atanh", "arctanh"), ("pow", "power")]:
        assert new in dir(snp)
        args = (x, 0.5) if new in ("atan2", "pow") else (x,)
        at = {"x": 1.5 if new == "acosh" else 0.25}
        want = getattr(np, old)(*[at["x"] if a is x else a for a in args])
        assert sg.evaluate(getattr(snp, new)(*args), at) == want
    assert sg.grad(lambda a: snp.atan2(a, 1.0))(0.0) == 1.0
    assert snp.random is np.random
    assert isinstance(snp.random.default_rng(0).normal(size=3), np.ndarray)
