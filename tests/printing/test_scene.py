"""Pictures that teach: the scene (numbering as in explain, mirrored rows, folded constants,
shared adjoints, collapsed chains), the matplotlib drawing, valid DOT (pydot's grammar
always, Graphviz when installed) and the HTML page (a real headless Chromium when installed).
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

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))
from benchmarks.pictures import chain, wide  # noqa: E402  (~300-node graphs, timed there)

pydot = pytest.importorskip("pydot")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pyparsing, in pydot

SHAPES = {"W": (4, 3), "x": (3,), "b": (4,), "V": (2, 4), "g": (2,)}
NETWORK = "-log_softmax(V @ tanh(W @ x + b) + g)[y]"


def collins():
    u1, u2 = sg.var("u1"), sg.var("u2")
    u4 = u2 * (u1 + u2)
    return [u4, *sg.grad(u4, [u1, u2])]


def network():
    f = sg.parse(NETWORK, shapes=SHAPES, dtypes={"y": "int64"})
    return [f, *sg.grad(f, ["W", "b", "V", "g"])]


def goodfellow():  # Fig. 6.9: z = f(f(f(w))), with f = sin as in the notebook
    w = sg.var("w")
    z = sg.sin(sg.sin(sg.sin(w)))
    return [z, sg.grad(z, w)]


def sin_times_y():
    x, y = sg.var("x"), sg.var("y")
    f = sg.sin(x) * y
    return [f, *sg.grad(f, [x, y])]


def tomassoli():  # four paths from a to e, the notebook's functions
    a = sg.var("a")
    c = a**2 - (a + 2)
    e = (3 - c) * sg.sqrt(c)
    return [e, sg.grad(e, a)]


EXAMPLES = {"collins": collins, "network": network, "goodfellow": goodfellow,
            "sin_times_y": sin_times_y, "tomassoli": tomassoli}


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


# -- matplotlib ---------------------------------------------------------------------------


def test_draw_writes_a_png_with_title_and_legend(tmp_path):
    from matplotlib.image import imread

    out = sg.draw(network(), str(tmp_path / "net.png"))
    image = imread(out)
    height, width = image.shape[:2]
    assert 600 < width < 3000 and 600 < height < 3000
    big = sg.draw(chain(300), str(tmp_path / "chain.png"))
    h, w = imread(big).shape[:2]
    assert h < 2000 and w < 3000  # a summary, not a 4651 px strip


def test_draw_300_boxes_and_svg(tmp_path):
    out = sg.draw(wide(300), str(tmp_path / "wide.svg"), collapse=False)
    text = Path(out).read_text()
    assert text.startswith("<?xml") and text.count("<path") > 300


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


# -- the HTML page --------------------------------------------------------------------------


def test_html_page_is_self_contained_with_the_backprop_rows(tmp_path):
    u1, u2 = sg.var("u1"), sg.var("u2")
    f = u2 * (u1 + u2)
    n = len(f.graph)
    page = sg.to_html(f, at={"u1": 2.0, "u2": 3.0}, path=str(tmp_path / "p.html"))
    assert len(f.graph) == n  # B was built on a private copy
    assert (tmp_path / "p.html").read_text(encoding="utf-8") == page
    assert not re.search(r"https?://|\bsrc=|\bhref=|@import|url\((?!#)", page)
    assert "default-src 'none'" in page  # the browser may fetch nothing at all
    assert "P2 = P3·J(2→3) + P4·J(2→4) = 3·1 + 1·5 = 8" in page
    assert '"value", "15"' in page  # u4's forward value


def test_html_escapes_what_it_shows():
    x = sg.var("x")
    page = sg.to_html(sg.exp(x), title="</script><script>alert(1)</script>")
    assert "<script>alert" not in page and "&lt;/script&gt;" in page


def _browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not (chromium and driver):
        pytest.skip("no headless Chromium and chromedriver (.ci/run installs Debian's "
                    "chromium and chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking", "--disable-sync",
                 "--disable-component-update", "--window-size=1400,900"):
        options.add_argument(flag)
    try:
        return webdriver.Chrome(service=Service(driver), options=options)
    except Exception as e:  # a browser that cannot start here: say why
        pytest.skip(f"Chromium did not start: {str(e).splitlines()[0]}")


def test_html_page_in_a_real_browser(tmp_path):
    u1, u2 = sg.var("u1"), sg.var("u2")
    path = tmp_path / "collins.html"
    sg.to_html(u2 * (u1 + u2), at={"u1": 2.0, "u2": 3.0}, path=str(path))
    browser = _browser()
    try:
        from selenium.webdriver.common.by import By

        browser.get(path.as_uri())
        panel = browser.find_element(By.ID, "panel")
        assert "Point at a node" in panel.text
        boxes = {b.find_element(By.TAG_NAME, "text").text: b
                 for b in browser.find_elements(By.CSS_SELECTOR, "g.box")}
        p2 = next(b for t, b in boxes.items() if t.startswith("P2 = "))
        p2.click()
        assert "P2 = P3·J(2→3) + P4·J(2→4) = 3·1 + 1·5 = 8" in panel.text
        assert "value\n8" in panel.text or "value 8" in panel.text
        assert "picked" in p2.get_attribute("class")
        u3 = next(b for t, b in boxes.items() if t.startswith("u3 = "))
        u3.click()  # another node: its forward value and its adjoint's row
        assert "5" in panel.text and "P3 = P4·J(3→4) = 1·3 = 3" in panel.text
        assert browser.get_screenshot_as_png()[:8] == b"\x89PNG\r\n\x1a\n"
        logs = browser.get_log("browser") if hasattr(browser, "get_log") else []
        assert not [entry for entry in logs if entry.get("level") == "SEVERE"], logs
    finally:
        browser.quit()


FIGURES = Path(__file__).resolve().parents[2] / "notebooks" / "figures"


@pytest.mark.parametrize("name", ["collins_example1", "collins_example4", "collins_network",
                                  "goodfellow_fig_6_10", "tomassoli_paths", "sin_x_times_y",
                                  "chain_300", "collins_example4_page",
                                  "collins_network_graphviz", "before_collins_network"])
def test_the_committed_figures_are_there(name):
    data = (FIGURES / f"{name}.png").read_bytes()  # notebooks/figures.py draws them
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


# -- what the pictures said wrong or left out (issue 19, item 9) ----------------------------


def neuron(cleanup: bool = True):  # the logistic neuron: the sigmoid idiom covers u6..u8
    w, x, b = sg.var("w", shape=(3,)), sg.var("x", shape=(3,)), sg.var("b")
    s = 1 / (1 + sg.exp(-(w @ x + b)))
    return [s, *sg.grad(s, [w, b], cleanup=cleanup)]


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


@pytest.mark.parametrize("name", ["network", "neuron", "collins"])
def test_the_drawing_fits_its_legend_and_title(name, tmp_path):
    from matplotlib.image import imread

    exprs = neuron() if name == "neuron" else EXAMPLES[name]()
    image = imread(sg.draw(exprs, str(tmp_path / "g.png")))[..., :3]
    blank = np.all(image > 0.99, axis=2)
    assert blank[:, -4:].all() and blank[-4:, :].all()  # nothing cut at the right or bottom
    assert blank[:, :4].all() and blank[:4, :].all()


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


def test_the_page_says_sizes_not_reprs_and_fits_its_pane():
    x, W = sg.var("x", shape=(3,)), sg.var("W", shape=(4, 3))
    f = sg.sum(sg.tanh(W @ x))
    page = sg.to_html(f, at={"W": np.ones((4, 3)), "x": np.arange(3.0)})
    subtitle = re.search(r'<p class="sub">([^<]*)</p>', page).group(1)
    assert "W: 4×3 array" in subtitle and "x=[0., 1., 2.]" in subtitle
    assert "array(" not in page
    assert '<div id="canvas" class="fit">' in page and "min-width: 0" in page
    assert re.search(r'<svg id="graph" width="\d+" height="\d+" style="max-width: \d+px" '
                     r'viewBox=', page)


def test_the_graph_fits_the_pane_at_1400_by_900(tmp_path):
    path = tmp_path / "network.html"
    exprs = network()
    sg.to_html(exprs, path=str(path))
    browser = _browser()  # --window-size=1400,900
    try:
        browser.get(path.as_uri())
        shown, pane, page, window = browser.execute_script(
            "const c = document.getElementById('canvas');"
            "return [document.getElementById('graph').getBoundingClientRect().width, "
            "c.clientWidth, document.documentElement.scrollWidth, window.innerWidth];")
        assert shown <= pane and page <= window, (shown, pane, page, window)
        browser.find_element("id", "zoom").click()  # actual size: the pane scrolls instead
        scroll, pane = browser.execute_script(
            "const c = document.getElementById('canvas'); return [c.scrollWidth, c.clientWidth];")
        assert scroll >= pane and browser.execute_script(
            "return document.documentElement.scrollWidth <= window.innerWidth;")
    finally:
        browser.quit()


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
