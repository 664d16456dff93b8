"""The book's execution cache is cleared when the companion package changes, and only then;
tools/execute_notebooks.py fills it the way the build reads it."""

import contextlib
import json
import sys

import pytest

from notebook_runner import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from book_cache import STAMP, fingerprint, refresh  # noqa: E402


def _package(tmp_path):
    package = tmp_path / "companion"
    (package / "agents").mkdir(parents=True)
    (package / "__init__.py").write_text("x = 1\n")
    (package / "agents" / "dqn.py").write_text("def f():\n    return 1\n")
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.pyc").write_bytes(b"compiled")
    return package


def test_cache_survives_an_unchanged_package_and_is_cleared_by_a_change(tmp_path):
    package, cache = _package(tmp_path), tmp_path / "cache"
    assert refresh(cache, package)  # no cache yet: created with the stamp
    (cache / "executed.db").write_text("notebook outputs")
    assert not refresh(cache, package)
    assert (cache / "executed.db").exists()
    (package / "__pycache__" / "x.pyc").write_bytes(b"recompiled")  # not the package's source
    assert not refresh(cache, package)
    (package / "agents" / "dqn.py").write_text("def f():\n    return 2\n")  # a helper changed
    assert refresh(cache, package)
    assert not (cache / "executed.db").exists() and (cache / STAMP).is_file()
    assert not refresh(cache, package)


def test_fingerprint_sees_renames_and_data_files(tmp_path):
    package = _package(tmp_path)
    before = fingerprint(package)
    (package / "agents" / "dqn.py").rename(package / "agents" / "dqn2.py")
    renamed = fingerprint(package)
    (package / "data").mkdir()
    (package / "data" / "weights.eqx").write_bytes(b"\x00\x01")
    assert len({before, renamed, fingerprint(package)}) == 3


def test_a_change_also_clears_sphinxs_saved_environment(tmp_path):
    """Sphinx reads again only the pages whose files changed: with its saved environment kept,
    an unchanged notebook would not be executed at all after a helper changed."""
    package, cache, doctrees = _package(tmp_path), tmp_path / "cache", tmp_path / ".doctrees"
    refresh(cache, package, doctrees)
    (doctrees / "environment.pickle").parent.mkdir()
    (doctrees / "environment.pickle").write_bytes(b"env")
    assert not refresh(cache, package, doctrees)
    assert (doctrees / "environment.pickle").exists()
    (package / "__init__.py").write_text("x = 2\n")
    assert refresh(cache, package, doctrees)
    assert not doctrees.exists()


def test_a_changed_quiz_clears_the_cache_too(tmp_path):
    """The quizzes are data that the notebooks embed in their pages when they run."""
    package, cache = _package(tmp_path), tmp_path / "cache"
    quizzes = tmp_path / "quizzes"
    quizzes.mkdir()
    (quizzes / "01_jax_essentials.json").write_text("[]")
    assert refresh(cache, package, data=(quizzes,))
    assert not refresh(cache, package, data=(quizzes,))
    (quizzes / "01_jax_essentials.json").write_text('[{"question": "new"}]')
    assert refresh(cache, package, data=(quizzes,))
    assert not refresh(cache, package, data=(quizzes,))


def _project(tmp_path, cells):
    """A one-notebook book: _toc.yml, _config.yml and notebooks/nb.ipynb with ``cells``."""
    import nbformat

    (tmp_path / "notebooks").mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, tmp_path / "notebooks" / "nb.ipynb")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n"
                                      "- file: notebooks/nb\n- file: missing/page\n")
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
    import nbformat

    import execute_notebooks

    path = _project(tmp_path, ["x = 6 * 7", "print(x)"])
    cache_dir = tmp_path / "cache"
    monkeypatch.setattr(execute_notebooks, "ROOT", tmp_path)
    monkeypatch.setattr(execute_notebooks, "SECONDS", tmp_path / "seconds.json")
    args = ["--jobs", "2", "--cache", str(cache_dir), "--toc", str(tmp_path / "_toc.yml"),
            "--config", str(tmp_path / "_config.yml")]
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
    import nbformat

    import execute_notebooks

    path = _project(tmp_path, ["raise RuntimeError('cell 1 is broken')"])
    monkeypatch.setattr(execute_notebooks, "ROOT", tmp_path)
    monkeypatch.setattr(execute_notebooks, "SECONDS", tmp_path / "seconds.json")
    cache_dir = tmp_path / "cache"
    status = execute_notebooks.main(["--cache", str(cache_dir), "--toc",
                                     str(tmp_path / "_toc.yml"), "--config",
                                     str(tmp_path / "_config.yml")])
    assert status == 1
    assert "cell 1 is broken" in capsys.readouterr().out
    with _opened(cache_dir) as cache, pytest.raises(KeyError):
        cache.match_cache_notebook(nbformat.read(path, as_version=4))


def test_seconds_to_first_exercise_sums_the_code_cells_before_the_first_solution():
    import nbformat

    import execute_notebooks

    def timed(source, start, end, tags=()):
        cell = nbformat.v4.new_code_cell(source, metadata={"tags": list(tags)})
        cell.metadata["execution"] = {"iopub.execute_input": f"2026-12-05T12:00:{start:06.3f}Z",
                                      "shell.execute_reply": f"2026-12-05T12:00:{end:06.3f}Z"}
        return cell

    nb = nbformat.v4.new_notebook(cells=[
        timed("a = 1", 0.0, 1.5), nbformat.v4.new_markdown_cell("## Exercises"),
        timed("b = 2", 2.0, 4.25), timed("solve()", 5.0, 9.0, tags=["solution"]),
        timed("c = 3", 9.0, 20.0)])
    assert execute_notebooks.seconds_to_first_exercise(nb) == 3.75
    nb.cells[3].metadata["tags"] = []
    assert execute_notebooks.seconds_to_first_exercise(nb) is None  # no exercise
