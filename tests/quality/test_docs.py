"""The documentation site (``make docs``): it builds with warnings as errors, its API
reference has an entry for every public name, the notebooks appear with their stored
outputs, and every Python block and shell line of the guide runs as printed."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support import docs

DOCS_PACKAGES = ("sphinx", "myst_nb", "furo")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once for this module as ``make docs`` builds it."""
    missing = [m for m in DOCS_PACKAGES if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the docs packages are not installed ({', '.join(missing)}): "
                    "pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q",
         "-d", str(out / "doctrees"), str(docs.DOCS), str(out / "html")],
        capture_output=True, text=True, timeout=900, cwd=docs.ROOT,
        env={**os.environ, "PYTHONPATH": str(docs.ROOT)})
    assert proc.returncode == 0, proc.stderr[-6000:]
    return out / "html"


def test_the_site_builds_with_warnings_as_errors(site):
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    guide = {f"{p}.html" for p in docs.guide_pages()}
    assert guide <= pages, guide - pages
    assert {"index.html", "design.html", "benchmarks/index.html", "benchmarks/suite.html",
            "reference/symgrad.html", "reference/numpy.html", "reference/scipy.html",
            "reference/extend.html"} <= pages


def test_the_notebooks_are_tutorials_with_their_stored_outputs(site):
    """Each notebook is a page showing the outputs it stores (the build runs no cell)."""
    for nb in sorted((docs.ROOT / "notebooks").glob("*.ipynb")):
        html = (site / "tutorials" / f"{nb.stem}.html").read_text()
        cells = json.loads(nb.read_text())["cells"]
        outputs = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
        images = sum("image/png" in o.get("data", {}) for o in outputs)
        assert html.count("<img") >= images, nb.name
        printed = [o["text"] if isinstance(o["text"], str) else "".join(o["text"])
                   for o in outputs if o.get("output_type") == "stream"]
        line = next(ln for text in printed for ln in text.splitlines() if len(ln) > 12)
        assert _visible(line) in _visible(html), (nb.name, line)


def _visible(text: str) -> str:
    """Text as a reader sees it: tags dropped, entities decoded, spaces collapsed."""
    import html

    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", text)).split())


# -- the reference covers the public API ----------------------------------------------------


def _documented(site: Path) -> set[str]:
    from sphinx.util.inventory import InventoryFile

    with open(site / "objects.inv", "rb") as fh:
        inventory = InventoryFile.load(fh, "", lambda base, uri: uri)
    items = inventory.data if hasattr(inventory, "data") else inventory
    return {name for role, entries in items.items() if role.startswith("py:")
            for name in entries}


_PUBLIC = textwrap.dedent("""
    import importlib, json, types
    import symgrad, symgrad.api, symgrad.extend, symgrad.numpy as snp, symgrad.scipy
    names = {"symgrad": list(symgrad.__all__),
             "symgrad.numpy": [n for n in dir(snp) if not n.startswith("_")
                               and n != "annotations"]  # the __future__ import
             + [f"linalg.{n}" for n in dir(snp.linalg)],
             "symgrad.extend": list(symgrad.extend.__all__)}
    for sub in symgrad.scipy.__all__:
        module = importlib.import_module(f"symgrad.scipy.{sub}")
        names[f"symgrad.scipy.{sub}"] = list(module.__all__)
    ops = [n for n, v in vars(symgrad.api).items() if not n.startswith("_")
           and isinstance(v, types.FunctionType) and n not in symgrad.__all__]
    print(json.dumps({"names": names, "ops": ops}))
""")


@functools.cache
def _public() -> dict[str, dict]:
    """Every public name, by the module a user reaches it from, and the op functions of
    ``symgrad``, as a fresh process sees them (this one holds the test suite's own ops)."""
    proc = subprocess.run([sys.executable, "-c", _PUBLIC], capture_output=True, text=True,
                          check=True, cwd=docs.ROOT, env={**os.environ,
                                                          "PYTHONPATH": str(docs.ROOT)})
    return json.loads(proc.stdout)


def test_every_public_name_has_an_entry_in_the_reference(site):
    documented = _documented(site)
    missing = [f"{module}.{name}" for module, names in _public()["names"].items()
               for name in names if f"{module}.{name}" not in documented]
    assert not missing, missing
    modules = [m for m in _public()["names"] if m.startswith("symgrad.scipy.")]
    assert len(modules) >= 4 and set(modules) <= documented


def test_every_op_function_of_symgrad_links_to_its_entry(site):
    """``sg.exp`` is ``symgrad.numpy.exp``: the symgrad page lists each, linked."""
    ops = _public()["ops"]
    page = (site / "reference" / "symgrad.html").read_text()
    documented = _documented(site)
    assert len(ops) > 200
    missing = [n for n in ops if f"symgrad.numpy.{n}" not in documented
               or f'href="numpy.html#symgrad.numpy.{n}"' not in page]
    assert not missing, missing


# -- the guide's code runs ------------------------------------------------------------------


def _pages_with_code() -> list[str]:
    return [p for p in docs.guide_pages() if any(b.run_by is None for b in docs.blocks(p))]


# what a page's code prints, where its print lines' comments do not say it line for line
EXPECTED = {"guide/extending": ["x / (1 + np.abs(x))"],
            "guide/pictures": ["P2       P3 J(2->3) + P4 J(2->4)  3*1 + 1*5    8",
                               "# adjoint of u2"]}

