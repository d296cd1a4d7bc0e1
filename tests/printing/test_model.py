"""What a picture is made of: a box's side and size from its text, a scene's legend kinds in
the legend's order (a bold border when an output is present), its extent, the box of each
node (a group's members included), and edge crossings counted on hand-placed scenes whose
crossings are known (shared ends and parallel edges do not count)."""

from __future__ import annotations

import pytest

import symgrad as sg
from symgrad.printing.model import CHAR, EDGE_LEGEND, LEGEND, LINE, Box, Edge, Scene
from symgrad.printing.scene import build_scene


def _box(key, kind="forward", x=0.0, y=0.0, lines=("u1",), **kw):
    return Box(key=key, kind=kind, label=key, lines=list(lines), x=x, y=y, **kw)


def _scene(boxes, edges):
    return Scene(graph=sg.var("x").graph, boxes={b.key: b for b in boxes}, edges=edges,
                 title="t", subtitle="")


def test_a_box_is_sized_by_its_text_and_sided_by_its_kind():
    b = _box("a", lines=("u1 = sin(x)", "0.84"))
    assert b.width == pytest.approx(len("u1 = sin(x)") * CHAR + 0.16)
    assert b.height == pytest.approx(2 * LINE + 0.1)
    assert [_box("k", kind=k).side for k in ("input", "forward", "adjoint", "shared")] == [
        "forward", "forward", "B", "B"]
    assert _box("g", kind="group").side == "forward"
    assert _box("g", kind="group", anchor="a").side == "B"


def test_the_legend_lists_the_kinds_present_in_its_own_order():
    s = _scene([_box("p", kind="adjoint"), _box("i", kind="input", output=True),
                _box("f", kind="forward")],
               [Edge("i", "f", "operand"), Edge("f", "p", "link")])
    assert s.kinds == [k for k in LEGEND if k in ("input", "forward", "adjoint", "output")]
    assert s.edge_kinds == [k for k in EDGE_LEGEND if k in ("operand", "link")]
    assert _scene([_box("a")], []).kinds == ["forward"]  # no output: no bold border


def test_extent_and_the_box_of_each_node():
    a = _box("a", x=-1.0, y=0.0, node=3)
    g = _box("g", kind="group", x=2.0, y=-1.0, members=[4, 5])
    s = _scene([a, g], [])
    left, right, bottom, top = s.extent()
    assert left == pytest.approx(-1.0 - a.width / 2) and right == pytest.approx(2 + g.width / 2)
    assert bottom == pytest.approx(-1.0 - g.height / 2) and top == pytest.approx(a.height / 2)
    assert s.by_node() == {3: a, 4: g, 5: g}
    assert _scene([], []).extent() == (0.0, 1.0, -1.0, 0.0)


def test_crossings_are_counted_as_geometry_says():
    corners = [_box("a", x=0, y=0), _box("b", x=2, y=2), _box("c", x=0, y=2),
               _box("d", x=2, y=0), _box("e", x=4, y=4)]
    x_shape = _scene(corners, [Edge("a", "b", "operand"), Edge("c", "d", "operand")])
    assert x_shape.crossings() == 1
    assert x_shape.crossings(kinds=("link",)) == 0
    shared = _scene(corners, [Edge("a", "b", "operand"), Edge("b", "e", "operand")])
    assert shared.crossings() == 0  # one end shared: not a crossing
    sides = _scene(corners, [Edge("a", "c", "operand"), Edge("d", "b", "operand")])
    assert sides.crossings() == 0  # parallel
    bent = _scene(corners, [Edge("a", "d", "operand", points=[(1.0, 3.0)]),
                            Edge("c", "b", "operand")])
    assert bent.path(bent.edges[0]) == [(0, 0), (1.0, 3.0), (2, 0)]
    assert bent.crossings() == 2  # up through the top edge and back down


def test_a_built_scene_of_the_notes_example_has_no_crossings():
    u1, u2 = sg.var("u1"), sg.var("u2")
    u4 = u2 * (u1 + u2)
    scene = build_scene([u4, *sg.grad(u4, [u1, u2])])
    assert scene.crossings() == 0 and scene.crossings(("operand", "b-operand")) == 0
    assert set(scene.by_node()) >= {u4.node, u4.graph.variables["u1"]}
    assert "output" in scene.kinds and "link" in scene.edge_kinds
