# The two commands of the README: `make demo` and `make test`. Each creates .venv if missing.
# `make docs` builds the documentation site into docs/_build/html (warnings are errors).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HASH := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# the demo needs symgrad's runtime dependencies only (numpy, sympy, networkx); the tests
# need the `test` extra (JAX, torch, Dask, SciPy, ...), installed by the first `make test`
BASE := $(VENV)/.installed-base-$(HASH)
STAMP := $(VENV)/.installed-test-$(HASH)
DOCS_STAMP := $(VENV)/.installed-docs-$(HASH)

.PHONY: demo test docs fuzz lint bench clean

$(BASE): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	rm -f $(VENV)/.installed-base-* && touch $(BASE)

$(STAMP): $(BASE)
	PYTHONWARNINGS=ignore::UserWarning $(PY) -m pip install --quiet -e '.[test]'
	rm -f $(VENV)/.installed-test-* && touch $(STAMP)

# the site needs symgrad's runtime dependencies and the `docs` extra (Sphinx, MyST-NB, Furo)
$(DOCS_STAMP): $(BASE)
	$(PY) -m pip install --quiet -e '.[docs]'
	rm -f $(VENV)/.installed-docs-* && touch $(DOCS_STAMP)

demo: $(BASE)
	$(PY) -m symgrad demo

# PYTEST_ARGS: pytest's options; by default two pytest-xdist workers (in the test extra), one
# test file per worker at a time; `make test PYTEST_ARGS=` runs the suite in one process
PYTEST_ARGS ?= -n 2 --dist loadfile
test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

docs: $(DOCS_STAMP)
	$(PY) -m sphinx -b html -W --keep-going -q docs docs/_build/html
	@echo "the site: docs/_build/html/index.html"

# the fuzz campaign of tests/quality/test_fuzz.py with fresh random seeds (make test runs a bounded,
# derandomized slice of it); FUZZ_EXAMPLES examples per test
FUZZ_EXAMPLES ?= 3000
fuzz: $(STAMP)
	SYMGRAD_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q -p no:cacheprovider tests/quality/test_fuzz.py
	SYMGRAD_NUMBA_FULL=1 $(PY) -m pytest -q -p no:cacheprovider tests/backends/targets/numba/test_printer.py \
		tests/backends/targets/numba/test_loops.py tests/backends/targets/numba/test_linalg.py \
		tests/backends/targets/c/test_printer.py tests/backends/targets/c/test_loops.py

lint: $(STAMP)
	$(PY) -m ruff check symgrad tests benchmarks

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) -m benchmarks.run

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache docs/_build
