"""The book's execution cache forgets a notebook's outputs when a module or data file that its
execution reads changes, and only then; tools/execute_notebooks.py fills it the way the build
reads it."""

import contextlib
import json
import sys
from pathlib import Path

import pytest
from notebook_runner import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import book_cache
from book_cache import MANIFEST, reach, refresh


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _notebook(path: Path, *cells: str) -> Path:
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


@pytest.fixture
def book(tmp_path):
    """A companion-like package, two notebooks with quizzes, a results folder that
    ``companion.bench`` reads, a Sphinx extension. ``a_first`` (like chapter 1) imports the
    glue and the checks' core; ``b_second`` (like chapter 7) an agent's check, which reaches
    the agent only through an import inside a function."""
    pkg = tmp_path / "companion"
    _write(pkg / "__init__.py", "VERSION = 1\n")
    _write(pkg / "glue.py", "def glue(name, value):\n    return value\n")
    _write(pkg / "bench" / "__init__.py", "RESULTS = 'results'\n")
    _write(pkg / "checks" / "__init__.py", '"""Checks."""\n')
    _write(pkg / "checks" / "core.py", "class CheckFailed(Exception):\n    pass\n")
    _write(
        pkg / "checks" / "dqn.py",
        "from .core import CheckFailed\n\n\ndef check():\n"
        "    from companion.agents import dqn\n    return dqn.train\n",
    )
    _write(pkg / "agents" / "__init__.py", "")
    _write(pkg / "agents" / "dqn" / "__init__.py", "from . import train\n")
    _write(pkg / "agents" / "dqn" / "train.py", "from ..dqn import losses\n")
    _write(pkg / "agents" / "dqn" / "losses.py", "def loss():\n    return 0.0\n")
    _write(pkg / "trees.py", "def unstack(x):\n    return x\n")
    _write(pkg / "data" / "agent.json", "{}")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "glue.cpython-313.pyc").write_bytes(b"compiled")
    notebooks = tmp_path / "notebooks"
    a = _notebook(
        notebooks / "a_first.ipynb",
        "%pip install --quiet equinox \\\n    chex\n!ls",
        "from companion.glue import glue\nfrom companion.checks.core import CheckFailed",
        "from companion import bench\nshow_quiz('a_first')",
    )
    b = _notebook(
        notebooks / "b_second.ipynb",
        "from companion.checks.dqn import check",
        "%time import companion.trees",
    )
    for stem in ("a_first", "b_second"):
        _write(notebooks / "quizzes" / f"{stem}.json", "[]")
    _write(tmp_path / "results" / "speed.json", '{"seconds": 1.0}')
    _write(tmp_path / "_ext" / "cards.py", "def setup(app):\n    from companion import glue\n")
    return {"root": tmp_path, "package": pkg, "a": a, "b": b, "notebooks": notebooks}


def _files(book, name):
    pkg = book["package"]
    return {p.relative_to(pkg).as_posix() for p in reach(book_cache._code(book[name]), pkg)}


def test_the_modules_a_notebook_reaches_follow_its_imports_through_the_package(book):
    """Parent packages' __init__ count, relative imports resolve, an import inside a function
    counts, ``from companion import bench`` names a package, a magic's code counts and the
    shell and pip lines do not trip the parser."""
    assert _files(book, "a") == {
        "__init__.py",
        "glue.py",
        "checks/__init__.py",
        "checks/core.py",
        "bench/__init__.py",
    }
    assert _files(book, "b") == {
        "__init__.py",
        "checks/__init__.py",
        "checks/core.py",
        "checks/dqn.py",
        "trees.py",
        "agents/__init__.py",
        "agents/dqn/__init__.py",
        "agents/dqn/train.py",
        "agents/dqn/losses.py",
    }


def test_a_computed_import_or_a_cell_that_does_not_parse_reaches_every_module(book):
    every = {
        p.relative_to(book["package"]).as_posix()
        for p in book_cache.modules(book["package"]).values()
    }
    _write(
        book["package"] / "glue.py",
        "import importlib\n\n\ndef load(name):\n    return importlib.import_module(name)\n",
    )
    assert _files(book, "a") == every
    _notebook(book["a"], "import companion.trees\nx = (")
    assert _files(book, "a") == every
    _notebook(book["a"], "import companion.trees")
    assert _files(book, "a") == {"__init__.py", "trees.py"}


