"""sg.scan and sg.fori_loop: values, gradients, JVPs, HVPs and Hessians against
jax.lax.scan (when installed) and finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.frontend.loops import LoopError

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.usefixtures("x64")  # float64 in JAX, restored after the module
jnp = jax.numpy
RNG = np.random.default_rng(0)


def _fd(fun, x, h=1e-6):
    """Central differences of scalar ``fun`` at array ``x``."""
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = h
        g[k] = (fun(x + e) - fun(x - e)) / (2 * h)
    return g


def _step(np_):
    """A step with a pytree carry (dict) and pytree outputs (tuple), for either namespace."""
    def step(c, x):
        a = np_.sin(c["a"]) * x[0] + c["b"] * 0.5
        b = np_.cos(c["b"] * x[1]) + a
        return {"a": a, "b": b}, (a * b, x[0] + b)
    return step


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("length", [0, 1, 5])
def test_pytree_value_and_grad_match_jax(reverse, length):
    a0, b0 = RNG.normal(size=3), RNG.normal(size=3)
    xs0 = RNG.normal(size=(length, 3))
    xs1 = RNG.normal(size=(length, 3))

    def loss(np_, scan, a, b, xa, xb):
        c, (y1, y2) = scan(_step(np_), {"a": a, "b": b}, (xa, xb), reverse=reverse)
        return np_.sum(c["a"] * c["b"]) + np_.sum(y1 ** 2) + np_.sum(np_.tanh(y2))

    want = loss(jnp, jax.lax.scan, a0, b0, xs0, xs1)
    want_g = jax.grad(lambda *v: loss(jnp, jax.lax.scan, *v), argnums=(0, 1, 2, 3))(
        a0, b0, xs0, xs1)
    a, b = sg.var("a", shape=3), sg.var("b", shape=3)
    xa, xb = sg.var("xa", shape=(length, 3)), sg.var("xb", shape=(length, 3))
    f = loss(sg, sg.scan, a, b, xa, xb)
    grads = sg.grad(f, [a, b, xa, xb])
    inputs = {"a": a0, "b": b0, "xa": xs0, "xb": xs1}
    got = sg.evaluate([f, *grads], inputs)
    np.testing.assert_allclose(got[0], want, rtol=1e-12)
    for g, w in zip(got[1:], want_g):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    f.graph.verify()


def test_jvp_hvp_hessian_match_jax():
    def loss(np_, scan, w, x0):
        def step(c, t):
            return np_.tanh(w @ c) * t + 0.1 * c, np_.sum(c ** 2)
        c, ys = scan(step, x0, jnp.linspace(0.5, 1.5, 6) if np_ is jnp else
                     np.linspace(0.5, 1.5, 6))
        return np_.sum(c) + np_.sum(ys)

    w0, x00 = RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=3)
    w, x0 = sg.var("w", shape=(3, 3)), sg.var("x0", shape=3)
    f = loss(sg, sg.scan, w, x0)
    jfun = lambda w, x: loss(jnp, jax.lax.scan, w, x)  # noqa: E731
    inputs = {"w": w0, "x0": x00}
    v0 = RNG.normal(size=3)
    _, want_jvp = jax.jvp(lambda x: jfun(w0, x), (x00,), (v0,))
    got_jvp = sg.evaluate(sg.jvp(f, x0, v0), inputs)
    np.testing.assert_allclose(got_jvp, want_jvp, rtol=1e-10)
    want_h = jax.hessian(jfun, argnums=1)(w0, x00)
    np.testing.assert_allclose(sg.evaluate(sg.hessian(f, x0), inputs), want_h, rtol=1e-9,
                               atol=1e-12)
    want_hw = jax.hessian(jfun, argnums=0)(w0, x00).reshape(9, 9)
    got_hw = sg.evaluate(sg.hessian(f, w), inputs).reshape(9, 9)
    np.testing.assert_allclose(got_hw, want_hw, rtol=1e-9, atol=1e-12)
    got_hvp = sg.evaluate(sg.hvp(f, x0, v0), inputs)
    np.testing.assert_allclose(got_hvp, want_h @ v0, rtol=1e-9, atol=1e-12)


def test_nested_scan_matches_finite_differences():
    w = sg.var("w", shape=2)

    def inner(c, x):
        return c * sg.cos(x + w[1]), c

    def outer(c, x):
        d, ys = sg.scan(inner, c + x, np.array([0.1, 0.2, 0.3]))
        return d * w[0], sg.sum(ys)

    c, ys = sg.scan(outer, 1.0, np.array([0.5, -0.25]))
    f = c + sg.sum(ys ** 2)
    w0 = np.array([0.8, 0.3])
    fun = lambda v: sg.evaluate(f, {"w": v})  # noqa: E731
    np.testing.assert_allclose(sg.evaluate(sg.grad(f, w), {"w": w0}), _fd(fun, w0),
                               rtol=1e-7)
    rows = [_fd(lambda v, k=k: sg.evaluate(sg.grad(f, w), {"w": v})[k], w0) for k in range(2)]
    np.testing.assert_allclose(sg.evaluate(sg.hessian(f, w), {"w": w0}), np.stack(rows),
                               rtol=1e-6)


def test_float32_scan_keeps_its_dtype_and_gradient():
    x = sg.var("x", shape=4, dtype="float32")
    c, ys = sg.scan(lambda c, xi: (c * 0.9 + sg.sin(xi), c), np.float32(0.0), x)
    assert c.dtype == "float32" and ys.dtype == "float32"
    f = c + sg.sum(ys)
    x0 = np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32)
    want = jax.grad(lambda v: jnp.sum(jnp.stack(jax.lax.scan(
        lambda c, xi: (c * 0.9 + jnp.sin(xi), c), jnp.float32(0.0), v)[1])) + jax.lax.scan(
        lambda c, xi: (c * 0.9 + jnp.sin(xi), c), jnp.float32(0.0), v)[0])(x0)
    got = sg.evaluate(sg.grad(f, x), {"x": x0})
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_fori_loop_matches_jax():
    x = sg.var("x", shape=5)
    s = sg.fori_loop(1, 5, lambda i, acc: acc * 0.5 + x[i] * x[i - 1], 0.0)
    x0 = RNG.normal(size=5)
    want = jax.grad(lambda v: jax.lax.fori_loop(
        1, 5, lambda i, acc: acc * 0.5 + v[i] * v[i - 1], 0.0))(x0)
    np.testing.assert_allclose(sg.evaluate(sg.grad(s, x), {"x": x0}), want, rtol=1e-12)


def test_identical_scans_are_one_node():
    x = sg.var("x")
    a, _ = sg.scan(lambda c, _: (sg.sin(c) * x, None), x, length=7)
    b, _ = sg.scan(lambda c, _: (sg.sin(c) * x, None), x, length=7)
    assert a.graph is b.graph and a.node == b.node


def test_captured_values_stay_out_of_the_users_graph():
    x = sg.var("x", shape=3)
    c, _ = sg.scan(lambda c, _: (c * x, None), x, length=2)
    assert sorted(c.graph.variables) == ["x"]


@pytest.mark.parametrize("bad, match", [
    (lambda: sg.scan(lambda c, x: c, 0.0, length=2), "pair"),
    (lambda: sg.scan(lambda c, x: ((c, c), None), 0.0, length=2), "structure"),
    (lambda: sg.scan(lambda c, x: (c, None), 0.0), "length"),
    (lambda: sg.scan(lambda c, x: (c, None), 0.0, np.zeros(3), length=4), "length"),
    (lambda: sg.fori_loop(0, sg.var("n"), lambda i, v: v, 0.0), "Python int"),
])
def test_mistakes_are_clear_errors(bad, match):
    with pytest.raises(sg.SymgradError, match=match):
        bad()


def test_carry_dtype_change_is_an_error():
    with pytest.raises(sg.ShapeError, match="keep init's"):
        sg.scan(lambda c, x: (c * np.ones(2), None), 0.0, length=2)
    assert issubclass(LoopError, sg.SymgradError)


def _emitted_case():
    """A loss over a pytree scan (reverse=True), a nested scan and their gradients."""
    a, b = sg.var("a", shape=3), sg.var("b", shape=3)
    xa, xb = sg.var("xa", shape=(4, 3)), sg.var("xb", shape=(4, 3))
    c, (y1, y2) = sg.scan(_step(sg), {"a": a, "b": b}, (xa, xb), reverse=True)

    def outer(s, x):
        inner, _ = sg.scan(lambda t, _: (sg.sin(t) * s + x, None), s, length=3)
        return inner, sg.sum(inner)

    d, zs = sg.scan(outer, a, xb)
    f = sg.sum(c["a"] * c["b"]) + sg.sum(y1 ** 2) + sg.sum(sg.tanh(y2)) + sg.sum(zs)
    f = f + sg.sum(d)
    inputs = {"a": RNG.normal(size=3), "b": RNG.normal(size=3),
              "xa": RNG.normal(size=(4, 3)), "xb": RNG.normal(size=(4, 3))}
    return [f, *sg.grad(f, [a, b, xa, xb])], ["a", "b", "xa", "xb"], inputs


@pytest.mark.parametrize("backend", ["numpy", "jax", "torch", "array_api"])
def test_every_backend_runs_a_scan(backend):
    outs, names, inputs = _emitted_case()
    want = sg.evaluate(outs, inputs)
    src = sg.to_source(outs, names, backend=backend)
    assert src.count("for _t in") + src.count("lax.scan(") >= 3
    fn = sg.compile(outs, names, backend=backend)
    got = fn(*[inputs[n] for n in names])
    for g, w in zip(got, want):
        if backend == "numpy":  # the same NumPy calls in the same order
            np.testing.assert_array_equal(np.asarray(g), w)
        else:
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-14)


def test_the_body_is_emitted_once_whatever_the_length():
    x = sg.var("x")
    lines = []
    for n in (10, 10_000):
        h, _ = sg.scan(lambda h, _: (sg.sin(h) * h + sg.cos(h), None), x, length=n)
        lines.append(len(sg.to_source([h, sg.grad(h, x)]).splitlines()))
    assert lines[1] - lines[0] <= 1 and lines[1] < 120  # a `del` of the big tape at most


def test_scalar_loops_run_on_floats_and_fall_back_to_numpy_on_overflow():
    x = sg.var("x")
    h, ys = sg.scan(lambda h, _: (sg.exp(h) * x, h), x, length=4)
    outs = [h, ys, sg.grad(h, x)]
    src = sg.to_source(outs)
    assert "math.exp" in src and "np.exp" in src
    fn = sg.compile(outs)
    for x0 in (0.5, 3.0):  # 3.0 overflows: math raises, the NumPy loop gives inf
        with np.errstate(all="ignore"):
            want = sg.evaluate(outs, {"x": x0})
            got = fn(x0)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), w)


def test_docs_rk4_example_runs_and_its_gradient_is_right():
    """The loops page's RK4 fit runs, and its gradient is the unrolled loop's."""
    from tests.support import docs

    block = docs.block("guide/loops", "sg.scan(")
    ns: dict = {}
    exec(compile(block, "docs/guide/loops.md", "exec"), ns)  # our own documentation
    rk4, steps, dt = ns["rk4"], ns["steps"], ns["dt"]

    def loss(q):
        x, y, total = 10.0, 5.0, 0.0
        for _ in range(steps):
            x, y = rk4(x, y, q, dt)
            total += (x - 10.0) ** 2 + (y - 5.0) ** 2
        return total

    q0 = np.array([1.1, 0.4, 0.1, 0.4])
    np.testing.assert_allclose(ns["loss0"], loss(q0), rtol=1e-12)
    np.testing.assert_allclose(ns["grad0"], _fd(loss, q0, 1e-7), rtol=1e-5)


def test_batched_seeds_jacobians_match_jax():
    """Reverse (identity seed with batch axes) and forward Jacobians of per-step results."""
    w0, x0 = RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(5, 3))

    def ys_of(np_, scan, w, xs):
        return scan(lambda c, x: (np_.tanh(w @ c + x), c * x), np_.ones(3), xs)[1]

    want = jax.jacobian(lambda w: ys_of(jnp, jax.lax.scan, w, x0))(w0)
    w, xs = sg.var("w", shape=(3, 3)), sg.var("xs", shape=(5, 3))
    ys = ys_of(sg.numpy, sg.scan, w, xs)
    for jac in (sg.jacobian(ys, w), sg.jacfwd(ys, w)):
        np.testing.assert_allclose(sg.evaluate(jac, {"w": w0, "xs": x0}), want, rtol=1e-10,
                                   atol=1e-13)


def test_one_backward_loop_for_all_the_results_of_a_scan():
    """A loss over the final carry and the per-step outputs: one reverse scan, not one per
    result (the results of a call are differentiated together: Op.joint)."""
    x = sg.var("x", shape=3)
    (c, d), (y1, y2) = sg.scan(lambda c, _: ((sg.sin(c[0]) * c[1], c[0] * x), c), (x, x),
                               length=5)
    f = sg.sum(c) + sg.sum(d) + sg.sum(y1) + sg.sum(y2 ** 2)
    src = sg.to_source([f, sg.grad(f, x)])
    assert src.count("def _sg_loop") == 2  # the forward loop and one backward loop
    x0 = RNG.normal(size=3)
    fun = lambda v: sg.evaluate(f, {"x": v})  # noqa: E731
    np.testing.assert_allclose(sg.compile([f, sg.grad(f, x)])(x0)[1], _fd(fun, x0), rtol=1e-7)


def test_loop_bodies_go_through_the_functions_passes():
    """compile/to_source rebuild a scan's body through the passes the function around it
    gets: with fast_math=True the W4 step's VJP loses ``t - t`` (exact passes keep it)."""
    x = sg.var("x")
    h, _ = sg.scan(lambda h, _: (sg.sin(h) * h + sg.cos(h), None), x, length=50)
    outs = [h, sg.grad(h, x)]
    exact = sg.to_source(outs, [x])
    fast = sg.to_source(outs, [x], fast_math=True)
    assert any(" - " in ln and ln.split("=")[1].split(" - ")[0].strip()
               == ln.split(" - ")[1].strip() for ln in exact.splitlines() if " = " in ln)
    backward = fast[fast.index("def _sg_loop2_math"):fast.index("def _sg_loop2(")]
    assert " - " not in backward and "sin(" not in backward
    want = sg.evaluate(outs, {"x": 0.3})
    for got, ref in zip(sg.compile(outs, [x], fast_math=True)(0.3), want):
        np.testing.assert_allclose(got, ref, rtol=1e-12)
