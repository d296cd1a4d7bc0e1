"""The loop passes: chains over consecutive slices become one reduction; runs of identical
steps become one scan."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import rosen, rosen_der

import symgrad as sg
import symgrad.numpy as snp
from symgrad.passes.reductions import reduce_chains
from tests.support.finite_differences import central

RNG = np.random.default_rng(21)


def _ops(e: sg.Expr) -> list[str]:
    nodes = e.graph.nodes
    return [nodes[i].op for i in e.graph.ancestors([e.node])]


# -- reductions ---------------------------------------------------------------------------

def test_builtin_sum_of_a_vector_is_one_sum():
    x = sg.var("x", shape=(20,))
    (s,) = reduce_chains([sum(x)])
    assert _ops(s).count("add") == 1 and "sum" in _ops(s)
    v = RNG.normal(size=20)
    assert sg.evaluate(s, {"x": v}) == pytest.approx(float(np.sum(v)), rel=1e-14)


def test_generator_sum_of_squares_lifts_the_term():
    x = sg.var("x", shape=(30,))
    (s,) = reduce_chains([sum(x[i] ** 2 for i in range(30))])
    assert "index" not in _ops(s)  # no element left: x ** 2 summed
    v = RNG.normal(size=30)
    assert sg.evaluate(s, {"x": v}) == pytest.approx(float(v @ v), rel=1e-14)


def test_rows_with_a_shared_vector_and_a_stride():
    A, w = sg.var("A", shape=(24, 3)), sg.var("w", shape=(3,))
    total = 0.0
    for i in range(0, 24, 2):  # every other row
        total = total + sg.sin(A[i]) * w
    (s,) = reduce_chains([total])
    assert _ops(s).count("add") == 1
    a, wv = RNG.normal(size=(24, 3)), RNG.normal(size=3)
    np.testing.assert_allclose(sg.evaluate(s, {"A": a, "w": wv}),
                               np.sin(a[::2]).sum(axis=0) * wv, rtol=1e-13)


def test_products_backwards_and_max_min_chains_exactly():
    A = sg.var("A", shape=(12, 2))
    p, m, lo = 1.0, A[0, 0], A[0, 1]
    for i in range(11, -1, -1):
        p = p * A[i, 1]
    for i in range(1, 12):
        m = sg.maximum(m, 2.0 * A[i, 0])
        lo = sg.minimum(lo, A[i, 1])
    out = reduce_chains([p, m, lo])
    assert "prod" in _ops(out[0]) and "max" in _ops(out[1]) and "min" in _ops(out[2])
    a = RNG.normal(size=(12, 2))
    want = sg.evaluate([p, m, lo], {"A": a})
    got = sg.evaluate(out, {"A": a})
    assert got[0] == pytest.approx(want[0], rel=1e-14)
    assert got[1:] == want[1:]  # max and min: exactly


def test_broken_runs_keep_the_other_terms_in_order():
    x, y = sg.var("x", shape=(40,)), sg.var("y")
    order = [*range(10), 20, *range(10, 20), 39]  # a jump breaks the run
    total = y
    for i in order:
        total = total + sg.exp(x[i])
    (s,) = reduce_chains([total])
    assert _ops(s).count("sum") == 2
    v = RNG.normal(size=40)
    assert sg.evaluate(s, {"x": v, "y": 0.5}) == pytest.approx(
        0.5 + float(np.exp(v[order]).sum()), rel=1e-14)


def test_short_or_mixed_chains_are_left_alone():
    x = sg.var("x", shape=(6,))
    short = sum(x)  # below MIN_RUN
    mixed = sum(sg.sin(x[i]) if i % 2 else sg.cos(x[i]) for i in range(6)) + 0 * x[0]
    outs = reduce_chains([short, mixed])
    assert [o.node for o in outs] == [short.node, mixed.node]


def test_rosen_with_the_builtin_sum_differentiates_as_one_sum():
    def f(x):
        return sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)

    g = sg.grad(f)
    x0 = RNG.uniform(-1, 1, 300)
    np.testing.assert_allclose(g(x0), rosen_der(x0), rtol=1e-12, atol=1e-12)
    assert len(g.source.splitlines()) < 60  # not one line per element
    assert float(sg.jit(f)(x0)) == pytest.approx(rosen(x0), rel=1e-12)


def test_accumulated_loop_through_symgrad_numpy_matches_finite_differences():
    def f(x):
        total = 0.0
        for i in range(len(x)):
            total += snp.log1p(x[i] ** 2) * snp.exp(-x[i])
        return total

    g = sg.grad(f)
    x0 = RNG.uniform(-1, 1, 25)
    exact = g(x0)
    fd = central(lambda v: float(np.sum(np.log1p(v ** 2) * np.exp(-v))), x0)
    np.testing.assert_allclose(exact, fd, rtol=1e-7, atol=1e-9)
    assert "index_add" not in " ".join(_ops(sg.grad(f(sg.var("v", shape=(25,))), "v")))


def test_jvp_and_hessian_see_the_reduction():
    x = sg.var("x", shape=(10,))
    f = sum(x[i] ** 3 for i in range(10))
    v = RNG.normal(size=10)
    assert sg.evaluate(sg.jvp(f, x, np.ones(10)), {"x": v}) == pytest.approx(
        float(np.sum(3 * v ** 2)), rel=1e-13)
    np.testing.assert_allclose(sg.evaluate(sg.hessian(f, x), {"x": v}), np.diag(6 * v),
                               rtol=1e-13)


def test_terms_with_reductions_inside_reduce_rows_at_a_time():
    """A term that is not elementwise (``sum(d * d)`` of a row) is rebuilt for all rows at
    once: each inner loop of the pair energy becomes one sum; the Hessian agrees with JAX's
    of the vectorised energy."""
    from benchmarks.pair_loops import loop_energy, vector_energy

    n = 14
    x = sg.var("x", shape=(3 * n,))
    (s,) = reduce_chains([loop_energy(x, n)])
    assert _ops(s).count("sum") >= 2 * (n - 8)  # one outer and one inner per long row
    pos = RNG.normal(size=3 * n) * 2.0
    assert sg.evaluate(s, {"x": pos}) == pytest.approx(vector_energy(pos, np, n), rel=1e-13)
    h = sg.hessian(lambda v: loop_energy(v, n))(pos)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    want = np.asarray(jax.hessian(lambda v: vector_energy(v, jax.numpy, n))(pos))
    np.testing.assert_allclose(h, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())


def test_terms_that_mix_the_rows_stay_as_written():
    """``x[i][::-1] @ w`` and ``reshape(x[i], (2, 2))[0]`` per row lift (their ops say how
    to take a row axis); ``einsum("i,i->", ...)`` rebuilt on rows would contract the steps
    too: the probe finds it and the chain stays as written."""
    x, w = sg.var("x", shape=(12, 4)), sg.var("w", shape=(4,))
    ok = sum(x[i][::-1] @ w + sg.sum(sg.reshape(x[i], (2, 2))[0]) for i in range(12))
    odd = sum(sg.einsum("i,i->", x[i], w) for i in range(12))
    s_ok, s_odd = reduce_chains([ok, odd])
    assert "sum" in _ops(s_ok) and s_odd.node == odd.node
    v, u = RNG.normal(size=(12, 4)), RNG.normal(size=4)
    assert sg.evaluate(s_ok, {"x": v, "w": u}) == pytest.approx(
        float(np.sum(v[:, ::-1] @ u) + np.sum(v[:, :2])), rel=1e-13)
    assert sg.evaluate(s_odd, {"x": v, "w": u}) == pytest.approx(float(np.sum(v @ u)))


# -- rolling --------------------------------------------------------------------------------

from symgrad.passes.rolling import MIN_STEPS, roll  # noqa: E402

UNARY = (sg.sin, sg.cos, sg.tanh)
BINARY = (lambda a, b: a * b, lambda a, b: a + b, lambda a, b: a - b,
          lambda a, b: a * 0.5 + b)


def _random_step(rng: np.random.Generator, carries: int):
    """A random step ``(carries, x, w) -> carries``: each new carry a random tree of
    elementwise ops over the carries, this step's slice and a shared value."""
    plans = []
    for j in range(carries):
        plan = [("leaf", ("c", j))]
        for _ in range(int(rng.integers(1, 4))):
            if rng.random() < 0.4:
                plan.append(("unary", int(rng.integers(len(UNARY)))))
            else:
                leaf = [("c", int(rng.integers(carries))), ("x", 0), ("w", 0),
                        ("k", float(rng.uniform(0.5, 1.5)))][int(rng.integers(4))]
                plan.append(("binary", int(rng.integers(len(BINARY))), leaf))
        plans.append(plan)

    def step(cs, xk, w):
        def leaf(spec):
            kind, v = spec
            return {"c": lambda: cs[v], "x": lambda: xk, "w": lambda: w,
                    "k": lambda: v}[kind]()
        out = []
        for plan in plans:
            e = leaf(plan[0][1])
            for item in plan[1:]:
                if item[0] == "unary":
                    e = UNARY[item[1]](e)
                else:
                    e = BINARY[item[1]](e, leaf(item[2]))
            out.append(e)
        return out

    return step


