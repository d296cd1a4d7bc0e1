"""Reverse mode of ``scan`` reads the forward step's residuals (stacked by the forward scan)
instead of computing them again, and sums a captured matrix's per-step products after the
loop as one matrix product (symgrad.ops.loops, symgrad.transforms.loops): gradients,
Hessians and every backend against jax.lax.scan."""

from __future__ import annotations

import importlib
import re

import numpy as np
import pytest

import symgrad as sg
from symgrad.ir.body import Body
from symgrad.ops.loops import ScanParts

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.usefixtures("x64")  # float64 in JAX, restored after the module
jnp = jax.numpy
RNG = np.random.default_rng(7)
H, NI, T = 4, 3, 6


def _lstm(np_, scan, U, W, b, xs, h0, reverse=False):
    """An LSTM step: ``U @ h`` (an outer product per step in U's adjoint), ``W @ x``."""
    def step(carry, x):
        h, c = carry
        z = U @ h + W @ x + b
        i, f, o = (1.0 / (1.0 + np_.exp(-z[k * H:(k + 1) * H])) for k in range(3))
        c = f * c + i * np_.tanh(z[3 * H:])
        h = o * np_.tanh(c)
        return (h, c), np_.sum(h ** 2)

    (h, c), ys = scan(step, (h0, h0 * 0.5), xs, reverse=reverse)
    return np_.sum(ys) + np_.sum(h * c)


def _batched(np_, scan, U, W, xs, h0):
    """Rows of a batch: ``h @ U`` (``h.T @ dz`` per step), ``x @ W`` with x (B, NI)."""
    def step(h, x):
        h = np_.tanh(h @ U + x @ W)
        return h, np_.sum(np_.exp(-h ** 2))

    h, ys = scan(step, h0, xs)
    return np_.sum(ys) + np_.sum(h)


def _values():
    return {"U": RNG.normal(size=(4 * H, H)) * 0.4, "W": RNG.normal(size=(4 * H, NI)) * 0.4,
            "b": RNG.normal(size=4 * H) * 0.1, "xs": RNG.normal(size=(T, NI)),
            "h0": RNG.normal(size=H) * 0.3}


def _lstm_vars():
    return (sg.var("U", (4 * H, H)), sg.var("W", (4 * H, NI)), sg.var("b", (4 * H,)),
            sg.var("xs", (T, NI)), sg.var("h0", (H,)))


def _reads_a_scan(nodes, i: int) -> bool:
    """Whether scan call ``i`` reads a result of another scan call."""
    return any(nodes[a].op == "result" and nodes[nodes[a].args[0]].op == "scan"
               for a in nodes[i].args)


def _reverse_bodies(outs) -> list[Body]:
    """The bodies of the backward loops among the ancestors of ``outs`` (the scans that
    scan results of another)."""
    graph = outs[0].graph
    nodes = graph.nodes
    return list({nodes[i].attrs["body"] for i in graph.ancestors([o.node for o in outs])
                 if nodes[i].op == "scan" and _reads_a_scan(nodes, i)})


def _ops(body: Body) -> list[str]:
    return [n.op for n in body.graph.nodes]


@pytest.mark.parametrize("reverse", [False, True])
def test_lstm_gradient_matches_jax_and_reads_its_residuals(reverse):
    values = _values()
    names = ["U", "W", "b", "xs", "h0"]
    f = _lstm(sg.numpy, sg.scan, *_lstm_vars(), reverse=reverse)
    grads = sg.grad(f, [f.graph.expr(f.graph.variables[n]) for n in names])
    want = jax.grad(lambda *v: _lstm(jnp, jax.lax.scan, *v, reverse=reverse),
                    argnums=tuple(range(5)))(*[values[n] for n in names])
    for got in (sg.evaluate(grads, values), sg.compile(grads, names)(
            *[values[n] for n in names])):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    # the backward step takes exp and tanh of the forward step as operands
    (back,) = _reverse_bodies(grads)
    assert "exp" not in _ops(back) and "tanh" not in _ops(back) and "outer" not in _ops(back)
    src = sg.to_source(grads, names)
    backward = src[src.index("def _sg_loop2("):src.index("def f(")]
    assert "np.exp" not in backward and "np.tanh" not in backward
    assert "np.multiply.outer" not in backward  # U's and W's products after the loop
    forward = src[src.index("def _sg_loop1("):src.index("def _sg_loop2(")]
    assert ".append(" in forward  # residuals reach the backward loop as lists of arrays


