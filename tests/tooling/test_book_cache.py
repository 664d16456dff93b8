"""The book's execution cache forgets a notebook's outputs when a file that its execution read
changes, and only then; tools/execute_notebooks.py records what each kernel read and fills the
cache the way the build reads it."""

import contextlib
import json
import os
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


def _files(source: str, pkg: Path) -> set[str]:
    return {p.relative_to(pkg).as_posix() for p in reach([source], pkg)}


def test_the_modules_an_extension_reaches_follow_its_imports_through_the_package(book):
    """Parent packages' __init__ count, relative imports resolve, an import inside a function
    counts, ``from companion import bench`` names a package."""
    pkg = book["package"]
    assert _files((book["root"] / "_ext" / "cards.py").read_text(), pkg) == {
        "__init__.py",
        "glue.py",
    }
    assert _files("from companion.checks.dqn import check\nfrom companion import bench", pkg) == {
        "__init__.py",
        "bench/__init__.py",
        "checks/__init__.py",
        "checks/core.py",
        "checks/dqn.py",
        "agents/__init__.py",
        "agents/dqn/__init__.py",
        "agents/dqn/train.py",
        "agents/dqn/losses.py",
    }


def test_a_computed_import_or_a_module_that_does_not_parse_reaches_every_module(book):
    pkg = book["package"]
    every = {p.relative_to(pkg).as_posix() for p in book_cache.modules(pkg).values()}
    _write(
        pkg / "glue.py",
        "import importlib\n\n\ndef load(name):\n    return importlib.import_module(name)\n",
    )
    assert _files("from companion import glue", pkg) == every
    assert _files("import companion.trees\nx = (", pkg) == every
    assert _files("import companion.trees", pkg) == {"__init__.py", "trees.py"}


def test_the_recorder_lists_what_a_process_and_its_children_read(tmp_path):
    """tools/recording/sitecustomize.py in a fresh Python: a module it imports, a file it
    reads, a file it looked for in vain and a file a child process reads are listed, once
    each; a file it writes and a file outside the root are not. Of the list,
    ``recorded_reads`` keeps the book's inputs with their contents' digests."""
    import hashlib
    import subprocess

    root = tmp_path / "book"
    _write(root / "companion" / "__init__.py", "")
    _write(root / "companion" / "trees.py", "LEAVES = 3\n")
    result = _write(root / "benchmarks" / "results" / "speed.json", '{"seconds": 1.0}')
    _write(root / "benchmarks" / "results" / "other.json", "{}")  # never read
    _write(tmp_path / "outside.txt", "outside")
    record = tmp_path / "reads"
    code = (
        "import subprocess, sys\n"
        "import companion.trees\n"
        "open('benchmarks/results/speed.json').read()\n"
        "open('benchmarks/results/speed.json').read()\n"
        "open('../outside.txt').read()\n"
        "open('companion/written.json', 'w').write('{}')\n"
        "try:\n    open('notebooks/quizzes/nb.json')\nexcept OSError:\n    pass\n"
        "subprocess.run([sys.executable, '-c', "
        "\"open('notebooks/quizzes/child.json').read()\"], check=True)\n"
    )
    _write(root / "notebooks" / "quizzes" / "child.json", "[]")
    env = book_cache.recording_env(record, root)
    env["PYTHONPATH"] += os.pathsep + str(root)
    subprocess.run([sys.executable, "-c", code], cwd=root, env=env, check=True)
    listed = record.read_text().splitlines()
    assert len(listed) == len(set(listed)) or listed.count("benchmarks/results/speed.json") == 1
    assert "companion/written.json" not in listed and not any("outside" in p for p in listed)
    reads = book_cache.recorded_reads(record, root)
    assert reads == {
        "benchmarks/results/speed.json": hashlib.sha256(result.read_bytes()).hexdigest(),
        "companion/__init__.py": hashlib.sha256(b"").hexdigest(),
        "companion/trees.py": hashlib.sha256(b"LEAVES = 3\n").hexdigest(),
        "notebooks/quizzes/child.json": hashlib.sha256(b"[]").hexdigest(),
        "notebooks/quizzes/nb.json": None,
    }
    assert book_cache.changed_reads(reads, root) == []
    _write(root / "notebooks" / "quizzes" / "nb.json", "[]")  # the file it looked for appears
    result.write_text('{"seconds": 2.0}')
    assert book_cache.changed_reads(reads, root) == [
        "benchmarks/results/speed.json",
        "notebooks/quizzes/nb.json",
    ]
    assert book_cache.changed_reads(None, root) == ["(no record)"]
    # a file edited while the run was going: the run may have read it before the edit
    import time

    before = time.time() - 60
    late = book_cache.recorded_reads(record, root, since=before)
    assert late["companion/trees.py"] == book_cache.CHANGED_DURING_RUN
    assert "companion/trees.py" in book_cache.changed_reads(late, root)


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


