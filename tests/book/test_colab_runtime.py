"""The notebooks in Colab's own package set: the setup cell changes none of Colab's packages,
and every notebook then runs end to end on the tiny budget.

For each runtime line in ``tests/colab/`` (a spec of Colab's versions, written by
``tools/colab_spec.py`` from Colab's published ``pip freeze``), a fresh environment is built
with the runtime's Python (or the closest one on this machine) and exactly those packages.
The setup cell runs as it stands, except that ``REPO`` points at a git repository holding
this working tree's companion package. pip's dry run of the cell's install says what it would
add; nothing Colab has may be upgraded or downgraded, and pip must report no conflict (it
would name ``google-colab``, whose pins a stand-in carries). Then every notebook runs in a
kernel of that environment, without JAX's persistent compilation cache, as in Colab.

Slow (about 7 minutes a runtime line on two cores): ``make colab-test`` runs it; ``make test``
does not.
What the cell adds on each line is written to ``_build/colab/<line>.txt``.
"""

import re
import subprocess
from pathlib import Path

import nbformat
import pytest
from colab_env import (
    ROOT,
    SPECS,
    build,
    companion_repository,
    freeze,
    kernelspec,
    python_version,
    read_spec,
    setup_cell,
    setup_cell_requirements,
)
from notebook_runner import NOTEBOOKS, check_episode_explorer, execute, outputs

pytestmark = pytest.mark.colab
RUNTIMES = {p.stem: p for p in SPECS}
IMPORTS = [
    "companion",
    "companion.agents.dqn",
    "companion.agents.ppo",
    "companion.envs.maze",
    "companion.viz",
    "equinox",
    "haiku",
    "jumanji",
    "jax_tqdm",
    "gymnasium",
    "optax",
    "scipy",
    "ipywidgets",
]


class Runtime:
    """One runtime line's environment, before and after the setup cell ran in it."""

    def __init__(self, name: str, where: Path):
        self.name, self.where = name, where
        self.version, self.spec = read_spec(RUNTIMES[name])
        self.python = build(RUNTIMES[name], where / "env")
        self.before = freeze(self.python)
        repo = companion_repository(where / "repo")
        self.cell = re.sub(r'REPO = "[^"]+"', f'REPO = "file://localhost{repo}"', setup_cell())
        assert self.cell != setup_cell(), "the setup cell sets REPO"
        # pip's own account of what the cell's install changes
        reqs = setup_cell_requirements(
            self.cell.replace("{REPO}", f"file://localhost{repo}"),
            f"git+file://localhost{repo}@main",
        )
        self.dry_run = self._pip(["install", "--dry-run", *reqs])
        self.script = where / "setup_cell.ipy"
        self.script.write_text(self.cell + "\n")
        self.first = self._ipython()
        self.after = freeze(self.python)

    def _pip(self, args):
        out = subprocess.run(
            [self.python, "-m", "pip", *args],
            capture_output=True,
            text=True,
            timeout=1200,
            cwd=self.where,
        )
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        return out.stdout + out.stderr

    def _ipython(self):
        return subprocess.run(
            [self.python, "-m", "IPython", "--no-banner", str(self.script)],
            capture_output=True,
            text=True,
            timeout=1200,
            cwd=self.where,
            env=_env(),
        )

    def would_install(self) -> dict[str, str]:
        """``{name: version}`` from pip's 'Would install' line of the dry run."""
        lines = [l for l in self.dry_run.splitlines() if l.startswith("Would install")]
        words = lines[0].split()[2:] if lines else []
        return dict(_split_dist(w) for w in words)

    def report(self) -> str:
        added = {n: v for n, v in self.after.items() if n not in self.before}
        changed = {
            n: f"{self.before[n]} -> {self.after.get(n)}"
            for n in self.before
            if self.after.get(n) != self.before[n]
        }
        lines = [
            f"Colab runtime {self.name} (spec Python {self.version}, run on Python "
            f"{python_version(self.python)})",
            f"pip's dry run: {' '.join(l for l in self.dry_run.splitlines() if l.startswith('Would install'))}",
            f"added by the setup cell ({len(added)}): "
            + ", ".join(f"{n}=={v}" for n, v in sorted(added.items())),
            f"changed by the setup cell ({len(changed)}): "
            + (", ".join(f"{n} {c}" for n, c in sorted(changed.items())) or "none"),
        ]
        return "\n".join(lines) + "\n"


