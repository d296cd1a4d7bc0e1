"""benchmarks/tables.py: the results files of benchmarks/measured/ as markdown tables."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.docs import ROOT


def test_every_results_file_loads_and_names_its_command_and_machine():
    from benchmarks import tables

    assert len(tables.names()) >= 8
    for name in tables.names():
        data = tables.load(tables.MEASURED / f"{name}.json")
        text = tables.markdown(data)
        assert f"**Machine**: {data['machine']}" in text and "**Command**: `" in text
        for table in data.get("tables", []):
            assert text.count("\n|---") >= 1
            assert all(f"| {row[0]} |" in text for row in table["rows"]), name


def test_the_results_table_script_refuses_a_row_of_the_wrong_width(tmp_path):
    from benchmarks import tables

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"title": "t", "command": "c", "machine": "m",
                               "tables": [{"columns": ["a", "b"], "rows": [["1"]]}]}))
    with pytest.raises(ValueError, match="2 wide"):
        tables.load(bad)
    bad.write_text(json.dumps({"title": "t", "command": "c"}))
    with pytest.raises(ValueError, match="machine"):
        tables.load(bad)


def test_the_results_table_script_prints_every_table():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.tables", "loops"],
                          capture_output=True, text=True, cwd=ROOT, check=True)
    assert proc.stdout.startswith("## Loops") and "| W4 `sg.scan` L = 10^4" in proc.stdout