def _record_both(book, cache):
    """Each notebook's reads as execute_notebooks.py stores them: ``a_first`` (like chapter
    1) read the glue, the checks' core, a benchmark result and its quiz; ``b_second`` (like
    chapter 7) the DQN agent and its check, the package's data and a quiz it looked for in
    vain."""
    root = book["root"]
    listed = {
        "a_first": [
            "companion/__init__.py",
            "companion/glue.py",
            "companion/checks/core.py",
            "companion/__pycache__/glue.cpython-313.pyc",
            "results/speed.json",
            "notebooks/quizzes/a_first.json",
        ],
        "b_second": [
            "companion/__init__.py",
            "companion/checks/dqn.py",
            "companion/agents/dqn/losses.py",
            "companion/data/agent.json",
            "notebooks/quizzes/b_missing.json",
        ],
    }
    for stem, paths in listed.items():
        record = root / f"{stem}.reads"
        record.write_text("\n".join(paths) + "\n")
        book_cache.store_reads(cache, stem, book_cache.recorded_reads(record, root))


def test_a_change_forgets_only_the_notebooks_that_read_it(book, monkeypatch):
    """With a real jupyter-cache holding both notebooks and their recorded reads: a file
    that only ``b_second`` (or only ``a_first``) read forgets only its records and doctree
    (every edition's); a file both read forgets both; a file neither read, or a compiled
    file, nothing; a file one looked for and did not find forgets it when it appears; a
    notebook without a record executes again; a missing manifest forgets everything."""
    root, pkg = book["root"], book["package"]
    monkeypatch.setattr(book_cache, "INPUTS", ("companion/", "results/", "notebooks/quizzes/"))
    cache, doctrees = root / "_build" / ".jupyter_cache", root / "_build" / ".doctrees"
    edition = root / "_build" / "ja" / "_build" / ".doctrees"  # a second edition's

    def run():
        return refresh(cache, pkg, [doctrees, edition], book["notebooks"], root / "_ext")

    def step(path, text):
        _cache_both(book, cache)
        _record_both(book, cache)
        for folder in (doctrees, edition):
            for stem in ("a_first", "b_second"):
                _write(folder / "notebooks" / f"{stem}.doctree", "doctree")
            _write(folder / "environment.pickle", "env")
        if path is not None:
            _write(path, text)
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
    assert step(root / "results" / "unread.json", "{}") == ()
    assert step(pkg / "__init__.py", "VERSION = 2\n") == ("a_first", "b_second")
    assert step(book["notebooks"] / "quizzes" / "a_first.json", '[{"q": 1}]') == ("a_first",)
    assert step(pkg / "data" / "agent.json", '{"new": 1}') == ("b_second",)
    assert step(pkg / "trees.py", "def unstack(x):\n    return x[0]\n") == ()
    assert step(pkg / "__pycache__" / "glue.cpython-313.pyc", "recompiled") == ()
    assert step(book["notebooks"] / "quizzes" / "b_missing.json", "[]") == ("b_second",)
    _cache_both(book, cache)
    _record_both(book, cache)
    (pkg / "agents" / "dqn" / "losses.py").rename(pkg / "agents" / "dqn" / "loss.py")
    assert run().notebooks == ("b_second",)  # a module it read is gone

    _cache_both(book, cache)
    _record_both(book, cache)
    reads = json.loads((cache / book_cache.READS).read_text())
    del reads["a_first"]
    (cache / book_cache.READS).write_text(json.dumps(reads))
    outcome = run()
    assert outcome.notebooks == ("a_first",) and outcome.why == {"a_first": ["(no record)"]}

    _cache_both(book, cache)
    (cache / MANIFEST).unlink()
    outcome = run()
    assert outcome.everything and outcome.notebooks == ("a_first", "b_second")
    assert _cached(cache) == set() and not doctrees.exists() and not edition.exists()