def _split_dist(word: str) -> tuple[str, str]:
    """'jax-tqdm-0.4.0' -> ('jax-tqdm', '0.4.0'), names normalized."""
    name, version = re.fullmatch(r"(.+)-([0-9][^-]*)", word).groups()
    return re.sub(r"[-_.]+", "-", name).lower(), version


#: Colab's kernels run without JAX's persistent compilation cache, which the other tests
#: share (``conftest.py``); so do these. It is not only faithful: with a cache, JAX 0.5.3
#: (the 2025.10 line) on the CPU returned wrong results from programs that close over arrays
#: (a ``lax.while_loop`` ran no iteration), where 0.7.2 and the pinned JAX do not.
NO_CACHE = {"JAX_COMPILATION_CACHE_DIR": None, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": None}


def _env():
    import os

    env = {**os.environ, "PYTHONNOUSERSITE": "1"}
    return {k: v for k, v in env.items() if k not in NO_CACHE}


def _python(rt, code: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``code`` run by the runtime environment's Python, in its folder, as Colab would."""
    return subprocess.run(
        [rt.python, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=rt.where,
        env=_env(),
    )


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = Runtime(name, tmp_path_factory.mktemp(f"colab-{name}"))
            out = ROOT / "_build" / "colab" / f"{name}.txt"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(cache[name].report())
            print(cache[name].report())
        return cache[name]

    return get


@pytest.mark.parametrize("name", RUNTIMES)
def test_spec_environment_is_colabs(name, runtime):
    """The environment holds exactly the spec's versions (and the google-colab stand-in)."""
    rt = runtime(name)
    assert {n: v for n, v in rt.before.items() if n != "google-colab"} == rt.spec
    assert rt.before["google-colab"] == "1.0.0"


@pytest.mark.parametrize("name", RUNTIMES)
def test_setup_cell_changes_no_colab_package(name, runtime):
    rt = runtime(name)
    text = rt.first.stdout + rt.first.stderr
    assert rt.first.returncode == 0, text[-4000:]
    # pip prints its dependency conflicts (google-colab's pins among them) as ERROR lines
    assert "ERROR" not in text and "incompatible" not in text, text[-4000:]
    would = rt.would_install()
    assert would, rt.dry_run[-2000:]
    replaced = {n: f"{rt.before[n]} -> {v}" for n, v in would.items() if n in rt.before}
    assert replaced == {}, f"pip would replace Colab's packages: {replaced}"
    changed = {n: f"{v} -> {rt.after.get(n)}" for n, v in rt.before.items() if rt.after.get(n) != v}
    assert changed == {}, f"the setup cell changed Colab's packages: {changed}"
    added = {n: v for n, v in rt.after.items() if n not in rt.before}
    assert added == would  # what pip said it would do is what it did
    for name_ in ("jax", "jaxlib", "numpy", "ipython", "ipykernel", "ipywidgets", "matplotlib"):
        assert rt.after[name_] == rt.spec[name_]


@pytest.mark.parametrize("name", RUNTIMES)
def test_setup_cell_makes_imports_work_and_then_does_nothing(name, runtime):
    rt = runtime(name)
    check = (
        "import importlib, companion\n"
        f"for name in {IMPORTS!r}: importlib.import_module(name)\n"
        "print(companion.__file__)"
    )
    out = _python(rt, check)
    assert out.returncode == 0, out.stderr[-3000:]
    assert str(rt.where / "env") in out.stdout  # installed into the environment
    again = rt._ipython()
    printed = re.sub(r"\x1b(\[[0-9;]*t|\][^\x07]*\x07)", "", again.stdout)  # terminal title
    assert again.returncode == 0 and printed.strip() == "", again.stdout + again.stderr
    assert freeze(rt.python) == rt.after


@pytest.mark.parametrize("name", RUNTIMES)
def test_step_explorer_with_colabs_ipywidgets(name, runtime):
    """companion.viz.step_explorer with Colab's ipywidgets (7.7.1 on both lines; test_viz
    runs the same checks with the book's ipywidgets 8)."""
    rt = runtime(name)
    script = (
        "import matplotlib\nmatplotlib.use('Agg')\nimport ipywidgets, matplotlib.pyplot as plt\n"
        "from companion.viz import step_explorer\n"
        "def draw(step):\n"
        "    fig, ax = plt.subplots(figsize=(2, 1)); ax.bar([0], [step]); ax.set_ylim(0, 10)\n"
        "    return fig\n"
        "slider, image = step_explorer(draw, 5).children\n"
        "assert (slider.min, slider.max, slider.value, slider.description) == (0, 4, 0, 'step')\n"
        "first = bytes(image.value); assert first.startswith(b'\\x89PNG')\n"
        "slider.value = 3; assert bytes(image.value) != first\n"
        "slider.value = 0; assert bytes(image.value) == first\n"
        "assert plt.get_fignums() == []\n"
        "print(ipywidgets.__version__)\n"
    )
    out = subprocess.run(
        [rt.python, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=rt.where,
        env=_env(),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == rt.spec["ipywidgets"] == "7.7.1"


def _run_in_colab_kernel(name: str, rt: Runtime, nb, cwd: Path):
    kernels = kernelspec(rt.python, f"colab-{name}", rt.where / "jupyter")
    env = {"JUPYTER_PATH": str(kernels), "PYTHONNOUSERSITE": "1", **NO_CACHE}
    return execute(nb, cwd=cwd, kernel_name=f"colab-{name}", env=env)


@pytest.mark.parametrize("name", RUNTIMES)
def test_colab_kernel_has_no_compilation_cache(name, runtime, tmp_path):
    """As in Colab, the kernel's JAX writes and reads no persistent compilation cache."""
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("import jax\nprint(jax.config.jax_compilation_cache_dir)")]
    )
    _run_in_colab_kernel(name, runtime(name), nb, tmp_path)
    assert nb.cells[0].outputs[0].text.strip() == "None"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
@pytest.mark.parametrize("name", RUNTIMES)
def test_notebook_runs_in_colab_environment(name, path, runtime):
    nb = _run_in_colab_kernel(name, runtime(name), nbformat.read(path, as_version=4), path.parent)
    for i, out in outputs(nb):
        assert out.output_type != "error", f"cell {i}: {out.get('ename')}: {out.get('evalue')}"
        if out.output_type == "stream" and out.name == "stderr":
            assert "Warning" not in out.text, f"cell {i} warned: {out.text[:800]}"
    setup = next(c for c in nb.cells if "colab-setup" in c.metadata.get("tags", []))
    assert setup.outputs == []  # everything is installed: the setup cell does nothing
    if path.stem == "07_dqn":  # the explorer works with Colab's ipywidgets (7.7.1)
        check_episode_explorer(nb)


@pytest.mark.parametrize("name", RUNTIMES)
def test_the_japanese_setup_draws_and_checks_in_japanese(name, runtime):
    """The Japanese notebooks' setup (COMPANION_LANGUAGE=ja, tools/translate_notebooks.py) in
    Colab's package set: the Japanese font the package depends on (matplotlib-fontja) is
    installed and found, a figure's words are drawn in Japanese with it, a glued phrase and a
    quiz are in Japanese, and a self-check answers a wrong answer in Japanese."""
    rt = runtime(name)
    check = (
        "import os, re\n"
        "os.environ['COMPANION_LANGUAGE'] = 'ja'\n"
        "import matplotlib\n"
        "matplotlib.use('Agg')\n"
        "import matplotlib.pyplot as plt\n"
        "from companion import figure_words\n"
        "from companion.checks import CheckFailed, check_softplus_grad\n"
        "from companion.glue import markdown\n"
        "assert figure_words.japanese_font() == 'IPAexGothic'\n"
        "fig, ax = plt.subplots()\n"
        "ax.set_title('environment steps (thousands)')\n"
        "with figure_words.in_language(fig, 'ja'):\n"
        "    title = ax.get_title()\n"
        "    fig.canvas.draw()\n"
        "assert re.search('[\\u3040-\\u30ff\\u3400-\\u9fff]', title), title\n"
        "assert markdown('seed').data == 'シード'\n"
        "try:\n"
        "    check_softplus_grad(lambda x: x)\n"
        "except CheckFailed as e:\n"
        "    assert re.search('[\\u3040-\\u30ff\\u3400-\\u9fff]', str(e)), str(e)\n"
        "else:\n"
        "    raise AssertionError('a wrong answer passed')\n"
        "print('ok')\n"
    )
    out = _python(rt, check, timeout=600)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
