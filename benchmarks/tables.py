"""The measured figures of ``benchmarks/measured/*.json`` as the markdown tables the docs show.

Each results file records one measurement: what was run (``command``), where (``machine``),
when (``date``, where it was recorded), how (``method``), the tables it gave and the notes
that read them. The documentation site includes these tables (``docs/benchmarks/``), so a
figure is written once, beside the command that reproduces it.

Run ``python -m benchmarks.tables`` to print every table, or name files:
``python -m benchmarks.tables loops numba_backend``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

MEASURED = Path(__file__).resolve().parent / "measured"
REQUIRED = ("title", "command", "machine")


def load(path: Path) -> dict:
    """One results file, checked: its required fields, and rows as wide as their columns."""
    data = json.loads(Path(path).read_text())
    missing = [k for k in REQUIRED if not data.get(k)]
    if missing:
        raise ValueError(f"{path}: missing {missing}")
    for table in data.get("tables", []):
        width = len(table["columns"])
        bad = [row for row in table["rows"] if len(row) != width]
        if bad:
            raise ValueError(f"{path}: rows not {width} wide: {bad}")
    return data


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def table_markdown(table: dict) -> str:
    lines = []
    if table.get("caption"):
        lines += [table["caption"], ""]
    lines.append("| " + " | ".join(_cell(c) for c in table["columns"]) + " |")
    lines.append("|" + "---|" * len(table["columns"]))
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table["rows"]]
    return "\n".join(lines)


def markdown(data: dict) -> str:
    """A results file as markdown: how it was measured, its tables, then its notes."""
    commands = data["command"] if isinstance(data["command"], list) else [data["command"]]
    facts = [f"- **Command**: {', '.join(f'`{c}`' for c in commands)}",
             f"- **Machine**: {data['machine']}"]
    if data.get("date"):
        facts.append(f"- **Date**: {data['date']}")
    if data.get("method"):
        facts.append(f"- **Method**: {data['method']}")
    parts = ["\n".join(facts)]
    parts += [table_markdown(t) for t in data.get("tables", [])]
    parts += list(data.get("notes", []))
    return "\n\n".join(parts) + "\n"


def names() -> list[str]:
    return sorted(p.stem for p in MEASURED.glob("*.json"))


def main(argv: list[str]) -> int:
    for name in argv or names():
        data = load(MEASURED / f"{name}.json")
        print(f"## {data['title']}\n\n{markdown(data)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
