"""Cases from HIPS autograd's NumPy test suite, each against NumPy: lists of expressions where
NumPy takes an array, the stack family given one array, r_/c_, angle and real_if_close on
real values, N-d dot, sinc, a zero (not NaN) derivative where a function is locally
constant; and Expr.__array_namespace__."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
import symgrad.numpy as snp

RNG = np.random.default_rng(5)
XV = np.array([-1.0, 0.0, 3.0])
MV = RNG.standard_normal((2, 3))


def _at(**kw):
    return {"x": XV, "M": MV, **kw}


def test_lists_of_expressions_where_numpy_takes_an_array():
    x = sg.var("x", shape=(3,))
    cases = [
        (snp.mean([x, x + 2]), np.mean([XV, XV + 2])),
        (snp.linalg.norm([x[0], x[2]]), np.linalg.norm([XV[0], XV[2]])),
        (snp.append([x[0], x[1]], x[2]), np.append([XV[0], XV[1]], XV[2])),
        (snp.sum([[x[0], 1.0], [x[1], x[2]]]), np.sum([[XV[0], 1.0], [XV[1], XV[2]]])),
        (snp.array([x[0], 2 * x[1]]), np.array([XV[0], 2 * XV[1]])),
    ]
    for got, want in cases:
        np.testing.assert_allclose(sg.evaluate(got, _at()), want, rtol=1e-15)
    sg.check_grads(snp.mean([x * x, x + 2]), x, _at(), order=2)
    with pytest.raises(sg.ShapeError, match="same shape|different shapes"):
        snp.array([x, x[:2]])


@pytest.mark.parametrize("name", ["vstack", "hstack", "dstack", "column_stack", "stack"])
def test_the_stack_family_given_one_array_iterates_its_first_axis(name):
    if not hasattr(np, name):
        pytest.skip(f"this NumPy has no {name}")
    M = sg.var("M", shape=(2, 3))
    got = getattr(np, name)(M)  # real NumPy, dispatched
    np.testing.assert_array_equal(sg.evaluate(got, _at()), getattr(np, name)(MV))


def test_r_and_c_():
    x = sg.var("x", shape=(3,))
    np.testing.assert_array_equal(sg.evaluate(snp.r_[x, 2.0, 0:3], _at()),
                                  np.r_[XV, 2.0, 0:3])
    np.testing.assert_array_equal(sg.evaluate(snp.r_[x, 0:1:3j], _at()), np.r_[XV, 0:1:3j])
    np.testing.assert_array_equal(sg.evaluate(snp.c_[x, x * 2], _at()), np.c_[XV, XV * 2])
    sg.check_grads(sg.sum(snp.c_[x, x * x] ** 2), x, _at(), order=1)
    with pytest.raises(sg.UnsupportedError, match="string directives"):
        snp.r_["-1", x]


def test_angle_and_real_if_close_on_real_values():
    x = sg.var("x", shape=(4,))
    pts = np.array([-2.0, -0.0, 0.0, 5.0])
    for deg in (False, True):
        np.testing.assert_array_equal(sg.evaluate(np.angle(x, deg=deg), {"x": pts}),
                                      np.angle(pts, deg=deg))
    np.testing.assert_array_equal(sg.evaluate(sg.grad(sg.sum(np.angle(x)), x), {"x": pts}), 0.0)
    np.testing.assert_array_equal(sg.evaluate(np.real_if_close(x), {"x": pts}), pts)


def test_nd_dot_is_tensordot_over_the_last_and_second_to_last_axes():
    a, b, v = sg.var("a", shape=(2, 3, 4)), sg.var("b", shape=(5, 4, 6)), sg.var("v", shape=(4,))
    at = {"a": RNG.standard_normal((2, 3, 4)), "b": RNG.standard_normal((5, 4, 6)),
          "v": RNG.standard_normal(4)}
    for got, want in ((np.dot(a, b), np.dot(at["a"], at["b"])),
                      (np.dot(a, v), np.dot(at["a"], at["v"])),
                      (np.dot(v, b), np.dot(at["v"], at["b"])),
                      (np.dot(a, 2.0), np.dot(at["a"], 2.0))):
        assert got.shape == want.shape
        np.testing.assert_allclose(sg.evaluate(got, at), want, rtol=1e-13)
    sg.check_grads(sg.sum(np.dot(a, b) ** 2), [a, b], at, order=1)


def test_sinc_is_numpys():
    x = sg.var("x", shape=(4,))
    pts = np.array([-1.5, 0.0, 0.25, 2.0])
    np.testing.assert_allclose(sg.evaluate(np.sinc(x), {"x": pts}), np.sinc(pts), rtol=1e-15)
    sg.check_grads(sg.sum(np.sinc(x)), x, {"x": pts + 0.1}, order=2)


def test_zero_not_nan_where_locally_constant():
    x = sg.var("x", shape=(3,))
    g = sg.evaluate(sg.grad(np.std(x[:1]), x), _at())
    np.testing.assert_array_equal(g, 0.0)
    M = sg.var("M", shape=(1, 3))
    np.testing.assert_array_equal(
        sg.evaluate(sg.grad(sg.sum(np.std(M, axis=0)), M), {"M": np.ones((1, 3))}), 0.0)
    assert sg.evaluate(sg.grad(x[1] ** 0, x), _at()).tolist() == [0.0, 0.0, 0.0]
    assert np.isnan(sg.evaluate(np.std(x[:1]), {"x": np.array([np.inf, 0.0, 0.0])}))


def test_array_namespace_is_symgrad_numpy():
    x = sg.var("x", shape=(3,))
    assert x.__array_namespace__() is snp
    compat = pytest.importorskip("array_api_compat")
    xp = compat.array_namespace(x)
    assert xp is snp
    f = xp.sum(xp.exp(x) * xp.tanh(x))
    np.testing.assert_allclose(sg.evaluate(f, _at()), np.sum(np.exp(XV) * np.tanh(XV)))


def test_a_transformed_function_called_on_an_expression_chains_through():
    """autograd's test_jacobian_against_stacked_grads: ``grad(f)(x[1])`` inside a traced
    function, where the point is an expression of the outer variable (not a variable) and
    ``f`` closes over the outer variable too: the result is an expression of ``x``, and the
    outer Jacobian (reverse and forward) chains through it."""
    funs = [
        lambda x: np.sum(x**3),
        lambda x: np.prod(np.sin(x) + np.sin(x)),
        lambda x: sg.grad(lambda y: np.exp(y) * np.tanh(x[0]))(x[1]),
    ]
    vector_fun = lambda x: snp.array([f(x) for f in funs])  # noqa: E731
    xv = RNG.standard_normal(5)
    inner = sg.grad(funs[2])(xv)  # d/dx of exp(x1) tanh(x0)
    sech2 = 1.0 - np.tanh(xv[0]) ** 2
    np.testing.assert_allclose(inner, [np.exp(xv[1]) * sech2, np.exp(xv[1]) * np.tanh(xv[0]),
                                       0.0, 0.0, 0.0], rtol=1e-14)
    stacked = np.vstack([sg.grad(f)(xv) for f in funs])
    for jac in (sg.jacrev(vector_fun), sg.jacfwd(vector_fun)):
        np.testing.assert_allclose(jac(xv), stacked, rtol=1e-13)
    x = sg.var("x", shape=(5,))
    point = sg.grad(lambda y: np.exp(y) * np.tanh(x[0]))(x[1])
    assert isinstance(point, sg.Expr) and set(point.graph.variables) >= {"x"}
    sg.check_grads(point, x, {"x": xv}, order=2)
    # the point may be any expression: a vjp and a jvp at x[1] * x[2] too
    y, pull = sg.vjp(lambda y: np.sin(y) * x[3], x[1] * x[2])
    t = sg.jvp(lambda y: np.sin(y) * x[3], (x[1] * x[2],), (1.0,))[1]
    want = np.cos(xv[1] * xv[2]) * xv[3]
    assert sg.evaluate(pull(1.0)[0], {"x": xv}) == pytest.approx(want, rel=1e-14)
    assert sg.evaluate(t, {"x": xv}) == pytest.approx(want, rel=1e-14)


def _wrapped(inner):
    def wrapped(x):  # a parameter named like the enclosing trace's variable
        return inner(x)
    return wrapped


def test_a_transform_called_on_numbers_inside_a_trace_reads_the_enclosing_values():
    """autograd's test_enclosing_scope_ref(_2): ``grad(inner)(2.0)`` inside a traced function,
    ``inner`` closing over the traced value. The inner trace's variables cannot take the
    enclosing trace's names (a parameter named ``x`` inside a trace of ``x`` gave x * x
    silently), and a result that depends on the enclosing values is built as an expression
    (it compiled to a function missing an input before)."""
    def fun(x):
        return x * sg.grad(_wrapped(lambda y: y * x))(2.0)

    def fun_order(x):
        return x * sg.grad(lambda y: x * y)(2.0)

    for f in (fun, fun_order):
        assert f(1.5) == 2.25
        assert sg.jvp(f, (1.5,), (1.0,)) == (2.25, 3.0)
        assert sg.grad(f)(1.5) == 3.0
        assert sg.grad(sg.grad(f))(1.5) == 2.0
    # a transform that does not read the enclosing values still gives numbers
    assert sg.grad(lambda x: x * float(sg.grad(lambda y: y * y)(3.0)))(1.0) == 6.0


def test_gradient_of_several_axes_is_a_tuple_as_numpys():
    M = sg.var("M", shape=(2, 3))
    got = snp.gradient(M)
    want = np.gradient(MV)
    assert type(got) is type(want) is tuple
    for g, w in zip(sg.evaluate(list(got), _at()), want):
        np.testing.assert_allclose(g, w, rtol=1e-15)


def test_column_stack_of_one_vector_stacks_its_elements():
    x = sg.var("x", shape=(3,))
    got = snp.column_stack(x)
    assert got.shape == np.column_stack(XV).shape == (1, 3)
    np.testing.assert_array_equal(sg.evaluate(got, _at()), np.column_stack(XV))
    sg.check_grads(sg.sum(got * np.arange(3.0)), x, _at(), order=1)


def test_forward_mode_through_a_join_with_integer_data():
    """autograd's test_r_slicing: np.r_[x, c, 1:10] joins an integer range; its tangent
    is zeros (forward mode passed the range's values on as part of the tangent)."""
    c = np.full(2, 7.0)
    f = lambda x: snp.r_[x, c, 1:4]  # noqa: E731
    value, tangent = sg.jvp(f, (XV,), (np.ones(3),))
    np.testing.assert_array_equal(value, np.r_[XV, c, 1:4])
    np.testing.assert_array_equal(tangent, [1.0, 1.0, 1.0, 0, 0, 0, 0, 0])
    x = sg.var("x", shape=(3,))
    for join in (snp.r_[x, 1:4], snp.stack([x, np.arange(3)]), snp.concatenate([x, [1, 2]])):
        fwd, rev = (sg.evaluate(sg.jacobian(join, x, mode=m), _at()) for m in
                    ("forward", "reverse"))
        np.testing.assert_array_equal(fwd, rev)


@pytest.mark.parametrize("name", ["int64", "int32", "float32", "float64", "bool_"])
def test_scalar_types_are_numpys_own(name):
    assert getattr(snp, name) is getattr(np, name)  # x.dtype.type is np.float32 holds


def test_a_scalar_type_called_on_an_expression_names_astype():
    def to_int(w):
        return snp.sum(snp.int64(w))

    def to_float(w):
        return np.sum(np.float32(w))

    with pytest.raises(sg.SymgradError, match=r"x\.astype\(np\.int64\)"):
        sg.grad(to_int)(np.ones(3))
    with pytest.raises(sg.SymgradError, match=r"x\.astype\(np\.float32\)"):
        sg.grad(to_float)(np.ones(3))


def test_indexing_by_a_cast_expression_gathers_rows_and_its_gradient_counts_them():
    W = sg.var("W", shape=(5, 4))
    Wv = RNG.standard_normal((5, 4))
    Wv[:, -1] = [1.7, -2.3, 0.2, 3.9, -0.5]  # rows 1, -2 (wraps to 3), 0, 3, 0
    loss = snp.sum(W[:, :-1][W[:, -1].astype(np.int64)] ** 2)
    rows = np.int64(Wv[:, -1])
    assert sg.evaluate(loss, {"W": Wv}) == pytest.approx(np.sum(Wv[:, :-1][rows] ** 2))
    expected = np.zeros_like(Wv)
    np.add.at(expected[:, :-1], rows, 2 * Wv[:, :-1][rows])  # the cast itself: zero derivative
    np.testing.assert_allclose(sg.evaluate(sg.grad(loss, W), {"W": Wv}), expected)
