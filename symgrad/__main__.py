"""``python -m symgrad``: the command-line interface (see :mod:`symgrad.cli`)."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
