"""The documentation's pages as tests read them: their code blocks, marked sections and shell
lines (``docs/**/*.md`` and ``README.md``).

A ```` ```python ```` block of a guide page runs in ``tests/quality/test_docs.py`` unless the
line before it names the test that runs it instead (a MyST comment, invisible on the site)::

    % run-by: tests/backends/test_dask.py::test_the_docs_example_runs_at_a_small_size
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    lang: str
    code: str
    run_by: str | None  # "tests/x/test_y.py::test_name", or None: test_docs runs it


def page(name: str) -> str:
    """The text of a page: ``"guide/loops"`` is ``docs/guide/loops.md``; ``"README"``."""
    path = ROOT / "README.md" if name == "README" else DOCS / f"{name}.md"
    return path.read_text()


def blocks(name: str, lang: str = "python") -> list[Block]:
    """A page's fenced blocks of one language, in order (a fence's info string is its first
    word: a MyST directive such as ```` ```{figure} ```` is a block of its own kind)."""
    found, lines, i = [], page(name).splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("```"):
            i += 1
            continue
        kind = line[3:].split(" ", 1)[0]
        end = next(j for j in range(i + 1, len(lines)) if lines[j] == "```")
        by = lines[i - 1].removeprefix("% run-by: ") if i and lines[i - 1].startswith(
            "% run-by: ") else None
        if kind == lang:
            found.append(Block(name, kind, "\n".join(lines[i + 1:end]) + "\n", by))
        i = end + 1
    return found


def block(name: str, containing: str, lang: str = "python") -> str:
    """The one ``lang`` block of a page that contains a string."""
    found = [b.code for b in blocks(name, lang) if containing in b.code]
    assert len(found) == 1, (name, containing, len(found))
    return found[0]


def section(name: str, title: str) -> str:
    """A page's section, from its heading line to the next heading of the same level."""
    text = page(name)
    start = re.search(rf"^(#+) {re.escape(title)}\n", text, re.M)
    assert start, (name, title)
    level = len(start.group(1))
    end = re.search(rf"^#{{1,{level}}} ", text[start.end():], re.M)
    return text[start.end(): start.end() + end.start() if end else len(text)]


def marked(name: str, marker: str) -> str:
    """The text between ``<!-- marker:start -->`` and ``<!-- marker:end -->``."""
    text = page(name)
    start = text.index(f"<!-- {marker}:start -->\n") + len(f"<!-- {marker}:start -->\n")
    return text[start: text.index(f"<!-- {marker}:end -->")]


def shell_lines(name: str) -> list[str]:
    """The commands of a page's ```` ```sh ```` blocks (continuations joined, comments out)."""
    lines = []
    for b in blocks(name, "sh"):
        for line in b.code.replace("\\\n", " ").splitlines():
            if line.strip() and not line.strip().startswith("#"):
                lines.append(line.strip())
    return lines


def guide_pages() -> list[str]:
    """The pages whose code runs as tests: getting started and the user guide."""
    return ["getting-started", *sorted(f"guide/{p.stem}" for p in (DOCS / "guide").glob("*.md")
                                       if p.stem != "index")]


# -- running a shell line as a reader would -------------------------------------------------

OURS = {"make", "symgrad", "python", "python3"}  # what set-up installs or needs anyway


def tools(line: str) -> list[str]:
    """The commands a shell line runs (the first word of each part of a pipeline)."""
    code = line.split("  #")[0]
    return [part.split()[0] for part in code.split("|") if part.split()]


def run_shell_line(line: str, cwd: Path) -> None:
    """Run one line in ``cwd`` as printed, with the interpreter's scripts on the PATH; skip
    when a system tool it names is not installed. It must exit 0, print no traceback and
    leave no empty file."""
    import os
    import shutil
    import subprocess
    import sys

    import pytest

    bindir = str(Path(sys.executable).parent)
    path = bindir + os.pathsep + os.environ.get("PATH", "")
    missing = [t for t in tools(line) if shutil.which(t, path=path) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} is not installed (.ci/run installs Graphviz)")
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=cwd,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PATH": path})
    assert proc.returncode == 0, (line, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    written = [p for p in cwd.rglob("*") if p.is_file()]
    assert all(p.stat().st_size > 0 for p in written), written