def test_a_lazy_package_counts_only_the_submodules_of_the_names_imported_from_it(book):
    """``from companion.checks import check`` through a PEP 562 table reaches checks/dqn.py
    only, not the table's other modules; a name not in the table adds nothing."""
    pkg = book["package"]
    _write(pkg / "checks" / "keys.py", "def check_keys():\n    return 1\n")
    _write(
        pkg / "checks" / "__init__.py",
        "import importlib\n\n_LAZY = {'check': 'dqn', "
        "'check_keys': 'keys'}\n\n\ndef __getattr__(name):\n"
        "    return getattr(importlib.import_module('companion.checks.' + _LAZY[name]), "
        "name)\n",
    )
    _notebook(book["b"], "from companion.checks import check")
    reached = _files(book, "b")
    assert "checks/dqn.py" in reached and "agents/dqn/train.py" in reached
    assert "checks/keys.py" not in reached and "glue.py" not in reached
    _notebook(book["b"], "from companion.checks import check_keys, not_there")
    assert _files(book, "b") == {"__init__.py", "checks/__init__.py", "checks/keys.py"}


def _page(stem):
    """The notebook ``stem``, by its exact name (a chapter may have several pages)."""
    path = ROOT / "notebooks" / f"{stem}.ipynb"
    assert path.is_file(), path
    return path


def test_the_real_chapters_import_graph():
    """Chapter 1 never reaches the DQN agent; chapter 7 does. Each chapter reaches only its
    own self-checks (companion.checks loads them lazily): an edit of chapter 8's check of the
    rollout keys concerns chapter 8's first page alone."""
    pkg = ROOT / "companion"
    table = book_cache.modules(pkg)
    first = reach(book_cache._code(_page("01_jax_essentials")), pkg, table)
    seventh = reach(book_cache._code(_page("07_dqn")), pkg, table)
    dqn = set((pkg / "agents" / "dqn").glob("*.py"))
    assert len(dqn) >= 4 and not dqn & first
    assert dqn <= seventh and pkg / "checks" / "dqn.py" in seventh
    assert {pkg / "__init__.py", pkg / "checks" / "__init__.py", pkg / "glue.py"} <= first
    assert pkg / "checks" / "dqn.py" not in first
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    keys = [
        nb.stem
        for nb in notebooks
        if pkg / "checks" / "keys.py" in reach(book_cache._code(nb), pkg, table)
    ]
    assert keys == ["08_ppo_maze"]


def _cache_both(book, cache_dir):
    """Store both notebooks in the jupyter-cache at ``cache_dir`` as execute_notebooks.py does
    (its uri is the notebook's absolute path), unexecuted."""
    with _opened(cache_dir) as cache:
        for name in ("a", "b"):
            path = book[name]
            if not any(Path(r.uri) == path for r in cache.list_cache_records()):
                cache.cache_notebook_file(str(path), check_validity=False, overwrite=True)


def _cached(cache_dir) -> set[str]:
    with _opened(cache_dir) as cache:
        return {Path(r.uri).stem for r in cache.list_cache_records()}


