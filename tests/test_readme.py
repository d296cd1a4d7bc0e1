"""The README's code runs as written: the tour (the first ```python block) and the defop example."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


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