def _unrolled(step, steps: int, carries: int, shape: tuple):
    c0 = [sg.var(f"c{j}", shape=shape) for j in range(carries)]
    xs, w = sg.var("xs", shape=(steps, *shape)), sg.var("w", shape=shape)
    cs = list(c0)
    for k in range(steps):
        cs = step(cs, xs[k], w)
    return cs


def test_short_loops_of_array_steps_roll_as_scalar_ones_do():
    """Array steps roll from MIN_STEPS on, as scalar steps do; shorter runs stay as
    written."""
    w = sg.var("w", shape=(3, 3))
    x, s = sg.var("x", shape=(3,)), sg.var("s")

    def loops(out):
        g = out.graph
        return sum(1 for i in g.ancestors([out.node]) if g.nodes[i].op == "scan")

    def vector(n, h=x):
        for _ in range(n):
            h = sg.tanh(w @ h)
        return sg.sum(h)

    def scalar(n):
        h = s
        for _ in range(n):
            h = sg.sin(h) * h
        return h

    assert MIN_STEPS < 20
    assert loops(roll([vector(20)])[0]) == 1 and loops(roll([scalar(20)])[0]) == 1
    short = MIN_STEPS - 1
    assert loops(roll([vector(short, sg.var("y", shape=(3,)))])[0]) == 0
    assert loops(roll([scalar(short)])[0]) == 0


