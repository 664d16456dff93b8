"""Keep the book's execution cache honest about the companion package, one notebook at a time.

jupyter-cache (behind ``make book``) re-executes a notebook when its code cells change, but
it does not see the ``companion`` package the notebooks import: after a change to a helper,
the cached outputs would show what the old helper did. This script, run before
``tools/execute_notebooks.py``, gives each notebook of ``notebooks/`` a fingerprint of what
its execution reads besides its own cells, and makes only the notebooks whose fingerprint
changed execute again:

* the modules of ``companion`` that its code cells import (IPython magics and shell lines
  are turned into Python by IPython first; the code of ``%time``-like magics counts), and
  every module those import in turn, absolute and relative, imports inside functions too.
  Importing ``a.b.c`` runs ``a/__init__.py`` and ``a/b/__init__.py``, so those count; in
  ``from a.b import c``, ``c`` counts when it is a module. A package whose ``__init__.py``
  loads its names lazily (PEP 562) through a literal table ``_LAZY = {name: submodule}``
  (``companion.checks``) counts only the submodule of each name imported from it, and its
  ``__getattr__`` is read as that table, not as a computed import. A module that imports a
  computed name (``importlib.import_module(name)``) elsewhere, or a cell or module that does
  not parse, reaches the whole package;
* the package's data files (every file under it that is not a ``.py``, e.g.
  ``companion/data/*.eqx``): they belong to the package's top ``__init__.py``, which every
  import of any of its modules runs, so a notebook that reads one through any module of
  the package sees it change (sound, though coarse: a new trained agent executes every
  notebook that imports the package);
* the committed benchmark results (``benchmarks/results``), which ``companion.bench``
  reads: they belong to ``companion/bench/__init__.py``;
* its quiz, ``notebooks/quizzes/<stem>.json`` (and any quiz whose name its code mentions).

A fingerprint is a SHA-256 over the relative paths and contents of those files. The
fingerprints are kept in ``book_cache.json`` in the cache folder. For each notebook whose
fingerprint changed, the script removes its jupyter-cache records (the ``uri`` that
``execute_notebooks.py`` and myst-nb store is the notebook's absolute path; the records
whose file name is the notebook's, or whose hash is the notebook's current one, go) and its
doctree in Sphinx's saved environment (``_build/.doctrees/notebooks/<stem>.doctree``):
Sphinx reads again a page whose doctree file is missing (``BuildEnvironment.
get_outdated_files``), and without that it would skip the unchanged notebook and keep the
old outputs. The other notebooks keep their cached execution and their doctrees.

When the manifest is missing or unreadable, or this script or jupyter-cache's version
changed, the whole cache and ``_build/.doctrees`` are cleared (and so are the saved
environments of the other editions, ``_build/<language>/_build/.doctrees``, which read the
same execution cache). When the Sphinx extensions
(``book/_ext/*.py``) or the package modules they import changed, ``_build/.doctrees`` is
cleared (every page is read again; the executions stay cached).

    python tools/book_cache.py [--cache _build/.jupyter_cache]   # run by ``make book``
"""

from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = "book_cache.json"
#: Data folders outside the package, keyed by the module (relative to the package) reading them.
READERS = {"bench/__init__.py": ROOT / "benchmarks" / "results"}


def _files(folder: Path) -> list[Path]:
    """Every file under ``folder`` except ``__pycache__`` folders and ``.pyc`` files."""
    if not folder.is_dir():
        return []
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )


