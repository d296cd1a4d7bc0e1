"""Structural sparsity rules of the ops: for one op at a time, the pattern the rules give
(``sg.jacobian_sparsity``) equals the non-zeros of JAX's Jacobian at a random point (exact
for elementwise ops with broadcasting, gathers, reshapes, concatenation, reductions,
products and batched matrix functions; products skip a constant's zero entries), scans and
sorts cover it with whole lanes, the helper maps are what their docstrings say, and a map
too large stops at a limit."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.ops import structure as S

R = np.random.default_rng(29)
SHAPES = {"x": (3, 4), "r": (1, 4), "v": (4,), "m": (2, 3, 3)}
AT = {k: R.uniform(0.5, 1.5, s) for k, s in SHAPES.items()}
AT["m"] = AT["m"] + 3 * np.eye(3)  # invertible
ZEROS = np.array([[1.0, 0.0, 2.0, 0.0], [0.0, 0.0, 3.0, 0.0], [4.0, 0.0, 0.0, 5.0]])

CASES = {
    "broadcast_multiply": ("x", lambda m, a: a["x"] * m.exp(a["r"])),
    "broadcast_wrt_row": ("r", lambda m, a: a["x"] * m.exp(a["r"])),
    "strided_slice": ("x", lambda m, a: a["x"][::2, 1:]),
    "fancy_index": ("x", lambda m, a: a["x"][np.array([2, 0, 2])]),
    "transpose_reshape": ("x", lambda m, a: m.reshape(m.transpose(a["x"]), (2, 6))),
    "concatenate": ("x", lambda m, a: m.concatenate([a["x"][:, :2], m.sin(a["x"])], axis=1)),
    "sum_axis": ("x", lambda m, a: m.sum(a["x"] ** 2, axis=0)),
    "matmul": ("x", lambda m, a: a["x"] @ a["v"]),
    "matmul_constant_zeros": ("v", lambda m, a: m.asarray(ZEROS) @ a["v"]),
    "batched_inverse": ("m", lambda m, a: m.linalg.inv(a["m"])),
}


@pytest.mark.parametrize("name", CASES)
def test_the_pattern_is_the_nonzeros_of_jaxs_jacobian(name, x64):
    jax = pytest.importorskip("jax")
    wrt, build = CASES[name]
    xs = {k: sg.var(k, shape=s) for k, s in SHAPES.items()}
    f = build(sg.numpy, xs)
    pattern = sg.jacobian_sparsity(f, xs[wrt]).toarray() != 0

    def ref(v):
        return build(jax.numpy, {**AT, wrt: v})

    J = np.asarray(jax.jacobian(ref)(AT[wrt])).reshape(pattern.shape)
    np.testing.assert_array_equal(pattern, J != 0)


@pytest.mark.parametrize("name, axis", [("cumsum", 1), ("cumprod", 0), ("sort", 0),
                                        ("sort", 1)])
def test_scans_and_sorts_densify_their_lanes_a_superset_of_jaxs_nonzeros(name, axis, x64):
    """A cumulative sum's Jacobian is triangular and a sort's a permutation that depends on
    the values: the rule gives every pair within a lane, which covers both."""
    jax = pytest.importorskip("jax")
    x = sg.var("x", shape=SHAPES["x"])
    pattern = sg.jacobian_sparsity(getattr(sg, name)(x, axis=axis), x).toarray() != 0
    J = np.asarray(jax.jacobian(lambda v: getattr(jax.numpy, name)(v, axis=axis))(AT["x"]))
    nonzero = J.reshape(pattern.shape) != 0
    assert (pattern | ~nonzero).all()  # every non-zero is in the pattern
    ids = np.indices(SHAPES["x"])[1 - axis].ravel()  # the lane of each element
    np.testing.assert_array_equal(pattern, ids[:, None] == ids[None, :])


def test_the_helper_maps_are_what_their_docstrings_say():
    rows, cols = S.broadcast_map((1, 3), (2, 3))
    assert rows.tolist() == list(range(6)) and cols.tolist() == [0, 1, 2, 0, 1, 2]
    rows, cols = S.dense_map((2,), (3,))
    assert sorted(zip(rows.tolist(), cols.tolist())) == [(i, j) for i in range(3)
                                                         for j in range(2)]
    for a, b in [((2, 3), (3,)), ((5, 2, 3), (3, 4)), ((3,), (3, 4)), ((1, 2, 3), (4, 3, 2))]:
        u, w = np.arange(1.0, np.prod(a) + 1).reshape(a), np.arange(1.0, np.prod(b) + 1).reshape(b)
        spec = S.matmul_spec(a, b, np.matmul(u, w).shape)  # matmul as an einsum
        np.testing.assert_array_equal(np.einsum(spec, u, w), np.matmul(u, w))


def test_a_map_too_large_stops_at_a_limit(monkeypatch):
    monkeypatch.setattr(S, "PAIR_LIMIT", 100)
    x = sg.var("x", shape=(20, 20))
    with pytest.raises(sg.LimitError, match="sparsity: .*more than the limit of 100"):
        sg.jacobian_sparsity(sg.cumsum(x, axis=0), x)
