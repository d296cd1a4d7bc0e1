"""Pytrees as ``jax.tree_util`` has them: the leaves in JAX's order (dict keys sorted,
``None`` a tree without leaves, namedtuples as containers), structures that compare and hash
alike for alike trees, round trips through unflatten, ``tree_map`` over several trees, and
errors that say what is wrong (wrong leaf counts, mismatched trees, unsortable keys, trees
nested too deep)."""

from __future__ import annotations

import dataclasses
from collections import namedtuple

import numpy as np
import pytest

import symgrad as sg
from symgrad.base import tree_util as tu

Point = namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Params:
    w: object
    b: object


TREES = [
    {"b": (1.0, 2.0), "a": [3.0, None]},
    [Point(1.0, {"z": 2.0, "y": (3.0,)}), None, 4.0],
    ((), [], {}, None),
    {"layers": [{"W": np.ones((2, 2)), "b": np.zeros(2)}] * 2, "scale": 0.5},
    5.0,
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_leaves_come_in_jaxs_order_and_unflatten_rebuilds_the_tree(tree):
    jtu = pytest.importorskip("jax.tree_util")
    leaves, treedef = tu.tree_flatten(tree)
    want = jtu.tree_leaves(tree)
    assert len(leaves) == len(want) == treedef.num_leaves
    assert all(a is b for a, b in zip(leaves, want))  # the same objects, in the same order
    again = tu.tree_unflatten(treedef, leaves)
    assert tu.tree_structure(again) == treedef
    assert jtu.tree_structure(again) == jtu.tree_structure(tree)
    marked = tu.tree_unflatten(treedef, range(len(leaves)))
    assert tu.tree_leaves(marked) == list(range(len(leaves)))


def test_structures_are_equal_and_hash_alike_for_alike_trees_only():
    a = tu.tree_structure({"w": [1.0, 2.0], "b": 3.0})
    b = tu.tree_structure({"b": np.zeros(3), "w": [np.ones(2), 0]})
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != tu.tree_structure({"w": (1.0, 2.0), "b": 3.0})  # tuple, not list
    assert a != tu.tree_structure({"w": [1.0, 2.0], "c": 3.0})  # another key
    assert tu.tree_structure(Point(1, 2)) != tu.tree_structure((1, 2))
    assert repr(tu.tree_structure((1.0, [2.0]))) == "PyTreeDef(tuple[*, PyTreeDef(list[*])])"


def test_dataclasses_are_containers_of_their_fields():
    p = Params(w=np.arange(3.0), b=(1.0, 2.0))
    leaves, treedef = tu.tree_flatten(p)
    assert [type(v) for v in leaves] == [np.ndarray, float, float]
    back = tu.tree_unflatten(treedef, [leaves[0] * 2, 10.0, 20.0])
    assert isinstance(back, Params) and back.b == (10.0, 20.0)
    np.testing.assert_array_equal(back.w, [0.0, 2.0, 4.0])


def test_is_leaf_stops_the_descent():
    tree = {"a": (1.0, 2.0), "b": [(3.0, 4.0)]}
    leaves, treedef = tu.tree_flatten(tree, is_leaf=lambda v: type(v) is tuple)
    assert leaves == [(1.0, 2.0), (3.0, 4.0)] and treedef.num_leaves == 2


def test_tree_map_applies_leaf_by_leaf_over_several_trees():
    jtu = pytest.importorskip("jax.tree_util")
    x = {"w": [1.0, 2.0], "b": Point(3.0, 4.0)}
    y = {"w": [10.0, 20.0], "b": Point(30.0, 40.0)}
    got = tu.tree_map(lambda a, b: a * b + 1, x, y)
    assert got == jtu.tree_map(lambda a, b: a * b + 1, x, y)
    assert isinstance(got["b"], Point)
    with pytest.raises(sg.ArgumentError, match="differ in structure"):
        tu.tree_map(lambda a, b: a, x, {"w": [1.0], "b": Point(3.0, 4.0)})


def test_errors_say_what_is_wrong():
    treedef = tu.tree_structure([1.0, (2.0, 3.0)])
    with pytest.raises(sg.ArgumentError, match="too few leaves"):
        tu.tree_unflatten(treedef, [1.0, 2.0])
    with pytest.raises(sg.ArgumentError, match="more leaves than"):
        tu.tree_unflatten(treedef, [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(sg.ArgumentError, match="sortable keys"):
        tu.tree_flatten({1: 1.0, "a": 2.0})
    with pytest.raises(sg.ArgumentError, match="register_pytree_node needs a class"):
        tu.register_pytree_node("Box", lambda b: ((), None), lambda aux, ch: None)
    deep: object = 1.0
    for _ in range(300):
        deep = [deep]
    with pytest.raises(sg.ArgumentError, match="nested more than 256 levels"):
        tu.tree_flatten(deep)
