"""Sparsity patterns through loops (the ``scan`` op's rule, :func:`scan_sparsity`): a
``scan`` (or ``fori_loop``) has the Jacobian and Hessian patterns of the same program
unrolled in Python, those patterns hold the numerical non-zeros (JAX, finite differences),
the sparse derivatives equal the dense ones, and long loops stay banded and budgeted."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import symgrad as sg
from symgrad.errors import LimitError
from symgrad.ir.nodeview import NodeView
from symgrad.transforms.loop_sparsity import scan_sparsity
from symgrad.transforms.sparsity import pair_limit

jax.config.update("jax_enable_x64", True)

N = 12


def _window(c, v):
    """A chain: the carry holds the previous element and a running energy."""
    prev, acc = c
    return (v, acc + (v - prev) ** 2 + 0.1 * sg.sin(prev) * v), v * sg.cos(prev)


def _heat(c, v):
    """An explicit heat step on a 4-point rod, forced by the step's slice."""
    lap = sg.concatenate([c[:1] * 0.0, c[:-2] - 2.0 * c[1:-1] + c[2:], c[:1] * 0.0])
    new = c + 0.1 * lap + sg.sin(v)
    return new, sg.sum(new * v)


def _shift(c, v):
    """A shift register: the carry's last element leaves, the slice enters."""
    return sg.concatenate([v[None], c[:-1]]), c[-1] * sg.exp(v)


def _pairs(c, v):
    """Two scanned arrays and a captured value (``x[0]``, read through the closure)."""
    a, b = v
    return c * sg.tanh(a) + b, sg.sin(c) * _CAPTURED[0]


def _rotate(c, v):
    """A carry rotated every step (its pattern a cycle of period 3), read at one end."""
    return sg.concatenate([c[1:], c[:1]]) * sg.cos(v), c[0] * v


def _grid(c, v):
    """A 2-D carry mixed along one axis, two scanned arrays of different shapes."""
    a, b = v
    new = c * sg.sum(c, axis=0) * 0.1 + sg.stack([a, a * b[0]])
    return new.T.T, sg.sum(new, axis=0) * b[1]


_CAPTURED: list = []

CASES = {
    "window": (_window, lambda x: (x[0], x[0] * 0.0), lambda x: x[1:]),
    "heat": (_heat, lambda x: x[:4], lambda x: x.reshape((3, 4))),
    "shift": (_shift, lambda x: x[:3], lambda x: x[3:]),
    "pairs": (_pairs, lambda x: x[1] * x[2], lambda x: (x[3:8], x[7:])),
    "rotate": (_rotate, lambda x: x[:3], lambda x: x[2:]),
    "grid": (_grid, lambda x: x[:6].reshape((2, 3)),
             lambda x: (x.reshape((4, 3)), sg.concatenate([x[::-1], x]).reshape((4, 2, 3)))),
}


def _leaves(tree) -> list:
    return list(tree) if isinstance(tree, tuple) else [tree]


def _programs(name: str, reverse: bool):
    """The rolled and the unrolled program of case ``name``: ``(final carries, ys)`` each,
    of one variable ``x``."""
    step, init, xs = CASES[name]
    x = sg.var("x", shape=(N,))
    _CAPTURED[:] = [x[0]]
    rolled = sg.scan(step, init(x), xs(x), reverse=reverse)
    slices = xs(x)
    length = (slices[0] if isinstance(slices, tuple) else slices).shape[0]
    carry, ys = init(x), [None] * length
    for t in (range(length - 1, -1, -1) if reverse else range(length)):
        at = tuple(s[t] for s in slices) if isinstance(slices, tuple) else slices[t]
        carry, ys[t] = step(carry, at)
    return x, rolled, (carry, sg.stack(ys))


def _energy(carry, ys):
    return sum(sg.sum(c ** 3) for c in _leaves(carry)) + sg.sum(sg.sin(ys) ** 2)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_scan_patterns_equal_the_unrolled_programs(name, reverse):
    """Each final carry's and the stacked results' Jacobian patterns, and an energy's
    Hessian pattern, are those of the program unrolled in Python."""
    x, (carry, ys), (carry_u, ys_u) = _programs(name, reverse)
    dense = []
    for rolled, unrolled in [*zip(_leaves(carry), _leaves(carry_u)), (ys, ys_u)]:
        got = sg.jacobian_sparsity(rolled, x).toarray()
        np.testing.assert_array_equal(got, sg.jacobian_sparsity(unrolled, x).toarray())
        dense.append(got.all())
    assert not all(dense)
    got = sg.hessian_sparsity(_energy(carry, ys), x).toarray()
    np.testing.assert_array_equal(got, sg.hessian_sparsity(_energy(carry_u, ys_u), x).toarray())


