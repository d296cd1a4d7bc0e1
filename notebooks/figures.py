"""Draw the committed figures of the notes' examples into ``notebooks/figures/``.

``python notebooks/figures.py`` writes, for each example, the matplotlib drawing
(``sg.draw``) of its forward graph beside its derivative subgraph B, the Graphviz rendering
of ``sg.to_dot`` for the network (when ``dot`` is installed), the interactive page of
Collins' Example 4 (``sg.to_html``) and a screenshot of it in headless Chromium after
clicking ``P2`` (when Chromium, chromedriver and selenium are installed). The ``before_*``
pictures were drawn by the previous ``sg.draw`` and are kept for comparison.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import symgrad as sg

OUT = Path(__file__).resolve().parent / "figures"
SHAPES = {"W": (4, 3), "x": (3,), "b": (4,), "V": (2, 4), "g": (2,)}


def examples() -> dict:
    """name -> (exprs to draw, title)."""
    u1, u2 = sg.var("u1"), sg.var("u2")
    u4 = u2 * (u1 + u2)
    f = sg.parse("-log_softmax(V @ tanh(W @ x + b) + g)[y]", shapes=SHAPES,
                 dtypes={"y": "int64"})
    w = sg.var("w")
    z = sg.sin(sg.sin(sg.sin(w)))
    a = sg.var("a")
    c = a**2 - (a + 2)
    e = (3 - c) * sg.sqrt(c)
    x, y = sg.var("x"), sg.var("y")
    s = sg.sin(x) * y
    h = sg.var("h")
    chain = h
    for _ in range(300):
        chain = sg.sin(chain)
    return {
        "collins_example1": ([u4], "Collins, Example 1: u4 = u2 (u1 + u2)"),
        "collins_example4": ([u4, *sg.grad(u4, [u1, u2])],
                             "Collins, Example 4: u4 = u2 (u1 + u2) and B"),
        "collins_network": ([f, *sg.grad(f, ["W", "b", "V", "g"])],
                            "Collins, Fig. 1.4: o = -log_softmax(V tanh(W x + b) + g)[y]"),
        "goodfellow_fig_6_10": ([z, sg.grad(z, w)], "Goodfellow, Fig. 6.10: z = f(f(f(w)))"),
        "tomassoli_paths": ([e, sg.grad(e, a)], "Tomassoli: e = (3 - c) sqrt(c), c = a² - a - 2"),
        "sin_x_times_y": ([s, *sg.grad(s, [x, y])], "f = sin(x) y: the adjoint of y is sin(x)"),
        "chain_300": ([chain, sg.grad(chain, h)], "300 nested sin: chains collapse"),
    }


def main() -> int:
    OUT.mkdir(exist_ok=True)
    for name, (exprs, title) in examples().items():
        print("wrote", sg.draw(exprs, str(OUT / f"{name}.png"), title=title))
    net, title = examples()["collins_network"]
    if shutil.which("dot"):
        subprocess.run(["dot", "-Tpng", "-o", str(OUT / "collins_network_graphviz.png")],
                       input=sg.to_dot(net, title=title), text=True, check=True)
        print("wrote", OUT / "collins_network_graphviz.png")
    u1, u2 = sg.var("u1"), sg.var("u2")
    page = OUT / "collins_example4.html"
    sg.to_html(u2 * (u1 + u2), at={"u1": 2.0, "u2": 3.0}, path=str(page),
               title="Collins, Example 4: u4 = u2 (u1 + u2)")
    print("wrote", page)
    return _screenshot(page, OUT / "collins_example4_page.png")


def _screenshot(page: Path, png: Path) -> int:
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
    except ImportError:
        print("no screenshot: selenium is not installed", file=sys.stderr)
        return 0
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        print("no screenshot: chromium and chromedriver are not installed", file=sys.stderr)
        return 0
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--window-size=1200,560",
                 "--hide-scrollbars"):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(driver), options=options)
    try:
        browser.get(page.as_uri())
        for box in browser.find_elements(By.CSS_SELECTOR, "g.box"):
            if box.find_element(By.TAG_NAME, "text").text.startswith("P2 = "):
                box.click()
        png.write_bytes(browser.get_screenshot_as_png())
    finally:
        browser.quit()
    print("wrote", png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
