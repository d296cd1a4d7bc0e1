"""Shape-manipulation and indexing ops: forward vs NumPy, gradients of order 1 and 2 vs
float64 central finite differences, one-pass Jacobians vs stacked VJPs (batch support),
generated source vs impl on every node (including the batched adjoint nodes), and errors."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends.interpreter import run
from symgrad.backends.targets.numpy.table import NUMPY
from tests.support.finite_differences import central

MY_OPS = ("index", "index_add", "take", "reshape", "broadcast_to", "expand_dims", "squeeze",
          "concatenate", "stack")

rng = np.random.default_rng(0)
VALUES = {
    "x": rng.normal(size=5),
    "A": rng.normal(size=(4, 3)),
    "B": rng.normal(size=(2, 3)),
    "T": rng.normal(size=(2, 3, 4)),
    "s": np.float64(0.7),
    "y": np.int64(3),
    "yn": np.int64(-2),
    "Y": np.array([[2, 0], [2, 1]]),
    "k": np.array([1, 1, 0]),
}
SHAPES = {k: np.shape(v) for k, v in VALUES.items()}
INT = {"y", "yn", "Y", "k"}


def symbols() -> dict:
    return {k: sg.var(k, shape=SHAPES[k], dtype="int64" if k in INT else "float64")
            for k in VALUES}


# (id, f(v, m)) with v the variables (Exprs or arrays) and m the namespace (sg or np).
CASES = [
    ("x[1:]", lambda v, m: v["x"][1:]),
    ("x[:-1]", lambda v, m: v["x"][:-1]),
    ("A[:, 1:]", lambda v, m: v["A"][:, 1:]),
    ("x[None, :]", lambda v, m: v["x"][None, :]),
    ("T[0, :, -1]", lambda v, m: v["T"][0, :, -1]),
    ("x[::-1]", lambda v, m: v["x"][::-1]),
    ("T[..., 0]", lambda v, m: v["T"][..., 0]),
    ("A[::-2, None, 1]", lambda v, m: v["A"][::-2, None, 1]),
    ("A[-3:-1, ::2]", lambda v, m: v["A"][-3:-1, ::2]),
    ("T[None, ..., None, 1:]", lambda v, m: v["T"][None, ..., None, 1:]),
    ("x[-2]", lambda v, m: v["x"][-2]),
    ("s[None, None]", lambda v, m: v["s"][None, None] * v["x"][1:3]),
    ("concatenate an empty slice", lambda v, m: m.concatenate([v["x"], v["T"][0, 3:, 1]])),
    ("x[y] (pick)", lambda v, m: v["x"][v["y"]]),
    ("x[yn] negative wraps", lambda v, m: v["x"][v["yn"]]),
    ("x[dups]", lambda v, m: v["x"][[0, 0, 3, 3, 3, 1]]),
    ("A[Y]", lambda v, m: v["A"][v["Y"]]),
    ("T[1, Y]", lambda v, m: v["T"][1, v["Y"]]),
    ("T[:, [0, 2], 1]", lambda v, m: v["T"][:, [0, 2], 1]),
    ("T[y-2, k]", lambda v, m: v["T"][v["y"] - 2, v["k"]][:, ::-1]),
    ("A[k][:, y-1]", lambda v, m: v["A"][v["k"]][:, v["y"] - 1]),
    ("reshape", lambda v, m: m.reshape(v["A"], (3, 4))),
    ("reshape -1", lambda v, m: m.reshape(v["T"], (4, -1, 2))),
    ("reshape flat", lambda v, m: v["A"].reshape(-1)),
    ("reshape 0-d", lambda v, m: m.reshape(v["s"], (1, 1))),
    ("broadcast_to", lambda v, m: m.broadcast_to(v["x"], (2, 5))),
    ("broadcast_to column", lambda v, m: m.broadcast_to(v["A"][:, :1], (2, 4, 3))),
    ("broadcast_to scalar", lambda v, m: m.broadcast_to(v["s"], (3,))),
    ("expand_dims", lambda v, m: m.expand_dims(v["A"], 1)),
    ("expand_dims tuple", lambda v, m: m.expand_dims(v["x"], (0, 2))),
    ("squeeze all", lambda v, m: m.squeeze(v["A"][:, :1][None])),
    ("squeeze axis", lambda v, m: m.squeeze(v["T"][:1], axis=0)),
    ("concatenate", lambda v, m: m.concatenate([v["A"], v["B"]], axis=0)),
    ("concatenate -1", lambda v, m: m.concatenate([v["A"], v["A"] * 2.0, v["A"][:, :1]], -1)),
    ("concatenate shared", lambda v, m: m.concatenate([v["x"], v["x"][::-1]])),
    ("stack", lambda v, m: m.stack([v["x"], v["x"] * v["x"]], axis=1)),
    ("stack 3", lambda v, m: m.stack([v["B"], v["A"][1:3], v["B"]], axis=-1)),
    ("stack scalars", lambda v, m: m.stack([v["s"], v["x"][0], v["s"] * 2.0])),
    ("take axis", lambda v, m: m.take(v["A"], v["k"], axis=1)),
    ("take flat", lambda v, m: m.take(v["A"], [0, 0, 11])),
]
IDS = [c[0] for c in CASES]


def build(case):
    v = symbols()
    return v, case[1](v, sg)


def reference(case, values=None):
    return np.asarray(case[1](dict(VALUES, **(values or {})), np), dtype=float)


def float_inputs(out) -> list[str]:
    return [n.name for n in out.graph.nodes if n.op == "var" and n.dtype == "float64"]


def weights(shape):
    return np.random.default_rng(1).normal(size=shape)


def loss_np(case, name, value):
    out = reference(case, {name: value})
    return float(np.sum(np.sin(out) * weights(out.shape)))


def check_source_matches_impl(graph, inputs):
    """Every node of this file's ops: its source, evaluated on its operands, equals impl."""
    ids = [n.id for n in graph.nodes if n.op in MY_OPS]
    values = run(graph, list({a for i in ids for a in graph.nodes[i].args} | set(ids)), inputs)
    for i in ids:
        n = graph.nodes[i]
        names = [f"a{j}" for j in range(len(n.args))]
        text = NUMPY[n.op].render(names, n.attrs)
        env = {**NUMPY[n.op].namespace(), **{nm: values[a] for nm, a in zip(names, n.args)}}
        got = eval(text, env)  # noqa: S307  (our own generated text)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(values[i]), err_msg=text)
    return len(ids)


