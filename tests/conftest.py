import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("DRLJAX_BUDGET", "tiny")
# The tests check the book build's outputs (every edition's words from one execution), as
# make book's kernels make them; a test of a reader's notebook unsets it.
os.environ.setdefault("DRLJAX_BOOK_BUILD", "1")

# Tests compile far more programs than they run steps: on the tiny budgets, XLA's compile time
# is most of a test run. LLVM optimisation level 2 (XLA:CPU's default is 3) makes compiling
# cheaper and changes only the machine code, not the results (bit for bit in a short PPO and
# DQN run). ``benchmarks/compile_level.py`` measures it against XLA's default: see the
# CONTRIBUTING.md for its figures. Set here, before JAX starts, the flag reaches the notebook kernels
# and the subprocesses too; an ``XLA_FLAGS`` that already sets it wins, and the book build
# keeps XLA's defaults.
TEST_XLA_FLAGS = {"--xla_backend_optimization_level": "2"}
for _flag, _value in TEST_XLA_FLAGS.items():
    if _flag not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_flag}={_value}".strip()

import jax  # noqa: E402

# The package practises what chapter 1 teaches: every test runs with JAX's key-reuse checker
# on, so a PRNG key used twice anywhere in a tested path is an error (typed keys only).
jax.config.update("jax_debug_key_reuse", True)


import pytest  # noqa: E402


def pytest_configure(config):
    """JAX's persistent compilation cache, shared by the pytest-xdist workers, the notebook
    kernels and the subprocesses of a run, and kept for the next run in ``.pytest_cache``
    (``pytest --cache-clear`` empties it; a ``JAX_COMPILATION_CACHE_DIR`` already set is
    used instead). An entry is found by a hash of the program's StableHLO, the compile
    options, the devices and the jax and jaxlib versions, so a changed function never finds
    an old entry; ``test_discipline.py`` counts cache hits as compilations. JAX writes no
    entry for a program with a host callback (the callback is a pointer into the process
    that compiled it); the default training and evaluation programs have none
    (``test_discipline.py`` checks), so the cache serves them too."""
    cache = getattr(config, "cache", None)
    if cache is not None and "JAX_COMPILATION_CACHE_DIR" not in os.environ:
        os.environ["JAX_COMPILATION_CACHE_DIR"] = str(cache.mkdir("jax-compilation"))
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
        jax.config.update(
            "jax_persistent_cache_min_compile_time_secs",
            float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]),
        )


@pytest.fixture
def no_key_reuse_check():
    """Turn the key-reuse checker off for one test: for planted wrong answers that reuse keys
    on purpose (a student's mistake), which the self-checks must name rather than crash on."""
    with jax.debug_key_reuse(False):
        yield


@pytest.fixture(scope="session")
def run_quick(request):
    """``run(script)``: the JSON that ``benchmarks/<script> --quick`` writes, kept for the
    next session while nothing the script can read changes (``run_cache.py``)."""
    import json
    import subprocess
    import sys
    import tempfile

    store = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    folder = None if store is None else store.mkdir("benchmarks-quick")

    def run(script):
        def run_it():
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "result.json"
                subprocess.run(
                    [
                        sys.executable,
                        str(ROOT / "benchmarks" / script),
                        "--quick",
                        "--out",
                        str(out),
                    ],
                    check=True,
                    cwd=ROOT,
                    capture_output=True,
                    timeout=900,
                )
                return out.read_bytes()

        name = script.removesuffix(".py")
        return json.loads(run_cache.kept(folder, name, ".json", run_cache.key(), run_it))

    return run


@pytest.fixture(scope="session")
def kept_run(request):
    """``kept_run(name, run, reads)``: the bytes ``run()`` returns, kept for the next session
    while nothing it can read changes (``run_cache.py``). For the runs outside the test's own
    process (a second Python process, a kernel, a tool, Chromium) and the playground's
    results in V8; ``reads`` is text the run depends on that the key leaves out (the test
    module that holds the run's code). Only a run that returns is kept: ``run`` raises on a
    failure."""
    import hashlib

    store = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    folder = None if store is None else store.mkdir("kept-runs")

    def kept(name, run, reads):
        inputs = run_cache.key()
        if inputs is not None:
            inputs = hashlib.sha256(f"{inputs}\0{reads}".encode()).hexdigest()
        return run_cache.kept(folder, name, ".bin", inputs, run)

    return kept


# --- notebooks: each runs once per test session ------------------------------------------

import inspect  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import nbformat  # noqa: E402
import run_cache  # noqa: E402
from agreement_probes import add_probes, take_out_probes  # noqa: E402
from notebook_runner import NOTEBOOKS, ROOT, execute  # noqa: E402

sys.path.insert(0, str(ROOT / "tools"))
import book_cache  # noqa: E402  (tools/book_cache.py: what a kernel read)


