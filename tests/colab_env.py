"""Build an environment like a Colab runtime, from a spec in ``tests/colab/``.

A spec (written by ``tools/colab_spec.py``) pins the packages of one Colab runtime line that
the book uses, at Colab's versions; its header names the runtime's Python and the source.
Colab also carries a ``google-colab`` package that pins IPython and the kernel; here a
stand-in with the same pins is registered, so that pip reports, as on Colab, any install that
breaks them.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
SPECS = sorted((ROOT / "tests" / "colab").glob("*.txt"))
#: What ``google-colab`` pins (googlecolab/colabtools, setup.py), where the spec has it.
GOOGLE_COLAB_PINS = ["ipykernel", "ipython", "notebook", "requests", "tornado"]


def normalize(name: str) -> str:
    """PEP 503 normal form of a distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_spec(path: Path) -> tuple[str, dict[str, str]]:
    """``(python version such as "3.13", {normalized name: version})`` of a spec file."""
    text = path.read_text()
    python = re.search(r"Python (\d+\.\d+)", text)
    if python is None:
        raise ValueError(f"{path}: the header names no Python version ('Python 3.13')")
    pins = {}
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[normalize(name)] = version
    return python[1], pins


def find_python(version: str) -> str:
    """A working interpreter of ``version`` ("3.13"), else the closest newer or older one.

    Looks on PATH (``python3.13``) and in pyenv's versions folder. Raises ``RuntimeError``
    when no Python 3 runs at all.
    """
    major, minor = map(int, version.split("."))
    order = sorted(range(8, 20), key=lambda m: (abs(m - minor), m < minor))
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for m in order:
        candidates = [shutil.which(f"python{major}.{m}")]
        candidates += sorted(
            glob.glob(str(pyenv / f"{major}.{m}.*" / "bin" / f"python{major}.{m}"))
        )
        for exe in filter(None, candidates):
            out = subprocess.run(
                [exe, "-c", "import sys, venv; print(*sys.version_info[:2])"],
                capture_output=True,
                text=True,
            )
            if out.returncode == 0 and out.stdout.split() == [str(major), str(m)]:
                return exe
    raise RuntimeError(f"no Python {version} (nor any other 3.x) runs on this machine")


def python_version(exe: str) -> str:
    out = subprocess.run(
        [exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def setup_cell() -> str:
    """The notebooks' setup cell (the same in all of them)."""
    sources = {
        next(
            c.source
            for c in nbformat.read(p, as_version=4).cells
            if "colab-setup" in c.metadata.get("tags", [])
        )
        for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
    }
    if len(sources) != 1:
        raise AssertionError("the notebooks' setup cells differ")
    return sources.pop()


def pip_install_line(cell: str) -> str:
    """The cell's ``%pip install`` command as one line: the lines it continues with a
    backslash joined, as IPython joins them."""
    lines = [l.strip() for l in cell.splitlines()]
    (start,) = [i for i, l in enumerate(lines) if l.startswith("%pip install")]
    command = lines[start]
    while command.endswith("\\"):
        start += 1
        command = command[:-1] + " " + lines[start]
    return command


def setup_cell_requirements(cell: str, companion: str) -> list[str]:
    """The requirements of the cell's ``%pip install`` command, with the companion package
    taken from ``companion`` (a ``file:`` URL of a folder, say) instead of the repository."""
    words = [w for w in shlex.split(pip_install_line(cell))[2:] if not w.startswith("-")]
    return [
        f"drl-jax-companion @ {companion}" if w.startswith("drl-jax-companion") else w
        for w in words
    ]


def freeze(python: str) -> dict[str, str]:
    """``{normalized name: version}`` of what is installed for ``python``."""
    out = subprocess.run(
        [python, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {normalize(p["name"]): p["version"] for p in json.loads(out.stdout)}


def build(spec: Path, where: Path) -> str:
    """Create a venv in ``where`` with exactly the spec's packages (no dependencies added)
    and the ``google-colab`` stand-in; return its python. The spec's Python is used when the
    machine has it, else the closest one."""
    version, pins = read_spec(spec)
    subprocess.run([find_python(version), "-m", "venv", "--clear", str(where)], check=True)
    python = str(where / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    if "pip" in pins:
        subprocess.run(pip + [f"pip=={pins['pip']}"], check=True, timeout=600)
    reqs = [f"{n}=={v}" for n, v in pins.items() if n != "pip"]
    subprocess.run(pip + ["--no-deps", *reqs], check=True, timeout=1800)
    _register_google_colab(python, pins)
    return python


def _register_google_colab(python: str, pins: dict[str, str]) -> None:
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    info = Path(site) / "google_colab-1.0.0.dist-info"
    info.mkdir()
    requires = "".join(f"Requires-Dist: {n}=={pins[n]}\n" for n in GOOGLE_COLAB_PINS if n in pins)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: google-colab\nVersion: 1.0.0\n"
        "Summary: stand-in for Colab's package, with its pins\n" + requires
    )
    (info / "INSTALLER").write_text("colab_env\n")
    (info / "RECORD").write_text("")


def kernelspec(python: str, name: str, where: Path) -> Path:
    """Write a kernelspec ``name`` that starts ``python``'s ipykernel; return the folder to
    put on ``JUPYTER_PATH``."""
    folder = where / "kernels" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": name,
                "language": "python",
            }
        )
    )
    return where


def companion_repository(where: Path) -> Path:
    """A git repository in ``where`` whose ``main`` branch holds this working tree's
    companion package (committed or not), for the setup cell to install from."""
    where.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, where / name)
    shutil.copytree(
        ROOT / "companion",
        where / "companion",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    git = ["git", "-C", str(where), "-c", "user.name=test", "-c", "user.email=test@localhost"]
    subprocess.run(git[:3] + ["init", "--quiet", "--initial-branch=main"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "--quiet", "-m", "companion"], check=True)
    return where
