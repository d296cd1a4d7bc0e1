"""Sparsity patterns (:mod:`symgrad.transforms.sparsity`): the Jacobian and Hessian
patterns are supersets of the numerical non-zeros (random sparse-structured functions from
``symgrad.testing.sparse_functions``, and every op of the registry's sparsity rule), the
sparse derivatives built on them equal the dense ones, the patterns follow the structure
(bands, blocks, a constant factor's zeros, zero derivatives), computing one leaves the graph
alone, and without SciPy they are index arrays. Patterns through loops:
``test_loop_sparsity.py``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import symgrad as sg
from symgrad.ir.shapes import is_float
from symgrad.testing import sparse_functions
from symgrad.transforms.sparsity import jacobian_pattern
from tests.support.registry_cases import registry_cases
from tests.support.sparse_close import dense as as_dense
from tests.support.sparse_close import sparse_close

pytest.importorskip("scipy")

SPARSE = settings(max_examples=40, deadline=None, derandomize=True)


@SPARSE
@given(sparse_functions(n=10))
def test_jacobian_pattern_is_a_superset_and_the_sparse_jacobian_equals_the_dense(case):
    r, at = case.expr, case.inputs
    x = sg.var("x", (10,))
    dense = np.asarray(sg.evaluate(sg.jacobian(r, x, mode="reverse"), at)).reshape(r.size, 10)
    pattern = as_dense(sg.jacobian_sparsity(r, x))
    assert not np.any((dense != 0) & ~pattern), case
    for mode in ("forward", "reverse", None):
        J = sg.jacobian(r, x, sparse=True, mode=mode)
        sparse_close(sg.evaluate(J, at), dense)
    r.graph.verify()


@SPARSE
@given(sparse_functions(n=10))
def test_hessian_pattern_is_a_superset_and_the_sparse_hessian_equals_the_dense(case):
    x = sg.var("x", (10,))
    f = sg.sum(case.expr * case.expr)
    at = case.inputs
    dense = sg.evaluate(sg.hessian(f, x, sparse=False), at)
    pattern = as_dense(sg.hessian_sparsity(f, x))
    assert np.array_equal(pattern, pattern.T)
    assert not np.any((dense != 0) & ~pattern), case
    for method in ("star", "distance2"):
        H = sg.hessian(f, x, sparse=True, method=method)
        sparse_close(sg.evaluate(H, at), dense)
    f.graph.verify()


FLOAT_CASES = [c for c in registry_cases([(), (3, 4), (3, 1), (1, 4)])
               if c.values[0].op.differentiable]


@pytest.mark.parametrize("case", FLOAT_CASES)
def test_every_sparsity_rule_is_a_superset_of_the_jacobian(case):
    out, xs, inputs = case.build()
    wrt = [x for x in xs if is_float(x.dtype)]
    if not wrt or not is_float(out.dtype):
        pytest.skip("no float operand")
    pattern = jacobian_pattern([out], wrt).toarray()
    blocks = sg.jacobian(out, wrt, mode="reverse")
    dense = np.concatenate([np.asarray(sg.evaluate(b, inputs)).reshape(out.size, w.size)
                            for b, w in zip(blocks, wrt)], axis=1)
    assert not np.any((dense != 0) & ~pattern), np.argwhere((dense != 0) & ~pattern)[:5]


def test_patterns_follow_the_structure():
    x = sg.var("x", shape=(6,))
    band = sg.jacobian_sparsity(x[2:] - 2.0 * x[1:-1] + x[:-2], x)  # a 1-D Laplacian
    assert band.nnz == 12 and as_dense(band)[1, 1:4].all()
    block = sg.jacobian_sparsity(sg.sum(sg.reshape(x, (3, 2)) ** 2, axis=-1), x)
    assert as_dense(block).astype(int).tolist() == [[1, 1, 0, 0, 0, 0], [0, 0, 1, 1, 0, 0],
                                                  [0, 0, 0, 0, 1, 1]]
    D = np.diag([1.0, 2.0, 3.0])  # a constant factor's zeros are skipped by matmul
    assert as_dense(sg.jacobian_sparsity(D @ x[:3], x)).sum() == 3
    assert sg.jacobian_sparsity(sg.floor(x) * 2.0, x).nnz == 0  # zero derivative


def test_hessian_sparsity_leaves_the_graph_alone():
    x = sg.var("x", shape=(5,))
    f = sg.sum(sg.exp(x[1:] * x[:-1]))
    before = len(f.graph)
    sg.hessian_sparsity(f, x)
    assert len(f.graph) == before and f.graph.transforms == []


def test_patterns_without_scipy_are_index_arrays(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_scipy(name, *args, **kwargs):
        if name.startswith("scipy"):
            raise ImportError("no scipy here")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_scipy)
    x = sg.var("x", shape=(4,))
    rows, cols = sg.jacobian_sparsity(x[1:] * x[:-1], x)
    assert rows.tolist() == [0, 0, 1, 1, 2, 2] and cols.tolist() == [0, 1, 1, 2, 2, 3]
    value = sg.evaluate(sg.jacobian(x[1:] * x[:-1], x, sparse=True), {"x": np.arange(4.0)})
    assert np.array_equal(value.toarray(), np.array([[1, 0, 0, 0], [0, 2, 1, 0], [0, 0, 3, 2]]))
