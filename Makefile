# Two commands set up a fresh machine: `make test` and `make book`.
# Both create .venv from requirements.txt (exact pins) on first use and
# install the companion package into it.

# The first Python 3.13 or 3.12 that runs, in this order: python3.13, python3.12 on PATH,
# then pyenv's installed 3.13.x and 3.12.x (an unselected pyenv version's shim does not run,
# its interpreter does), then python3 if it is 3.12 or newer (make PYTHON=... chooses another).
PYENV_VERSIONS := $(or $(PYENV_ROOT),$(HOME)/.pyenv)/versions
PYTHON ?= $(firstword $(foreach p,python3.13 python3.12 \
	$(sort $(wildcard $(PYENV_VERSIONS)/3.13.*/bin/python3.13)) \
	$(sort $(wildcard $(PYENV_VERSIONS)/3.12.*/bin/python3.12)) python3,\
	$(shell $(p) -c "import sys; assert sys.version_info >= (3, 12)" >/dev/null 2>&1 && command -v $(p))))
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: venv check lint test colab-test book pdf catalogues bench lab serve clean

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

venv: $(VENV)/.installed

# The contributor's loop: the companion's unit tests, without the tests that execute a
# notebook or start a kernel, run a benchmark script, start Chromium, run the playground's
# JavaScript, start a Python process of their own or simulate devices (the marks in
# tests/conftest.py and pyproject.toml); `make test` runs those too.
CHECK_MARKS := not colab and not notebook and not bench and not devices and not browser \
	and not javascript and not subprocess
check: venv lint
	DRLJAX_BUDGET=tiny $(BIN)/python -m pytest -n auto --dist loadgroup -m "$(CHECK_MARKS)"

# ruff's formatter and linter over the Python outside the notebooks (settings in
# pyproject.toml), the book's Sphinx extensions and the site check included; `ruff format
# companion tests benchmarks tools book/_ext .ci/check_site.py` and `ruff check --fix` repair.
LINTED := companion tests benchmarks tools book/_ext .ci/check_site.py
lint: venv
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/ruff check $(LINTED)

# Unit tests, and every notebook executed on the tiny training budget.
test: venv
	DRLJAX_BUDGET=tiny $(BIN)/python -m pytest -n auto --dist loadgroup

# The notebooks in Colab's own package sets (tests/colab/*.txt, one per runtime line): the
# setup cell must change none of Colab's packages, then every notebook runs on the tiny
# budget. Slow (about 6 minutes a runtime line; the lines run side by side, one per core);
# what the setup cell added is written to _build/colab/. Downloads come from pip's cache
# when it has them.
colab-test: venv
	DRLJAX_BUDGET=tiny $(BIN)/python -m pytest -m colab -n auto --dist loadgroup tests/book/test_colab_runtime.py

# The whole book, executing every notebook on the real budgets, into _build/html, and its
# Japanese edition from the same execution into _build/html/ja (tools/editions.py).
# Executed notebooks are cached in _build/.jupyter_cache: an unchanged notebook
# is not executed again, unless a file its last execution read changed (a companion module,
# the package's data, a benchmark result, its quiz: each kernel records what it opened, and
# tools/book_cache.py then forgets that notebook). The notebooks to execute run one per core (tools/execute_notebooks.py; at most
# 4 at a time, as each kernel holds up to a few GB; JOBS=1 runs them one at a time). Any
# warning or cell error fails the build. Then the reader's notebooks of both editions, the
# figures the prose quotes filled in from that execution, into _build/html/_notebooks (each
# page's .ipynb download gives its edition's; the workflow publishes them on the branch that
# every Colab link opens: tools/reader_notebooks.py).
JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)
book: venv
	$(BIN)/python tools/book_cache.py
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python tools/execute_notebooks.py --jobs $(JOBS)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/jupyter-book build . --warningiserror --keep-going
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python tools/editions.py build ja
	$(BIN)/python tools/reader_notebooks.py --site _build/html

# The whole book as one PDF per edition, printed by headless Chromium from the site that
# `make book` built (no notebook runs again), then checked: pages, empty pages, figures
# (tools/book_pdf.py). Writes _build/html/_downloads/deep-rl-in-jax.pdf and the Japanese
# edition's under _build/html/ja; each landing page links to its own.
pdf: venv
	$(BIN)/python tools/book_pdf.py _build/html

# The English messages extracted and the Japanese catalogues (locales/ja) brought in step:
# a changed English paragraph becomes an untranslated entry, its old translation kept as a
# fuzzy suggestion, until a translator reviews it (tests/book/test_editions.py checks).
catalogues: venv
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python tools/editions.py catalogues

# Benchmarks (benchmarks/*.py) with their peers installed; each writes JSON to
# benchmarks/results, and benchmarks/results/bench.json records how long each took.
bench: venv
	$(BIN)/python -m pip install --quiet -r benchmarks/requirements.txt
	$(BIN)/python benchmarks/run_all.py

# Student copies (solutions replaced by stubs) in lab/student, full copies in lab/solutions;
# `make lab EDITION=ja`: from the Japanese notebooks (notebooks/ja), into lab/ja.
EDITION ?= en
lab: venv
	$(BIN)/python tools/make_lab.py --language $(EDITION)

# Preview the built book at http://localhost:8000
serve:
	$(BIN)/python -m http.server --directory _build/html 8000

clean:
	rm -rf _build
