"""Selections (max, min, norms of ord inf/-inf/1/-1/2/-2, maximum, minimum) differentiated
robustly.

(a) No rule may depend on two computations of the same value agreeing to the last bit. A
    compiler may compute a value again for each of its uses, in another order: XLA on a GPU
    fuses each use of a value separately, and the matrix 1-norm's gradient was NaN there
    (its column sums compared with their maximum found no column: 0/0). Here that is
    simulated without a GPU: every registry op's gradient and tangent are evaluated with
    ``equal`` seeing its first operand one ulp up, as a recomputation in another order
    would, and must not change (the registry's examples have no ties).
(b) At exact ties the derivative is shared equally, as JAX's is (checked against JAX where
    it is installed) and as central differences give for a two-way tie.
"""

from __future__ import annotations

import dataclasses
import importlib
import zlib

import numpy as np
import pytest

import symgrad as sg
from symgrad.ir.op import REGISTRY
from symgrad.ir.shapes import is_float
from tests.support.finite_differences import central
from tests.support.registry_cases import registry_cases

CASES = [p for p in registry_cases([(), (3, 4)])
         if REGISTRY[p.values[0].op.name].builtin and p.values[0].op.differentiable]


def _one_ulp_off(a, b):
    """``a == b`` with ``a`` one ulp higher: ``a`` as computed again in another order."""
    a = np.asarray(a)
    if a.dtype.kind != "f":
        return np.equal(a, b)
    return np.equal(np.nextafter(a, np.inf), b)


def _compares_floats(exprs) -> bool:
    """Whether the graph of ``exprs`` compares two float values with ``==``."""
    if not exprs:
        return False
    graph = exprs[0].graph
    nodes = graph.nodes
    return any(nodes[i].op == "equal" and is_float(nodes[nodes[i].args[0]].dtype)
               for i in graph.ancestors([e.node for e in exprs]))


def _derivatives(case):
    """The gradient of ``sum(op(...) * c)`` and the tangent of ``op(...)`` along random
    directions, for the op's float operands; with the inputs."""
    out, xs, inputs = case.build()
    wrt = [x for x in xs if is_float(x.dtype)]
    if not (is_float(out.dtype) and wrt):
        return [], inputs
    rng = np.random.default_rng(zlib.crc32(case.op.name.encode()))
    c = rng.uniform(0.5, 1.5, out.shape)
    tangents = [rng.standard_normal(x.shape) for x in wrt]
    return [*sg.grad(sg.sum(out * c), wrt), sg.jvp(out, wrt, tangents)], inputs


def test_no_derivative_depends_on_a_value_computed_twice_agreeing_bitwise(monkeypatch):
    """Perturbing the compared value by one ulp leaves every derivative as it was: before
    the fix the max/min/norm shares became 0/0 (22 of the registry's cases)."""
    changed, checked = [], 0
    for p in CASES:
        derivs, inputs = _derivatives(p.values[0])
        if not derivs or not _compares_floats(derivs):
            continue
        checked += 1
        with np.errstate(all="ignore"):
            want = sg.evaluate(derivs, inputs)
            with monkeypatch.context() as m:
                m.setitem(REGISTRY, "equal", dataclasses.replace(REGISTRY["equal"],
                                                                 impl=_one_ulp_off))
                got = sg.evaluate(derivs, inputs)
        if not all(np.allclose(g, w, rtol=1e-12, atol=1e-12, equal_nan=True)
                   for g, w in zip(got, want)):
            changed.append(p.id)
    assert checked >= 40  # max, min, norm and the binary maximum/minimum family are here
    assert changed == []


def test_a_slice_holding_nan_keeps_a_nan_gradient():
    x = sg.var("x", shape=(2, 3))
    g = sg.evaluate(sg.grad(sg.sum(sg.max(x, axis=1)), x),
                    {"x": [[1.0, np.nan, 0.0], [1.0, 2.0, 0.0]]})
    assert np.isnan(g[0]).all()
    np.testing.assert_array_equal(g[1], [0.0, 1.0, 0.0])


# -- (b) at exact ties --------------------------------------------------------------------

# dyadic values: every sum below is exact, so the ties are exact in any order
_M = np.array([[1.0, -0.5, 2.0, 0.25],
               [-2.0, 1.5, 0.5, -1.75],
               [0.5, -1.5, 0.25, 1.5]])  # column |sums| 3.5, 3.5, 2.75, 3.5; rows 3.75, 5.75,
# 3.75 (no zeros: abs'(0) is 0 here, 1 in JAX)
_V = np.array([0.5, -2.0, 2.0, 1.0, -0.5])


def _selections():
    """(name, symgrad function, JAX function, variable): each at a tie."""
    m, v = sg.var("m", shape=(3, 4)), sg.var("v", shape=(5,))
    w = np.arange(1.0, 5.0)
    return [
        ("max", sg.max(m), lambda j, a: j.max(a), m),
        ("max-axis0", sg.sum(sg.max(sg.abs(m), axis=0) * w),
         lambda j, a: (j.abs(a).max(axis=0) * w).sum(), m),
        ("min-axes", sg.sum(sg.min(m * 0.0 + 1.0, axis=(0, 1))),
         lambda j, a: (a * 0.0 + 1.0).min(axis=(0, 1)).sum(), m),
        ("norm1", sg.norm(m, ord=1), lambda j, a: j.linalg.norm(a, ord=1), m),
        ("norm-1", sg.norm(m, ord=-1), lambda j, a: j.linalg.norm(a, ord=-1), m),
        ("norminf-cols", sg.norm(m.T, ord=np.inf), lambda j, a: j.linalg.norm(a.T, ord=np.inf),
         m),
        ("vinf", sg.norm(v, ord=np.inf), lambda j, a: j.linalg.norm(a, ord=np.inf), v),
        ("v-inf", sg.norm(v, ord=-np.inf), lambda j, a: j.linalg.norm(a, ord=-np.inf), v),
        ("maximum", sg.sum(sg.maximum(v, v[::-1])), lambda j, a: j.maximum(a, a[::-1]).sum(),
         v),
    ]


_SELECTIONS = _selections()


def _at(x) -> np.ndarray:
    return _M if x.name == "m" else _V


@pytest.fixture(scope="module")
def jnp():
    try:
        jax = importlib.import_module("jax")
    except ImportError:
        pytest.skip("JAX is not installed")
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield jax
    jax.config.update("jax_enable_x64", before)


@pytest.mark.parametrize("k", range(len(_SELECTIONS)), ids=[s[0] for s in _SELECTIONS])
def test_ties_share_like_jax(k, jnp):
    name, f, fj, x = _SELECTIONS[k]
    got = sg.evaluate(sg.grad(f, x), {x.name: _at(x)})
    want = np.asarray(jnp.grad(lambda a: fj(jnp.numpy, a))(_at(x)))
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0, err_msg=name)


def test_two_way_ties_match_central_differences():
    """At a two-way tie the central difference quotient is exactly the shared 1/2."""
    m = sg.var("m", shape=(3, 4))
    at = np.array([[1.0, -0.5, 2.0, 0.25], [-2.0, 1.5, 0.5, -1.75], [0.5, -1.0, 0.0, 1.5]])
    f = sg.norm(m, ord=1)  # column |sums| 3.5, 3.0, 2.5, 3.5: columns 0 and 3 tie
    g = sg.evaluate(sg.grad(f, m), {"m": at})
    h = 2.0 ** -20
    fd = central(lambda v: np.linalg.norm(v, 1), at, h)
    np.testing.assert_allclose(g, fd, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(g[:, [0, 3]], np.sign(at[:, [0, 3]]) / 2)