@pytest.mark.parametrize("seed", range(24))
def test_rolled_and_unrolled_graphs_agree_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    carries = int(rng.integers(1, 3))
    shape = [(), (3,)][seed % 2]
    steps = int(rng.integers(1, 40))
    step = _random_step(rng, carries)
    outs = _unrolled(step, steps, carries, shape)
    total = outs[0] if carries == 1 else outs[0] * outs[1]
    rolled = roll([total])[0]
    values = {f"c{j}": rng.uniform(-1, 1, shape) for j in range(carries)}
    values.update(xs=rng.uniform(-1, 1, (steps, *shape)), w=rng.uniform(-1, 1, shape))
    want, got = sg.evaluate(total, values), sg.evaluate(rolled, values)
    assert np.array_equal(want, got, equal_nan=True), (want, got)
    if steps >= 24 and "scan" not in _ops(rolled):
        pytest.fail("a 24-step loop did not roll")
    if seed % 4 == 0:  # the rolled loop's gradient (a reverse scan) against the unrolled
        g_roll = sg.evaluate(sg.grad(sg.sum(rolled), "c0"), values)
        g_unrolled = sg.evaluate(sg.grad(sg.sum(total), "c0", cleanup=False), values)
        np.testing.assert_allclose(g_roll, g_unrolled, rtol=1e-10, atol=1e-12)


def test_w4_chain_rolls_and_differentiates_in_size_independent_of_the_trip_count():
    sizes = []
    for steps in (50, 400):
        x = sg.var("x")
        h = x
        for _ in range(steps):
            h = sg.sin(h) * h + sg.cos(h)
        d = sg.grad(h, x)
        sizes.append(len(d.graph.ancestors([d.node])))
        got = sg.evaluate(d, {"x": 0.3})
        fd = (sg.evaluate(h, {"x": 0.3 + 1e-6}) - sg.evaluate(h, {"x": 0.3 - 1e-6})) / 2e-6
        assert got == pytest.approx(fd, rel=1e-5, abs=1e-8)
        (r,) = roll([h])
        assert sg.evaluate(r, {"x": 0.3}) == sg.evaluate(h, {"x": 0.3})
    assert sizes[0] == sizes[1]  # the gradient's graph does not grow with the loop
    src = sg.to_source([h, d], [x])
    assert len(src.splitlines()) < 200


