"""The README's code runs as written: the tour (the first ```python block), the defop example,
and every line of its shell blocks."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_tour_runs() -> None:
    text = README.read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(block, "README.md", "exec"), namespace)  # our own documentation
    assert "def f(" in out.getvalue()  # the emitted source was printed
    assert namespace["H"].shape == (5, 5)
    assert namespace["dW_val"].shape == (4, 3) and namespace["db_val"].shape == (4,)


def test_readme_extension_example_runs_in_a_fresh_process() -> None:
    """The ``defop`` example registers an op: it runs in its own interpreter."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    block = next(b for b in blocks if "defop(" in b)
    out = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True,
                         check=True, timeout=120)
    assert "x / (1 + np.abs(x))" in out.stdout


# -- every shell line of the README runs as printed -----------------------------------------

SKIP = {"make demo": "creates .venv in the checkout; the same tour runs below as `symgrad demo`",
        "make test": "runs this test suite itself (it is what CI runs)"}


def _shell_lines() -> list:
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip() and not line.strip().startswith("#"):
                lines.append(line.strip())
    return lines


def _tools(line: str) -> list[str]:
    """The commands a shell line runs (first word of each part of a pipeline)."""
    code = line.split("  #")[0]
    return [part.split()[0] for part in code.split("|") if part.split()]


@pytest.mark.parametrize("line", _shell_lines(), ids=lambda s: s[:40])
def test_readme_shell_line_runs(line, tmp_path):
    for prefix, reason in SKIP.items():
        if line.startswith(prefix):
            pytest.skip(reason)
    bindir = str(Path(sys.executable).parent)
    path = bindir + os.pathsep + os.environ.get("PATH", "")
    missing = [t for t in _tools(line) if shutil.which(t, path=path) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} is not installed (.ci/run installs Graphviz)")
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PATH": path})
    assert proc.returncode == 0, (line, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert all(p.stat().st_size > 0 for p in written), written


def test_every_system_tool_a_readme_line_uses_is_named_in_the_set_up():
    """A line such as ``symgrad dot ... | dot -Tpng > g.png`` needs Graphviz: a new user must
    read that before the shell leaves an empty g.png."""
    ours = {"make", "symgrad", "python", "python3"}
    tools = {t for line in _shell_lines() for t in _tools(line)} - ours
    setup = README.read_text().split("## Set-up", 1)[1].split("\n## ", 1)[0]
    assert tools and all(f"`{t}`" in setup for t in tools), (tools, setup)


def test_the_readme_shows_no_usage_brackets_in_shell_blocks():
    assert not [line for line in _shell_lines() if re.search(r"\[--?\w", line)]


def test_readme_jax_and_sympy_example_prints_what_it_says() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    block = next(b for b in blocks if "value_and_grad(loss)" in b)
    out = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True,
                         check=True, timeout=120).stdout.splitlines()
    for line, code in zip(out, [ln for ln in block.splitlines() if ln.startswith("print(")]):
        assert line == code.split("# ", 1)[1].strip(), (line, code)


def _design_tree() -> list[str]:
    """The entries of the README's Design tree: ``base/``, ``backends/targets/``, ``api.py``
    ... (the names a line starts with, before its words)."""
    section = README.read_text().split("## Design", 1)[1]
    block = section.split("```\nsymgrad/\n", 1)[1].split("```", 1)[0]
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

    package = README.parent / "symgrad"
    entries = _design_tree()
    folders = [e for e in entries if e.endswith("/")]
    assert len(folders) == len(set(folders)), folders
    assert set(folders) == {f"{p.name}/" for p in package.iterdir()
                            if (p / "__init__.py").exists()} | {"backends/targets/"}
    assert {e for e in entries if e.endswith(".py")} == {
        p.name for p in package.glob("*.py")} - {"__init__.py", "__main__.py"}
    floors = [FLOORS[e.split("/")[0].removesuffix(".py")] for e in entries]
    assert floors == sorted(floors), list(zip(entries, floors))
