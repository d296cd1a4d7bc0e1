"""Build the teaching notebooks: ``notebooks/src/*.py`` -> executed ``notebooks/*.ipynb``.

Each source is a plain Python file in the "percent" cell format (the one Jupytext, VS Code
and Spyder read): a line ``# %% [markdown]`` starts a markdown cell whose lines are comments,
a line ``# %%`` starts a code cell, and ``# %% tags=["figure"]`` marks a code cell that needs
matplotlib. The sources also run as ordinary scripts (``python notebooks/src/01_...py``).

``python notebooks/build.py`` executes every code cell in order in one namespace (``exec`` of
our own notebook source, as Jupyter would), records what it prints and the value of its last
expression (``text/plain``, plus ``text/html``, ``text/latex`` and ``image/png`` when the
value has ``_repr_html_``/``_repr_latex_``/``_repr_png_``, as IPython shows them), and writes
nbformat v4.5 JSON with the ``json`` module alone: neither jupyter nor nbformat is needed. The
output is deterministic (fixed cell ids, no timestamps, no execution times; the notebooks
seed their random generators). If matplotlib is missing, figure cells are kept without output.

Usage::

    python notebooks/build.py              # rebuild all notebooks
    python notebooks/build.py 02           # rebuild the notebooks whose name starts with 02
    python notebooks/build.py --check      # exit 1 if a notebook on disk is out of date
"""

from __future__ import annotations

import ast
import base64
import contextlib
import io
import json
import re
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
ROOT = HERE.parent
FIGURE_TAG = "figure"

_MARKER = re.compile(r"^# %%(?P<kind> \[markdown\])?(?:\s+tags=(?P<tags>\[.*\]))?\s*$")


@dataclass
class Cell:
    """One notebook cell: ``kind`` is ``"markdown"`` or ``"code"``."""

    kind: str
    source: str
    tags: list[str] = field(default_factory=list)
    outputs: list[dict] = field(default_factory=list)
    count: int | None = None


def have_matplotlib() -> bool:
    """Whether figure cells can run."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


# -- reading the percent-format source ------------------------------------------------------


def read_cells(path: Path) -> list[Cell]:
    """The cells of a percent-format source file, in order."""
    cells: list[Cell] = []
    kind, tags, body = None, [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = _MARKER.match(line)
        if m:
            if kind is not None:
                cells.append(_cell(kind, tags, body))
            kind = "markdown" if m.group("kind") else "code"
            tags = json.loads(m.group("tags")) if m.group("tags") else []
            body = []
        elif kind is None:
            if line.strip():
                raise ValueError(f"{path}:{number}: text before the first '# %%' cell marker")
        else:
            body.append(line)
    if kind is not None:
        cells.append(_cell(kind, tags, body))
    return cells


def _cell(kind: str, tags: list[str], body: list[str]) -> Cell:
    if kind == "markdown":
        body = [line[2:] if line.startswith("# ") else line.lstrip("#") for line in body]
    text = "\n".join(body).strip("\n")
    return Cell(kind, text, list(tags))


# -- executing ------------------------------------------------------------------------------


class CellError(RuntimeError):
    """A code cell raised: names the notebook and the cell."""


def run_cell(source: str, namespace: dict, label: str) -> list[dict]:
    """Execute one code cell in ``namespace``; its outputs as nbformat output dicts.

    Like IPython: a final expression statement is evaluated and its value displayed (unless
    it is None or the cell ends with ``;``); stdout and stderr are captured as streams.
    """
    tree = ast.parse(source, filename=label)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            exec(compile(tree, label, "exec"), namespace)
            value = eval(compile(last, label, "eval"), namespace) if last else None
        except Exception as exc:
            lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__)
                     if f.filename == label]
            where = f", line {lines[-1]}" if lines else ""
            raise CellError(f"{label}{where} raised {type(exc).__name__}: {exc}") from exc
    outputs = [_stream(name, text) for name, text in (("stdout", out.getvalue()),
                                                      ("stderr", err.getvalue())) if text]
    if value is not None and not source.rstrip().endswith(";"):
        outputs.append({"output_type": "execute_result", "data": display_data(value),
                        "metadata": {}, "execution_count": None})
    return outputs


def display_data(value: Any) -> dict:
    """The MIME bundle IPython would show for ``value``."""
    data: dict[str, Any] = {"text/plain": _lines(repr(value))}
    for mime, method in (("text/html", "_repr_html_"), ("text/latex", "_repr_latex_")):
        make = getattr(value, method, None)
        text = make() if callable(make) else None
        if text is not None:  # None: this value has no such form (IPython skips it too)
            data[mime] = _lines(text)
    png = getattr(value, "_repr_png_", None)
    if callable(png):
        raw = png()
        if raw:
            data["image/png"] = base64.b64encode(raw).decode("ascii")
    return data


def _stream(name: str, text: str) -> dict:
    return {"output_type": "stream", "name": name, "text": _lines(text)}


def _lines(text: str) -> list[str]:
    """nbformat's multiline string: a list of lines, each but the last keeping its newline."""
    return text.splitlines(keepends=True)