def test_a_change_forgets_only_the_notebooks_that_read_it(book):
    """With a real jupyter-cache holding both notebooks: a module or a result that only
    ``b_second`` (or only ``a_first``) reaches forgets only its records and doctree; a
    module both reach, and the package's data, forget both; a quiz only its chapter; a
    compiled file nothing; a missing manifest everything."""
    root, pkg = book["root"], book["package"]
    cache, doctrees = root / "_build" / ".jupyter_cache", root / "_build" / ".doctrees"
    edition = root / "_build" / "ja" / "_build" / ".doctrees"  # a second edition's

    def run():
        return refresh(
            cache,
            pkg,
            [doctrees, edition],
            book["notebooks"],
            book["notebooks"] / "quizzes",
            root / "_ext",
            {"bench/__init__.py": root / "results"},
        )

    def step(path, text):
        _cache_both(book, cache)
        for folder in (doctrees, edition):
            for stem in ("a_first", "b_second"):
                _write(folder / "notebooks" / f"{stem}.doctree", "doctree")
            _write(folder / "environment.pickle", "env")
        if path is not None:
            path.write_text(text)
        outcome = run()
        for folder in (doctrees, edition):  # every edition reads the notebook again
            assert (folder / "environment.pickle").exists() == (not outcome.pages)
            left = {p.stem for p in (folder / "notebooks").glob("*.doctree")}
            if not outcome.pages:  # the forgotten notebooks' doctrees go, the others stay
                assert left == {"a_first", "b_second"} - set(outcome.notebooks), folder
        assert _cached(cache) == {"a_first", "b_second"} - set(outcome.notebooks)
        return outcome.notebooks

    assert run().everything  # no manifest yet
    assert step(None, "") == ()
    assert step(pkg / "agents" / "dqn" / "losses.py", "def loss():\n    return 1.0\n") == (
        "b_second",
    )
    assert step(root / "results" / "speed.json", '{"seconds": 2.0}') == ("a_first",)
    assert step(pkg / "checks" / "core.py", "class CheckFailed(ValueError):\n    pass\n") == (
        "a_first",
        "b_second",
    )
    assert step(book["notebooks"] / "quizzes" / "a_first.json", '[{"q": 1}]') == ("a_first",)
    assert step(pkg / "data" / "agent.json", '{"new": 1}') == ("a_first", "b_second")
    assert step(pkg / "__pycache__" / "glue.cpython-313.pyc", "recompiled") == ()
    (pkg / "agents" / "dqn" / "losses.py").rename(pkg / "agents" / "dqn" / "loss.py")
    assert step(None, "") == ("b_second",)  # a renamed module

    _cache_both(book, cache)
    (cache / MANIFEST).unlink()
    outcome = run()
    assert outcome.everything and outcome.notebooks == ("a_first", "b_second")
    assert _cached(cache) == set() and not doctrees.exists() and not edition.exists()


def test_a_changed_extension_reads_every_page_again_and_keeps_the_executions(book):
    root, pkg = book["root"], book["package"]
    cache, doctrees = root / "cache", root / ".doctrees"

    def run():
        return refresh(cache, pkg, doctrees, book["notebooks"], None, root / "_ext", {})

    run()
    _cache_both(book, cache)
    _write(doctrees / "environment.pickle", "env")
    (root / "_ext" / "cards.py").write_text("def setup(app):\n    return {}\n")
    outcome = run()
    assert outcome.pages and not outcome.everything and outcome.notebooks == ()
    assert not doctrees.exists() and _cached(cache) == {"a_first", "b_second"}


def test_an_unreadable_manifest_or_another_version_of_the_script_clears_everything(
    book, monkeypatch
):
    root, pkg = book["root"], book["package"]
    cache, doctrees = root / "cache", root / ".doctrees"

    def run():
        return refresh(cache, pkg, doctrees, book["notebooks"])

    assert run().everything
    _cache_both(book, cache)
    assert not run().everything and _cached(cache) == {"a_first", "b_second"}
    (cache / MANIFEST).write_text("{not json")
    assert run().everything and _cached(cache) == set()
    _cache_both(book, cache)
    assert not run().everything
    versions = book_cache._versions()
    monkeypatch.setattr(book_cache, "_versions", lambda: {**versions, "tool": "edited"})
    assert run().everything and _cached(cache) == set()
    assert json.loads((cache / MANIFEST).read_text())["tool"] == "edited"


def test_sphinx_reads_again_a_page_whose_doctree_is_gone(tmp_path):
    """The mechanism refresh relies on: with its saved environment kept, Sphinx reads again
    only the pages whose doctree file is missing (or whose source changed)."""
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    _write(src / "conf.py", "")
    _write(src / "index.rst", "Index\n=====\n\n.. toctree::\n\n   a\n   b\n")
    _write(src / "a.rst", "A\n=\n")
    _write(src / "b.rst", "B\n=\n")
    doctrees = tmp_path / ".doctrees"

    def build() -> set[str]:
        read: set[str] = set()
        app = Sphinx(
            str(src),
            str(src),
            str(tmp_path / "html"),
            str(doctrees),
            "html",
            status=None,
            warning=None,
            freshenv=False,
        )
        app.connect("env-before-read-docs", lambda app, env, names: read.update(names))
        app.build()
        return read

    assert build() == {"index", "a", "b"}
    assert build() == set()
    (doctrees / "b.doctree").unlink()
    assert build() == {"b"}


