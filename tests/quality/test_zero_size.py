"""Zero-size outputs and inputs through every derivative and every backend: correctly
shaped empty arrays, never a crash (``sg.jacobian(snp.diff(x), x)`` for ``x`` of shape (1,)
raised a ValueError from a reshape, as did the Hessian of a function of an empty vector).
The non-empty blocks beside them are checked against central differences."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
import symgrad.numpy as snp
from tests.support.finite_differences import central

X, Y, Z = sg.var("x", shape=(1,)), sg.var("y", shape=(0,)), sg.var("z", shape=(3,))
M = sg.var("M", shape=(0, 3))
VALUES = {"x": np.array([2.0]), "y": np.zeros(0), "z": np.array([0.5, -1.0, 2.0]),
          "M": np.zeros((0, 3))}


def _flat(e) -> list:
    return [a for item in e for a in _flat(item)] if isinstance(e, tuple) else [e]


DERIVATIVES = {
    "jacobian": lambda: sg.jacobian(snp.diff(X), X),
    "jacobian reverse": lambda: sg.jacobian(snp.diff(X), X, mode="reverse"),
    "jacobian forward": lambda: sg.jacobian(snp.diff(X), X, mode="forward"),
    "jacfwd": lambda: sg.jacfwd(snp.diff(X), X),
    "jacobian of empty by empty": lambda: sg.jacobian(Y * 2.0, Y),
    "jacobian by an empty input": lambda: sg.jacobian(Z * 2.0 + sg.sum(Y), [Y, Z]),
    "jacfwd by an empty input": lambda: sg.jacfwd(Z * 2.0 + sg.sum(Y), [Y, Z]),
    "jacobian through a (0, 3) matrix": lambda: sg.jacobian(sg.sum(sg.exp(M), axis=0) * Z, [M, Z]),
    "grad": lambda: sg.grad(sg.sum(Y * Y) + sg.sum(Z ** 3), [Y, Z]),
    "hessian": lambda: sg.hessian(sg.sum(Y * Y), Y),
    "hessian blocks": lambda: sg.hessian(sg.sum(Y * Y) + sg.sum(Z ** 3), [Y, Z]),
    "hessian of a product over nothing": lambda: sg.hessian(snp.prod(Y) * sg.sum(Z ** 2), [Y, Z]),
    "hvp": lambda: sg.hvp(sg.sum(Y * Y), Y, np.zeros(0)),
    "vjp": lambda: sg.vjp(snp.diff(X), X, np.zeros(0)),
    "vjp batch of empty": lambda: sg.vjp(snp.diff(X), X, np.zeros((3, 0))),
    "vjp empty batch": lambda: sg.vjp(sg.sin(Z), Z, np.ones((0, 3))),
    "jvp": lambda: sg.jvp(snp.diff(X), X, np.ones(1)),
    "jvp empty batch": lambda: sg.jvp(sg.sin(Z), Z, np.ones((0, 3))),
    "derivative": lambda: sg.derivative(sg.sum(Y ** 3), Y, 3),
    "logsumexp over an empty axis": lambda: sg.jacobian(sg.logsumexp(M, axis=0) + Z, [M, Z]),
}


@pytest.mark.parametrize("name", DERIVATIVES)
def test_zero_size_derivatives_have_their_shapes(name):
    outs = _flat(DERIVATIVES[name]())
    got = sg.evaluate(outs, VALUES, unknown="ignore")
    for e, g in zip(outs, got):
        assert np.shape(g) == e.shape, name


def test_jacobian_of_diff_of_a_length_one_vector_is_empty():
    J = sg.jacobian(snp.diff(X), X)
    assert J.shape == (0, 1)
    assert sg.evaluate(J, VALUES, unknown="ignore").shape == (0, 1)
    H = sg.hessian(sg.sum(Y * Y) + sg.sum(Z ** 3), [Y, Z])
    blocks = sg.evaluate([H[0][0], H[0][1], H[1][0], H[1][1]], VALUES)
    assert [b.shape for b in blocks] == [(0, 0), (0, 3), (3, 0), (3, 3)]
    np.testing.assert_allclose(blocks[3], np.diag(6 * VALUES["z"]), rtol=1e-15)


def test_non_empty_blocks_beside_empty_ones_are_right():
    f = snp.concatenate([snp.diff(X * Z[0]), Z * sg.sum(Y) + Z ** 2 * X])  # (0,) + (3,)
    jx, jy, jz = sg.jacobian(f, [X, Y, Z])
    got = sg.evaluate([jx, jy, jz], VALUES)
    x, z = VALUES["x"], VALUES["z"]
    np.testing.assert_allclose(got[0], central(lambda a: z ** 2 * a, x),
                               rtol=1e-8)
    assert got[1].shape == (3, 0)
    np.testing.assert_allclose(got[2], central(lambda a: a ** 2 * x, z),
                               rtol=1e-8)



@pytest.mark.parametrize("backend", ["numpy", "array_api", "jax", "torch"])
def test_emitted_code_returns_empty_arrays_of_the_right_shape(backend, x64):
    if backend != "numpy":
        pytest.importorskip("array_api_compat")
        pytest.importorskip({"array_api": "array_api_compat", "jax": "jax",
                             "torch": "torch"}[backend])
    names = ["x", "y", "z", "M"]
    for name, make in DERIVATIVES.items():
        outs = _flat(make())
        outs = [*outs, sg.sum(Z) + sg.sum(X) + sg.sum(Y) + sg.sum(M)]  # every input used
        want = sg.evaluate(outs, VALUES)
        fn = sg.compile(outs, inputs=names, backend=backend)
        with np.errstate(divide="ignore"):  # logsumexp over nothing: log(0) = -inf
            got = fn(*[VALUES[n] for n in names])
        for g, w in zip(got, want):
            g = np.asarray(g.numpy() if hasattr(g, "numpy") and not isinstance(g, np.ndarray)
                           else g)
            assert g.shape == np.shape(w), f"{name} on {backend}"
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=name)


def test_sparse_jacobian_of_an_empty_output():
    J = sg.jacobian(snp.diff(X), X, sparse=True)
    got = sg.evaluate(J, VALUES, unknown="ignore")
    assert got.shape == (0, 1) and got.nnz == 0