def test_rk4_lotka_volterra_python_loop_rolls_with_a_scanned_input():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[2]))
    from benchmarks.loops import _fd_grad, _trajectory, python_loop_loss

    steps = 40
    dt = 10.0 / steps
    data = np.array(_trajectory((1.0, 0.5, 0.12, 0.45), steps, dt))
    loss = python_loop_loss(steps, dt)

    p0 = np.array([1.1, 0.4, 0.1, 0.4])
    vg = sg.value_and_grad(loss)
    value, grad = vg(p0, data)
    assert value == loss(p0, data)  # the same loop run by NumPy, bit for bit
    np.testing.assert_allclose(grad, _fd_grad(tuple(p0), data, dt), rtol=1e-6)
    assert "for " in vg.source  # one loop emitted, not 40 unrolled steps
    p, obs = sg.var("p", shape=(4,)), sg.var("obs", shape=(steps, 2))
    unrolled = loss(p, obs)
    (rolled,) = roll([unrolled])
    assert "scan" in _ops(rolled) and len(_ops(rolled)) < len(_ops(unrolled)) // 4


def test_constants_that_change_from_step_to_step_are_stacked_into_a_scanned_input():
    x = sg.var("x")
    h = x
    for k in range(30):  # a constant that changes from step to step
        h = sg.sin(h) * (1.0 + k)
    (r,) = roll([h])
    assert _ops(r) == ["var", "const", "scan", "result"]  # one loop, its final carry read
    for x0 in (0.3, -0.7):
        assert sg.evaluate(r, {"x": x0}) == sg.evaluate(h, {"x": x0})
    g, gu = sg.grad(r, x), sg.grad(h, x, cleanup=False)
    assert sg.evaluate(g, {"x": 0.3}) == pytest.approx(sg.evaluate(gu, {"x": 0.3}), rel=1e-12)


@pytest.mark.parametrize("seed", range(16))
def test_stacked_constants_roll_bit_for_bit(seed):
    """Random steps whose constants change from step to step (scalars, vectors, some
    repeating, some the same in every step): rolled and unrolled graphs agree bit for bit."""
    rng = np.random.default_rng(100 + seed)
    shape = [(), (3,)][seed % 2]
    steps = int(rng.integers(2 * MIN_STEPS, 30))
    table = rng.uniform(-2, 2, (steps, *shape))
    kinds = [int(rng.integers(3)) for _ in range(3)]  # 0: per step, 1: repeats, 2: fixed

    def const(k: int, j: int) -> np.ndarray:
        row = {0: k, 1: k % 2, 2: 0}[kinds[j]]
        return np.asarray(table[row] + j)

    c0, w = sg.var("c", shape=shape), sg.var("w", shape=shape)
    c = c0
    for k in range(steps):
        c = sg.tanh(c * const(k, 0) + w) + const(k, 1) * sg.sin(c) - const(k, 2)
    (rolled,) = roll([c])
    assert "scan" in _ops(rolled)
    vals = {"c": rng.uniform(-1, 1, shape), "w": rng.uniform(-1, 1, shape)}
    assert np.array_equal(sg.evaluate(rolled, vals), sg.evaluate(c, vals))
    loss, loss_u = sg.sum(rolled), sg.sum(c)
    np.testing.assert_allclose(sg.evaluate(sg.grad(loss, "c"), vals),
                               sg.evaluate(sg.grad(loss_u, "c", cleanup=False), vals),
                               rtol=1e-10, atol=1e-12)


def test_constants_that_differ_in_shape_or_dtype_are_not_stacked():
    x = sg.var("x", shape=3)
    h = x
    for k in range(20):  # a scalar constant in even steps, a vector one in odd steps
        h = sg.sin(h) * (np.float64(k) if k % 2 == 0 else np.full(3, float(k)))
    (r,) = roll([h])
    v = {"x": np.array([0.1, 0.2, 0.3])}
    assert np.array_equal(sg.evaluate(r, v), sg.evaluate(h, v))


