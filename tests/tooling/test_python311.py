"""The package and the device scripts compile on Python 3.11, the Python of the lent TPU
machine (JAX 0.10.2 there): the book itself needs 3.12 (pyproject), but what runs on an
accelerator must not use 3.12's syntax (``def f[T]``, ``type X = ...``, f-strings that reuse
their quotes)."""

from __future__ import annotations

import ast
import shutil
import subprocess

import pytest
from notebook_runner import ROOT

#: What travels to the accelerator: the package and the script that runs the notebooks there.
SOURCES = sorted((ROOT / "companion").rglob("*.py")) + [
    ROOT / "benchmarks" / "device_notebooks.py",
    ROOT / "benchmarks" / "measure.py",
]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_parses_with_python_311_grammar(path):
    ast.parse(path.read_text(encoding="utf-8"), str(path), feature_version=(3, 11))


def test_the_grammar_check_catches_312_syntax():
    with pytest.raises(SyntaxError):
        ast.parse("def budget[T](full: T) -> T:\n    return full\n", feature_version=(3, 11))


def test_compiles_with_python_311():
    """The real interpreter catches what the grammar flag does not (PEP 701 f-strings). CI
    installs 3.11 beside 3.12 and 3.13 (``.github/workflows/book.yml``)."""
    python = shutil.which("python3.11")
    if python is None or subprocess.run([python, "--version"], capture_output=True).returncode:
        pytest.skip("no python3.11 on PATH (pyenv: install 3.11, or set PYENV_VERSION)")
    code = (
        "import sys\n"
        "bad = []\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        compile(open(path, encoding='utf-8').read(), path, 'exec')\n"
        "    except SyntaxError as error:\n"
        "        bad.append(f'{path}:{error.lineno}: {error.msg}')\n"
        "print('\\n'.join(bad))\n"
        "sys.exit(1 if bad else 0)\n"
    )
    done = subprocess.run([python, "-c", code, *map(str, SOURCES)], capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