def test_captured_matrices_are_one_product_after_the_loop():
    values = _values()
    f = _lstm(sg.numpy, sg.scan, *_lstm_vars())
    U = f.graph.expr(f.graph.variables["U"])
    src = sg.to_source(sg.grad(f, U), ["U", "W", "b", "xs", "h0"])
    loop_end = src.index("def f(")
    assert " @ " in src[loop_end:]  # sum_t outer(dz_t, h_t) = dz.T @ h
    assert src[:loop_end].count("_sg_loop") >= 2
    got = sg.compile(sg.grad(f, U), ["U", "W", "b", "xs", "h0"])(*values.values())
    want = jax.grad(lambda u: _lstm(jnp, jax.lax.scan, u, *list(values.values())[1:]))(
        values["U"])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_batched_rows_gradient_matches_jax_on_every_backend():
    B = 2
    values = {"U": RNG.normal(size=(H, H)) * 0.5, "W": RNG.normal(size=(NI, H)) * 0.5,
              "xs": RNG.normal(size=(T, B, NI)), "h0": RNG.normal(size=(B, H))}
    names = list(values)
    U, W = sg.var("U", (H, H)), sg.var("W", (NI, H))
    xs, h0 = sg.var("xs", (T, B, NI)), sg.var("h0", (B, H))
    f = _batched(sg.numpy, sg.scan, U, W, xs, h0)
    grads = sg.grad(f, [U, W, xs, h0])
    want = jax.grad(lambda *v: _batched(jnp, jax.lax.scan, *v), argnums=(0, 1, 2, 3))(
        *values.values())
    for g, w in zip(sg.evaluate(grads, values), want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    for backend in ("numpy", "jax", "torch", "numba"):
        got = sg.compile(grads, names, backend=backend)(*values.values())
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)
    (back,) = _reverse_bodies(grads)
    assert "tanh" not in _ops(back) and "exp" not in _ops(back)


def test_hessian_and_hvp_through_residuals_and_products_match_jax():
    values = _values()
    v0 = RNG.normal(size=(4 * H, H))
    rest = [values[n] for n in ("W", "b", "xs", "h0")]
    U, W, b, xs, h0 = _lstm_vars()
    f = _lstm(sg.numpy, sg.scan, U, W, b, xs, h0)
    fun = lambda u: _lstm(jnp, jax.lax.scan, u, *rest)  # noqa: E731
    want = jax.jvp(jax.grad(fun), (values["U"],), (v0,))[1]
    np.testing.assert_allclose(sg.evaluate(sg.hvp(f, U, v0), values), want, rtol=1e-9,
                               atol=1e-12)
    want_h = jax.hessian(lambda h: _lstm(jnp, jax.lax.scan, *[values[n] for n in
                                                              ("U", "W", "b", "xs")], h))(
        values["h0"])
    np.testing.assert_allclose(sg.evaluate(sg.hessian(f, h0), values), want_h, rtol=1e-9,
                               atol=1e-12)


def test_a_large_stack_keeps_the_sum_in_the_carry(monkeypatch):
    """Over STACK_ELEMENTS the per-step products are summed in the backward loop's carry
    (an outer product per step), and the gradient is the same."""
    loops = importlib.import_module("symgrad.transforms.loop_steps")
    values = _values()
    want = jax.grad(lambda u: _lstm(jnp, jax.lax.scan, u, *list(values.values())[1:]))(
        values["U"])
    monkeypatch.setattr(loops, "STACK_ELEMENTS", 0)
    f = _lstm(sg.numpy, sg.scan, *_lstm_vars())
    g = sg.grad(f, f.graph.expr(f.graph.variables["U"]))
    assert any("outer" in _ops(b) for b in _reverse_bodies([g]))
    np.testing.assert_allclose(sg.evaluate(g, values), want, rtol=1e-10, atol=1e-12)


