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
