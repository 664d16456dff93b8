"""Slow runs kept between test sessions: a notebook executed on the tiny budget, a benchmark
script's quick-mode JSON.

A kept result is found by a SHA-256 over everything the run can read, so that a run whose
inputs changed is done again and a rerun with nothing changed reads its result back:

- every file of the checkout that git tracks or would track (``git ls-files --cached --others
  --exclude-standard``: the companion package, its data, the notebooks, the quizzes, the
  benchmark scripts and committed results, the tools, ``tests/conftest.py``), except the test
  modules (``test_*.py`` in any folder of ``tests/``, which read a result but do not make
  it) and whatever the caller leaves out (the other notebooks, for a notebook);
- the Python version, every installed distribution and its version, the platform, JAX's
  backend, and the environment variables that reach the run (``DRLJAX_*``, ``XLA_*``,
  ``JAX_*`` other than the compilation cache's).

A notebook is keyed more narrowly, the way the book build's cache keys it
(``tools/book_cache.py``): its kernel records the files of the checkout it read (the companion
modules, the package's data, the benchmark results, its quiz), and the key is a SHA-256 over
the notebook, those files, the test plumbing that shapes the run (``tests/conftest.py``,
``tests/notebook_runner.py``, ``tests/agreement_probes.py``) and the environment
(:func:`notebook_key`). An edit of one chapter's self-check executes that chapter again, not
all fourteen.

Only a run that finished without an error is kept, so a failing notebook or script fails
every session until it is fixed. The results live in pytest's cache (``.pytest_cache``):
``pytest --cache-clear`` empties it, ``pytest -p no:cacheprovider`` runs without it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import jax

ROOT = Path(__file__).resolve().parents[1]


def _checkout_files(root: Path) -> list[str] | None:
    """The checkout's files as git sees them, relative to ``root``; None without git."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    names = {n for n in done.stdout.decode().split("\0") if n}
    return sorted(n for n in names if not _is_test_module(n))


def _is_test_module(name: str) -> bool:
    folder, _, file = name.rpartition("/")
    in_tests = folder == "tests" or folder.startswith("tests/")
    return in_tests and file.startswith("test_") and file.endswith(".py")


def _file_digest(path: Path) -> bytes:
    if not path.is_file():  # tracked but deleted in the working tree
        return b"missing"
    return hashlib.sha256(path.read_bytes()).digest()


@functools.cache
def _installed() -> tuple[str, ...]:
    """Python, the platform, JAX's backend and every installed distribution, once a session."""
    dists = sorted(
        f"{d.metadata['Name']}=={d.version}".lower()
        for d in importlib.metadata.distributions()
        if d.metadata["Name"]
    )
    return (sys.version, platform.platform(), jax.default_backend(), *dists)


def _environment() -> bytes:
    variables = sorted(
        f"{k}={v}"
        for k, v in os.environ.items()
        if k.startswith(("DRLJAX_", "XLA_", "JAX_"))
        and not k.startswith("JAX_COMPILATION_CACHE")
        and k != "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"
    )
    return "\n".join([*_installed(), *variables]).encode()


def key(leave_out: Iterable[str] = (), root: Path = ROOT) -> str | None:
    """The SHA-256 (hex) of the files of the checkout at ``root`` but ``leave_out`` (paths
    relative to ``root``, ``/``-separated) and of the environment; None when git cannot list
    the files (nothing is then kept). Read afresh at every call (about 10 ms)."""
    files = _checkout_files(root)
    if files is None:
        return None
    skip = set(leave_out)
    digest = hashlib.sha256(_environment())
    for name in files:
        if name not in skip:
            digest.update(name.encode() + b"\0" + _file_digest(root / name))
    return digest.hexdigest()


def kept(
    folder: Path | None, name: str, suffix: str, inputs: str | None, run: Callable[[], bytes]
) -> bytes:
    """The bytes ``run()`` returns, kept in ``folder`` as ``name-<inputs>.suffix``.

    With ``folder`` or ``inputs`` None, ``run()`` is called and nothing is kept. A kept
    result of ``name`` for other inputs is deleted when a new one is written."""
    if folder is None or inputs is None:
        return run()
    path = folder / f"{name}-{inputs[:24]}{suffix}"
    if path.is_file():
        return path.read_bytes()
    result = run()
    for old in folder.glob(f"{name}-*{suffix}"):
        old.unlink(missing_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_bytes(result)
    os.replace(partial, path)
    return result


#: The test plumbing a notebook's tiny-budget execution depends on besides what it reads.
PLUMBING = ("tests/conftest.py", "tests/notebook_runner.py", "tests/agreement_probes.py")


def notebook_key(notebook: Path, reads: dict[str, str | None], root: Path = ROOT) -> str:
    """The SHA-256 (hex) of ``notebook``, the files its last execution read (``reads``: path
    relative to ``root`` -> SHA-256 of its contents then, ``tools/book_cache.py``), the test
    plumbing (:data:`PLUMBING`) and the environment. Compare ``reads`` with the files now
    (``book_cache.changed_reads``) before trusting a key made from them."""
    digest = hashlib.sha256(_environment())
    for name in (notebook.relative_to(root).as_posix(), *PLUMBING):
        digest.update(name.encode() + b"\0" + _file_digest(root / name))
    for name in sorted(reads):
        digest.update(f"{name}\0{reads[name]}".encode())
    return digest.hexdigest()
