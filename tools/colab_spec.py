"""Write a Colab environment spec: the versions of Colab's packages that the book touches.

Colab publishes the ``pip freeze`` of each runtime in its ``backend-info`` repository
(https://github.com/googlecolab/backend-info, file ``pip-freeze.txt``). From such a file this
tool writes a requirements file with exact pins for

- the packages the book imports or that Colab's kernel and widgets run on (``ROOTS``);
- every Colab package that the notebooks' setup cell would install or require (found by a
  dry run of the cell's install in an empty environment);
- and every dependency of those, all at Colab's versions (a dry run with the whole freeze as
  constraints).

Packages that the freeze lacks are left out: pip picks them, as it would on Colab.

    python tools/colab_spec.py FREEZE --python 3.13 --source "googlecolab/backend-info, \
        pip-freeze.txt at COMMIT (DATE)" --out tests/colab/2026.08.txt

The tests (``tests/book/test_colab_runtime.py``) build an environment from the spec and run the
setup cell and every notebook in it. The weekly drift workflow runs this tool on the newest
published freeze.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from colab_env import find_python, setup_cell, setup_cell_requirements  # noqa: E402

#: What the book relies on from Colab, whether or not the setup cell touches it.
ROOTS = [
    "pip",
    "setuptools",
    "wheel",
    "jax",
    "jaxlib",
    "ml-dtypes",
    "opt-einsum",
    "numpy",
    "scipy",
    "matplotlib",
    "pillow",
    "ipython",
    "ipykernel",
    "ipywidgets",
    "widgetsnbextension",
    "jupyterlab-widgets",
    "jupyter-client",
    "jupyter-core",
    "traitlets",
    "tornado",
    "pyzmq",
    "matplotlib-inline",
    "optax",
    "chex",
    "flax",
    "orbax-checkpoint",
    "gymnasium",
    "absl-py",
    "toolz",
    "typing-extensions",
    "tqdm",
    "requests",
    "pyyaml",
]


def normalize(name: str) -> str:
    """PEP 503 normal form of a distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_freeze(path: Path) -> dict[str, str]:
    """``{normalized name: version}`` of the ``name==version`` lines of a ``pip freeze`` file
    (lines that install from a URL or a path are skipped)."""
    pins = {}
    for line in path.read_text().splitlines():
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._\-]*)==([^\s;#]+)", line.strip())
        if match:
            pins[normalize(match[1])] = match[2]
    return pins


def dry_run(python: str, requirements: list[str], constraints: Path | None = None) -> dict:
    """What ``pip install --ignore-installed`` would install: ``{normalized name: version}``."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--dry-run",
            "--ignore-installed",
            "--report",
            str(report),
            *requirements,
        ]
        if constraints is not None:
            cmd += ["-c", str(constraints)]
        subprocess.run(cmd, check=True)
        items = json.loads(report.read_text())["install"]
    return {normalize(i["metadata"]["name"]): i["metadata"]["version"] for i in items}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("freeze", type=Path, help="a Colab pip-freeze.txt")
    parser.add_argument("--python", required=True, help="the runtime's Python, such as 3.13")
    parser.add_argument("--source", required=True, help="where the freeze came from, and its date")
    parser.add_argument("--runtime", default="", help="the runtime line, such as 2026.08")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    colab = read_freeze(args.freeze)
    python = find_python(args.python)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([python, "-m", "venv", tmp], check=True)  # the runtime's Python
        py = str(Path(tmp) / "bin" / "python")
        # what the setup cell pulls in, resolved freely: those Colab has must be in the spec
        wanted = dry_run(py, setup_cell_requirements(setup_cell(), ROOT.as_uri()))
        roots = sorted({normalize(r) for r in ROOTS} | set(wanted))
        roots = [f"{name}=={colab[name]}" for name in roots if name in colab]
        constraints = Path(tmp) / "colab-constraints.txt"
        constraints.write_text("".join(f"{n}=={v}\n" for n, v in colab.items()))
        spec = dry_run(py, roots, constraints)
    missing = sorted(n for n in spec if n not in colab)  # Colab runs without them
    off = {n: v for n, v in spec.items() if n in colab and colab[n] != v}
    if off:
        raise SystemExit(
            f"not at Colab's versions (not published for Python {args.python}?): {off}"
        )
    spec = {n: v for n, v in spec.items() if n in colab}
    header = [
        f"# Colab runtime {args.runtime or '(newest)'}, Python {args.python}.",
        f"# Source: {args.source}.",
        "# The packages of that freeze that the book uses or that its setup cell touches, with",
        "# their dependencies, at Colab's versions. Written by tools/colab_spec.py; do not edit.",
    ]
    if missing:
        header.append(
            f"# Required by these but absent from Colab (left out): {', '.join(missing)}."
        )
    body = [f"{name}=={version}" for name, version in sorted(spec.items())]
    args.out.write_text("\n".join(header + body) + "\n")
    print(f"{args.out}: {len(body)} packages")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
