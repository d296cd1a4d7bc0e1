"""sg.scan and sg.fori_loop: values, gradients, JVPs, HVPs and Hessians against
jax.lax.scan (when installed) and finite differences."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

import symgrad as sg
from symgrad.frontend.loops import LoopError
from tests.support.finite_differences import central

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.usefixtures("x64")  # float64 in JAX, restored after the module
jnp = jax.numpy
RNG = np.random.default_rng(0)


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
    np.testing.assert_allclose(sg.evaluate(sg.grad(f, w), {"w": w0}), central(fun, w0),
                               rtol=1e-7)
    rows = [central(lambda v, k=k: sg.evaluate(sg.grad(f, w), {"w": v})[k], w0) for k in range(2)]
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
    np.testing.assert_allclose(ns["grad0"], central(loss, q0, 1e-7), rtol=1e-5)


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
    result (a scan is one call: its rule gets the adjoints of all its results at once)."""
    x = sg.var("x", shape=3)
    (c, d), (y1, y2) = sg.scan(lambda c, _: ((sg.sin(c[0]) * c[1], c[0] * x), c), (x, x),
                               length=5)
    f = sg.sum(c) + sg.sum(d) + sg.sum(y1) + sg.sum(y2 ** 2)
    src = sg.to_source([f, sg.grad(f, x)])
    assert src.count("def _sg_loop") == 2  # the forward loop and one backward loop
    x0 = RNG.normal(size=3)
    fun = lambda v: sg.evaluate(f, {"x": v})  # noqa: E731
    np.testing.assert_allclose(sg.compile([f, sg.grad(f, x)])(x0)[1], central(fun, x0), rtol=1e-7)


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


# -- one call, one node, one run -----------------------------------------------------------


def _scans(outs) -> list:
    """The scan call nodes among the ancestors of ``outs``."""
    graph = outs[0].graph
    return [graph.nodes[i] for i in graph.ancestors([graph.find(o) for o in outs])
            if graph.nodes[i].op == "scan"]


def _two_by_two(np_, scan, w, xs):
    """A scan with two carries and two stacked per-step results."""
    def step(c, x):
        a, b = c
        a2 = np_.tanh(a * w + x)
        b2 = b * a2 + x
        return (a2, b2), (a2 * b2, np_.sum(np_.exp(a2)))

    (a, b), (y1, y2) = scan(step, (w, w * 0.5), xs)
    return np_.sum(a * b) + np_.sum(y1) + np_.sum(y2 ** 2)


def _loop_runs(fn) -> dict:
    """Calls of each loop function of compiled ``fn``'s module from now on (the module's
    ``_sg_loopN``, wrapped where the code looks them up); under ``("driver", name)`` those
    the driver ``fn.raw`` makes itself (a loop function may also be a step's inner loop)."""
    found = fn.raw.__globals__
    runs: dict = {}
    driver = fn.raw.__code__
    for name in [k for k in found if k.startswith("_sg_loop") and k[8:].isdigit()]:
        def counted(*args, _f=found[name], _name=name):
            runs[_name] = runs.get(_name, 0) + 1
            if sys._getframe(1).f_code is driver:
                runs["driver", _name] = runs.get(("driver", _name), 0) + 1
            return _f(*args)

        found[name] = counted
    return runs


def _interpreter_runs(monkeypatch) -> list:
    """The bodies of the scans the interpreter runs from now on, one entry per run."""
    from symgrad.ops import loops

    runs: list = []
    real = loops.run_scan
    monkeypatch.setattr(loops, "run_scan", lambda body, *a: runs.append(body) or real(body, *a))
    return runs


