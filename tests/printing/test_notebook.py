"""How an Expr shows itself in Jupyter: the formula as LaTeX, a derivative's picture as
inline SVG (well-formed, self-contained, with marker ids that do not clash between two
pictures), and budgets that give plain text instead of a notebook that hangs."""

from __future__ import annotations

import symgrad as sg


def _bundle(value) -> dict:
    """The MIME bundle Jupyter shows: IPython's formatter when installed, else the
    notebook builder's copy of it (notebooks/build.py)."""
    try:
        from IPython.core.formatters import DisplayFormatter
    except ImportError:
        import importlib.util
        import sys
        from pathlib import Path

        path = Path(__file__).resolve().parents[2] / "notebooks" / "build.py"
        spec = importlib.util.spec_from_file_location("notebook_build", path)
        build = sys.modules.get(spec.name)
        if build is None:
            build = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = build  # dataclasses look their module up there
            spec.loader.exec_module(build)
        return {k: "".join(v) if isinstance(v, list) else v
                for k, v in build.display_data(value).items()}
    return DisplayFormatter().format(value)[0]


def _svg_of(block: str):
    import xml.etree.ElementTree as ET

    root = ET.fromstring(block)  # the whole block is well-formed XML
    svg = root.find("{http://www.w3.org/2000/svg}svg")
    assert svg is not None
    return svg


def test_an_expr_shows_its_formula_in_jupyter():
    x, y = sg.var("x"), sg.var("y")
    f = sg.sin(x) * y
    assert f._repr_latex_() == "$" + sg.latex(f) + "$"
    assert f._repr_html_() is None  # a forward expression: the formula is its picture
    bundle = _bundle(f)
    assert bundle["text/latex"] == "$" + sg.latex(f) + "$" and "text/plain" in bundle
    assert "text/html" not in bundle


def test_a_derivative_shows_its_picture_in_jupyter():
    x, y = sg.var("x"), sg.var("y")
    f = sg.sin(x) * y
    dx = sg.grad(f, x)
    assert dx._repr_latex_() == "$" + sg.latex(dx) + "$" == "$y \\cos{\\left(x \\right)}$"
    block = _bundle(dx)["text/html"]
    svg = _svg_of(block)
    texts = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert "f = sin(x) * y" in texts  # the title: the forward output it came from
    assert "P1 = u2 * B1" in texts and "u3 = u1 * u2" not in texts  # B and the forward
    assert "∂f/∂u1" in texts and scene_legend_in(texts)
    assert "<script" not in block and "http://" not in block.replace(
        "http://www.w3.org/2000/svg", "")
    other = _svg_of(sg.grad(sg.cos(x) * y, x)._repr_html_())
    ids = {m.get("id") for m in svg.iter("{http://www.w3.org/2000/svg}marker")}
    assert ids and not ids & {m.get("id") for m in other.iter(
        "{http://www.w3.org/2000/svg}marker")}  # two pictures in one page do not clash
    a, b = sg.var("a"), sg.var("b")
    t = sg.jvp(sg.sin(a) * b, [a, b], [1.0, 0.0])  # forward mode: a derivative too
    texts = [e.text for e in _svg_of(t._repr_html_()).iter("{http://www.w3.org/2000/svg}text")]
    assert "u\u03073" in texts and not any(t.startswith("∂f") for t in texts), texts


def scene_legend_in(texts: list[str]) -> bool:
    from symgrad.printing.model import EDGE_LEGEND, LEGEND

    return LEGEND["adjoint"] in texts and EDGE_LEGEND["link"] in texts


def test_rich_display_has_budgets_and_needs_no_drawing_tools(monkeypatch):
    import sys

    x = sg.var("x")
    h = x
    for _ in range(60):
        h = h + sg.sin(h)  # 121 nodes: a formula of 2**60 terms
    assert h._repr_latex_() is None  # plain text instead of a notebook that hangs
    g = sg.grad(h, x)  # the loop is rolled: the gradient is a recurrence, written as one
    assert r"\leftarrow" in g._repr_latex_()
    assert "<svg" in g._repr_html_()  # chains collapse: the picture stays small
    wide = sg.var("v", shape=(3,))
    total = sum((sg.cos if bin(k).count("1") % 2 else sg.sin)(wide * float(k))  # Thue-Morse:
                for k in range(1, 600))  # no run of identical terms, so nothing rolls
    assert sg.grad(sg.sum(total), wide)._repr_html_() is None  # more than 400 boxes
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # not installed
    monkeypatch.setitem(sys.modules, "sympy", None)
    dx = sg.grad(sg.sin(x) * x, x)
    assert dx._repr_latex_() is None and "<svg" in dx._repr_html_()