# -- forward ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_matches_numpy(case):
    _, out = build(case)
    want = reference(case)
    got = sg.evaluate(out, VALUES)
    assert out.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("key", [
    np.s_[1:], np.s_[:-1], np.s_[::-1], np.s_[::2], np.s_[-1::-2], np.s_[10:], np.s_[2:2],
    np.s_[-100:100], np.s_[3:0:-1], np.s_[..., None], np.s_[None, ..., 1:, None, ::-1],
    np.s_[1, ...], np.s_[:, -1], np.s_[[3, 3, 0]], np.s_[[[0], [1]], [2, 0]],
    np.s_[:, [], ], np.s_[-1, [1, -1]], np.s_[np.int64(2)],
])
def test_many_static_keys(key):
    A = sg.var("A", shape=(4, 3))
    got = A[key]
    want = VALUES["A"][key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(sg.evaluate(got, VALUES), want)


def test_trivial_keys_are_the_operand_and_keys_are_canonical():
    A = sg.var("A", shape=(4, 3))
    assert A[:].node == A.node and A[...].node == A.node and A[0:4, -3:].node == A.node
    assert A[-1].node == A[3].node
    assert A[1:100].node == A[1:].node
    assert A[::-1].node == A[3::-1].node


# -- gradients ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradient_matches_finite_differences(case):
    v, out = build(case)
    loss = sg.sum(sg.sin(out) * weights(out.shape))
    names = float_inputs(out)
    grads = sg.grad(loss, names)
    loss.graph.verify()
    for name, g in zip(names, sg.evaluate(list(grads), VALUES)):
        want = central(lambda val, name=name: loss_np(case, name, val), VALUES[name])
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8, err_msg=name)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_second_order_matches_finite_differences_of_gradient(case):
    v, out = build(case)
    loss = sg.sum(sg.sin(out) * weights(out.shape))
    name = float_inputs(out)[0]
    grad = sg.grad(loss, name)
    hess = sg.hessian(loss, name)
    loss.graph.verify()

    def grad_at(val):
        return sg.evaluate(grad, dict(VALUES, **{name: val}))

    x0 = np.asarray(VALUES[name], dtype=float)
    want = np.zeros(x0.shape + x0.shape)
    for i in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[i] = 1e-5
        want[(...,) + i] = (grad_at(x0 + d) - grad_at(x0 - d)) / 2e-5
    np.testing.assert_allclose(sg.evaluate(hess, VALUES), want, rtol=1e-6, atol=1e-8)
    assert check_source_matches_impl(loss.graph, VALUES) > 0


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_one_pass_jacobian_equals_stacked_vjps(case):
    v, out = build(case)
    name = float_inputs(out)[0]
    jac = sg.jacobian(out, name)
    rows = []
    for i in range(out.size):
        seed = np.zeros(out.size)
        seed[i] = 1.0
        rows.append(sg.vjp(out, name, sg.const(seed.reshape(out.shape))))
    got = sg.evaluate([jac, *rows], VALUES)
    stacked = np.stack(got[1:]).reshape(got[0].shape)
    np.testing.assert_array_equal(got[0], stacked)
    x0 = np.asarray(VALUES[name], dtype=float)
    fd = np.zeros(out.shape + x0.shape)
    for j in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[j] = 1.0  # outputs are at most quadratic in the inputs: central differences are exact
        fd[(...,) + j] = (reference(case, {name: x0 + d}) - reference(case, {name: x0 - d})) / 2
    np.testing.assert_allclose(got[0], fd, rtol=1e-12, atol=1e-12)
    out.graph.verify()
    assert check_source_matches_impl(out.graph, VALUES) > 0


