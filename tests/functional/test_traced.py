"""sg.grad(fun) and sg.value_and_grad(fun) as JAX users expect them: traced once per argument
shapes, compiled, checked against finite differences (and JAX when it is installed); the
symbolic sg.grad(expr, wrt) unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from tests.support.finite_differences import central_in


def loss(W, b, X, y):
    """Softmax regression: mean negative log-likelihood of integer labels y."""
    logits = X @ W + b
    return -sg.sum(sg.log_softmax(logits)[sg.arange(4), y]) / 4.0


def numpy_loss(W, b, X, y):
    z = X @ W + b
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(4), y].sum() / 4.0


@pytest.fixture
def data(rng):
    return (rng.standard_normal((3, 5)), rng.standard_normal(5), rng.standard_normal((4, 3)),
            np.array([0, 3, 4, 1]))


def test_grad_of_a_function_matches_finite_differences(data):
    dW = sg.grad(loss)(*data)
    np.testing.assert_allclose(dW, central_in(numpy_loss, data, 0), rtol=1e-6, atol=1e-9)
    dW2, db = sg.grad(loss, argnums=(0, 1))(*data)
    np.testing.assert_array_equal(dW2, dW)
    np.testing.assert_allclose(db, central_in(numpy_loss, data, 1), rtol=1e-6, atol=1e-9)
    db_only = sg.grad(loss, 1)(*data)  # JAX's positional argnums
    np.testing.assert_array_equal(db_only, db)


def test_value_and_grad_and_the_cache(data):
    vg = sg.value_and_grad(loss, argnums=(0, 1))
    value, (dW, db) = vg(*data)
    assert value == pytest.approx(numpy_loss(*data), rel=1e-13)
    assert vg.cache_size == 1
    vg(*[np.asarray(a) * 2 for a in data[:3]], data[3])  # same shapes: no new trace
    assert vg.cache_size == 1
    X = np.ones((4, 2))
    W = np.zeros((2, 5))
    vg(W, data[1], X, data[3])  # new shapes: traced again
    assert vg.cache_size == 2
    assert "def value_and_grad_loss(W, b, X, y):" in vg.source


def test_declared_shapes_trace_at_once():
    g = sg.grad(lambda w, x: sg.sum(sg.exp(w * x)), shapes={"w": (3,), "x": (3,)})
    assert "def grad_lambda(w, x):" in g.source
    w, x = np.array([0.1, 0.2, 0.3]), np.array([1.0, -1.0, 2.0])
    np.testing.assert_allclose(g(w, x), x * np.exp(w * x), rtol=1e-15)
    g2 = sg.grad(lambda w: sg.sum(w ** 2), shapes=[(2,)], dtypes=["float32"])
    assert list(g2(np.array([1.0, 2.0], dtype=np.float32))) == [2.0, 4.0]
    with pytest.raises(sg.EvaluationError, match="shape"):
        g2.compiled(np.ones(2, dtype=np.float32))(np.ones(3))  # checked like compile


def test_has_aux_and_static_keywords():
    def f(x, scale=1.0):
        y = sg.sin(x) * scale
        return sg.sum(y), {"y": y, "n": 3}

    g = sg.grad(f, has_aux=True)
    x = np.array([0.5, 1.0])
    dx, aux = g(x)
    np.testing.assert_allclose(dx, np.cos(x), rtol=1e-15)
    np.testing.assert_allclose(aux["y"], np.sin(x), rtol=1e-15)
    assert aux["n"] == 3
    dx2, _ = g(x, scale=2.0)  # a static keyword: traced again with the new value
    np.testing.assert_allclose(dx2, 2 * np.cos(x), rtol=1e-15)
    (value, aux), dx3 = sg.value_and_grad(f, has_aux=True)(x)
    assert value == pytest.approx(np.sin(x).sum(), rel=1e-15)


def test_unused_and_constant_functions():
    g = sg.grad(lambda a, b: sg.sum(a * 2.0), argnums=(0, 1))
    da, db = g(np.ones(3), np.ones(2))
    np.testing.assert_array_equal(da, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(db, [0.0, 0.0])
    assert float(sg.grad(lambda a: 3.0)(1.5)) == 0.0


def test_errors_say_what_to_do():
    with pytest.raises(sg.DifferentiationError, match="float scalar.*jacobian"):
        sg.grad(lambda x: x * 2.0)(np.ones(3))
    with pytest.raises(sg.DifferentiationError, match="gradients need float arguments"):
        sg.grad(lambda k, x: x * k, argnums=0)(2, 1.0)
    with pytest.raises(sg.DifferentiationError, match="argnums"):
        sg.grad(lambda x: x, argnums="x")
    with pytest.raises(sg.InputError, match="does not fit"):
        sg.grad(lambda x: x, argnums=3)(1.0)
    with pytest.raises(sg.DifferentiationError,
                       match=r"Python function .*or an expression .*got int"):
        sg.grad(3, "x")
    with pytest.raises(sg.DifferentiationError, match="needs the variables"):
        sg.grad(sg.var("x"))
    with pytest.raises(sg.SymgradError, match="truth value"):
        sg.grad(lambda x: x if x > 0 else -x)(1.0)
    with pytest.raises(sg.InputError, match="must be hashable"):
        sg.grad(lambda x, **k: x)(1.0, opts=[1])
    with pytest.raises(sg.SymgradError, match="not been traced"):
        _ = sg.grad(lambda x: x).source


def test_symbolic_grad_is_unchanged():
    x = sg.var("x")
    f = sg.sin(x) * x
    dx = sg.grad(f, x)
    assert isinstance(dx, sg.Expr) and sg.evaluate(dx, {"x": 0.0}) == 0.0
    dx2 = sg.grad(f, x, cleanup=False)
    assert sg.evaluate(dx2, {"x": 1.0}) == pytest.approx(sg.evaluate(dx, {"x": 1.0}))
    (again,) = sg.grad(f, [x])
    assert again.node == dx.node


def test_agrees_with_jax_when_installed(data):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def jloss(W, b, X, y):
        logp = jax.nn.log_softmax(X @ W + b)
        return -jnp.sum(logp[jnp.arange(4), y]) / 4.0

    want = jax.grad(jloss, argnums=(0, 1))(*data)
    got = sg.grad(loss, argnums=(0, 1))(*data)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12, atol=1e-15)


def test_a_plain_numpy_function_traces():
    """NumPy's own functions on traced arguments build the graph (the array protocols), so
    code written for NumPy differentiates as it is."""
    import symgrad.numpy as snp

    def numpy_code(w, x):
        return np.sum(np.tanh(x @ w) ** 2) + np.mean(w * w)

    w, x = np.array([0.5, -0.25]), np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(sg.grad(numpy_code)(w, x),
                               central_in(numpy_code, [w, x], 0), rtol=1e-7)
    v = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(sg.grad(lambda a: snp.var(a))(v), 2 * (v - v.mean()) / 3,
                               rtol=1e-15)


def test_nested_grad_over_a_closure_sharing_a_cell():
    """autograd's ``grad(loglike)(r, p(r))`` idiom: the inner function and the outer one
    close over the same variable; the inner gradient is taken at a value of the outer
    argument. JAX gives 75.0."""

    def make(x):
        inner = lambda r, q: np.sum(r * q * x)  # noqa: E731
        return lambda r: sg.grad(inner)(r, np.sum(r + x))

    assert sg.grad(make(np.arange(1.0, 6.0)))(1.0) == 75.0
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def jmake(x):
        inner = lambda r, q: jnp.sum(r * q * x)  # noqa: E731
        return lambda r: jax.grad(inner)(r, jnp.sum(r + x))

    assert float(jax.grad(jmake(jnp.arange(1.0, 6.0)))(1.0)) == 75.0


def test_transforms_are_kept_per_function():
    """``sg.grad(f)(x)`` written inside a loop or a function (autograd's idiom) traces once:
    each transform of a function is kept, by the function's identity and code."""
    traces = []

    def f(w):
        traces.append(1)  # runs only while tracing
        return np.sum(np.sin(w) * w)

    w = np.array([0.5, -1.0])
    for make in (sg.grad, sg.value_and_grad, sg.hessian, sg.jacrev, sg.jacfwd, sg.jit):
        assert make(f) is make(f)
    for _ in range(5):
        np.testing.assert_allclose(sg.grad(f)(w), np.sin(w) + w * np.cos(w), rtol=1e-15)
    assert len(traces) == 1
    assert sg.grad(f, 0) is sg.grad(f) and sg.grad(f, has_aux=False) is sg.grad(f)
    assert sg.value_and_grad(f) is not sg.grad(f)

    class Model:
        def __init__(self):
            self.scale = 1.0

        def loss(self, w):
            return self.scale * np.sum(w ** 2)

    m = Model()
    assert sg.grad(m.loss) is sg.grad(m.loss)  # a new bound method each time, one transform
    sg.grad(m.loss)(w)
    m.scale = 3.0  # kept, and still never stale
    np.testing.assert_allclose(sg.grad(m.loss)(w), 6.0 * w, rtol=1e-15)


def test_the_autograd_idiom_of_a_gradient_inside_a_function_traces_once():
    """autograd's negative-binomial fit: the derivative ``grad(loglike)(r, p(r))`` is taken
    inside the function that scipy.optimize.newton calls at every iteration."""
    from scipy.optimize import newton
    from scipy.special import gammaln

    data = np.array([3.0, 7.0, 2.0, 9.0, 4.0, 4.0, 12.0, 1.0])
    calls = []

    def loglike(r, p):
        calls.append(1)
        return np.sum(sg.gammaln(data + r) - sg.gammaln(r) + r * np.log(1 - p)
                      + data * np.log(p))

    def p_of(r):
        return np.sum(data) / np.sum(r + data)

    def rprime(r):
        return sg.grad(loglike)(r, p_of(r))

    r = newton(rprime, 1.0)
    assert len(calls) == 1  # one trace for all of newton's iterations

    def numpy_rprime(r, h=1e-6):
        def ll(r):
            p = p_of(r)
            return np.sum(gammaln(data + r) - gammaln(r) + r * np.log(1 - p)
                          + data * np.log(p))
        return (ll(r + h) - ll(r - h)) / (2 * h)

    assert abs(numpy_rprime(r)) < 1e-6


def test_a_compiled_function_takes_all_its_arguments():
    """A derivative that is constant, or an argument the result does not use, still makes
    a compiled function of all the arguments (its source says so)."""
    g = sg.grad(lambda a, b: 2.0 * a)
    assert g(3.0, np.ones(2)) == 2.0
    assert "def grad_lambda(a, b):" in g.source
    assert g.compiled(3.0, np.ones(2))(1.0, np.zeros(2)) == (2.0,)


def test_hessian_of_a_vector_valued_function_has_jaxs_shape():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    x = np.array([0.3, -0.7, 1.1])

    def f(a, np=np):
        return np.stack([a[0] * a[1] ** 2, np.sin(a[2]) * a[0], np.sum(a ** 3)])

    h = sg.hessian(f)(x)
    want = np.asarray(jax.hessian(lambda a: f(a, jnp))(x))
    assert h.shape == want.shape == (3, 3, 3)
    np.testing.assert_allclose(h, want, rtol=1e-14, atol=1e-15)
    blocks = sg.hessian(lambda a, b: a * b, argnums=(0, 1))(np.ones(2), np.ones(2))
    jblocks = jax.hessian(lambda a, b: a * b, argnums=(0, 1))(jnp.ones(2), jnp.ones(2))
    for i in range(2):
        for j in range(2):
            np.testing.assert_array_equal(blocks[i][j], np.asarray(jblocks[i][j]))


def test_math_functions_take_scalars_and_say_use_numpys_for_arrays():
    import math

    assert sg.grad(lambda a: math.sin(a) * a)(1.0) == pytest.approx(math.cos(1.0) + math.sin(1.0))
    with pytest.raises(sg.UnsupportedError, match=r"math.sin takes a number.*np.sin"):
        sg.grad(lambda a: np.sum(math.sin(a) * a))(np.ones(2))


def test_integer_indices_that_wrap_or_fall_outside_are_errors():
    """NumPy refuses ``w[np.uint64(2**64 - 1)]``; converted to int64 the index would wrap to
    -1 and pick the last element: refused, never wrapped."""
    w = np.array([1.0, 2.0, 3.0])
    with pytest.raises((IndexError, OverflowError)):
        w[np.uint64(2**64 - 1)]
    g = sg.grad(lambda w, i: np.sum(w[i] * 2.0))
    for i in (np.uint64(2**64 - 1), 2**64 - 1, np.array([0, 2**63], dtype=np.uint64)):
        with pytest.raises(sg.InputError, match="do not fit int64"):
            g(w, i)
    for i in (3, -4, np.array([0, 5])):
        with pytest.raises(IndexError, match="out of bounds"):
            g(w, i)
    np.testing.assert_array_equal(g(w, np.uint64(2)), [0.0, 0.0, 2.0])
    np.testing.assert_array_equal(g(w, -1), [0.0, 0.0, 2.0])
