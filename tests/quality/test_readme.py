"""The README is a front page that works: the tour runs as written (and is the getting
started page's), every shell line runs as printed, its links lead to pages that exist, its
picture exists, and it stays short."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from tests.support import docs

README = docs.ROOT / "README.md"


def test_readme_tour_runs() -> None:
    block = docs.blocks("README")[0].code
    assert docs.block("getting-started", "sg.parse(") == block  # the tour, word for word
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(block, "README.md", "exec"), namespace)  # our own documentation
    assert "def f(" in out.getvalue()  # the emitted source was printed
    assert namespace["H"].shape == (5, 5)
    assert namespace["dW_val"].shape == (4, 3) and namespace["db_val"].shape == (4,)


def test_the_readme_is_a_front_page_of_at_most_300_lines() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    assert len(docs.blocks("README")) == 1  # the tour; everything else is in the docs


def test_every_link_of_the_readme_leads_to_a_file_that_exists() -> None:
    targets = re.findall(r"\]\(([^)#]+)\)", README.read_text())
    local = [t for t in targets if "://" not in t]
    assert len(local) >= 15
    missing = [t for t in local if not (docs.ROOT / t).is_file()]
    assert not missing, missing


def test_every_guide_page_is_linked_from_the_readme() -> None:
    text = README.read_text()
    missing = [p for p in docs.guide_pages() if f"(docs/{p}.md)" not in text]
    assert not missing, missing


# -- every shell line of the README runs as printed -----------------------------------------

SKIP = {"make demo": "creates .venv in the checkout; the same tour runs as `symgrad demo` "
                     "(tests/quality/test_docs.py)",
        "make test": "runs this test suite itself (it is what CI runs)",
        "make docs": "creates .venv in the checkout; tests/quality/test_docs.py builds the "
                     "same site with the same sphinx command"}


@pytest.mark.parametrize("line", docs.shell_lines("README"), ids=lambda s: s[:40])
def test_readme_shell_line_runs(line, tmp_path):
    for prefix, reason in SKIP.items():
        if line.startswith(prefix):
            pytest.skip(reason)
    docs.run_shell_line(line, tmp_path)


def test_every_make_target_the_readme_shows_is_in_the_makefile() -> None:
    makefile = (docs.ROOT / "Makefile").read_text()
    shown = {line.split()[1] for line in docs.shell_lines("README") if line.startswith("make ")}
    shown |= set(re.findall(r"`make (\w+)`", README.read_text()))
    assert shown >= {"demo", "test", "docs"}
    assert all(re.search(rf"^{t}:", makefile, re.M) for t in shown), shown


def test_make_docs_runs_the_build_the_tests_run() -> None:
    """``make docs`` is sphinx with warnings as errors, as tests/quality/test_docs.py runs it."""
    makefile = (docs.ROOT / "Makefile").read_text()
    recipe = makefile.split("\ndocs:", 1)[1].split("\n\n", 1)[0]
    assert "-m sphinx -b html -W --keep-going" in recipe and " docs docs/_build/html" in recipe


def test_the_readme_shows_no_usage_brackets_in_shell_blocks():
    assert not [line for line in docs.shell_lines("README") if re.search(r"\[--?\w", line)]