def modules(package: Path) -> dict[str, Path]:
    """The dotted names of the ``.py`` files of ``package`` (a package's is its
    ``__init__.py``), e.g. ``{"companion": .../__init__.py, "companion.glue": ...}``."""
    found = {}
    for path in _files(package):
        if path.suffix == ".py":
            parts = (package.name, *path.relative_to(package).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


@functools.cache
def _transformer():
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return None
    return TransformerManager()


def _python(source: str) -> str:
    """A code cell's source as Python: IPython's magics become ``get_ipython()`` calls."""
    if _transformer() is None:  # without IPython: drop the magic and shell lines
        return "\n".join(
            "" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()
        )
    return _transformer().transform_cell(source)


class _Everything(Exception):
    """Raised when code may import any module of the package (a computed name, no parse)."""


def _magic_code(node: ast.Call) -> list[str]:
    """The strings given to ``get_ipython().run_line_magic/run_cell_magic`` (``%time x``)."""
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in ("run_line_magic", "run_cell_magic"):
        return [
            a.value
            for a in node.args[1:]
            if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
    return []


def imported(source: str, here: str = "", is_package: bool = False) -> set[str]:
    """The dotted names that ``source`` imports (``from a import b`` gives ``a`` and ``a.b``),
    relative imports resolved against module ``here``.

    Raises:
        _Everything: ``source`` does not parse, or imports a name computed at run time.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise _Everything(str(error)) from None
    context = here if is_package else here.rpartition(".")[0]
    names: set[str] = set()
    if is_package and _lazy_table(tree) is not None:  # its __getattr__ imports from _LAZY
        tree.body = [
            n for n in tree.body if not (isinstance(n, ast.FunctionDef) and n.name == "__getattr__")
        ]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = context.split(".")[: len(context.split(".")) - node.level + 1]
                base = ".".join(p for p in (*parent, base) if p)
            names.add(base)  # ``from a import *`` may import every submodule of ``a``
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call):
            for code in _magic_code(node):
                try:
                    ast.parse(code)
                except SyntaxError:
                    continue  # not Python: a shell command, pip's arguments
                names |= imported(code, here, is_package)
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__"):
                first = node.args[0] if node.args else None
                if not (
                    isinstance(first, ast.Constant)
                    and isinstance(first.value, str)
                    and not first.value.startswith(".")
                ):
                    raise _Everything(f"{name}(...) with a computed or relative name")
                names.add(first.value)
    return names


def _lazy_table(tree: ast.Module) -> dict[str, str] | None:
    """A package ``__init__``'s literal ``_LAZY = {name: submodule}``, or None."""
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and node.targets else None
        if isinstance(node, ast.AnnAssign):
            target = node.target
        if isinstance(target, ast.Name) and target.id == "_LAZY":
            try:
                table = ast.literal_eval(node.value)
            except ValueError:
                return None
            if isinstance(table, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in table.items()
            ):
                return table
    return None


def _lazy_module(name: str, table: dict[str, Path]) -> str | None:
    """``pkg.sub`` for ``pkg.name`` when ``pkg/__init__.py`` loads ``name`` lazily from ``sub``."""
    package, _, attr = name.rpartition(".")
    path = table.get(package)
    if path is None or path.name != "__init__.py":
        return None
    try:
        lazy = _lazy_table(ast.parse(path.read_text()))
    except SyntaxError:
        return None
    return f"{package}.{lazy[attr]}" if lazy and attr in lazy else None


def reach(sources: list[str], package: Path, table: dict[str, Path] | None = None) -> set[Path]:
    """The module files of ``package`` that running ``sources`` (code cells, or one module's
    text) imports, directly or through other modules of the package."""
    table = modules(package) if table is None else table
    top = package.name
    everything = set(table.values())
    todo: list[str] = []
    try:
        for source in sources:
            todo += imported(source)
    except _Everything:
        return everything
    found: set[str] = set()
    while todo:
        name = todo.pop()
        if name != top and not name.startswith(top + "."):
            continue
        if name.endswith(".*"):
            todo += [m for m in table if m.rpartition(".")[0] == name[:-2]]
        elif name not in table and (lazy := _lazy_module(name, table)) is not None:
            todo.append(lazy)
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # the parent packages run first
            prefix = ".".join(parts[:i])
            if prefix in table and prefix not in found:
                found.add(prefix)
                path = table[prefix]
                try:
                    todo += imported(path.read_text(), prefix, path.name == "__init__.py")
                except _Everything:
                    return everything
    return {table[name] for name in found}


def _code(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return [_python("".join(c["source"])) for c in cells if c["cell_type"] == "code"]


def _digest(files: dict[str, Path]) -> str:
    digest = hashlib.sha256()
    for label in sorted(files):
        digest.update(label.encode() + b"\0" + files[label].read_bytes() + b"\0")
    return digest.hexdigest()


def reached_files(
    sources: list[str],
    package: Path,
    readers: dict[str, Path] | None = None,
    table: dict[str, Path] | None = None,
) -> dict[str, Path]:
    """The files that running ``sources`` reads from ``package``, keyed by a relative path:
    the modules it reaches, the package's data files when it reaches any module, and the
    files of ``readers[module]`` when it reaches ``module`` (relative to ``package``)."""
    readers = READERS if readers is None else readers
    files = {}
    reached = reach(sources, package, table)
    for path in _files(package):
        if path in reached or (reached and path.suffix != ".py"):
            files[f"{package.name}/{path.relative_to(package).as_posix()}"] = path
    for module, folder in readers.items():
        if package / module in reached:
            for path in _files(folder):
                files[f"{folder.name}/{path.relative_to(folder).as_posix()}"] = path
    return files


def notebook_fingerprints(
    notebooks: list[Path],
    package: Path,
    quizzes: Path | None = None,
    readers: dict[str, Path] | None = None,
) -> dict[str, str]:
    """``{stem: SHA-256}`` of the files each notebook's execution reads (module docstring)."""
    table = modules(package)
    prints = {}
    for notebook in notebooks:
        sources = _code(notebook)
        files = reached_files(sources, package, readers, table)
        for quiz in _files(quizzes) if quizzes else []:
            if quiz.stem == notebook.stem or any(quiz.stem in s for s in sources):
                files[f"quizzes/{quiz.name}"] = quiz
        prints[notebook.stem] = _digest(files)
    return prints


def extensions_fingerprint(extensions: Path | None, package: Path) -> str:
    """SHA-256 of the Sphinx extensions in ``extensions`` and the package files they read."""
    files: dict[str, Path] = {}
    for path in sorted(extensions.glob("*.py")) if extensions and extensions.is_dir() else []:
        files[f"{extensions.name}/{path.name}"] = path
        files |= reached_files([path.read_text()], package)
    return _digest(files)


def _versions() -> dict[str, str]:
    """This script's hash and jupyter-cache's version: a change to either clears everything."""
    from importlib import metadata

    try:
        cache_version = metadata.version("jupyter-cache")
    except metadata.PackageNotFoundError:
        cache_version = "absent"
    tool = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    return {"tool": tool, "jupyter_cache": cache_version}


def _remove_records(cache: Path, notebooks: list[Path]) -> int:
    """Remove from the jupyter-cache at ``cache`` the records of ``notebooks`` (by file name
    of the stored ``uri``, or by the hash of the notebook's code as it is now)."""
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.cache.db import NbCacheRecord

    store = get_cache(str(cache))
    try:
        names = {nb.name for nb in notebooks}
        hashes = {
            store.create_hashed_notebook(nbformat.read(nb, as_version=4))[1]
            for nb in notebooks
            if nb.is_file()
        }
        removed = 0
        for record in store.list_cache_records():
            if Path(record.uri).name in names or record.hashkey in hashes:
                try:
                    store.remove_cache(record.pk)
                except KeyError:  # its stored notebook is already gone
                    NbCacheRecord.remove_records([record.pk], store.db)
                removed += 1
        return removed
    finally:
        store.db.dispose()


class Outcome(NamedTuple):
    everything: bool  #: the whole cache and saved environment were cleared
    notebooks: tuple[str, ...]  #: stems of the notebooks that execute again
    pages: bool  #: the saved environment was cleared (every page is read again)


def refresh(
    cache: Path,
    package: Path,
    doctrees: Path | Sequence[Path] | None = None,
    notebooks: Path | None = None,
    quizzes: Path | None = None,
    extensions: Path | None = None,
    readers: dict[str, Path] | None = None,
) -> Outcome:
    """Remove from ``cache`` (a jupyter-cache folder) and ``doctrees`` what the changes to
    ``package`` and the data since the last call make stale, and store the new manifest.

    ``notebooks`` is the folder of the ``*.ipynb`` files (the doctree of ``notebooks/x.ipynb``
    is ``doctrees/notebooks/x.doctree``). ``doctrees`` may be several saved environments, one
    per edition: each edition reads the same execution cache, so a notebook executed again
    must be read again by every one of them. Everything is cleared when ``cache`` holds no
    readable manifest, or it was written by another version of this script or jupyter-cache.
    """
    saved = [] if doctrees is None else [doctrees] if isinstance(doctrees, Path) else list(doctrees)
    paths = sorted(notebooks.glob("*.ipynb")) if notebooks else []
    manifest = {
        **_versions(),
        "notebooks": notebook_fingerprints(paths, package, quizzes, readers),
        "extensions": extensions_fingerprint(extensions, package),
    }
    try:
        old = json.loads((cache / MANIFEST).read_text())
        known = {k: old[k] for k in ("tool", "jupyter_cache", "notebooks", "extensions")}
        if not isinstance(known["notebooks"], dict):
            raise TypeError("notebooks: not a mapping")
    except (OSError, ValueError, TypeError, KeyError):
        known = None
    if known is None or any(known[k] != manifest[k] for k in ("tool", "jupyter_cache")):
        for folder in (cache, *saved):
            if folder.exists():
                shutil.rmtree(folder)
        outcome = Outcome(True, tuple(nb.stem for nb in paths), True)
    else:
        stale = [
            nb for nb in paths if known["notebooks"].get(nb.stem) != manifest["notebooks"][nb.stem]
        ]
        if stale:
            _remove_records(cache, stale)
        pages = known["extensions"] != manifest["extensions"]
        for folder in saved:
            if pages and folder.exists():
                shutil.rmtree(folder)
            elif notebooks is not None:
                for nb in stale:
                    (folder / notebooks.name / f"{nb.stem}.doctree").unlink(missing_ok=True)
        outcome = Outcome(False, tuple(nb.stem for nb in stale), pages)
    cache.mkdir(parents=True, exist_ok=True)
    partial = cache / (MANIFEST + ".new")
    partial.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    partial.replace(cache / MANIFEST)
    return outcome


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=ROOT / "_build" / ".jupyter_cache")
    parser.add_argument("--package", type=Path, default=ROOT / "companion")
    parser.add_argument(
        "--doctrees",
        type=Path,
        nargs="+",
        # the English edition's saved environment, and each other edition's
        # (tools/editions.py builds one into _build/<language>)
        default=[ROOT / "_build" / ".doctrees", *sorted(ROOT.glob("_build/*/_build/.doctrees"))],
    )
    parser.add_argument("--notebooks", type=Path, default=ROOT / "notebooks")
    parser.add_argument("--quizzes", type=Path, default=ROOT / "notebooks" / "quizzes")
    parser.add_argument("--extensions", type=Path, default=ROOT / "book" / "_ext")
    args = parser.parse_args(argv)
    outcome = refresh(
        args.cache, args.package, args.doctrees, args.notebooks, args.quizzes, args.extensions
    )
    if outcome.everything:
        print(
            "book_cache: no manifest, or this script or jupyter-cache changed: "
            f"{args.cache} starts empty"
        )
    elif outcome.notebooks:
        print(f"book_cache: execute again: {', '.join(outcome.notebooks)}")
    else:
        print("book_cache: every cached notebook is reused")
    if outcome.pages and not outcome.everything:
        print("book_cache: the Sphinx extensions changed: every page is read again")
    return 0


if __name__ == "__main__":
    sys.exit(main())
