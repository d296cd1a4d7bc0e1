"""The teaching page (``sg.to_html``): self-contained (fetches nothing), with the backprop
rows and forward values of explain, escaping what it shows, sizes instead of reprs, and, in a
real headless Chromium when installed, a panel that answers clicks and a graph that fits its
pane."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import symgrad as sg
from tests.support.pictures import network


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