@pytest.mark.parametrize("name", sorted(CASES))
def test_sparse_derivatives_of_a_scan_equal_the_dense_ones(name, rng):
    """``jacobian(..., sparse=True)`` and ``hessian(..., sparse=True)`` through a scan have
    the dense derivative's values, and the dense one's non-zeros lie in the pattern."""
    x, (carry, ys), _ = _programs(name, False)
    at = {"x": rng.uniform(-1.0, 1.0, N)}
    J = sg.evaluate(sg.jacobian(ys, x, sparse=True), at).toarray()
    dense = np.asarray(sg.evaluate(sg.jacobian(ys, x), at)).reshape(J.shape)
    np.testing.assert_allclose(J, dense, rtol=1e-12, atol=1e-14)
    pattern = sg.jacobian_sparsity(ys, x).toarray()
    assert not (np.abs(dense) > 0)[~pattern].any()
    e = _energy(carry, ys)
    H = sg.evaluate(sg.hessian(e, x, sparse=True), at).toarray()
    np.testing.assert_allclose(H, sg.evaluate(sg.hessian(e, x), at), rtol=1e-11, atol=1e-12)


def _chain_step(c, v):
    """A nearest-neighbour chain energy's step (runs on symgrad Exprs and JAX arrays)."""
    prev, acc = c
    return (v, acc + (v - prev) ** 2 + 0.1 * prev ** 4), None


def test_chain_energy_hessian_pattern_is_jaxs_non_zeros(rng):
    """The chain energy's Hessian through a scan: its pattern is exactly where JAX's dense
    Hessian of the same ``lax.scan`` is non-zero, and the sparse Hessian has its values."""
    n = 40
    x = sg.var("x", shape=(n,))
    (_, e), _ = sg.scan(_chain_step, (x[0], 0.0), x[1:])

    def energy(u):
        (_, total), _ = jax.lax.scan(_chain_step, (u[0], 0.0), u[1:])
        return total

    v = rng.uniform(-1.0, 1.0, n)
    want = np.asarray(jax.hessian(energy)(jnp.asarray(v)))
    np.testing.assert_array_equal(sg.hessian_sparsity(e, x).toarray(), want != 0)
    H = sg.evaluate(sg.hessian(e, x, sparse=True), {"x": v})
    np.testing.assert_allclose(H.toarray(), want, rtol=1e-12, atol=1e-12)


def test_chain_energy_hessian_through_a_thousand_steps_is_tridiagonal(rng):
    """The chain energy scanned over 10^3 elements: its Hessian pattern is the tridiagonal
    one (as the vectorised energy's), and the sparse Hessian is the closed form."""
    n = 1000
    x = sg.var("x", shape=(n,))
    (_, e), _ = sg.scan(_chain_step, (x[0], 0.0), x[1:])
    pattern = sg.hessian_sparsity(e, x)
    vectorised = sg.sum((x[1:] - x[:-1]) ** 2 + 0.1 * x[:-1] ** 4)
    assert (pattern != sg.hessian_sparsity(vectorised, x)).nnz == 0
    band = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1
    np.testing.assert_array_equal(pattern.toarray(), band)
    v = rng.uniform(-1.0, 1.0, n)
    H = sg.evaluate(sg.hessian(e, x, sparse=True), {"x": v})
    diagonal = np.full(n, 4.0)
    diagonal[[0, -1]] = 2.0
    diagonal[:-1] += 1.2 * v[:-1] ** 2
    want = np.diag(diagonal) - 2.0 * (band & ~np.eye(n, dtype=bool))
    np.testing.assert_allclose(H.toarray(), want, rtol=1e-12, atol=1e-12)


def test_heat_stencil_jacobian_through_a_thousand_steps_is_tridiagonal(rng):
    """A 1-D heat operator applied by a scan along the rod (the carry a window of two
    points): the Jacobian of its 10^3 results is tridiagonal and the sparse one equals
    finite differences."""
    n = 1002
    x = sg.var("x", shape=(n,))

    def step(c, v):
        left, mid = c
        return (mid, v), (left - 2.0 * mid + v) * (1.0 + 0.1 * mid ** 2)

    _, ys = sg.scan(step, (x[0], x[1]), x[2:])
    pattern = sg.jacobian_sparsity(ys, x).toarray()
    rows, cols = np.nonzero(pattern)
    assert pattern.sum() == 3 * (n - 2)
    assert set((cols - rows).tolist()) == {0, 1, 2}
    v = rng.uniform(-1.0, 1.0, n)
    J = sg.evaluate(sg.jacobian(ys, x, sparse=True), {"x": v})

    def f(u):
        return (u[:-2] - 2.0 * u[1:-1] + u[2:]) * (1.0 + 0.1 * u[1:-1] ** 2)

    h = 1e-6
    probe = rng.uniform(-1.0, 1.0, n)
    fd = (f(v + h * probe) - f(v - h * probe)) / (2 * h)
    np.testing.assert_allclose(J @ probe, fd, rtol=1e-7, atol=1e-8)


