"""Reductions (sum mean max min logsumexp softmax log_softmax) and linear algebra (matmul dot
outer transpose matrix_transpose einsum): values against NumPy/SciPy, gradients against
float64 central finite differences of an independent NumPy reference (order 1 and 2),
batch-axis support of every rule (one-pass Jacobian == stacked VJP rows), source == impl,
shape errors and the documented conventions (max ties, stability at +-1000, all -inf).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sps

import symgrad as sg
from symgrad.backends.targets.numpy.table import NUMPY
from symgrad.ops import REGISTRY, SignatureError, call
from tests.support.complex_order import draw, same
from tests.support.finite_differences import central_in

REDUCTIONS = ("sum", "mean", "max", "min", "logsumexp")
AXIS_OPS = ("softmax", "log_softmax")
LINALG = ("matmul", "dot", "outer", "transpose", "matrix_transpose", "einsum")


def _reference(name: str, attrs: dict):
    """An independent NumPy/SciPy implementation of op ``name`` with raw ``attrs``."""
    kw = dict(attrs)
    table = {
        "sum": lambda x: np.sum(x, **kw), "mean": lambda x: np.mean(x, **kw),
        "max": lambda x: np.max(x, **kw), "min": lambda x: np.min(x, **kw),
        "logsumexp": lambda x: sps.logsumexp(x, **kw),
        "softmax": lambda x: sps.softmax(x, **kw),
        "log_softmax": lambda x: sps.log_softmax(x, **kw),
        "matmul": np.matmul, "dot": np.dot, "outer": np.outer,
        "transpose": lambda x: np.transpose(x, kw.get("axes")),
        "matrix_transpose": lambda x: np.swapaxes(x, -1, -2),
        "einsum": lambda *xs: np.einsum(kw["spec"], *xs),
    }
    return table[name]


def _cases(names):
    rng = np.random.default_rng(7)
    out = []
    for name in names:
        for k, (arrays, attrs) in enumerate(REGISTRY[name].examples(rng)):
            out.append(pytest.param(name, arrays, attrs, id=f"{name}-{k}"))
    return out


ALL_CASES = _cases(REDUCTIONS + AXIS_OPS + LINALG)


def _build(name, arrays, attrs):
    vs = [sg.var(f"a{i}", shape=np.shape(a)) for i, a in enumerate(arrays)]
    return vs, call(name, *vs, **attrs), {f"a{i}": a for i, a in enumerate(arrays)}


def _fd_hessian(f, arrays, i, j, h=1e-4):
    """d^2 f / d arrays[i] d arrays[j] of scalar f by second central differences."""
    base = [np.array(a, dtype=float) for a in arrays]
    ni, nj = base[i].size, base[j].size
    hess = np.empty((ni, nj))
    for p in range(ni):
        for q in range(nj):
            total = 0.0
            for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                xs = [b.copy() for b in base]
                xs[i].flat[p] += si * h
                xs[j].flat[q] += sj * h
                total += si * sj * f(*xs)
            hess[p, q] = total / (4 * h * h)
    return hess.reshape(base[i].shape + base[j].shape)


# -- forward values -------------------------------------------------------------------------


@pytest.mark.parametrize("name, arrays, attrs", ALL_CASES)
def test_forward_matches_numpy(name, arrays, attrs):
    _, out, inputs = _build(name, arrays, attrs)
    want = _reference(name, attrs)(*arrays)
    got = sg.evaluate(out, inputs)
    assert np.shape(got) == np.shape(want) == out.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("axis", [None, 0, 1, -1, 2, (0, 2), (-1, 0), (0, 1, 2), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_axis_keepdims(name, axis, keepdims):
    x = np.random.default_rng(1).standard_normal((2, 3, 4))
    v = sg.var("x", shape=x.shape)
    out = getattr(sg, name)(v, axis=axis, keepdims=keepdims)
    want = _reference(name, {"axis": axis, "keepdims": keepdims})(x)
    np.testing.assert_allclose(sg.evaluate(out, {"x": x}), want, rtol=1e-12, atol=1e-12)
    assert out.shape == np.shape(want)


def test_positional_axis_and_methods():
    x = np.arange(12.0).reshape(3, 4)
    v = sg.var("x", shape=(3, 4))
    np.testing.assert_array_equal(sg.evaluate(sg.sum(v, 1), {"x": x}), x.sum(1))
    want = x.max(0, keepdims=True)
    # NumPy's positional order: max(a, axis, out, keepdims)
    np.testing.assert_array_equal(sg.evaluate(sg.max(v, 0, None, True), {"x": x}), want)
    np.testing.assert_array_equal(sg.evaluate(v.mean(axis=0), {"x": x}), x.mean(0))
    np.testing.assert_array_equal(sg.evaluate(v.T, {"x": x}), x.T)
    np.testing.assert_array_equal(sg.evaluate(sg.softmax(v, 0), {"x": x}), sps.softmax(x, 0))


def test_equal_nodes_hash_cons():
    v = sg.var("x", shape=(3, 4))
    assert v.sum(axis=0).node == v.sum(axis=-2).node == sg.sum(v, (0,)).node
    assert sg.sum(v).node == sg.sum(v, axis=(1, 0)).node
    assert v.T.node == sg.transpose(v, (1, 0)).node == sg.transpose(v, (-1, -2)).node
    assert sg.softmax(v, 1).node == sg.softmax(v).node
    assert sg.einsum("ij,jk", v, v.T).node == sg.einsum("ij,jk->ik", v, v.T).node


def test_no_op_reductions_and_transposes_are_built_and_simplified_away():
    """The builder builds what was written (NumPy makes a new value); the identities pass
    removes ops that change nothing, in simplify and inside B."""
    v, s = sg.var("x", shape=(3, 4)), sg.var("s")
    no_ops = [sg.sum(s), sg.max(s), sg.logsumexp(s), sg.mean(s)]
    assert all(e.node != s.node for e in no_ops)
    assert [str(e) for e in sg.simplify(no_ops)] == ["s"] * 4
    twice = [v.T.T, sg.matrix_transpose(sg.matrix_transpose(v))]
    assert all(e.node != v.node for e in twice)
    assert [str(e) for e in sg.simplify(twice)] == ["x", "x"]
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(sg.evaluate(twice[0], {"x": x}), x)
    w = sg.var("w", shape=(2, 3, 4))
    undone = sg.transpose(sg.transpose(w, (2, 0, 1)), (1, 2, 0))
    assert str(sg.simplify(undone)) == "w"
    assert str(sg.simplify(sg.transpose(sg.transpose(w, (2, 0, 1)), (2, 0, 1)))) != "w"
    u = sg.var("u", shape=(3,))
    assert u.T.node == u.node  # transposing a vector is the vector itself, as in NumPy


def test_transpose_of_trailing_axes_keeps_leading_axes():
    x = np.arange(24.0).reshape(2, 3, 4)
    v = sg.var("x", shape=(2, 3, 4))
    np.testing.assert_array_equal(sg.evaluate(sg.transpose(v, (1, 0)), {"x": x}),
                                  np.swapaxes(x, -1, -2))
    np.testing.assert_array_equal(sg.evaluate(sg.transpose(v, (-1, -3, -2)), {"x": x}),
                                  np.transpose(x, (2, 0, 1)))
    np.testing.assert_array_equal(sg.evaluate(v.T, {"x": x}), x.T)


def test_dtypes():
    i = sg.var("i", shape=(3,), dtype="int64")
    f32 = sg.var("f", shape=(3,), dtype="float32")
    assert sg.sum(i).dtype == "int64" and sg.mean(i).dtype == "float64"
    assert sg.max(f32).dtype == "float32" and sg.logsumexp(f32).dtype == "float32"
    assert (i @ i).dtype == "int64" and sg.softmax(i).dtype == "float64"
    assert sg.evaluate(sg.sum(i), {"i": np.array([1, 2, 3])}) == 6


def test_matmul_batched_and_promoted_shapes():
    rng = np.random.default_rng(2)
    for sa, sb in [((5, 2, 3), (3, 4)), ((3,), (5, 3, 4)), ((5, 2, 3), (3,)),
                   ((1, 4, 2, 3), (5, 1, 3, 2)), ((3,), (3,))]:
        a, b = rng.standard_normal(sa), rng.standard_normal(sb)
        out = sg.var("a", shape=sa) @ sg.var("b", shape=sb)
        assert out.shape == np.matmul(a, b).shape
        np.testing.assert_allclose(sg.evaluate(out, {"a": a, "b": b}), a @ b, rtol=1e-12)


def test_einsum_implicit_output_matches_numpy():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    for spec, ops in [("bA", [x]), ("Ab", [x]), ("ij,jk", [x, y]), ("ij,ji", [x, y]),
                      ("ba,ab", [x, y]), ("i j , j k -> k i", [x, y])]:
        vs = [sg.var(f"a{i}", shape=o.shape) for i, o in enumerate(ops)]
        got = sg.evaluate(sg.einsum(spec, *vs), {f"a{i}": o for i, o in enumerate(ops)})
        np.testing.assert_allclose(got, np.einsum(spec, *ops), rtol=1e-12)


# -- gradients ------------------------------------------------------------------------------


@pytest.mark.parametrize("name, arrays, attrs", ALL_CASES)
def test_jacobian_matches_finite_differences(name, arrays, attrs):
    vs, out, inputs = _build(name, arrays, attrs)
    ref = _reference(name, attrs)
    floats = [np.asarray(a, float) for a in arrays]
    for i, v in enumerate(vs):
        jac = sg.evaluate(sg.jacobian(out, v), inputs)
        np.testing.assert_allclose(jac, central_in(ref, floats, i), rtol=1e-6, atol=1e-7,
                                   err_msg=f"d{name}/da{i}")


@pytest.mark.parametrize("name, arrays, attrs", ALL_CASES)
def test_second_order_matches_finite_differences(name, arrays, attrs):
    """Hessian blocks of sum(sin(op(...))) against second differences of the reference."""
    vs, out, inputs = _build(name, arrays, attrs)
    ref = _reference(name, attrs)
    f = sg.sum(sg.sin(out))
    for i, vi in enumerate(vs):
        gi = sg.grad(f, vi)
        for j, vj in enumerate(vs):
            block = sg.hessian(f, vi) if i == j else sg.jacobian(gi, vj)
            want = _fd_hessian(lambda *xs: float(np.sum(np.sin(ref(*xs)))), arrays, i, j)
            np.testing.assert_allclose(sg.evaluate(block, inputs), want, rtol=1e-5, atol=1e-6,
                                       err_msg=f"d2 {name} / da{i} da{j}")


@pytest.mark.parametrize("name, arrays, attrs", ALL_CASES)
def test_one_pass_jacobian_equals_stacked_vjps(name, arrays, attrs):
    """The identity seed carries a batch axis through every rule; rows must not mix."""
    vs, out, inputs = _build(name, arrays, attrs)
    n = max(out.size, 1)
    for v in vs:
        jac = np.reshape(sg.evaluate(sg.jacobian(out, v), inputs), (n, *v.shape))
        for k in range(n):
            seed = np.zeros(n)
            seed[k] = 1.0
            row = sg.evaluate(sg.vjp(out, v, sg.const(seed.reshape(out.shape))), inputs)
            np.testing.assert_allclose(jac[k], row, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("name, arrays, attrs", _cases(("matmul", "einsum", "sum", "softmax")))
def test_vjp_with_random_batched_cotangent(name, arrays, attrs):
    """A cotangent with two leading batch axes equals looping over them."""
    vs, out, inputs = _build(name, arrays, attrs)
    rng = np.random.default_rng(5)
    gs = rng.standard_normal((2, 3) + out.shape)
    for v in vs:
        batched = sg.evaluate(sg.vjp(out, v, sg.const(gs)), inputs)
        assert batched.shape == (2, 3) + v.shape
        for a in range(2):
            for b in range(3):
                one = sg.evaluate(sg.vjp(out, v, sg.const(gs[a, b])), inputs)
                np.testing.assert_allclose(batched[a, b], one, rtol=1e-12, atol=1e-12)


def test_matmul_gradients_closed_form():
    rng = np.random.default_rng(4)
    W, x, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal((3, 1))
    Wv, xv, bv = sg.var("W", shape=(3, 4)), sg.var("x", shape=(4, 5)), sg.var("b", shape=(3, 1))
    f = sg.sum(sg.tanh(Wv @ xv + bv))
    gW, gx, gb = sg.evaluate(list(sg.grad(f, [Wv, xv, bv])), {"W": W, "x": x, "b": b})
    d = 1 - np.tanh(W @ x + b) ** 2
    np.testing.assert_allclose(gW, d @ x.T, rtol=1e-12)
    np.testing.assert_allclose(gx, W.T @ d, rtol=1e-12)
    np.testing.assert_allclose(gb, d.sum(1, keepdims=True), rtol=1e-12)


# -- source templates -----------------------------------------------------------------------


def _source_of(op, names, attrs):
    return NUMPY[op.name].render(names, attrs)


def _prepared(op, arrays, attrs):
    attrs = {**op.attrs, **attrs}
    shapes = tuple(np.shape(a) for a in arrays)
    dtypes = tuple(np.asarray(a).dtype.name for a in arrays)
    return op.prepare(shapes, dtypes, attrs) if op.prepare else attrs


@pytest.mark.parametrize("name, arrays, attrs", ALL_CASES)
def test_source_template_equals_impl(name, arrays, attrs):
    _, out, inputs = _build(name, arrays, attrs)
    op = REGISTRY[name]
    prepared = _prepared(op, arrays, attrs)
    text = _source_of(op, list(inputs), prepared)
    assert "scipy" not in text and "\n" not in text
    got = eval(text, {**NUMPY[name].namespace(), **inputs})  # noqa: S307  (our own template)
    want = op.impl(*arrays, **prepared)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, sg.evaluate(out, inputs))


@pytest.mark.parametrize("name", ["logsumexp", "softmax", "log_softmax"])
def test_source_equals_impl_on_special_values(name):
    x = np.array([[-np.inf, -np.inf, -np.inf], [1000.0, 0.0, -1000.0], [np.inf, 0.0, 1.0]])
    out = getattr(sg, name)(sg.var("x", shape=(3, 3)), axis=-1)
    with np.errstate(all="ignore"):
        text = _source_of(REGISTRY[name], ["x"], out.data.attrs)
        got = eval(text, {**NUMPY[name].namespace(), "x": x})  # noqa: S307
        want = REGISTRY[name].impl(x, **out.data.attrs)
    np.testing.assert_array_equal(got, want)


# -- conventions ----------------------------------------------------------------------------


def test_max_min_ties_split_equally():
    x = sg.var("x", shape=(3,))
    np.testing.assert_array_equal(sg.evaluate(sg.grad(sg.max(x), x), {"x": [1.0, 3.0, 3.0]}),
                                  [0.0, 0.5, 0.5])
    np.testing.assert_array_equal(sg.evaluate(sg.grad(sg.min(x), x), {"x": [2.0, 2.0, 2.0]}),
                                  [1 / 3, 1 / 3, 1 / 3])
    m = sg.var("m", shape=(2, 3))
    g = sg.evaluate(sg.grad(sg.sum(sg.max(m, axis=1) * sg.const([1.0, 10.0])), m),
                    {"m": [[1.0, 5.0, 5.0], [7.0, 0.0, 7.0]]})
    np.testing.assert_array_equal(g, [[0.0, 0.5, 0.5], [5.0, 0.0, 5.0]])


def test_logsumexp_stable_at_plus_minus_1000():
    x = sg.var("x", shape=(2,))
    f = sg.logsumexp(x)
    for at, val, grad in [([1000.0, 0.0], 1000.0, [1.0, 0.0]), ([-1000.0, 0.0], 0.0, [0.0, 1.0]),
                          ([1000.0, 1000.0], 1000.0 + np.log(2.0), [0.5, 0.5])]:
        v, g, h = sg.evaluate([f, sg.grad(f, x), sg.hessian(f, x)], {"x": at})
        assert v == pytest.approx(val, rel=1e-15)
        # exp(x - out) carries out's rounding (~1e-13 absolute at 1000): relative 1e-12
        np.testing.assert_allclose(g, grad, rtol=1e-12, atol=1e-300)
        p = np.array(grad)
        np.testing.assert_allclose(h, np.diag(p) - np.outer(p, p), atol=1e-15)


def test_softmax_and_log_softmax_stable():
    x = sg.var("x", shape=(3,))
    w = sg.const([0.3, -1.2, 2.0])
    at = {"x": [1000.0, 0.0, -1000.0]}
    p, lp = sg.evaluate([sg.softmax(x), sg.log_softmax(x)], at)
    np.testing.assert_allclose(p, [1.0, 0.0, 0.0], atol=0)
    np.testing.assert_allclose(lp, [0.0, -1000.0, -2000.0])
    for f in (sg.sum(sg.softmax(x) * w), sg.sum(sg.log_softmax(x) * w)):
        g, h = sg.evaluate([sg.grad(f, x), sg.hessian(f, x)], at)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))
    g = sg.evaluate(sg.grad(sg.sum(sg.log_softmax(x) * w), x), at)
    np.testing.assert_allclose(g, [0.3 - 1.1, -1.2, 2.0], atol=1e-12)  # w - softmax * sum(w)


def test_logsumexp_all_neg_inf_is_neg_inf_with_zero_gradient():
    x = sg.var("x", shape=(2, 2))
    f = sg.logsumexp(x, axis=1)
    at = {"x": [[-np.inf, -np.inf], [0.0, np.log(3.0)]]}
    v, j = sg.evaluate([f, sg.jacobian(f, x)], at)
    np.testing.assert_array_equal(v[0], -np.inf)
    assert v[1] == pytest.approx(np.log(4.0))
    np.testing.assert_array_equal(j[0], 0.0)
    np.testing.assert_allclose(j[1], [[0, 0], [0.25, 0.75]])
    assert sg.evaluate(sg.logsumexp(sg.var("e", shape=(0,))), {"e": np.zeros(0)}) == -np.inf


def test_integer_operand_gets_no_gradient_but_float_does():
    i = sg.var("i", shape=(3,), dtype="int64")
    x = sg.var("x", shape=(3,))
    g = sg.evaluate(sg.grad(sg.dot(x, i), x), {"x": np.ones(3), "i": np.array([1, 2, 3])})
    np.testing.assert_array_equal(g, [1.0, 2.0, 3.0])


# -- shape and signature errors --------------------------------------------------------------


def test_matmul_shape_errors_name_both_shapes():
    with pytest.raises(sg.ShapeError) as e:
        sg.var("a", shape=(4, 3)) @ sg.var("b", shape=(4,))
    assert str(e.value) == "matmul: shapes (4, 3) and (4,) are not aligned: 3 != 4"
    with pytest.raises(sg.ShapeError, match=r"scalar operands"):
        sg.matmul(sg.var("s"), sg.var("b", shape=(4,)))
    with pytest.raises(sg.ShapeError, match=r"\(2, 3, 4\) and \(5, 4, 2\).*batch"):
        sg.var("a", shape=(2, 3, 4)) @ sg.var("b", shape=(5, 4, 2))


@pytest.mark.parametrize("make, match", [
    (lambda: sg.dot(sg.var("a", shape=(2, 2, 3)), sg.var("b", shape=(2,))), r"3.*2|2.*3"),
    (lambda: sg.dot(sg.var("a", shape=(2, 3)), sg.var("b", shape=(2,))), r"not aligned: 3 != 2"),
    (lambda: sg.outer(sg.var("a", shape=(2, 2)), sg.var("b", shape=(2,))), r"must be 1-D"),
    (lambda: sg.transpose(sg.var("a", shape=(2, 3)), (0, 0)), r"repeat"),
    (lambda: sg.transpose(sg.var("a", shape=(2, 3)), (0, 1, 2)), r"not a permutation"),
    (lambda: sg.matrix_transpose(sg.var("a", shape=(3,))), r"at least 2 axes"),
    (lambda: sg.sum(sg.var("a", shape=(2, 3)), axis=2), r"out of range"),
    (lambda: sg.sum(sg.var("a", shape=(2, 3)), axis=(0, -2)), r"repeated axis"),
    (lambda: sg.max(sg.var("a", shape=(0, 3)), axis=0), r"zero-size"),
    (lambda: sg.softmax(sg.var("a", shape=(2, 3)), axis=(0, 1)), r"single int"),
    (lambda: sg.einsum("ij,jk->ik!", sg.var("a", shape=(2, 3)), sg.var("b", shape=(3, 2))),
     r"invalid character '!'"),
    (lambda: sg.einsum("i->->i", sg.var("a", shape=(2,))), r"'->'"),
    (lambda: sg.einsum("i>i", sg.var("a", shape=(2,))), r"'->'"),
    (lambda: sg.einsum("ij->i", sg.var("a", shape=(2,))), r"operand 0 has shape \(2,\)"),
    (lambda: sg.einsum("ij,jk->ik", sg.var("a", shape=(2, 3)), sg.var("b", shape=(4, 2))),
     r"index 'j' has sizes 3 and 4"),
    (lambda: sg.einsum("ij->k", sg.var("a", shape=(2, 3))), r"appear in the inputs"),
    (lambda: sg.einsum("ij->ii", sg.var("a", shape=(2, 3))), r"distinct"),
])
def test_shape_errors(make, match):
    with pytest.raises(sg.ShapeError, match=match):
        make()


@pytest.mark.parametrize("make, match", [
    (lambda: sg.einsum("ij,jk->ik", sg.var("a", shape=(2, 3))), r"name 2 operand\(s\), but 1"),
    (lambda: sg.einsum(3, sg.var("a", shape=(2, 3))), r"subscripts string"),
    (lambda: sg.einsum("i->i"), r"at least one operand"),
    (lambda: sg.sum(sg.var("a", shape=(2,)), 0, keepdims=1), r"keepdims must be True or False"),
])
def test_signature_errors(make, match):
    with pytest.raises(SignatureError, match=match):
        make()
    assert issubclass(SignatureError, sg.SymgradError)


@pytest.mark.parametrize("backend", ["numpy", "numba", "jax"])
def test_logsumexp_gradient_is_the_softmax_at_huge_magnitudes(backend):
    """A row masked with -1e30 (and one near 1e15): logsumexp(x) rounds to max(x), so
    exp(x - logsumexp(x)) would be [1, 1, 1, 1]; the gradient is the softmax, [.25, ...],
    on every backend (JAX's jax.nn.logsumexp gradient is the same)."""
    if backend == "jax":
        pytest.importorskip("jax").config.update("jax_enable_x64", True)
    X = np.array([[-1e30, -1e30, -1e30, -1e30], [1e15, 1e15, 1e15 + 1.0, 1e15],
                  [0.0, 1.0, 2.0, 3.0], [-np.inf] * 4])
    g = sg.grad(lambda x: np.sum(sg.logsumexp(x, axis=1)), backend=backend)(X)
    e = np.exp(X[:3] - X[:3].max(axis=1, keepdims=True))
    np.testing.assert_allclose(np.asarray(g)[:3], e / e.sum(axis=1, keepdims=True),
                               rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(g)[3], 0.0)  # an all -inf row: zeros
    np.testing.assert_array_equal(np.asarray(g)[0], 0.25)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_complex_max_and_min_are_numpys_lexicographic_order(name, axis):
    """Real parts first, then imaginary parts; a slice holding a NaN gives its first NaN."""
    rng = np.random.default_rng(3)
    z = sg.var("z", shape=(3, 4), dtype="complex128")
    e = getattr(sg, name)(z, axis=axis)
    for _ in range(60):
        zv = draw(rng, (3, 4))
        assert same(sg.evaluate(e, {"z": zv}), getattr(np, name)(zv, axis=axis)), zv


def test_the_gradient_of_a_complex_max_splits_ties_as_jax(x64):
    """The cotangent goes to the selected element, shared equally among equal ones (JAX's
    rule, as for real values)."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    zv = np.array([[1 + 3j, 0.5 + 9j, 1 + 3j, 1 + 2j], [2 - 1j, 2 - 1j, 2 - 3j, -1j]])
    c = np.array([0.3 - 1.1j, 2.0 + 0.5j])
    z = sg.var("z", shape=zv.shape, dtype="complex128")
    for axis in (None, 1):
        loss = sg.sum(sg.abs(sg.max(z, axis=axis)) ** 2 + sg.real(sg.min(z, axis=axis) * c))
        want = jax.grad(lambda u, a=axis: jnp.sum(jnp.abs(jnp.max(u, axis=a)) ** 2
                                                  + jnp.real(jnp.min(u, axis=a) * c)))(zv)
        got = sg.evaluate(sg.grad(loss, z), {"z": zv})
        np.testing.assert_allclose(got, want, rtol=1e-14)
        if axis == 1:
            assert np.count_nonzero(got[0]) == 3  # the two tied maxima and the minimum
