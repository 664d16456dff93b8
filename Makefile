# Two commands set up a fresh machine: `make test` and `make book`.
# Both create .venv from requirements.txt (exact pins) on first use and
# install the companion package into it.

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: venv test book bench lab serve clean

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

venv: $(VENV)/.installed

# Unit tests, and every notebook executed on the tiny training budget.
test: venv
	DRLJAX_BUDGET=tiny $(BIN)/python -m pytest

# The whole book, executing every notebook on the real budgets, into _build/html.
# Executed notebooks are cached in _build/.jupyter_cache: an unchanged notebook
# is not executed again. Any warning or cell error fails the build.
book: venv
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/jupyter-book build . --warningiserror --keep-going

# Benchmarks (benchmarks/*.py) with their peers installed; each writes JSON to
# benchmarks/results, and benchmarks/results/bench.json records how long each took.
bench: venv
	$(BIN)/python -m pip install --quiet -r benchmarks/requirements.txt
	$(BIN)/python benchmarks/run_all.py

# Student copies (solutions replaced by stubs) in lab/student, full copies in lab/solutions.
lab: venv
	$(BIN)/python tools/make_lab.py --out lab

# Preview the built book at http://localhost:8000
serve:
	$(BIN)/python -m http.server --directory _build/html 8000

clean:
	rm -rf _build