def test_a_checkpointed_scan_saves_no_inner_loop_results():
    """checkpoint=k: the segments' loops are computed again in the backward pass, never
    stacked by the outer loop (that would store every step)."""
    w = sg.var("w", shape=(3,))
    c, _ = sg.scan(lambda c, _: (sg.tanh(c * w + 0.1), None), w, length=12, checkpoint=4)
    g = sg.grad(sg.sum(c), w)
    graph = g.graph
    nodes = graph.nodes
    for i in graph.ancestors([g.node]):
        n = nodes[i]
        if n.op == "scan":
            inner = n.attrs["body"].graph.nodes
            for s in n.attrs["stacked"]:  # no result of a loop inside the step
                assert inner[s].op != "result" or inner[inner[s].args[0]].op != "scan"
    w0 = RNG.normal(size=3)

    def fun(v):
        x = v
        for _ in range(12):
            x = np.tanh(x * v + 0.1)
        return np.sum(x)

    fd = [(fun(w0 + e) - fun(w0 - e)) / 2e-6 for e in np.eye(3) * 1e-6]
    np.testing.assert_allclose(sg.evaluate(g, {"w": w0}), fd, rtol=1e-7)


def test_a_step_of_scalars_stores_no_residuals():
    """Over Python floats the backward step computes its cos again from the stored carry
    (about as cheap as storing it): the forward loop stores the carry and nothing else."""
    x = sg.var("x")
    h, _ = sg.scan(lambda h, _: (sg.sin(h) * h + sg.cos(h), None), x, length=30)
    src = sg.to_source([h, sg.grad(h, x)], [x])
    forward = src.split("def _sg_loop1_math")[1].split("return")[0]
    backward = src.split("def _sg_loop2_math")[1].split("return")[0]
    assert forward.count("_append(") == 1 and "for c1 in reversed(_x0):" in backward
    assert "_m_cos(c1)" in backward and "sin" not in backward


def test_the_forward_loop_runs_once_with_its_residuals():
    """The value and the residuals come from one forward loop (one call, several results)
    in emitted code and in the interpreter."""
    x = sg.var("x", shape=(3,))
    c, _ = sg.scan(lambda c, _: (sg.exp(sg.sin(c)) * x, None), x, length=5)
    f = sg.sum(c)
    src = sg.to_source([f, sg.grad(f, x)], [x])
    assert src.count("def _sg_loop") == 2 and src.count("_sg_loop1(") == 2  # def + one call
    x0 = RNG.normal(size=3)
    got = sg.evaluate([f, sg.grad(f, x)], {"x": x0})
    fun = lambda v: sg.evaluate(f, {"x": v})  # noqa: E731
    fd = [(fun(x0 + e) - fun(x0 - e)) / 2e-6 for e in np.eye(3) * 1e-6]
    np.testing.assert_allclose(got[1], fd, rtol=1e-7)
    assert r"e^{\sin" in sg.latex(sg.grad(f, x))  # a residual part: the step's value, stacked


def test_reverse_over_reverse_seeds_the_residuals_and_matches_jax():
    """A gradient of a gradient: the outer reverse pass reaches the forward scan through
    its residual results (seeded parts of the scan) and gives JAX's value."""
    def loss(np_, scan, w, x0):
        def step(c, t):
            return np_.tanh(w @ c) * t + 0.1 * np_.exp(-c * c), np_.sum(np_.sin(c) ** 2)

        c, ys = scan(step, x0, np.linspace(0.5, 1.5, 6))
        return np_.sum(c) + np_.sum(ys)

    w0, x00 = RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=3)
    w, x0 = sg.var("w", shape=(3, 3)), sg.var("x0", shape=3)
    f = loss(sg, sg.scan, w, x0)
    gg = sg.grad(sg.sum(sg.grad(f, w) ** 2) + sg.sum(sg.grad(f, x0) ** 3), [w, x0])

    def outer(wv, xv):
        gw, gx = jax.grad(lambda a, b: loss(jnp, jax.lax.scan, a, b), argnums=(0, 1))(wv, xv)
        return jnp.sum(gw ** 2) + jnp.sum(gx ** 3)

    want = jax.grad(outer, argnums=(0, 1))(w0, x00)
    for got in (sg.evaluate(gg, {"w": w0, "x0": x00}), sg.compile(gg, ["w", "x0"])(w0, x00)):
        for g, ref in zip(got, want):
            np.testing.assert_allclose(g, ref, rtol=1e-10, atol=1e-12)


def _rnn(np_, scan, U, V, xs, h0, reverse=False):
    """``h <- tanh(U @ h + x)``: the tanh the backward step reads is the next carry, and a
    factor of V's per-step products ``outer(dy, h_new)``."""
    def step(h, x):
        new = np_.tanh(U @ h + x)
        return new, np_.sum(np_.sin(V @ new)) + np_.sum(h * x)

    h, ys = scan(step, h0, xs, reverse=reverse)
    return np_.sum(h ** 2) + np_.sum(ys)


