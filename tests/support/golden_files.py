"""Golden files of emitted source: compare, or rewrite them with SYMGRAD_REGEN_GOLDEN=1."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
REGEN = os.environ.get("SYMGRAD_REGEN_GOLDEN") == "1"


def check_golden(filename: str, text: str) -> None:
    """``text`` must be the golden file's content (rewritten instead under REGEN)."""
    path = GOLDEN / filename
    if REGEN:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), "golden file missing: run with SYMGRAD_REGEN_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), (
        f"emitted text differs from {path}; if the change is intended, regenerate with "
        "SYMGRAD_REGEN_GOLDEN=1"
    )