def test_a_scan_with_two_carries_and_two_results_is_one_node(monkeypatch):
    """Its four results are projections of ONE scan node; value and gradient hold one
    forward loop and one reverse loop (the forward call reverse mode asks for, with the
    stored carries and residuals, is the primal's: the interpreter and compiled code run
    it once for both)."""
    w, xs = sg.var("w", (3,)), sg.var("xs", (6, 3))
    (a, b), (y1, y2) = sg.scan(lambda c, x: ((sg.tanh(c[0] * w + x), c[1] * c[0]),
                                            (c[0] * c[1], sg.sum(c[0]))), (w, w * 0.5), xs)
    assert len(_scans([a, b, y1, y2])) == 1
    assert {e.op for e in (a, b, y1, y2)} == {"result"}
    f = _two_by_two(sg.numpy, sg.scan, w, xs)
    outs = [f, *sg.grad(f, [w, xs])]
    values = {"w": RNG.normal(size=3), "xs": RNG.normal(size=(6, 3))}
    want_f = _two_by_two(jnp, jax.lax.scan, values["w"], values["xs"])
    want = jax.grad(lambda *v: _two_by_two(jnp, jax.lax.scan, *v), argnums=(0, 1))(
        values["w"], values["xs"])
    runs = _interpreter_runs(monkeypatch)
    got = sg.evaluate(outs, values)
    assert len(runs) == 2 and len(set(runs)) == 2  # one forward, one reverse
    fn = sg.compile(outs, ["w", "xs"])
    calls = _loop_runs(fn)
    compiled = fn(*values.values())
    assert sorted(v for k, v in calls.items() if isinstance(k, str)) == [1, 1]
    for result in (got, compiled):
        np.testing.assert_allclose(result[0], want_f, rtol=1e-12)
        for g, r in zip(result[1:], want):
            np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-13)
    from symgrad.passes.calls import merged

    bodies = [n.attrs["body"] for n in _scans(outs)]
    assert len(bodies) == 3 and len(set(bodies)) == 2  # the primal's call, reverse mode's
    graph = outs[0].graph
    new, (ids,) = merged(graph, [[graph.find(o) for o in outs]])
    bodies = [new.nodes[i].attrs["body"] for i in new.ancestors(ids) if new.nodes[i].op == "scan"]
    assert len(bodies) == 2 and len(set(bodies)) == 2  # one call each: forward, reverse


def test_the_interpreter_runs_each_call_once(monkeypatch):
    """Every result of a scan, and a reverse mode's stacked carries, from one run of the
    loop; a call that is not needed is not run."""
    w = sg.var("w", (3,))
    c, ys = sg.scan(lambda c, _: (sg.tanh(c * w + 0.1), c * c), w, length=5)
    g = sg.grad(sg.sum(c) + sg.sum(ys), w)
    runs = _interpreter_runs(monkeypatch)
    v = np.array([0.5, -1.0, 2.0])
    got = sg.evaluate([c, ys, c[0] + ys[1, 2]], {"w": v})
    assert len(runs) == 1
    runs.clear()
    sg.evaluate([ys, g], {"w": v})
    assert len(runs) == 2  # the forward loop (primal and stacked carries), the reverse one
    runs.clear()
    sg.evaluate(g, {"w": v})
    assert len(runs) == 2
    c0 = v
    for _ in range(5):
        c0 = np.tanh(c0 * v + 0.1)
    np.testing.assert_allclose(got[0], c0, rtol=1e-14)


def _fluid_step(np_, vx, vy, smoke):
    """A stable-fluids step (Stam's scheme on a periodic grid): the velocities are carried
    along themselves (semi-Lagrangian: each cell reads the bilinear interpolation at the
    point the flow came from, indices computed from the values), made divergence-free by
    Jacobi sweeps of the pressure equation, and carry the smoke along."""
    n = vx.shape[0]

    def shift(f, k, axis):
        return np_.roll(f, k, axis=axis)

    def carried(f, u, v):
        rows, cols = np_.meshgrid(np_.arange(n), np_.arange(n))
        x, y = np_.ravel(cols - u), np_.ravel(rows - v)
        i, j = np_.floor(x).astype(int), np_.floor(y).astype(int)
        a, b = x - i, y - j
        i0, j0, i1, j1 = i % n, j % n, (i + 1) % n, (j + 1) % n
        out = ((1 - a) * ((1 - b) * f[i0, j0] + b * f[i0, j1])
               + a * ((1 - b) * f[i1, j0] + b * f[i1, j1]))
        return np_.reshape(out, (n, n))

    vx, vy = carried(vx, vx, vy), carried(vy, vx, vy)
    div = -0.5 * (shift(vx, -1, 0) - shift(vx, 1, 0) + shift(vy, -1, 1) - shift(vy, 1, 1))
    p = np_.zeros((n, n))
    for _ in range(10):
        p = 0.25 * (div + shift(p, 1, 0) + shift(p, -1, 0) + shift(p, 1, 1) + shift(p, -1, 1))
    vx = vx - 0.5 * (shift(p, -1, 0) - shift(p, 1, 0))
    vy = vy - 0.5 * (shift(p, -1, 1) - shift(p, 1, 1))
    return vx, vy, carried(smoke, vx, vy)


