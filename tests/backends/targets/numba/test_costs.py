"""The Numba cost model: which nodes stay NumPy's calls, and that it says why."""

from __future__ import annotations

import symgrad as sg
from symgrad.backends.targets.numba.costs import chosen, numpy_better, pays, simd_here


def _node(e):
    return e.graph.nodes[e.node], e.graph.nodes


def test_a_square_is_priced_as_a_multiply_a_general_power_by_numpys_simd_loop():
    """x ** 2 is x * x in both (NumPy's fast path, LLVM's for pow(x, 2.0)): compiled;
    x ** 2.5 on 10^5 elements is NumPy's SIMD pow where the machine has one."""
    x = sg.var("x", shape=(100_000,))
    assert numpy_better(*_node(x ** 2.0)) is None
    general = numpy_better(*_node(x ** 2.5))
    if simd_here():
        assert general is not None and chosen(general), general
    else:
        assert general is None


def test_a_sigmoid_chain_pays_as_one_kernel():
    """NumPy writes sigmoid as four passes: a chain holding one is one kernel."""
    x = sg.var("x", shape=(100_000,))
    e = sg.sigmoid(x * 1.7) * x
    nodes = e.graph.nodes
    members = [n for n in nodes if not (n.is_var or n.is_const)]
    assert numpy_better(*_node(sg.sigmoid(x))) is None
    assert pays(members, nodes, arrays=2)


def test_a_sum_over_a_short_last_axis_compiles_over_a_long_one_stays_numpys():
    """NumPy reduces a short last axis one inner-loop call per output (2 ns per element
    over 10): compiled; over a last axis of 10^4 its SIMD loop wins, and says so. A sum
    over the leading axis compiles: both loops run over the kept trailing axes (the
    compiled one adds each row into the result's row, vectorized)."""
    assert numpy_better(*_node(sg.sum(sg.var("x", shape=(25_000, 10)), axis=-1))) is None
    assert numpy_better(*_node(sg.max(sg.var("x", shape=(10_000, 25)), axis=1,
                                      keepdims=True))) is None
    long = numpy_better(*_node(sg.sum(sg.var("x", shape=(25, 10_000)), axis=-1)))
    assert long is not None and chosen(long), long
    assert numpy_better(*_node(sg.sum(sg.var("x", shape=(1000, 250)), axis=0))) is None


def test_a_sum_over_trailing_axes_counts_them_as_one_inner_loop():
    """Summing the two last axes of (100, 50, 10) is one inner loop of 500 per output
    (NumPy collapses them): its SIMD loop; over the middle axis only, loops of 10."""
    x = sg.var("x", shape=(100, 50, 10))
    assert numpy_better(*_node(sg.sum(x, axis=(1, 2)))) is not None
    assert numpy_better(*_node(sg.sum(x, axis=1))) is None


def test_a_kernel_of_views_only_does_not_pay():
    """A reshape and a transpose cost NumPy nothing: no kernel for them alone."""
    x = sg.var("x", shape=(300, 400))
    t = sg.transpose(sg.reshape(x, (400, 300)))
    nodes = t.graph.nodes
    members = [n for n in nodes if not (n.is_var or n.is_const)]
    assert len(members) == 2 and not pays(members, nodes, arrays=2)


def test_a_big_view_leaves_the_kernel_that_made_its_operand():
    """A transpose of a kernel's result, read only by a matrix product (NumPy's BLAS call),
    is NumPy's view after the kernel: the kernel returns its operand (a fresh C-contiguous
    array), never a transposed copy; sg.stats says why. A small one stays in a kernel."""
    for n, left in ((200, True), (8, False)):
        x, w = sg.var("x", shape=(n, n)), sg.var("w", shape=(n, n))
        y = sg.transpose(sg.tanh(x) * 2.0 + x) @ w
        s = sg.stats(y, backend="numba")
        why = s.numpy_why.get("transpose", "")
        assert (why.startswith("a view") and chosen(why)) is left, s.numpy_why
        assert ("transpose" in s.numpy_ops) is left, s.numpy_ops
        if left:
            src = sg.to_source(y, backend="numba")
            kernel, driver = src.split("\ndef f(")
            assert "transpose" not in kernel and "np.transpose(t" in driver, src