def _project(tmp_path, cells):
    """A one-notebook book: _toc.yml, _config.yml and notebooks/nb.ipynb with ``cells``."""
    import nbformat

    (tmp_path / "notebooks").mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, tmp_path / "notebooks" / "nb.ipynb")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nchapters:\n- file: notebooks/nb\n- file: missing/page\n"
    )
    (tmp_path / "_config.yml").write_text("execute:\n  timeout: 60\n")
    return tmp_path / "notebooks" / "nb.ipynb"


@contextlib.contextmanager
def _opened(cache_dir):
    """jupyter-cache's cache at ``cache_dir``, its SQLite connections closed afterwards."""
    from jupyter_cache import get_cache

    cache = get_cache(str(cache_dir))
    try:
        yield cache
    finally:
        cache.db.dispose()


def test_parallel_execution_fills_the_cache_the_build_reads(tmp_path, monkeypatch):
    """tools/execute_notebooks.py stores each executed notebook where myst-nb's cache mode
    looks it up (same code cells, hence a match), with its outputs and its seconds; a
    second run finds it cached and executes nothing."""
    import execute_notebooks
    import nbformat

    path = _project(tmp_path, ["x = 6 * 7", "print(x)"])
    cache_dir = tmp_path / "cache"
    monkeypatch.setattr(execute_notebooks, "ROOT", tmp_path)
    monkeypatch.setattr(execute_notebooks, "SECONDS", tmp_path / "seconds.json")
    args = [
        "--jobs",
        "2",
        "--cache",
        str(cache_dir),
        "--toc",
        str(tmp_path / "_toc.yml"),
        "--config",
        str(tmp_path / "_config.yml"),
    ]
    assert execute_notebooks.book_notebooks(tmp_path / "_toc.yml") == [path]
    assert execute_notebooks.main(args) == 0
    with _opened(cache_dir) as cache:
        record = cache.match_cache_notebook(nbformat.read(path, as_version=4))
        assert record.data["execution_seconds"] > 0
        _, merged = cache.merge_match_into_notebook(nbformat.read(path, as_version=4))
    assert merged.cells[1].outputs[0]["text"] == "42\n"
    seconds = json.loads((tmp_path / "seconds.json").read_text())
    assert seconds["notebooks/nb.ipynb"]["jobs"] == 1  # one notebook: one worker
    assert execute_notebooks.main(args) == 0  # cached now: nothing runs
    assert json.loads((tmp_path / "seconds.json").read_text()) == seconds


def test_a_notebook_that_raises_fails_the_run_and_is_not_cached(tmp_path, monkeypatch, capsys):
    import execute_notebooks
    import nbformat

    path = _project(tmp_path, ["raise RuntimeError('cell 1 is broken')"])
    monkeypatch.setattr(execute_notebooks, "ROOT", tmp_path)
    monkeypatch.setattr(execute_notebooks, "SECONDS", tmp_path / "seconds.json")
    cache_dir = tmp_path / "cache"
    status = execute_notebooks.main(
        [
            "--cache",
            str(cache_dir),
            "--toc",
            str(tmp_path / "_toc.yml"),
            "--config",
            str(tmp_path / "_config.yml"),
        ]
    )
    assert status == 1
    assert "cell 1 is broken" in capsys.readouterr().out
    with _opened(cache_dir) as cache, pytest.raises(KeyError):
        cache.match_cache_notebook(nbformat.read(path, as_version=4))


def test_seconds_to_first_exercise_sums_the_code_cells_before_the_first_solution():
    import execute_notebooks
    import nbformat

    def timed(source, start, end, tags=()):
        cell = nbformat.v4.new_code_cell(source, metadata={"tags": list(tags)})
        cell.metadata["execution"] = {
            "iopub.execute_input": f"2026-12-05T12:00:{start:06.3f}Z",
            "shell.execute_reply": f"2026-12-05T12:00:{end:06.3f}Z",
        }
        return cell

    nb = nbformat.v4.new_notebook(
        cells=[
            timed("a = 1", 0.0, 1.5),
            nbformat.v4.new_markdown_cell("## Exercises"),
            timed("b = 2", 2.0, 4.25),
            timed("solve()", 5.0, 9.0, tags=["solution"]),
            timed("c = 3", 9.0, 20.0),
        ]
    )
    assert execute_notebooks.seconds_to_first_exercise(nb) == 3.75
    nb.cells[3].metadata["tags"] = []
    assert execute_notebooks.seconds_to_first_exercise(nb) is None  # no exercise
