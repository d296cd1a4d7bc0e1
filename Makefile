# The two commands of the README: `make demo` and `make test`. Each creates .venv if missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test fuzz lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	PYTHONWARNINGS=ignore::UserWarning $(PY) -m pip install --quiet -e '.[test]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

demo: $(STAMP)
	$(PY) -m symgrad demo

test: $(STAMP)
	$(PY) -m pytest

# the fuzz campaign of tests/test_fuzz.py with fresh random seeds (make test runs a bounded,
# derandomized slice of it); FUZZ_EXAMPLES examples per test
FUZZ_EXAMPLES ?= 3000
fuzz: $(STAMP)
	SYMGRAD_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q -p no:cacheprovider tests/test_fuzz.py

lint: $(STAMP)
	$(PY) -m ruff check symgrad tests benchmarks

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) -m benchmarks.run

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