def test_duplicate_indices_accumulate():
    x = sg.var("x", shape=(3,))
    g = sg.grad(sg.sum(x[[0, 0, 2]]), x)
    np.testing.assert_array_equal(sg.evaluate(g, {"x": [1.0, 2.0, 3.0]}), [2.0, 0.0, 1.0])
    w = np.array([1.0, 10.0, 100.0, 1000.0])
    y = sg.var("i", shape=(4,), dtype="int64")
    g = sg.grad(sg.sum(x[y] * w), x)
    got = sg.evaluate(g, {"x": [1.0, 2.0, 3.0], "i": [1, 1, 1, -1]})
    np.testing.assert_array_equal(got, [0.0, 111.0, 1000.0])


def test_pick_gradient_is_one_hot_and_index_gets_none():
    l_ = sg.var("l", shape=(3,))
    y = sg.var("y", dtype="int64")
    f = l_[y]
    np.testing.assert_array_equal(sg.evaluate(sg.grad(f, l_), {"l": [0.1, 0.2, 0.3], "y": 2}),
                                  [0.0, 0.0, 1.0])
    with pytest.raises(sg.DifferentiationError, match="'y'.*int64"):
        sg.grad(f, y)


def test_notes_negative_log_softmax_pick():
    # pnls(x, l) = logsumexp(x) - x_l has gradient softmax(x) - e_l (the notes' table).
    x = sg.var("x", shape=(4,))
    y = sg.var("y", dtype="int64")
    f = sg.logsumexp(x) - x[y]
    xv = np.array([0.5, -1.0, 2.0, 0.0])
    p = np.exp(xv) / np.exp(xv).sum()
    np.testing.assert_allclose(sg.evaluate(sg.grad(f, x), {"x": xv, "y": 1}),
                               p - np.eye(4)[1], rtol=1e-12)


def test_batched_reshape_and_broadcast_keep_leading_axes():
    x = sg.var("x", shape=(2, 6))
    r = sg.reshape(x, (3, 2), src_ndim=1)
    assert r.shape == (2, 3, 2)
    xv = np.arange(12.0).reshape(2, 6)
    np.testing.assert_array_equal(sg.evaluate(r, {"x": xv}), xv.reshape(2, 3, 2))
    b = sg.broadcast_to(sg.var("c", shape=(5, 3, 1)), (3, 4))
    assert b.shape == (5, 3, 4)
    with pytest.raises(sg.ShapeError, match="src_ndim"):
        sg.reshape(x, (3, 2), src_ndim=3)


