"""Work that must stay linear at 10^5: measured by what is built (operand slots, node
counts), never by the clock; exact results checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg


def _indexed_sum(n: int) -> tuple[sg.Expr, sg.Expr]:
    v = sg.var("v", shape=(n,))
    f = v[0] * 1.0
    for i in range(1, n):
        f = f + v[i] * float(i + 1)
    return f, v


def _operand_slots(g: sg.Graph) -> int:
    return sum(len(n.args) + len(n.attrs.get("parts", ())) for n in g.nodes)


def test_many_scatters_merge_into_one_in_linear_work():
    """The adjoint of v used through N indices is ONE scatter_sum of N parts, built once:
    merging pairwise made N growing scatter_sums (N^2 / 2 operand slots)."""
    slots = {}
    for n in (400, 1600):
        f, v = _indexed_sum(n)
        before = _operand_slots(f.graph)
        g = sg.grad(f, v)
        slots[n] = _operand_slots(f.graph) - before
        assert g.op in ("const", "scatter_sum", "stack")  # a tiling scatter is a stack
        np.testing.assert_array_equal(sg.evaluate(g, {"v": np.zeros(n)}),
                                      np.arange(1.0, n + 1.0))
        f.graph.verify()
    assert slots[1600] / slots[400] < 4.5, slots  # linear: 4x; pairwise merging gave 16x


def test_merged_scatter_of_variable_parts_matches_numpy():
    n = 300
    v, w = sg.var("v", shape=(n,)), sg.var("w", shape=(n,))
    f = v[0] * w[0]
    for i in range(1, n):
        f = f + v[i] * w[(7 * i) % n] + v[(3 * i) % n]
    gv, gw = sg.grad(f, [v, w])
    assert gv.op in ("scatter_sum", "add", "stack") and gw.op in ("scatter_sum", "stack")
    rng = np.random.default_rng(1)
    at = {"v": rng.normal(size=n), "w": rng.normal(size=n)}
    want_v, want_w = np.zeros(n), np.zeros(n)
    want_v[0] += at["w"][0]
    want_w[0] += at["v"][0]
    for i in range(1, n):
        want_v[i] += at["w"][(7 * i) % n]
        want_w[(7 * i) % n] += at["v"][i]
        want_v[(3 * i) % n] += 1.0
    got_v, got_w = sg.evaluate([gv, gw], at)
    np.testing.assert_allclose(got_v, want_v, rtol=1e-14)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-14)
    fn = sg.compile([gv, gw], inputs=["v", "w"])
    for got, want in zip(fn(at["v"], at["w"]), (want_v, want_w)):
        np.testing.assert_allclose(got, want, rtol=1e-14)


def test_cleanup_false_keeps_the_pairwise_sum():
    f, v = _indexed_sum(20)
    g = sg.grad(f, v, cleanup=False)
    assert g.op == "add"
    np.testing.assert_array_equal(sg.evaluate(g, {"v": np.zeros(20)}), np.arange(1.0, 21.0))


@pytest.mark.parametrize("n", [3])
def test_scatter_merge_of_batched_adjoints(n):
    """A Jacobian seeds a batch axis: the merged scatter keeps it."""
    v = sg.var("v", shape=(n,))
    F = sg.stack([v[0] * v[1], v[1] * v[2], v[2] * v[0]], axis=0)
    J = sg.jacobian(F, v)
    at = np.array([1.5, -2.0, 0.25])
    want = np.array([[at[1], at[0], 0], [0, at[2], at[1]], [at[2], 0, at[0]]])
    np.testing.assert_allclose(sg.evaluate(J, {"v": at}), want, rtol=1e-15)
