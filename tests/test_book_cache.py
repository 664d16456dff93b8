"""The book's execution cache is cleared when the companion package changes, and only then."""

import sys

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
