"""symgrad.numpy on data computes numbers, as autograd.numpy and jax.numpy do: data code,
callbacks and optimiser loops run unchanged after ``import symgrad.numpy as np``, build no
graph, and give NumPy's values bit for bit; a symbolic operand still builds expressions."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

import symgrad as sg
import symgrad.numpy as snp


def test_data_gives_numpys_values_not_expressions(rng):
    x = rng.standard_normal(50) * 3.0 + 1.0
    assert bool(snp.var(x) > snp.mean(x)) == bool(np.var(x) > np.mean(x))
    assert float(snp.sum(x)) == float(np.sum(x))
    for got, want in [(snp.std(x, ddof=1), np.std(x, ddof=1)),
                      (snp.linalg.norm(x), np.linalg.norm(x)),
                      (snp.outer(x, x), np.outer(x, x)),
                      (snp.cumsum(x), np.cumsum(x)),
                      (snp.zeros(3), np.zeros(3)),
                      (snp.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 2.0], [3.0, 4.0]]))]:
        assert type(got) is type(want)
        np.testing.assert_array_equal(got, want)
    assert snp.sigmoid(0.0) == 0.5  # a name beyond NumPy: its ops' NumPy implementations
    np.testing.assert_allclose(snp.logsumexp(x), np.log(np.sum(np.exp(x))), rtol=1e-14)


def test_an_optimiser_loop_on_numpy_parameters_matches_numpy_bit_for_bit(rng):
    def adam(np, p, grads, steps=100, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
        m = np.zeros_like(p)
        v = np.zeros_like(p)
        for t, g in enumerate(grads[:steps], start=1):
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g ** 2
            mhat = m / (1 - b1 ** t)
            vhat = v / (1 - b2 ** t)
            p -= lr * mhat / (np.sqrt(vhat) + eps)
        return p

    grads = rng.standard_normal((100, 5))
    p0 = rng.standard_normal(5)
    got = adam(snp, p0.copy(), grads)
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, adam(np, p0.copy(), grads))


def test_scipy_solvers_on_symgrad_numpy_code():
    """scipy.optimize.newton on a function written with symgrad.numpy and its derivative."""
    def f(r):
        return snp.exp(r) - 2.0 * snp.cos(r)

    def fprime(r):
        return snp.exp(r) + 2.0 * snp.sin(r)

    root = scipy.optimize.newton(f, 1.0, fprime=fprime)
    assert abs(np.exp(root) - 2.0 * np.cos(root)) < 1e-12
    assert sg.grad(f)(root) == pytest.approx(fprime(root), rel=1e-15)  # still traces


def test_a_symbolic_operand_builds_an_expression():
    v = sg.var("v", shape=(3,))
    assert isinstance(snp.var(v), sg.Expr)
    assert isinstance(snp.stack([v, np.ones(3)]), sg.Expr)
    assert isinstance(snp.array([[v[0], 1.0], [2.0, v[1]]]), sg.Expr)


def test_messages_outside_a_trace_do_not_speak_of_tracing():
    v = sg.var("v", shape=(3,))
    with pytest.raises(sg.UnsupportedError) as e:
        float(snp.sum(v))
    assert "tracing" not in str(e.value) and "sg.evaluate" in str(e.value)
    with pytest.raises(sg.UnsupportedError) as e:
        bool(snp.sum(v) > 0)
    assert "tracing" not in str(e.value)
    with pytest.raises(sg.UnsupportedError, match="while tracing"):
        sg.grad(lambda w: w * float(w))(1.0)  # inside a trace it says so


def test_array_makers_inside_a_trace_take_stored_expressions():
    """symgrad.numpy's zeros/zeros_like/copy inside a trace make arrays that take
    ``out[i] = expr`` as NumPy's do (an expression itself still refuses assignment)."""
    def fill(w):
        out = snp.zeros(2)
        out[0] = w[0] * w[1]
        d = snp.zeros_like(w)
        d[1] = snp.sin(w[0])
        c = snp.copy(w)
        c[0] = 2.0
        return snp.sum(out) + snp.sum(d ** 2) + snp.sum(c * w)

    w = np.array([0.3, 1.7])
    np.testing.assert_allclose(sg.grad(fill)(w), [w[1] + 2 * np.sin(w[0]) * np.cos(w[0]) + 2.0,
                                                  w[0] + 2 * w[1]], rtol=1e-14)
    with pytest.raises(sg.UnsupportedError, match=r"\.at\[i(ndex)?\]\.set"):
        sg.grad(lambda v: snp.sum(v.__setitem__(0, 1.0) or v))(w)
