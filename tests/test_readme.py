"""The README's tour runs as written (the first ```python block)."""

from __future__ import annotations

import contextlib
import io
import re
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