_DRIVER = textwrap.dedent('''
    import json, sys
    for i, code in enumerate(json.loads(sys.stdin.read())):
        print(f"\\x00block {i}", flush=True)
        exec(compile(code, f"{sys.argv[1]} block {i}", "exec"), {"__name__": "__main__"})
''')


@pytest.mark.parametrize("name", _pages_with_code())
def test_the_python_blocks_of_the_guide_run_as_printed(name, tmp_path):
    """Each block runs in a fresh namespace (the blocks of a page in one process); where each
    ``print`` line's comment is its output, the output is that."""
    codes = [b.code for b in docs.blocks(name) if b.run_by is None]
    proc = subprocess.run([sys.executable, "-c", _DRIVER, name], input=json.dumps(codes),
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(docs.ROOT)})
    assert proc.returncode == 0, (name, proc.stdout[-2000:], proc.stderr[-3000:])
    outputs = proc.stdout.split("\x00block ")[1:]
    for code, out in zip(codes, outputs):
        printed = out.split("\n", 1)[1].splitlines()
        said = [ln.split("  # ", 1)[1].strip() if "  # " in ln else None
                for ln in code.splitlines() if ln.strip().startswith("print(")]
        if said and None not in said and len(printed) == len(said):
            assert printed == said, (name, code)
    for text in EXPECTED.get(name, []):
        assert text in proc.stdout, (name, text)


def test_a_block_run_elsewhere_names_a_test_that_reads_its_page():
    marked = [b for p in docs.guide_pages() for b in docs.blocks(p) if b.run_by]
    assert len(marked) >= 7
    for b in marked:
        path, test = b.run_by.split("::")
        text = (docs.ROOT / path).read_text()
        assert f"def {test}(" in text, b.run_by
        body = text.split(f"def {test}(", 1)[1].split("\ndef ", 1)[0]
        assert f'"{b.page}"' in body, (b.run_by, b.page)


def _shell_lines() -> list[tuple[str, str]]:
    return [(p, line) for p in docs.guide_pages() for line in docs.shell_lines(p)]


SKIP = {"make demo": "creates .venv in the checkout; the same tour runs as `symgrad demo`",
        "make test": "runs this test suite itself (it is what CI runs)"}


@pytest.mark.parametrize("page,line", _shell_lines(), ids=lambda s: s[:40])
def test_the_shell_lines_of_the_guide_run_as_printed(page, line, tmp_path):
    for prefix, reason in SKIP.items():
        if line.startswith(prefix):
            pytest.skip(reason)
    docs.run_shell_line(line, tmp_path)


def test_every_system_tool_a_guide_line_uses_is_named_in_the_install_section():
    """``symgrad dot ... | dot -Tpng > g.png`` needs Graphviz: a reader must learn that
    before the shell leaves an empty g.png."""
    used = {t for _, line in _shell_lines() for t in docs.tools(line)} - docs.OURS
    setup = docs.section("getting-started", "Install")
    assert used and all(f"`{t}`" in setup for t in used), (used, setup)


def test_the_guide_shows_no_usage_brackets_in_shell_blocks():
    assert not [line for _, line in _shell_lines() if re.search(r"\[--?\w", line)]


def test_the_guide_states_no_measured_times():
    """Figures live beside their command on the benchmarks page, not in the guide."""
    timing = re.compile(r"\d\s?(µs|ms)\b|\d(\.\d+)?×|\b\d-core\b|shared machine")
    found = [(p, m.group()) for p in docs.guide_pages() for m in timing.finditer(docs.page(p))]
    assert not found, found


# -- the design page ------------------------------------------------------------------------


def _design_tree() -> list[str]:
    """The entries of the design page's tree: ``base/``, ``backends/targets/``, ``api.py``
    ... (the names a line starts with, before its words)."""
    block = next(b.code for b in docs.blocks("design", "text") if b.code.startswith("symgrad/"))
    entries = []
    for line in block.splitlines():
        if line.startswith("  ") and line[2] != " ":
            for word in line.split():
                if not word.endswith(("/", ".py")):
                    break
                entries.append(word)
    return entries


def test_the_design_tree_is_the_package_one_line_per_folder() -> None:
    """Every folder of symgrad (and backends/targets/) has its line, in the order of the
    floors (each imports only from those above it), and every module at the top is named."""
    from tests.quality.test_phases import FLOORS

    package = docs.ROOT / "symgrad"
    entries = _design_tree()
    folders = [e for e in entries if e.endswith("/")]
    assert len(folders) == len(set(folders)), folders
    assert set(folders) == {f"{p.name}/" for p in package.iterdir()
                            if (p / "__init__.py").exists()} | {"backends/targets/"}
    assert {e for e in entries if e.endswith(".py")} == {
        p.name for p in package.glob("*.py")} - {"__init__.py", "__main__.py"}
    floors = [FLOORS[e.split("/")[0].removesuffix(".py")] for e in entries]
    assert floors == sorted(floors), list(zip(entries, floors))


def test_every_target_folder_is_on_the_design_page():
    targets = docs.ROOT / "symgrad" / "backends" / "targets"
    text = docs.section("design", "From a call to emitted text")
    for folder in (p for p in targets.iterdir() if (p / "__init__.py").exists()):
        assert f"`{folder.name}/`" in text, folder.name


# -- the benchmark tables -------------------------------------------------------------------


def test_every_results_file_is_a_table_on_the_benchmarks_page():
    from benchmarks import tables

    page = docs.page("benchmarks/index")
    shown = re.findall(r"^```\{symgrad-benchmark\} (\S+)$", page, re.M)
    assert sorted(shown) == tables.names()
