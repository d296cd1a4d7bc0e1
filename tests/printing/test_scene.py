"""Pictures that teach: the scene (numbering as in explain, mirrored rows, folded constants,
shared adjoints, collapsed chains), valid DOT (pydot's grammar always, Graphviz when
installed) and the committed figures (the drawing and the page: ``test_draw.py``,
``test_html.py``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from symgrad.printing.scene import SCENE_LIMIT, build_scene
from tests.support.pictures import EXAMPLES, collins, network, neuron, sin_times_y

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))
from benchmarks.pictures import chain, wide  # noqa: E402  (~300-node graphs, timed there)

pydot = pytest.importorskip("pydot")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pyparsing, in pydot


# -- the scene ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", EXAMPLES)
def test_layout_of_the_notes_examples_has_no_crossings(name):
    scene = build_scene(EXAMPLES[name]())
    assert scene.crossings(("operand",)) == 0
    assert scene.crossings(("link",)) == 0  # mirrored rows: the links nest


@pytest.mark.parametrize("name", EXAMPLES)
def test_each_adjoint_sits_in_the_row_of_its_node_on_the_other_side(name):
    scene = build_scene(EXAMPLES[name]())
    boxes = scene.boxes
    forward_right = max(b.x + b.width / 2 for b in boxes.values() if b.side == "forward")
    for b in boxes.values():
        if b.side == "B":
            assert b.x - b.width / 2 >= forward_right  # B is to the right of the forward graph
            anchor = boxes.get(b.anchor or "")
            if anchor is not None and anchor.side == "forward":
                assert b.level == anchor.level, (b.label, anchor.label)
    for b in boxes.values():  # no two boxes overlap
        for c in boxes.values():
            if b.key < c.key and b.level == c.level:
                assert abs(b.x - c.x) >= (b.width + c.width) / 2, (b.label, c.label)


def test_numbering_is_the_numbering_of_explain():
    exprs = network()
    scene = build_scene(exprs)
    table = sg.explain(exprs[0], wrt=["W", "b", "V", "g"])
    rows = {r["label"]: r["definition"] for r in table.rows if r["section"] == "forward"}
    shown = {b.label: b.lines[0] for b in scene.boxes.values() if b.side == "forward"}
    assert set(shown) == set(rows)
    for label, definition in rows.items():
        assert shown[label] in (label, f"{label} = {definition}")
    adjoints = {r["label"] for r in table.rows if r["section"] == "adjoint"}
    drawn = {p for b in scene.boxes.values() if b.side == "B" for p in b.label.split(" = ")}
    assert adjoints <= drawn | {"P2", "P6"}  # x and y have no adjoint (not wrt)


def test_collins_example_4_shows_the_seed_and_the_shared_adjoints():
    scene = build_scene(collins())
    lines = {b.label: b.lines for b in scene.boxes.values()}
    assert lines["P4"] == ["P4 = 1.0 (seed)"]
    assert lines["P2"] == ["P2 = u3 + u2"]  # P3 J(2->3) + P4 J(2->4) after the cleanup
    assert lines["P3"][0] == "P3 = u2" and lines["P1"][0] == "P1 = u2"  # u2 itself, shared
    assert {b.kind for b in scene.boxes.values() if b.label in ("P1", "P3")} == {"shared"}
    links = {e.label for e in scene.edges if e.kind == "link"}
    assert links == {"∂f/∂u1", "∂f/∂u2", "∂f/∂u3", "∂f/∂u4"}


def test_the_adjoint_of_y_in_sin_x_times_y_is_sin_x_and_the_picture_says_so():
    scene = build_scene(sin_times_y())
    shared = [b for b in scene.boxes.values() if b.kind == "shared"]
    sin_box = next(b for b in scene.boxes.values() if b.lines[0].endswith("sin(u1)"))
    y_box = next(b for b in scene.boxes.values() if b.lines[0] == "u2 = y")
    marker = next(b for b in shared if b.anchor == y_box.key)
    assert marker.lines == [f"P2 = {sin_box.label}", "the same node"]


def test_constants_are_written_into_their_users():
    x = sg.var("x", shape=(3, 3))
    f = sg.sum(x * np.full((3, 3), 0.01) + 2.5)
    scene = build_scene([f, sg.grad(f, x)])
    texts = [line for b in scene.boxes.values() for line in b.lines]
    assert not any(t.startswith("[[") for t in texts)
    assert any("[[0.01, 0.01, 0.01]" in t for t in texts) and any("+ 2.5" in t for t in texts)
    assert all(not scene.graph.nodes[b.node].is_const or b.kind == "adjoint"
               for b in scene.boxes.values() if b.node is not None)


def test_long_chains_collapse_into_one_box_each_side():
    scene = build_scene(chain(300))
    assert len(scene.boxes) <= 8
    groups = [b for b in scene.boxes.values() if b.kind == "group"]
    assert [b.side for b in groups] == ["forward", "B"]
    assert groups[0].lines[1] == "299 nodes: sin ×150, cos ×149"
    assert scene.collapsed == sum(len(b.members) for b in groups)
    with pytest.raises(sg.LimitError, match=f"at most {SCENE_LIMIT}"):
        build_scene(chain(300), collapse=False)


def test_a_graph_too_big_even_collapsed_is_refused_with_a_hint():
    with pytest.raises(sg.LimitError, match="Draw a part of it"):
        build_scene(wide(2_000))


def test_a_300_node_graph_is_laid_out_without_overlaps():
    exprs = wide(300)
    scene = build_scene(exprs, collapse=False)
    assert 250 <= len(scene.boxes) <= SCENE_LIMIT
    rows: dict[int, list] = {}
    for b in scene.boxes.values():
        rows.setdefault(b.level, []).append(b)
    for row in rows.values():
        row.sort(key=lambda b: b.x)
        for a, b in zip(row, row[1:]):
            assert b.x - a.x >= (a.width + b.width) / 2 - 1e-9


# -- DOT ----------------------------------------------------------------------------------

DOT_CASES = {**EXAMPLES, "chain": lambda: chain(300), "hessian": lambda: [
    sg.hessian(sg.sum(sg.sin(v := sg.var("v", shape=(3,))) ** 2), v)],
    "neuron": lambda: neuron()}  # a note, chain-rule edges through the seed


@pytest.mark.parametrize("name", DOT_CASES)
def test_dot_is_valid_for_pydot(name):
    text = sg.to_dot(DOT_CASES[name]())
    graphs = pydot.graph_from_dot_data(text)
    assert graphs and len(graphs) == 1
    assert graphs[0].get_node_list()


def test_pydot_catches_the_old_invalid_dot():
    old = 'digraph g {\n subgraph cluster_a {\n label="B"; style=dashed, color=red;\n n1;\n }\n}'
    assert pydot.graph_from_dot_data(old) is None


@pytest.mark.skipif(shutil.which("dot") is None,
                    reason="Graphviz is not installed (.ci/run installs Debian's graphviz)")
@pytest.mark.parametrize("name", DOT_CASES)
def test_graphviz_renders_the_dot(name, tmp_path):
    text = sg.to_dot(DOT_CASES[name]())
    proc = subprocess.run(["dot", "-Tpng", "-o", str(tmp_path / "g.png")], input=text,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Error" not in proc.stderr and "Warning" not in proc.stderr, proc.stderr
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- the committed figures ------------------------------------------------------------------

FIGURES = Path(__file__).resolve().parents[2] / "notebooks" / "figures"


@pytest.mark.parametrize("name", ["collins_example1", "collins_example4", "collins_network",
                                  "goodfellow_fig_6_10", "tomassoli_paths", "sin_x_times_y",
                                  "chain_300", "collins_example4_page",
                                  "collins_network_graphviz", "before_collins_network"])
def test_the_committed_figures_are_there(name):
    data = (FIGURES / f"{name}.png").read_bytes()  # notebooks/figures.py draws them
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


# -- the chain rule drawn: seeds, constant adjoints, idiom notes, links -----------------------


def _reached_from_the_seed(scene) -> set[str]:
    """The B boxes reached from the seeds (constant adjoints of outputs) along B's edges."""
    nodes = scene.graph.nodes
    down: dict[str, list[str]] = {}
    for e in scene.edges:
        if e.kind in ("b-operand", "chain"):
            down.setdefault(e.src, []).append(e.dst)
    stack = [b.key for b in scene.boxes.values() if b.lines[0].endswith("(seed)")]
    seen = set(stack)
    while stack:
        for k in down.get(stack.pop(), ()):
            if k not in seen:
                seen.add(k)
                stack.append(k)
    assert all(nodes[scene.boxes[k].node].is_const for k in stack)
    return seen