def test_a_scan_without_scanned_arrays_and_a_nested_scan_have_the_unrolled_patterns():
    """``length=`` with captured values only, and a scan whose body scans: the patterns
    are the unrolled loops'."""
    x = sg.var("x", shape=(N,))

    def captured(c, _):
        return c * x[3] + sg.sin(c[::-1]) * x[4:7], c[0] * x[10]

    def inner(c, v):
        return c * 0.5 + sg.sin(v), c * v

    def outer(c, row):
        c, ys = sg.scan(inner, c, row)
        return c, sg.sum(ys ** 2)

    rows = x.reshape((3, 4))
    for step, init, xs, length in [(captured, x[:3], None, 5), (outer, x[0], rows, 3)]:
        c, ys = sg.scan(step, init, xs, length=None if xs is not None else length)
        cu, ys_u = init, []
        for t in range(length):
            cu, y = step(cu, None if xs is None else xs[t])
            ys_u.append(y)
        for rolled, unrolled in ((c, cu), (ys, sg.stack(ys_u))):
            np.testing.assert_array_equal(sg.jacobian_sparsity(rolled, x).toarray(),
                                          sg.jacobian_sparsity(unrolled, x).toarray())
        e, e_u = sg.sum(c ** 3) + sg.sum(sg.sin(ys)), sg.sum(cu ** 3) + sg.sum(sg.sin(ys_u))
        np.testing.assert_array_equal(sg.hessian_sparsity(e, x).toarray(),
                                      sg.hessian_sparsity(e_u, x).toarray())


def test_fori_loop_indexing_has_the_unrolled_pattern():
    """``fori_loop`` reading ``x[i]``: each step's pattern is found with its index, so the
    Hessian and the per-step Jacobian are those of the unrolled loop."""
    n = 20
    x = sg.var("x", shape=(n,))
    e = sg.fori_loop(0, n - 1, lambda i, acc: acc + (x[i + 1] - x[i]) ** 2 * sg.exp(x[i]), 0.0)
    unrolled = sum((x[i + 1] - x[i]) ** 2 * sg.exp(x[i]) for i in range(n - 1))
    np.testing.assert_array_equal(sg.hessian_sparsity(e, x).toarray(),
                                  sg.hessian_sparsity(unrolled, x).toarray())
    _, ys = sg.scan(lambda c, i: (c + x[i], c * x[(i * 7) % n]), 0.0, np.arange(n))
    ys_u, c = [], 0.0
    for i in range(n):
        ys_u.append(c * x[(i * 7) % n])
        c = c + x[i]
    np.testing.assert_array_equal(sg.jacobian_sparsity(ys, x).toarray(),
                                  sg.jacobian_sparsity(sg.stack(ys_u), x).toarray())


def test_a_loop_past_the_step_patterns_gets_a_superset(monkeypatch, rng):
    """Past ``STEP_PATTERNS`` steps a loop's integers are not bound: its pattern holds the
    unrolled one's, and the sparse Hessian still equals the dense one."""
    from symgrad.transforms import loop_sparsity

    monkeypatch.setattr(loop_sparsity, "STEP_PATTERNS", 5)
    n = 12
    x = sg.var("x", shape=(n,))
    e = sg.fori_loop(0, n - 1, lambda i, acc: acc + (x[i + 1] - x[i]) ** 2 * sg.exp(x[i]), 0.0)
    unrolled = sum((x[i + 1] - x[i]) ** 2 * sg.exp(x[i]) for i in range(n - 1))
    got = sg.hessian_sparsity(e, x).toarray()
    want = sg.hessian_sparsity(unrolled, x).toarray()
    assert got[want].all() and got.sum() > want.sum()
    at = {"x": rng.uniform(-1.0, 1.0, n)}
    np.testing.assert_allclose(sg.evaluate(sg.hessian(e, x, sparse=True), at).toarray(),
                               sg.evaluate(sg.hessian(unrolled, x), at), rtol=1e-12, atol=1e-12)