def _stacks(outs, shape: tuple) -> list[tuple[str, int]]:
    """The results of shape ``shape`` the gradient reads of the forward scans (those
    scanning no scan's results) among the ancestors of ``outs``: what each is
    (:meth:`~symgrad.ops.loops.ScanParts.kind`)."""
    graph = outs[0].graph
    nodes = graph.nodes
    found = set()
    for i in graph.ancestors([o.node for o in outs]):
        n = nodes[i]
        if n.op == "result" and n.shape == shape:
            call = nodes[n.args[0]]
            if call.op == "scan" and not _reads_a_scan(nodes, call.id):
                found.add(ScanParts.of(call.attrs).kind(n.attrs["index"]))
    return sorted(found)


@pytest.mark.parametrize("length", [T, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_a_residual_that_is_the_next_carry_is_read_from_the_stored_carries(reverse, length):
    """The tanh of ``h <- tanh(U @ h + x)`` is the carry entering the next step: the
    forward loop stacks the carries once (no residual stack beside them), the backward
    loop carries the one it read the step before (the final carry first), and V's
    products after the loop read the stored carries shifted by one step."""
    values = {"U": RNG.normal(size=(H, H)) * 0.5, "V": RNG.normal(size=(2, H)),
              "xs": RNG.normal(size=(length, H)), "h0": RNG.normal(size=H)}
    names = list(values)
    U, V, h0 = sg.var("U", (H, H)), sg.var("V", (2, H)), sg.var("h0", (H,))
    xs = sg.var("xs", (length, H))
    f = _rnn(sg.numpy, sg.scan, U, V, xs, h0, reverse)
    grads = sg.grad(f, [U, V, xs, h0])
    assert _stacks(grads, (length, H)) == [("stored", 0)]  # no residual stack beside them
    want = jax.grad(lambda *v: _rnn(jnp, jax.lax.scan, *v, reverse), argnums=(0, 1, 2, 3))(
        *values.values())
    results = [sg.evaluate(grads, values)]
    if length > 1:
        results += [sg.compile(grads, names, backend=b)(*values.values())
                    for b in ("numpy", "jax", "torch", "numba")]
    for got in results:
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)
    if length == 1:
        return
    src = sg.to_source([f, *grads], names, backend="numba")  # f's sum: a fused kernel
    forward = src[src.index("def _sg_loop1_jit("):src.index("def _sg_loop1(")]
    assert forward.count(f"np.empty(({T}, {H})") == 1  # the stored carries only
    calls = re.findall(r"\n +[\w, ]+ = _sg_loop\d+\(", src)
    assert len(calls) == 2  # each loop runs once (a call per scan, not one per result)
    want_h = jax.hessian(lambda h: _rnn(jnp, jax.lax.scan, values["U"], values["V"],
                                        values["xs"], h, reverse))(values["h0"])
    np.testing.assert_allclose(sg.evaluate(sg.hessian(f, h0), values), want_h, rtol=1e-9,
                               atol=1e-12)


def test_a_residual_that_is_a_per_step_result_is_read_from_its_stack():
    """The tanh of ``y = tanh(V @ h)`` is a y and what y's backward step reads: the
    forward loop stacks it once, as the ys."""
    def loss(np_, scan, V, xs, h0):
        def step(h, x):
            new = np_.sin(h) * x
            return new, np_.tanh(V @ new)

        h, ys = scan(step, h0, xs)
        return np_.sum(h) + np_.sum(ys ** 2)

    values = {"V": RNG.normal(size=(2, H)), "xs": RNG.normal(size=(T, H)),
              "h0": RNG.normal(size=H)}
    V, xs, h0 = sg.var("V", (2, H)), sg.var("xs", (T, H)), sg.var("h0", (H,))
    grads = sg.grad(loss(sg.numpy, sg.scan, V, xs, h0), [V, xs, h0])
    assert _stacks(grads, (T, 2)) == [("y", 0)]  # the ys, not a residual stack
    want = jax.grad(lambda *v: loss(jnp, jax.lax.scan, *v), argnums=(0, 1, 2))(
        *values.values())
    for got in (sg.evaluate(grads, values), sg.compile(grads, list(values))(*values.values())):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