def execute(cells: list[Cell], name: str, figures: bool | None = None) -> dict:
    """Run the code cells of notebook ``name`` in order; fills ``outputs`` and ``count``.

    Figure cells run only when ``figures`` (default: matplotlib is importable). Returns the
    namespace the cells ran in.
    """
    figures = have_matplotlib() if figures is None else figures
    namespace: dict = {"__name__": "__main__"}
    count = 0
    for k, cell in enumerate(cells):
        if cell.kind != "code":
            continue
        count += 1
        cell.count = count
        cell.outputs = []
        if FIGURE_TAG in cell.tags and not figures:
            continue
        cell.outputs = run_cell(cell.source, namespace, f"<{name} cell {k}>")
        for o in cell.outputs:
            if o["output_type"] == "execute_result":
                o["execution_count"] = count
    return namespace


# -- writing nbformat v4 JSON ----------------------------------------------------------------


def to_notebook(cells: list[Cell], stem: str) -> dict:
    """The nbformat v4.5 document for ``cells`` (ids derived from the notebook name)."""
    prefix = re.sub(r"[^A-Za-z0-9]", "-", stem)[:40]
    out = []
    for k, cell in enumerate(cells):
        entry: dict[str, Any] = {"cell_type": cell.kind, "id": f"{prefix}-{k:03d}",
                                 "metadata": {"tags": cell.tags} if cell.tags else {},
                                 "source": _lines(cell.source)}
        if cell.kind == "code":
            entry["execution_count"] = cell.count
            entry["outputs"] = cell.outputs
        out.append(entry)
    return {
        "cells": out,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python", "pygments_lexer": "ipython3"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def dumps(notebook: dict) -> str:
    """Deterministic JSON text, formatted as Jupyter writes it."""
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def code_cells(notebook: dict) -> list[tuple[str, list[str]]]:
    """``(source, tags)`` of each code cell of a loaded ``.ipynb`` document, in order."""
    return [("".join(c["source"]), c.get("metadata", {}).get("tags", []))
            for c in notebook["cells"] if c["cell_type"] == "code"]


def sources() -> list[Path]:
    """The notebook sources, in name order."""
    return sorted(SRC.glob("[0-9]*.py"))


def build(src: Path, figures: bool | None = None) -> str:
    """Execute one source and return its notebook JSON text."""
    cells = read_cells(src)
    execute(cells, src.stem, figures)
    return dumps(to_notebook(cells, src.stem))


def main(argv: list[str]) -> int:
    check = "--check" in argv
    prefixes = [a for a in argv if not a.startswith("--")]
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # use the symgrad of this checkout
    if not have_matplotlib():
        print("matplotlib is not installed: figure cells are written without output")
    stale = 0
    for src in sources():
        if prefixes and not any(src.stem.startswith(p) for p in prefixes):
            continue
        target = HERE / f"{src.stem}.ipynb"
        text = build(src)
        if check:
            fresh = target.exists() and target.read_text(encoding="utf-8") == text
            stale += not fresh
            print(f"{'ok   ' if fresh else 'STALE'} {target.relative_to(ROOT)}")
        else:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target.relative_to(ROOT)}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