def test_a_captured_index_array_is_read_by_the_pattern():
    """A body permuting its carry by a captured integer array (``c[perm]``): the pattern
    follows the permutation, as the unrolled loop's."""
    x = sg.var("x", shape=(N,))
    perm = np.array([2, 0, 3, 1])
    c, ys = sg.scan(lambda c, v: (c[perm] * sg.cos(v) + v, c[perm[0]] * v), x[:4], x[4:])
    cu, ys_u = x[:4], []
    for t in range(N - 4):
        v = x[4 + t]
        cu, y = cu[perm] * sg.cos(v) + v, cu[perm[0]] * v
        ys_u.append(y)
    for rolled, unrolled in ((c, cu), (ys, sg.stack(ys_u))):
        got = sg.jacobian_sparsity(rolled, x).toarray()
        np.testing.assert_array_equal(got, sg.jacobian_sparsity(unrolled, x).toarray())
        assert not got.all()


def test_a_long_loop_follows_the_carry_to_its_fixed_point():
    """A loop of 10^5 steps whose carry accumulates every slice: the final carry depends on
    every element, each step's result only on its own and the initial value (the carry's
    pattern repeats after one step, and is not followed further)."""
    n = 100_000
    x = sg.var("x", shape=(n,))
    c, ys = sg.scan(lambda c, v: (c * 0.5 + v, v * x[0]), x[0], x)
    assert sg.jacobian_sparsity(c, x).nnz == n
    pattern = sg.jacobian_sparsity(ys, x)
    assert pattern.nnz == 2 * n - 1
    np.testing.assert_array_equal(pattern.diagonal(), np.ones(n, dtype=bool))


def test_a_loop_too_dense_for_a_sparse_pattern_raises_limit_error():
    """Per-step results reading an accumulating carry have a triangular pattern: past the
    budget, ``LimitError`` (never an unbounded pattern)."""
    n = 400
    x = sg.var("x", shape=(n,))
    _, ys = sg.scan(lambda c, v: (c + v, c * v), 0.0, x)
    assert sg.jacobian_sparsity(ys, x).nnz == n * (n + 1) // 2  # row t: x[0..t]
    with pair_limit(10_000), pytest.raises(LimitError, match="loop of 400 steps"):
        sg.jacobian_sparsity(ys, x)


def _call(out):
    """The ``scan`` node whose projection ``out`` is, as a sparsity rule sees it."""
    nodes = out.graph.nodes
    return nodes[nodes[out.node].args[0]]


def test_scan_sparsity_gives_each_result_its_pairs_per_operand(rng):
    """The rule itself: for each result and each operand, the (row, column) pairs of the
    non-zeros of that block of the Jacobian, here exactly JAX's non-zeros of the same
    loop (an accumulating carry and a per-step product); a result nobody asks for gets
    none."""
    c0, xs = sg.var("c0", (2,)), sg.var("xs", (3, 2))
    c, ys = sg.scan(lambda c, x: (c + x, c * x), c0, xs)
    call = _call(c)
    maps = scan_sparsity(NodeView(c.graph, call))
    values = (rng.standard_normal(2), rng.standard_normal((3, 2)))

    def loop(a, b):
        return jax.lax.scan(lambda c, x: (c + x, c * x), a, b)

    for k in range(2):
        for j in range(2):
            jac = jax.jacobian(lambda *v, k=k: loop(*v)[k], argnums=j)(*values)
            dense = np.asarray(jac).reshape(-1, values[j].size)
            rows, cols = maps[k][j]
            got = np.zeros(dense.shape, dtype=bool)
            got[rows, cols] = True
            np.testing.assert_array_equal(got, dense != 0, err_msg=f"result {k}, operand {j}")
    only_ys = scan_sparsity(NodeView(c.graph, call, wanted=(False, True)))
    assert only_ys[0] == (None, None)
    for got, want in zip(only_ys[1], maps[1]):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_scan_sparsity_gives_an_integer_result_no_pairs():
    """A counter carried beside a float carry: its result has no derivative, so no pairs."""
    x = sg.var("x", (4,))
    (n, s), _ = sg.scan(lambda c, v: ((c[0] + 1, c[1] + v * v), None),
                        (sg.const(np.int64(0)), sg.const(0.0)), x)
    maps = scan_sparsity(NodeView(s.graph, _call(s)))
    assert all(p is None for p in maps[0])
    assert maps[1][0] is None  # nor does the float result depend on the counter
    rows, cols = maps[1][-1]  # the sum of squares reads every element of x
    assert sorted(cols.tolist()) == [0, 1, 2, 3] and not rows.any()
