"""The matplotlib drawing (``sg.draw``): a PNG with title and legend of a sensible size (a
long chain summarised, not a strip), an SVG of 300 boxes, nothing cut at the edges, and a
message that says what to install when matplotlib is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg
from tests.support.pictures import EXAMPLES, network, neuron

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is not part of the installed package
    sys.path.insert(0, str(ROOT))
from benchmarks.pictures import chain, wide  # noqa: E402  (~300-node graphs, timed there)


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


@pytest.mark.parametrize("name", ["network", "neuron", "collins"])
def test_the_drawing_fits_its_legend_and_title(name, tmp_path):
    from matplotlib.image import imread

    exprs = neuron() if name == "neuron" else EXAMPLES[name]()
    image = imread(sg.draw(exprs, str(tmp_path / "g.png")))[..., :3]
    blank = np.all(image > 0.99, axis=2)
    assert blank[:, -4:].all() and blank[-4:, :].all()  # nothing cut at the right or bottom
    assert blank[:, :4].all() and blank[:4, :].all()


def test_draw_writes_an_image(tmp_path):
    pytest.importorskip("matplotlib")
    x = sg.var("x")
    f = sg.exp(x) * x
    out = sg.draw([f, sg.grad(f, x)], str(tmp_path / "g.png"))
    assert out.endswith("g.png")
    with open(out, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_draw_without_matplotlib_says_what_to_do(monkeypatch):
    import builtins

    real = builtins.__import__

    def fake(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(sg.SymgradError, match="matplotlib.*to_dot"):
        sg.draw(sg.var("x"), "never.png")
