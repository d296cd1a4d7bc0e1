"""NumPy's einsum: axes of size 1 broadcast as NumPy's do, and (batched) matrix products
written as matmul (what BLAS computes) with the same values and gradients as NumPy's
einsum and JAX's."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
import symgrad.numpy as snp

SPECS = [
    ("mnd,mdo->mno", (20, 4, 3), (20, 3, 5)),  # batched matmul
    ("mnd,mdo->mno", (1, 4, 1), (6, 1, 5)),  # size-1 axes broadcast
    ("ij,kj->ik", (3, 4), (5, 4)),  # no batch: einsum
    ("bij,bkj->bik", (2, 3, 4), (2, 5, 4)),  # a @ b.T per b
    ("ij,j->i", (3, 4), (4,)),
    ("bn,bnd->bd", (2, 3), (2, 3, 4)),  # a row vector per batch element
    ("bij,bjk->kib", (2, 3, 4), (2, 4, 5)),  # the output permuted
    ("ijk,mik->mij", (3, 4, 5), (6, 3, 5)),  # the first operand's free axis last
    ("i,i->", (4,), (4,)),
    ("bij,bjk", (2, 3, 4), (2, 4, 5)),  # implicit output: b summed, not a matmul
    ("i,j->ij", (2,), (3,)),
    ("ii,ij->j", (3, 3), (3, 4)),
]


@pytest.mark.parametrize("spec, sa, sb", SPECS)
def test_einsum_equals_numpys_and_jaxs_gradients(spec, sa, sb, rng):
    A, B = rng.standard_normal(sa), rng.standard_normal(sb)
    got = sg.jit(lambda a, b: snp.einsum(spec, a, b))(A, B)
    want = np.einsum(spec, A, B)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    grads = sg.grad(lambda a, b: snp.sum(snp.tanh(snp.einsum(spec, a, b))), (0, 1))(A, B)
    jgrads = jax.grad(lambda a, b: jnp.sum(jnp.tanh(jnp.einsum(spec, a, b))), (0, 1))(A, B)
    for g, j in zip(grads, jgrads):
        np.testing.assert_allclose(g, np.asarray(j), rtol=1e-12, atol=1e-14)


def test_batched_matrix_products_are_emitted_as_matmul(rng):
    W = rng.standard_normal((20, 1, 20))
    f = sg.jit(lambda W: snp.einsum("mnd,mdo->mno", np.ones((1, 40, 1)), W))
    np.testing.assert_allclose(f(W), np.einsum("mnd,mdo->mno", np.ones((1, 40, 1)), W),
                               rtol=1e-15)
    g = sg.grad(lambda W: snp.sum(snp.einsum("mnd,mdo->mno", np.ones((20, 40, 20)), W) ** 2))
    g(rng.standard_normal((20, 20, 20)))
    for source in (f.source, g.source):
        assert "np.einsum" not in source and ("@" in source or "matmul" in source)
    outer = sg.jit(lambda a, b: snp.einsum("i,j->ij", a, b))
    outer(np.ones(2), np.ones(3))
    assert "einsum" in outer.source  # not a matrix product: NumPy's einsum


def test_a_batched_product_keeps_the_outputs_last_axis_last():
    """``ijk,mik->mij`` (the last output axis the first operand's) is ``x_i @ L_i.T``: the
    product's rows are the output's, and only the leading axes are permuted after it."""
    L, x = sg.var("L", (3, 4, 5)), sg.var("x", (6, 3, 5))
    e = snp.einsum("ijk,mik->mij", L, x)
    n = e.graph.nodes[e.node]
    assert n.op == "transpose" and n.attrs["axes"][-1] == -1, n.attrs
