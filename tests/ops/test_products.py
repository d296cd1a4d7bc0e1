"""Products: ``matmul dot outer transpose matrix_transpose einsum`` give NumPy's values with
batch broadcasting and 1-D operands, gradients and Hessian-vector products equal to JAX's,
forward mode equal to JAX's ``jvp``; the ops refuse by name what they do not take (``outer``
of 2-D, ``dot`` beyond 2 axes, ``...`` in einsum), which ``sg.dot``/``sg.einsum`` build."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.ops import F

R = np.random.default_rng(8)
SHAPES = {"A": (2, 3, 4), "B": (4, 5), "v": (4,), "w": (3,), "M": (3, 3), "C": (5, 2, 4)}
AT = {k: R.standard_normal(s) for k, s in SHAPES.items()}

CASES = {
    "batched_matmul": lambda m, a: m.matmul(a["A"], a["B"]),
    "matrix_vector": lambda m, a: m.matmul(a["A"], a["v"]),
    "vector_matrix": lambda m, a: m.matmul(a["w"], a["M"]),
    "broadcast_batch": lambda m, a: m.matmul(a["A"], m.transpose(a["C"], (0, 2, 1))[:1]),
    "dot_2d": lambda m, a: m.dot(a["M"], a["w"]),
    "dot_1d": lambda m, a: m.dot(a["v"], a["v"]),
    "outer": lambda m, a: m.outer(a["w"], a["v"]),
    "transpose_axes": lambda m, a: m.transpose(a["A"], (2, 0, 1)),
    "transpose_reverse": lambda m, a: m.transpose(a["A"]),
    "matrix_transpose": lambda m, a: m.matrix_transpose(a["A"]),
    "einsum_trace": lambda m, a: m.einsum("ii->", a["M"]),
    "einsum_batch_contract": lambda m, a: m.einsum("bij,kbj->ik", a["A"], a["C"]),
    "einsum_three": lambda m, a: m.einsum("bij,jk,kbj->i", a["A"], a["B"], a["C"]),
    "einsum_diagonal": lambda m, a: m.einsum("ii->i", a["M"]),
    "einsum_outer": lambda m, a: m.einsum("i,j->ji", a["w"], a["v"]),
}


@pytest.fixture(scope="module")
def jnp(x64):
    return pytest.importorskip("jax").numpy


@pytest.mark.parametrize("name", CASES)
def test_values_gradients_and_jvps_equal_jax(name, jnp):
    import jax

    xs = {k: sg.var(k, shape=s) for k, s in SHAPES.items()}
    y = CASES[name](sg, xs)
    want = CASES[name](np, AT)
    np.testing.assert_allclose(sg.evaluate(y, AT, unknown="ignore"), want, rtol=1e-13,
                               atol=1e-14)
    used = [k for k in SHAPES if k in y.graph.variables]
    w = np.cos(np.arange(np.size(want))).reshape(np.shape(want))

    def ref(*vals):
        a = {**AT, **dict(zip(used, vals))}
        return jnp.sum(jnp.tanh(CASES[name](jnp, a)) * w)

    f = sg.sum(sg.tanh(y) * w)
    got = sg.evaluate(list(sg.grad(f, [xs[k] for k in used])), AT, unknown="ignore")
    want_g = jax.grad(ref, argnums=tuple(range(len(used))))(*[AT[k] for k in used])
    for k, g, wg in zip(used, got, want_g):
        np.testing.assert_allclose(g, wg, rtol=1e-12, atol=1e-13, err_msg=k)
    ts = [np.sin(np.arange(AT[k].size)).reshape(AT[k].shape) for k in used]
    got_t = sg.evaluate(sg.jvp(y, [xs[k] for k in used], ts), AT, unknown="ignore")
    _, want_t = jax.jvp(lambda *v: CASES[name](jnp, {**AT, **dict(zip(used, v))}),
                        tuple(AT[k] for k in used), tuple(ts))
    np.testing.assert_allclose(got_t, want_t, rtol=1e-12, atol=1e-13)


def test_the_hessian_of_a_quadratic_form_is_the_symmetric_part():
    x = sg.var("x", shape=(3,))
    f = x @ (AT["M"] @ x)
    H = sg.evaluate(sg.hessian(f, x), {"x": AT["w"]})
    np.testing.assert_allclose(H, AT["M"] + AT["M"].T, rtol=1e-15)


@pytest.mark.parametrize("build, match", [
    (lambda x: F.outer(x["M"], x["w"]), "outer: operands must be 1-D"),
    (lambda x: F.dot(x["A"], x["v"]), "dot: .*more than 2 axes.*use matmul"),
    (lambda x: F.einsum(x["A"], x["v"], spec="...i,i->..."), "einsum: .*'...' .*letter"),
    (lambda x: F.matmul(x["A"], x["w"]), "matmul"),
    (lambda x: F.einsum(x["M"], x["B"], spec="ij,jk->ik"), "einsum"),
])
def test_the_ops_refuse_what_they_do_not_take_by_name(build, match):
    xs = {k: sg.var(k, shape=s) for k, s in SHAPES.items()}
    with pytest.raises(sg.ShapeError, match=match):
        build(xs)


def test_the_public_dot_and_einsum_take_numpys_wider_forms():
    """What the ops refuse, ``sg.dot`` and ``sg.einsum`` build from other ops."""
    A, v = sg.var("A", shape=SHAPES["A"]), sg.var("v", shape=SHAPES["v"])
    np.testing.assert_allclose(sg.evaluate(sg.dot(A, v), AT, unknown="ignore"),
                               np.dot(AT["A"], AT["v"]), rtol=1e-14)
    got = sg.evaluate(sg.einsum("...i,i->...", A, v), AT, unknown="ignore")
    np.testing.assert_allclose(got, np.einsum("...i,i->...", AT["A"], AT["v"]), rtol=1e-14)
