"""Golden files of emitted source: data for tests/test_codegen.py, not test modules."""

collect_ignore_glob = ["*.py"]
