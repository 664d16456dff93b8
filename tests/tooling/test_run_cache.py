"""The kept results of slow runs (tests/run_cache.py) are read back only for the same inputs."""

import subprocess

import pytest
import run_cache


@pytest.fixture
def checkout(tmp_path):
    """A git checkout with a package file, a notebook, a test module and an ignored folder."""
    (tmp_path / "companion").mkdir()
    (tmp_path / "companion" / "core.py").write_text("x = 1\n")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01.ipynb").write_text("{}\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_core.py").write_text("def test(): pass\n")
    (tmp_path / "tests" / "conftest.py").write_text("FLAGS = 1\n")
    (tmp_path / ".gitignore").write_text("_build/\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    return tmp_path


def test_key_follows_every_input_but_the_test_modules(checkout, monkeypatch):
    first = run_cache.key(root=checkout)
    assert first is not None and first == run_cache.key(root=checkout)
    (checkout / "tests" / "test_core.py").write_text("def test(): assert 1\n")
    (checkout / "_build").mkdir()
    (checkout / "_build" / "out.html").write_text("built")
    assert run_cache.key(root=checkout) == first  # read the result, do not make it

    changed = []
    (checkout / "companion" / "core.py").write_text("x = 2\n")  # a tracked file
    changed.append(run_cache.key(root=checkout))
    (checkout / "companion" / "new.py").write_text("y = 1\n")  # untracked, not ignored
    changed.append(run_cache.key(root=checkout))
    (checkout / "tests" / "conftest.py").write_text("FLAGS = 2\n")  # makes the run
    changed.append(run_cache.key(root=checkout))
    (checkout / "companion" / "core.py").unlink()  # tracked, deleted
    changed.append(run_cache.key(root=checkout))
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=1")
    changed.append(run_cache.key(root=checkout))
    monkeypatch.setenv("DRLJAX_BUDGET", "book")
    changed.append(run_cache.key(root=checkout))
    assert len({first, *changed}) == 1 + len(changed)

    # the compilation cache's own settings do not change a result
    last = changed[-1]
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", "/elsewhere")
    assert run_cache.key(root=checkout) == last
    # a left-out file is not read
    without = run_cache.key(["notebooks/01.ipynb"], root=checkout)
    (checkout / "notebooks" / "01.ipynb").write_text('{"cells": []}\n')
    assert run_cache.key(["notebooks/01.ipynb"], root=checkout) == without
    assert run_cache.key(root=checkout) != last


def test_key_is_none_outside_a_git_checkout(tmp_path):
    assert run_cache.key(root=tmp_path) is None


def test_kept_runs_once_per_inputs_and_keeps_no_failure(tmp_path):
    calls = []

    def run(value):
        def go():
            calls.append(value)
            if value == b"boom":
                raise RuntimeError("the notebook raised")
            return value

        return go

    assert run_cache.kept(tmp_path, "nb", ".ipynb", "a" * 64, run(b"one")) == b"one"
    assert run_cache.kept(tmp_path, "nb", ".ipynb", "a" * 64, run(b"two")) == b"one"
    assert calls == [b"one"]
    with pytest.raises(RuntimeError, match="raised"):
        run_cache.kept(tmp_path, "nb", ".ipynb", "b" * 64, run(b"boom"))
    with pytest.raises(RuntimeError, match="raised"):  # still run, still failing
        run_cache.kept(tmp_path, "nb", ".ipynb", "b" * 64, run(b"boom"))
    assert run_cache.kept(tmp_path, "nb", ".ipynb", "c" * 64, run(b"three")) == b"three"
    assert [p.name for p in tmp_path.iterdir()] == [f"nb-{'c' * 24}.ipynb"]  # old one gone
    assert run_cache.kept(tmp_path, "nb_2", ".ipynb", "c" * 64, run(b"four")) == b"four"
    assert len(list(tmp_path.iterdir())) == 2  # another name keeps its own
    assert run_cache.kept(None, "nb", ".ipynb", "c" * 64, run(b"five")) == b"five"
    assert run_cache.kept(tmp_path, "nb", ".ipynb", None, run(b"six")) == b"six"
    assert calls[-2:] == [b"five", b"six"]  # no folder or no key: always run


def test_a_notebooks_key_follows_its_reads_its_text_and_the_plumbing_only(tmp_path):
    """A notebook's key (``run_cache.notebook_key``): another digest of a file it read, an
    edit of the notebook or of the test plumbing gives another key; a file it did not read
    changes nothing."""
    root = tmp_path
    for name in (*run_cache.PLUMBING, "notebooks/nb.ipynb", "companion/other.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    nb = root / "notebooks" / "nb.ipynb"
    reads = {"companion/glue.py": "a" * 64, "notebooks/quizzes/nb.json": None}
    key = run_cache.notebook_key(nb, reads, root)
    assert run_cache.notebook_key(nb, dict(reads), root) == key
    (root / "companion" / "other.py").write_text("changed, never read")
    assert run_cache.notebook_key(nb, reads, root) == key
    assert run_cache.notebook_key(nb, {**reads, "companion/glue.py": "b" * 64}, root) != key
    assert run_cache.notebook_key(nb, {**reads, "notebooks/quizzes/nb.json": "c"}, root) != key
    nb.write_text("edited")
    assert run_cache.notebook_key(nb, reads, root) != key
    nb.write_text("notebooks/nb.ipynb")
    (root / "tests" / "agreement_probes.py").write_text("edited")
    assert run_cache.notebook_key(nb, reads, root) != key