def _fluid(np_, vx, vy, smoke, steps=30):
    for _ in range(steps):
        vx, vy, smoke = _fluid_step(np_, vx, vy, smoke)
    return np_.mean(smoke ** 2) + np_.mean(vx * vy)


def _top_level_runs(fn, runs: dict) -> list[int]:
    """The counts of ``runs`` (:func:`_loop_runs`) of the loop functions ``fn``'s own code
    calls (not those a loop calls inside its steps)."""
    src = fn.source
    driver = src[src.rindex("\ndef "):]
    names = set(re.findall(r"= (_sg_loop\d+)\(", driver))
    return sorted(runs.get(("driver", name), 0) for name in names)


@pytest.mark.parametrize("backend", ["interpreter", "numpy", "numba"])
def test_a_rolled_python_loop_runs_its_forward_and_reverse_scans_once(backend, monkeypatch):
    """A Python loop of 30 stable-fluids steps, rolled: value and gradient run the time
    loop forward once and backward once, evaluated and compiled, and every other loop the
    function calls (the pressure sweeps of the step left outside the time loop) once too.
    A value every step shares, the first sweep's ``roll(zeros)``, stays outside the loops
    that read it: the time loop is not built twice."""
    from symgrad.passes.pipeline import loop_stage

    if backend == "numba":
        pytest.importorskip("numba")
    n = 6
    names = ["vx", "vy", "smoke"]
    xs = [sg.var(name, (n, n)) for name in names]
    (f,) = loop_stage([_fluid(sg.numpy, *xs)])
    outs = [f, *sg.grad(f, xs)]
    steps = {call.attrs["length"] for call in _scans([f])}
    assert 29 in steps or 30 in steps  # the time loop, rolled
    values = {name: RNG.normal(size=(n, n)) * 0.3 for name in names}
    if backend == "interpreter":
        runs = _interpreter_runs(monkeypatch)
        got = sg.evaluate(outs, values)
        time_loops = [b for b in runs if len(b.graph) > 100]  # the time loop's bodies
        assert len(time_loops) == 2 and len(set(time_loops)) == 2  # forward, reverse
    else:
        fn = sg.compile(outs, names, backend=backend)
        runs = _loop_runs(fn)
        got = fn(*values.values())
        assert set(_top_level_runs(fn, runs)) == {1}, runs  # each loop the driver calls: once
    want = _fluid(np, *values.values())
    np.testing.assert_allclose(got[0], want, rtol=1e-12)
    h = 1e-6
    for k in range(len(names)):
        e = np.zeros((n, n))
        e[1, 2] = h
        args = list(values.values())
        fd = (_fluid(np, *[a + e if m == k else a for m, a in enumerate(args)])
              - _fluid(np, *[a - e if m == k else a for m, a in enumerate(args)])) / (2 * h)
        np.testing.assert_allclose(got[1 + k][1, 2], fd, rtol=1e-5, atol=1e-8)


def test_evaluating_a_final_carry_keeps_no_stack_of_the_carries():
    """The final carry of a 10^4-step loop over 10^3 values: the interpreter keeps one
    carry, not every step's (80 MB stacked)."""
    import tracemalloc

    x = sg.var("x", (1000,))
    c, _ = sg.scan(lambda c, _: (sg.sin(c) * 0.5 + c * 0.25, None), x, length=10_000)
    v = RNG.normal(size=1000)
    tracemalloc.start()
    try:
        got = sg.evaluate(c, {"x": v})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    stacked = 10_000 * v.nbytes
    assert peak < stacked / 100, peak
    want = v
    for _ in range(10_000):
        want = np.sin(want) * 0.5 + want * 0.25
    np.testing.assert_allclose(got, want, rtol=1e-12)