def test_what_does_not_roll_stays_correct():
    x = sg.var("x")
    h1 = x
    for k in range(30):  # ... unless it repeats: three steps are one
        h1 = sg.sin(h1) ** (k % 3 + 1)
    (r1,) = roll([h1])
    assert "scan" in _ops(r1) and sg.evaluate(r1, {"x": 0.7}) == sg.evaluate(h1, {"x": 0.7})
    h2 = x
    prev = x
    for _ in range(30):  # a value used two steps later
        h2, prev = sg.sin(h2) + 0.5 * prev, h2
    (r2,) = roll([h2])
    assert sg.evaluate(r2, {"x": 0.2}) == sg.evaluate(h2, {"x": 0.2})


# -- checkpoint= ------------------------------------------------------------------------------

@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("k", [1, 4, 5, 23, 40])
def test_checkpointed_scan_gives_the_same_values_and_gradients_bit_for_bit(k, reverse):
    x, xs = sg.var("x", shape=(3,)), sg.var("xs", shape=(23, 3))

    def run(checkpoint):
        c, ys = sg.scan(lambda c, xi: (sg.sin(c) * xi + c, c * 2.0), x, xs, reverse=reverse,
                        checkpoint=checkpoint)
        loss = sg.sum(c) + sg.sum(ys ** 2)
        return [c, ys, *sg.grad(loss, [x, xs])]

    values = {"x": np.arange(3.0), "xs": RNG.normal(size=(23, 3))}
    for a, b in zip(sg.evaluate(run(None), values), sg.evaluate(run(k), values)):
        assert np.array_equal(a, b)


def test_checkpoint_lowers_the_peak_memory_of_the_gradient():
    import tracemalloc

    w = sg.var("w", shape=(2000,))

    def gradient(checkpoint):
        c, _ = sg.scan(lambda c, _: (sg.tanh(c * w + 0.1), None), w, length=400,
                       checkpoint=checkpoint)
        return sg.compile([sg.grad(sg.sum(c), w)], [w])

    peaks, results = [], []
    value = RNG.normal(size=2000)
    for checkpoint in (None, 20):
        fn = gradient(checkpoint)
        fn(value)
        tracemalloc.start()
        results.append(fn(value)[0])
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12, atol=1e-14)
    assert peaks[1] < peaks[0] / 4, peaks  # 400 carries stored against about 20 + 20


def test_checkpoint_is_checked():
    with pytest.raises(sg.SymgradError, match="checkpoint must be a positive int"):
        sg.scan(lambda c, _: (c, None), 0.0, length=3, checkpoint=0)


def test_a_failed_transform_does_not_leave_stale_rolled_nodes_behind():
    x = sg.var("x", shape=(3,))
    h = x
    for _ in range(60):
        h = sg.sin(h) * h + sg.cos(h)
    f = sg.sum(h)
    with sg.limits(transform_nodes=3), pytest.raises(sg.LimitError):
        sg.hessian(f, x)  # rolls, then fails: the nodes it built are removed again
    v = np.array([0.1, 0.2, 0.3])
    hv = sg.evaluate(sg.hessian(f, x), {"x": v}) @ np.ones(3)
    fd = (sg.evaluate(sg.grad(f, x), {"x": v + 1e-6}) -
          sg.evaluate(sg.grad(f, x), {"x": v - 1e-6})) / 2e-6
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-7)


def test_compile_rolls_a_builtin_sum_bit_for_bit_and_reduces_it_with_fast_math():
    x = sg.var("x", shape=(300,))
    s = sum(sg.exp(x[i]) for i in range(300))
    v = RNG.normal(size=300)
    exact = sg.compile([s], [x])
    assert exact(v)[0] == sum(np.exp(v))  # left to right, as Python's sum adds
    assert "for " in sg.to_source([s], [x])
    fast = sg.compile([s], [x], fast_math=True)
    assert fast(v)[0] == pytest.approx(float(np.sum(np.exp(v))), rel=1e-14)
    assert "np.add.reduce(" in sg.to_source([s], [x], fast_math=True)