def test_a_dry_run_says_what_would_execute_again_and_changes_nothing(book, monkeypatch):
    """``--dry-run`` gives the outcome the real refresh then gives (a changed module's
    reader), and leaves the cache's records, the doctrees and the manifest as they were."""
    root, pkg = book["root"], book["package"]
    monkeypatch.setattr(book_cache, "INPUTS", ("companion/", "results/", "notebooks/quizzes/"))
    cache, doctrees = root / "_build" / ".jupyter_cache", root / "_build" / ".doctrees"

    def run(dry_run):
        return refresh(cache, pkg, doctrees, book["notebooks"], root / "_ext", dry_run=dry_run)

    assert run(True).everything and not cache.exists()  # nothing written
    run(False)
    _cache_both(book, cache)
    _record_both(book, cache)
    for stem in ("a_first", "b_second"):
        _write(doctrees / "notebooks" / f"{stem}.doctree", "doctree")
    _write(pkg / "agents" / "dqn" / "losses.py", "def loss():\n    return 2.0\n")
    manifest = (cache / MANIFEST).read_bytes()
    dry = run(True)
    assert dry.notebooks == ("b_second",) and not dry.everything
    assert _cached(cache) == {"a_first", "b_second"}
    assert {d.stem for d in (doctrees / "notebooks").glob("*.doctree")} == {"a_first", "b_second"}
    assert (cache / MANIFEST).read_bytes() == manifest
    assert run(False) == dry
    assert _cached(cache) == {"a_first"}


def test_a_changed_extension_reads_every_page_again_and_keeps_the_executions(book):
    root, pkg = book["root"], book["package"]
    cache, doctrees = root / "cache", root / ".doctrees"

    def run():
        return refresh(cache, pkg, doctrees, book["notebooks"], root / "_ext")

    run()
    _cache_both(book, cache)
    _record_both(book, cache)
    _write(doctrees / "environment.pickle", "env")
    (root / "_ext" / "cards.py").write_text("def setup(app):\n    return {}\n")
    outcome = run()
    assert outcome.pages and not outcome.everything and outcome.notebooks == ()
    assert not doctrees.exists() and _cached(cache) == {"a_first", "b_second"}
    _write(doctrees / "environment.pickle", "env")
    (root / "_ext" / "cards.py").write_text("def setup(app):\n    from companion import trees\n")
    assert run().pages  # it imports another module of the package now
    _write(doctrees / "environment.pickle", "env")
    (pkg / "trees.py").write_text("def unstack(x):\n    return x[0]\n")
    assert run().pages and not doctrees.exists()  # a module it imports changed


def test_an_unreadable_manifest_or_another_version_of_the_script_clears_everything(
    book, monkeypatch
):
    root, pkg = book["root"], book["package"]
    cache, doctrees = root / "cache", root / ".doctrees"

    def run():
        return refresh(cache, pkg, doctrees, book["notebooks"])

    assert run().everything
    _cache_both(book, cache)
    _record_both(book, cache)
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

    path = _project(tmp_path, ["import companion.trees\nx = 6 * 7", "print(x)"])
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
    # what the kernel read, recorded (paths relative to the checkout the kernel imports from)
    reads = json.loads((cache_dir / book_cache.READS).read_text())["nb"]
    trees = ROOT / "companion" / "trees.py"
    assert reads["companion/trees.py"] == book_cache._sha(trees)
    assert "companion/__init__.py" in reads and "companion/glue.py" not in reads
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
    assert "cell 1 is broken" in (tmp_path / "_build" / "reports" / "nb.log").read_text()
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