@pytest.mark.parametrize("name", [*EXAMPLES, "neuron"])
def test_the_chain_rule_runs_from_the_seed_along_drawn_edges(name):
    scene = build_scene(neuron() if name == "neuron" else EXAMPLES[name]())
    reached = _reached_from_the_seed(scene)
    adjoints = {b.key for b in scene.boxes.values() if b.kind in ("adjoint", "shared")}
    assert adjoints <= reached, sorted(scene.boxes[k].label for k in adjoints - reached)


def test_the_seed_and_constant_adjoints_have_edges():
    scene = build_scene(collins())
    label = {b.key: b.label for b in scene.boxes.values()}
    chain = {(label[e.src], label[e.dst]) for e in scene.edges if e.kind == "chain"}
    # P4 = 1 (seed); P3 = P4 J(3->4) = u2; P2 = P3 J(2->3) + P4 J(2->4); P1 = P3 J(1->3)
    assert chain == {("P4", "P3"), ("P4", "P2"), ("P3", "P2"), ("P3", "P1")}
    scene = build_scene(network())
    label = {b.key: b.label for b in scene.boxes.values()}
    steps = {(label[e.src], label[e.dst]) for e in scene.edges if e.kind in ("chain",
                                                                             "b-operand")}
    assert {("P14", "P13"), ("P13", "P12")} <= steps  # 1 (seed) -> -1 -> index_add(-1, y)
    assert "chain" in scene.edge_kinds