def test_latex_writes_a_loop_as_its_recurrence():
    x, w = sg.var("x"), sg.var("w", shape=(4,))
    c, ys = sg.scan(lambda c, wi: (c * wi + 1.0, c ** 2), x, w)
    assert sg.latex(c) == (r"c_{0}\ \text{after}\ c_{0} \leftarrow c_{0} c_{1} + 1\ \text{for}"
                           r"\ t = 1, \dots, 4\ \text{from}\ c_{0} = x,\ c_{1} = w_{t}")
    assert sg.latex(ys).startswith(r"\left[c_{0}^{2}\right]_{t}\ \text{after}")
    h = x
    for _ in range(12):
        h = sg.sin(h) * h
    (r,) = roll([h])
    assert r"c_{0} \leftarrow c_{0} \sin{\left(c_{0} \right)}" in sg.latex(r)
    assert r"t = 1, \dots, 12" in sg.latex(r)


def test_a_sum_of_different_variables_is_left_alone():
    xs = [sg.var(f"v{k}") for k in range(12)]
    total = sum(xs)
    (s,) = reduce_chains([total])
    assert s.node == total.node


# -- what the loop passes cost --------------------------------------------------------------

_TERMS = {"exp": sg.exp, "cos": sg.cos, "tanh": sg.tanh}


@pytest.mark.parametrize("seed", range(6))
def test_runs_ruled_out_by_their_farthest_pair_give_the_pairwise_answer(seed, monkeypatch):
    """Skipping starts whose farthest pair does not unify reduces exactly the runs that
    trying every start does (random chains of runs of 1..14 terms)."""
    from symgrad.passes import reductions

    rng = np.random.default_rng(seed)
    spec, i = [], 0
    while len(spec) < 60:
        kind, size = str(rng.choice(list(_TERMS))), int(rng.integers(1, 15))
        spec += [(kind, i + k) for k in range(size)]
        i += size + int(rng.integers(0, 2))  # sometimes a gap: the run breaks
    x = sg.var("x", shape=(i + 1,))

    def chain():
        total = sg.var("y")
        for kind, k in spec:
            total = total + _TERMS[kind](x[k])
        return total

    (fast,) = reduce_chains([chain()])
    monkeypatch.setattr(reductions, "_no_run_before", lambda graph, terms, k: k)
    (slow,) = reduce_chains([chain()])
    assert _ops(fast) == _ops(slow)
    env = {"x": rng.normal(size=i + 1), "y": 0.25}
    assert sg.evaluate(fast, env) == sg.evaluate(slow, env)


def test_a_recurrences_misfit_chain_is_left_alone_with_few_comparisons(monkeypatch):
    """RK4's ``total + (x_k - obs[k, 0]) ** 2 + (y_k - obs[k, 1]) ** 2``: no two consecutive
    terms are one step apart, found with one comparison in MIN_RUN - 1 pairs."""
    from benchmarks.loops import python_loop_loss
    from symgrad.passes import reductions

    steps = 70
    loss = python_loop_loss(steps, 0.1)(sg.var("p", shape=(4,)), sg.var("obs", shape=(steps, 2)))
    calls = []
    unify = reductions.unify
    monkeypatch.setattr(reductions, "unify", lambda g, t, u: calls.append(t) or unify(g, t, u))
    (out,) = reduce_chains([loss])
    assert out.node == loss.node
    assert 0 < len(calls) <= 2 * steps // (reductions.MIN_RUN - 1) + 1


def test_a_remembered_walk_is_not_reused_after_its_nodes_were_removed():
    from symgrad.passes.context import Context

    x = sg.var("x")
    g = x.graph
    ctx = Context()
    with pytest.raises(KeyError), g.budget(100, lambda: sg.LimitError("no room")):
        t, _ = sg.tanh(x), sg.sqrt(x)
        y = t * t
        assert ctx.walk(g, [y.node]).order == (0, 1, 3)
        raise KeyError("the block fails: its nodes are removed")
    z = sg.sin(sg.exp(x)) * x  # the same ids again, other nodes
    assert z.node == y.node
    assert ctx.walk(g, [z.node]).order == tuple(g.ancestors([z.node])) == (0, 1, 2, 3)
