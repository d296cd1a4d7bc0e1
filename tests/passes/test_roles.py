"""A traced loop's roles: from ``prev`` (node -> the node it repeats one step earlier),
``role_groups`` finds the chains (roles) and joins roles linked by operands into one loop,
keeping only loops with a long enough role, and gives nodes on a cycle of ``prev`` no role;
``RoleArrays``, ``Steps`` and ``ByStep`` answer where a node is and which node is a step."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
from symgrad.ir.graph import Graph
from symgrad.passes.roles import ByStep, RoleArrays, Steps, role_groups
from symgrad.passes.steps import Walk


def _unrolled(n: int):
    """``h = sin(h) * w`` n times, and a separate chain ``g = g + 1`` n times: each node's
    ``prev`` is the node it repeats one step earlier."""
    graph = Graph()  # one graph from the start: node ids stay what they were when built
    w, h, g = (sg.Expr(graph, graph.var(name)) for name in "whg")
    sins, muls, adds = [], [], []
    for _ in range(n):
        s = sg.sin(h)
        h = s * w
        g = g + 1.0
        sins.append(s.node)
        muls.append(h.node)
        adds.append(g.node)
    prev = {}
    for chain in (sins, muls, adds):
        prev.update(zip(chain[1:], chain[:-1]))
    order = graph.ancestors([h.node, g.node])
    return graph, Walk(graph, order), prev, (sins, muls, adds)


def test_roles_linked_by_operands_are_one_loop_and_separate_chains_are_not():
    graph, walk, prev, (sins, muls, adds) = _unrolled(6)
    loops = role_groups(graph, walk, prev, min_len=3)
    assert loops == [{sins[0]: sins, muls[0]: muls}, {adds[0]: adds}]  # by first node
    assert role_groups(graph, walk, prev, min_len=7) == []  # no role that long


def test_nodes_on_a_cycle_of_prev_have_no_role():
    graph, walk, prev, (sins, muls, adds) = _unrolled(4)
    prev[adds[0]] = adds[-1]  # the chain closes on itself
    loops = role_groups(graph, walk, prev, min_len=2)
    assert all(adds[0] not in roles for roles in loops)
    assert [sorted(roles) for roles in loops] == [sorted([sins[0], muls[0]])]


def test_role_arrays_and_steps_say_where_a_node_is():
    graph, walk, prev, (sins, muls, _) = _unrolled(5)
    roles = {sins[0]: sins, muls[0]: muls}
    arrays = RoleArrays(graph, roles, walk)
    assert arrays.where(sins[3]) == (sins[0], 3) and arrays.where(muls[0]) == (muls[0], 0)
    assert arrays.where(graph.variables["w"]) is None and arrays.where(10**6) is None
    np.testing.assert_array_equal(arrays.args[muls[0]][:, 0], sins)  # sin(h) * w: operand 0
    steps = Steps(arrays, {sins[0]: (1, 0), muls[0]: (1, 0)})  # the first node is no step
    assert steps.of(sins[0]) is None and steps.of(sins[4]) == (sins[0], 3)
    np.testing.assert_array_equal(steps.nodes(muls[0], 0, 2), muls[1:4])
    np.testing.assert_array_equal(steps.args(muls[0], 1, 2)[:, 0], sins[2:4])


def test_by_step_takes_in_steps_before_its_chain():
    chain = [11, 12, 13, 14]
    m = ByStep(chain, np.array(chain), 1, 0)  # nodes 12, 13, 14 are steps 0, 1, 2
    assert (m[0], m[2], m.stop) == (12, 14, 3)
    m[-1] = 7
    m[-2] = 5
    assert m[-1] == 7 and m.nodes(-2, 1).tolist() == [5, 7, 12, 13]
    m[1] = 99  # a step set beside its chain overrides it
    assert m[1] == 99 and m.nodes(0, 2).tolist() == [12, 99, 14]
    with pytest.raises(KeyError):
        m[3]  # a step past the chain is not a node
