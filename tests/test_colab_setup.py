"""The notebooks' setup cell, run in a fresh Colab-like environment, makes every import work.

The environment has what Colab preinstalls that the book relies on (jax, optax, matplotlib,
ipywidgets, scipy, IPython) and nothing of the book. The setup cell is run as it stands,
except that REPO points at this repository instead of GitHub, and must leave JAX alone.
"""

import os
import re
import subprocess
import venv

import nbformat
import pytest

from notebook_runner import NOTEBOOKS, ROOT

COLAB_LIKE = ["jax==0.10.2", "jaxlib==0.10.2", "optax==0.2.8", "matplotlib==3.11.2",
              "ipywidgets==8.1.9", "scipy==1.17.1", "ipython==9.18.1", "chex==0.1.92"]
IMPORTS = ["companion", "companion.agents.dqn", "companion.envs.maze", "companion.viz",
           "equinox", "haiku", "jumanji", "jax_tqdm", "gymnasium", "optax", "scipy"]


def _setup_cell():
    sources = {next(c.source for c in nbformat.read(p, as_version=4).cells
                    if "colab-setup" in c.metadata.get("tags", [])) for p in NOTEBOOKS}
    assert len(sources) == 1, "every notebook has the same setup cell"
    return sources.pop()


def _has_main_branch():
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "main"],
                         capture_output=True)
    return out.returncode == 0


@pytest.mark.skipif(not _has_main_branch(), reason="needs the repository's main branch")
def test_setup_cell_in_a_fresh_colab_like_environment(tmp_path):
    env_dir = tmp_path / "colab"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run(pip + COLAB_LIKE, check=True, capture_output=True, timeout=900)

    # pip wants a host in a PEP 508 file URL: file://localhost/path
    cell = re.sub(r'REPO = "[^"]+"', f'REPO = "file://localhost{ROOT}"', _setup_cell())
    script = tmp_path / "setup_cell.ipy"
    script.write_text(cell + "\n")
    run = subprocess.run([python, "-m", "IPython", "--no-banner", str(script)],
                         capture_output=True, text=True, timeout=1200, cwd=tmp_path,
                         env={**os.environ, "PYTHONNOUSERSITE": "1"})
    assert run.returncode == 0 and "ERROR" not in run.stdout + run.stderr, run.stdout[-2000:] + run.stderr[-2000:]

    check = ("import importlib, jax, companion\n"
             f"for name in {IMPORTS!r}: importlib.import_module(name)\n"
             "print(jax.__version__, companion.__version__, companion.__file__)")
    out = subprocess.run([python, "-c", check], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    jax_version, companion_version, companion_file = out.stdout.split()
    assert jax_version == "0.10.2"  # Colab's JAX is not replaced
    import companion

    assert companion_version == companion.__version__
    assert str(env_dir) in companion_file  # installed into the environment, not this checkout

    # A second run finds everything and does nothing.
    again = subprocess.run([python, "-m", "IPython", "--no-banner", str(script)],
                           capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert again.returncode == 0 and "Successfully installed" not in again.stdout