@pytest.fixture(scope="session")
def executed_notebook(request):
    """``run(path)``: the notebook at ``path`` executed on the tiny budget, once per session,
    and kept for the next session while nothing it can read changes (``run_cache.py``); the
    results of its agreement probes (``agreement_probes.py``) in ``metadata.agreement``.

    The chapter tests and the student-copy tests read the same execution. Under pytest-xdist
    every test of one notebook runs in the same worker (see ``pytest_itemcollected``), so each
    notebook is still executed once."""
    cache = {}
    store = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    folder = None if store is None else store.mkdir("executed-notebooks")

    def execute_recorded(path):
        """The notebook executed with its kernel recording what it reads: its text, and the
        reads (``book_cache.recorded_reads``)."""
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            record = Path(tmp) / "reads"
            every = book_cache.recording_env(record, ROOT)
            recorder = {k: every[k] for k in ("PYTHONPATH", "BOOK_READS", "BOOK_READS_ROOT")}
            nb = add_probes(nbformat.read(path, as_version=4), path.stem)
            nb = take_out_probes(execute(nb, cwd=path.parent, env=recorder))
            return nbformat.writes(nb).encode(), book_cache.recorded_reads(record, ROOT)

    def run(path):
        if path not in cache:
            text = None
            reads_file = None if folder is None else folder / f"{path.stem}.reads.json"
            try:
                reads = json.loads(reads_file.read_text())
            except (AttributeError, OSError, ValueError):
                reads = None
            if reads is not None and not book_cache.changed_reads(reads, ROOT):
                kept = folder / f"{path.stem}-{run_cache.notebook_key(path, reads)[:24]}.ipynb"
                text = kept.read_bytes() if kept.is_file() else None
            if text is None:
                text, reads = execute_recorded(path)
                if folder is not None:  # only a run that finished is kept
                    key = run_cache.notebook_key(path, reads)[:24]
                    for old in folder.glob(f"{path.stem}-*.ipynb"):
                        old.unlink(missing_ok=True)
                    (folder / f"{path.stem}-{key}.ipynb").write_bytes(text)
                    reads_file.write_text(json.dumps(reads))
            cache[path] = nbformat.reads(text.decode(), as_version=4)
        return cache[path]

    return run


_STEMS = {p.stem for p in NOTEBOOKS}


def _notebook_of(item) -> str | None:
    callspec = getattr(item, "callspec", None)
    if getattr(getattr(item, "module", None), "__name__", "").endswith("test_colab_runtime"):
        # One group per Colab runtime line: its tests share the line's environment.
        return f"colab-{callspec.params['name']}" if callspec is not None else None
    if callspec is not None:
        path = callspec.params.get("path")
        if getattr(path, "stem", None) in _STEMS:
            return path.stem
    if "executed" in getattr(item, "fixturenames", ()) or "executed_notebook" in getattr(
        item, "fixturenames", ()
    ):
        found = set(re.findall(r"(\d\d_[a-z_]+)\.ipynb", inspect.getsource(item.function)))
        if len(found) == 1:
            return found.pop()
    return None


#: Test modules whose every test is outside ``make check``, by the mark they get.
_MODULE_MARKS = {"test_sharding": "devices"}  # a subprocess with 8 simulated devices
#: Fixtures whose tests are outside ``make check``, by the mark they get.
_FIXTURE_MARKS = {"executed_notebook": "notebook", "run_quick": "bench", "js": "javascript"}


def pytest_itemcollected(item):
    """Group each notebook's tests, so that ``--dist loadgroup`` keeps them in one worker, and
    mark what ``make check`` leaves out: ``notebook`` (executes a notebook or starts a kernel),
    ``bench`` (runs a benchmark script), ``devices`` (simulated devices), ``browser`` (starts
    Chromium), ``javascript`` (runs the playground's JavaScript in V8); the tests that start
    a Python process of their own carry ``subprocess`` in their module.

    The marks are set as each test is collected: pytest-xdist reads the marks in its own
    ``pytest_collection_modifyitems``, which may run before any conftest's."""
    stem = _notebook_of(item)
    if stem is not None:
        item.add_marker(pytest.mark.xdist_group(stem))
    module = getattr(getattr(item, "module", None), "__name__", "").rpartition(".")[2]
    if module in _MODULE_MARKS:
        item.add_marker(_MODULE_MARKS[module])
    for fixture in set(_FIXTURE_MARKS) & set(getattr(item, "fixturenames", ())):
        item.add_marker(_FIXTURE_MARKS[fixture])


@pytest.fixture
def book_language(tmp_path_factory, monkeypatch):
    """``book_language("ja")`` sets the language the book's Sphinx extensions (``book/_ext``)
    write in, as a build of that edition does: ``book_messages.setup`` compiles the
    language's catalogue of the extensions' words (``locales/<language>/LC_MESSAGES/
    extensions.po``) into a temporary build folder and registers it with Sphinx. Before the
    first call and after the test, the extensions write English."""
    from gettext import NullTranslations
    from pathlib import Path
    from types import SimpleNamespace

    from sphinx import locale
    from sphinx.application import Sphinx

    root = Path(__file__).resolve().parents[1]
    monkeypatch.syspath_prepend(str(root / "book" / "_ext"))
    import book_messages

    key = ("general", book_messages.DOMAIN)
    monkeypatch.setitem(locale.translators, key, NullTranslations())

    def use(language: str) -> None:
        locale.translators[key] = NullTranslations()  # Sphinx's init adds to a real one
        build = tmp_path_factory.mktemp("build")
        config = SimpleNamespace(language=language, locale_dirs=["locales"])
        app = SimpleNamespace(srcdir=str(root), doctreedir=str(build / ".doctrees"), config=config)
        app.add_message_catalog = lambda catalog, folder: Sphinx.add_message_catalog(
            app, catalog, folder
        )
        app.connect = lambda event, callback: None
        book_messages.setup(app)

    return use