def test_generated_source_is_plain_numpy():
    A = sg.var("A", shape=(4, 3))
    y = sg.var("y", dtype="int64")
    e = A[1:, None, y]
    n = e.graph.nodes[e.node]
    assert NUMPY["index"].render(["A", "y"], n.attrs) == "A[1:, None, y]"
    r = sg.reshape(A, (2, -1))
    assert NUMPY["reshape"].render(["A"], r.graph.nodes[r.node].attrs) == \
        "np.reshape(A, (2, 6))"


# -- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("key, match", [
    (5, r"out of range for axis 0 with size 4"),
    ((0, -4), r"index -4 is out of range for axis 1 with size 3"),
    ((0, 0, 0), "too many indices"),
    ((Ellipsis, 0, Ellipsis), "single ellipsis"),
    (1.0, "cannot index with float"),
    ("a", "cannot index with str"),
    ([1.5], "float64; indices must be integers"),
    (True, "boolean"),
    ([True, False, True, True], "boolean mask"),
    (slice(1.5, None), "slice bounds must be Python ints"),
    (slice(None, None, 0), "step cannot be zero"),
    ({"a": 1}, "cannot index with dict"),
    ([[0, 1], [2]], "ragged"),
])
def test_bad_keys_are_clear_symgrad_errors(key, match):
    A = sg.var("A", shape=(4, 3))
    with pytest.raises(sg.SymgradError, match=match):
        A[key]


def test_bad_index_expressions():
    x = sg.var("x", shape=(3,))
    with pytest.raises(sg.ShapeError, match="boolean mask"):
        x[x > 0]
    with pytest.raises(sg.ShapeError, match="'f' has dtype float64"):
        x[sg.var("f")]
    with pytest.raises(sg.ShapeError, match="slice bounds"):
        x[sg.var("n", dtype="int64"):]
    T = sg.var("T", shape=(2, 3, 4))
    k = sg.var("k", shape=(2,), dtype="int64")
    assert T[k, :, k].shape == (2, 3)  # separated: NumPy's broadcast axes first
    assert T[0, :, sg.var("y", dtype="int64")].shape == (3,)  # 0-d indices move nothing


def test_out_of_range_dynamic_index_at_run_time():
    x = sg.var("x", shape=(3,))
    y = sg.var("y", dtype="int64")
    with pytest.raises(sg.EvaluationError, match="out of bounds"):
        sg.evaluate(x[y], {"x": [1.0, 2.0, 3.0], "y": 3})
    with pytest.raises(sg.ShapeError, match="out of bounds"):
        sg.const(np.arange(3.0))[[0, 7]]  # a constant index array is checked when built


@pytest.mark.parametrize("make, match", [
    (lambda A: sg.reshape(A, (5,)), r"reshape: cannot reshape an array of shape \(4, 3\)"),
    (lambda A: sg.reshape(A, (-1, -1)), "one -1 at most"),
    (lambda A: sg.reshape(A, 2.5), "tuple of ints"),
    (lambda A: sg.broadcast_to(A, (3, 3)), r"cannot broadcast shape \(4, 3\) to \(3, 3\)"),
    (lambda A: sg.squeeze(A, 0), "cannot remove axis -2"),
    (lambda A: sg.expand_dims(A, 3), "out of range"),
    (lambda A: sg.concatenate([A, sg.var("x", shape=(3,))]), "must match"),
    (lambda A: sg.concatenate([A, sg.var("B", shape=(4, 2))], axis=0), "must match"),
    (lambda A: sg.concatenate([sg.var("s"), sg.var("t")]), "zero-dimensional"),
    (lambda A: sg.stack([A, sg.var("B", shape=(3, 4))]), "same shape"),
    (lambda A: sg.stack([A, A], axis=3), "out of range"),
    (lambda A: sg.take(A, [0.5]), "indices must be integers"),
])
def test_shaping_errors(make, match):
    with pytest.raises(sg.ShapeError, match=match):
        make(sg.var("A", shape=(4, 3)))


def test_concatenate_and_stack_of_one_array_iterate_it_as_numpy_does():
    x, m = sg.var("x", shape=(2,)), sg.var("m", shape=(2, 3))
    with pytest.raises(sg.ShapeError, match="zero-dimensional"):
        sg.concatenate(x)  # NumPy: the same ValueError
    mv = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(sg.evaluate(sg.concatenate(m), {"m": mv}), np.concatenate(mv))
    np.testing.assert_array_equal(sg.evaluate(sg.stack(x), {"x": mv[0, :2]}), mv[0, :2])
