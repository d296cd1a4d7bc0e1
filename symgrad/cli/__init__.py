"""The ``symgrad`` command: argument parsing and the subcommands (:mod:`.commands`) and the
tour on a small network (:mod:`.demo`). ``symgrad.cli:main`` is the entry point; this face
imports only :mod:`.commands`, which imports NumPy and the compiler after parsing, so
``symgrad --version`` and ``--help`` stay light."""

from .commands import UsageError, main, parse_dtypes, parse_shapes, parse_values

__all__ = ["UsageError", "main", "parse_dtypes", "parse_shapes", "parse_values"]
