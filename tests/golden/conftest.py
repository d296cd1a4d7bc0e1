"""Golden files of emitted source: data for the printer tests
(tests/backends/targets/numpy/test_printer.py), not test modules."""

collect_ignore_glob = ["*.py"]