def test_rows_an_idiom_covered_carry_a_note():
    scene = build_scene(neuron())
    notes = [b for b in scene.boxes.values() if b.kind == "note"]
    assert len(notes) == 1
    text = " ".join(notes[0].lines)
    assert "u6, u7, u8" in text and "sigmoid idiom at u9" in text and "P9 → P5" in text
    u7 = next(b for b in scene.boxes.values() if b.label == "u7")
    assert notes[0].side == "B" and notes[0].level == u7.level  # beside the covered rows
    assert "note" in scene.kinds
    table = str(sg.explain(neuron()[0], wrt=["w", "b"]))  # explain shows the full chain
    assert "P7       P8 J(7->8)" in table
    plain = build_scene(neuron(cleanup=False))  # no idiom used: every row has its adjoint
    assert not [b for b in plain.boxes.values() if b.kind == "note"]
    assert {"P6", "P7", "P8"} <= {p for b in plain.boxes.values() for p in b.label.split(" = ")}


def test_the_bold_border_of_an_output_is_in_every_legend():
    exprs = collins()
    scene = build_scene(exprs)
    assert "output" in scene.kinds
    meaning = "bold border: an output"
    assert meaning in sg.to_dot(exprs) and meaning in sg.to_html(exprs)


def test_links_are_named_as_the_boxes_are():
    for exprs in (network(), sin_times_y(), neuron()):
        links = [e.label for e in build_scene(exprs).edges if e.kind == "link"]
        assert links and all(re.fullmatch(r"∂f/∂u\d+", t) for t in links), links
    x, y = sg.var("x"), sg.var("y")
    f = sg.sin(x) * y
    t = sg.jvp(f, [x, y], [1.0, 0.0])
    links = [e.label for e in build_scene([f, t]).edges if e.kind == "link"]
    assert links and all(re.fullmatch("u\u0307\\d+", t) for t in links), links


def test_no_chain_rule_step_through_an_op_that_passes_no_gradient():
    x = sg.var("x")
    f = sg.floor(x) * 2.0 + x  # floor passes nothing to x: P1 = P4 = 1
    scene = build_scene([f, sg.grad(f, x)])
    label = {b.key: b.label for b in scene.boxes.values()}
    steps = {(label[e.src], label[e.dst]) for e in scene.edges if e.kind == "chain"}
    # reverse mode gives no adjoint to floor(x) * 2 or floor(x): no derivative reaches
    # them from x (the path is cut at floor), so there is no step and no box for them
    assert steps == set()
    assert {v for v in label.values() if v.startswith("P")} == {"P4 = P1"}
