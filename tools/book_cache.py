"""Keep the book's execution cache honest about what each notebook read, one notebook at a time.

jupyter-cache (behind ``make book``) re-executes a notebook when its code cells change, but
it does not see the files its execution reads besides its cells: the ``companion`` modules it
imports, the package's data (a trained agent), the committed benchmark results
(``benchmarks/results``), its quiz. After a change to one of those, the cached outputs would
show what the old file gave. So each execution records what it read:
``tools/execute_notebooks.py`` runs every kernel with ``tools/recording/sitecustomize.py``
installed, which appends each file of the checkout that the kernel (or a Python process it
starts) opens for reading to a list. Of that list, the files under :data:`INPUTS` are kept,
each with the SHA-256 of its contents (``None`` for a file it looked for and did not find),
in ``book_reads.json`` in the cache folder, one entry per notebook.

This script, run before ``tools/execute_notebooks.py``, makes a notebook execute again when a
file it read changed (or appeared, or went), or when it has no record; the others keep their
cached execution. A benchmark re-run thus re-executes only the chapters that read its JSON,
and an edit of a self-check only the chapters that imported it (``companion.checks`` loads
each check's module when its name is first used). For a notebook to execute again, the
script removes its jupyter-cache records (the ``uri`` that ``execute_notebooks.py`` and
myst-nb store is the notebook's absolute path; the records whose file name is the notebook's,
or whose hash is the notebook's current one, go) and its doctree in Sphinx's saved
environment (``_build/.doctrees/notebooks/<stem>.doctree``): Sphinx reads again a page whose
doctree file is missing (``BuildEnvironment.get_outdated_files``), and without that it would
skip the unchanged notebook and keep the old outputs.

When the manifest (``book_cache.json``) is missing or unreadable, or this script or
jupyter-cache's version changed, the whole cache and ``_build/.doctrees`` are cleared (and so
are the saved environments of the other editions, ``_build/<language>/_build/.doctrees``,
which read the same execution cache). When the Sphinx extensions (``book/_ext/*.py``) or the
package modules they import changed, ``_build/.doctrees`` is cleared (every page is read
again; the executions stay cached). The extensions run inside Sphinx, not in a recorded
kernel, so the modules they import are found by reading their import statements
(:func:`reach`).

    python tools/book_cache.py [--cache _build/.jupyter_cache]   # run by ``make book``
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = "book_cache.json"
#: The recorded reads that a notebook's execution depends on: files under these folders of
#: the checkout (compiled ``__pycache__`` files aside).
INPUTS = ("companion/", "benchmarks/results/", "notebooks/quizzes/")
#: Each notebook's recorded reads, ``{stem: {path: SHA-256 or None}}``, in the cache folder.
READS = "book_reads.json"
#: The folder whose ``sitecustomize.py`` records a process's reads.
RECORDER = Path(__file__).resolve().parent / "recording"


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


class _Everything(Exception):
    """Raised when code may import any module of the package (a computed name, no parse)."""


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


def _digest(files: dict[str, Path]) -> str:
    digest = hashlib.sha256()
    for label in sorted(files):
        digest.update(label.encode() + b"\0" + files[label].read_bytes() + b"\0")
    return digest.hexdigest()


def reached_files(sources: list[str], package: Path) -> dict[str, Path]:
    """The files that running ``sources`` reads from ``package``, keyed by a relative path:
    the modules it reaches, and the package's data files when it reaches any module."""
    files = {}
    reached = reach(sources, package)
    for path in _files(package):
        if path in reached or (reached and path.suffix != ".py"):
            files[f"{package.name}/{path.relative_to(package).as_posix()}"] = path
    return files


def recording_env(record: Path, root: Path = ROOT, env: dict | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with the variables that make a Python process, and
    the ones it starts, append the files under ``root`` it opens for reading to ``record``
    (``tools/recording/sitecustomize.py``)."""
    env = dict(os.environ if env is None else env)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(RECORDER) + (os.pathsep + path if path else "")
    env.update(BOOK_READS=str(record), BOOK_READS_ROOT=str(root))
    return env


def _sha(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


#: The digest kept for a file that changed while the execution ran: it matches no file, so
#: the notebook executes again (it may have read the file before the change).
CHANGED_DURING_RUN = "changed while the notebook ran"


def recorded_reads(
    record: Path, root: Path = ROOT, since: float | None = None
) -> dict[str, str | None]:
    """The files under :data:`INPUTS` that ``record`` lists (one path relative to ``root`` a
    line, as the recorder writes), each with the SHA-256 of its contents now (``None`` when
    it does not exist; :data:`CHANGED_DURING_RUN` when it was modified after ``since``, the
    execution's start, a ``time.time()``). A missing ``record`` lists nothing."""
    lines = record.read_text().splitlines() if record.is_file() else []
    kept = {
        line
        for line in lines
        if line.startswith(INPUTS) and "__pycache__" not in line and not line.endswith(".pyc")
    }
    reads = {}
    for path in sorted(kept):
        file = root / path
        late = since is not None and file.is_file() and file.stat().st_mtime > since
        reads[path] = CHANGED_DURING_RUN if late else _sha(file)
    return reads


def store_reads(cache: Path, stem: str, reads: dict[str, str | None]) -> None:
    """Keep ``reads`` (:func:`recorded_reads`) as notebook ``stem``'s in ``cache``."""
    path = cache / READS
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    known[stem] = reads
    cache.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".new")
    partial.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
    partial.replace(path)


def changed_reads(reads: dict[str, str | None] | None, root: Path = ROOT) -> list[str]:
    """The files of ``reads`` whose contents differ now (appeared, went or changed);
    ``["(no record)"]`` when there is no record."""
    if not isinstance(reads, dict):
        return ["(no record)"]
    return [path for path, sha in reads.items() if _sha(root / path) != sha]


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
    why: dict[str, list[str]]  #: each of those notebooks' changed reads ("(no record)")


def refresh(
    cache: Path,
    package: Path,
    doctrees: Path | Sequence[Path] | None = None,
    notebooks: Path | None = None,
    extensions: Path | None = None,
    root: Path | None = None,
    dry_run: bool = False,
) -> Outcome:
    """Remove from ``cache`` (a jupyter-cache folder) and ``doctrees`` what the changes since
    the notebooks' executions make stale, and store the new manifest.

    ``notebooks`` is the folder of the ``*.ipynb`` files (the doctree of ``notebooks/x.ipynb``
    is ``doctrees/notebooks/x.doctree``); their recorded reads are paths relative to ``root``
    (default: ``package``'s parent). ``doctrees`` may be several saved environments, one per
    edition: each edition reads the same execution cache, so a notebook executed again must
    be read again by every one of them. Everything is cleared when ``cache`` holds no
    readable manifest, or it was written by another version of this script or jupyter-cache.
    With ``dry_run`` the outcome is the same and nothing is removed or written.
    """
    root = package.parent if root is None else root
    saved = [] if doctrees is None else [doctrees] if isinstance(doctrees, Path) else list(doctrees)
    paths = sorted(notebooks.glob("*.ipynb")) if notebooks else []
    manifest = {**_versions(), "extensions": extensions_fingerprint(extensions, package)}
    try:
        old = json.loads((cache / MANIFEST).read_text())
        known = {k: old[k] for k in ("tool", "jupyter_cache", "extensions")}
    except (OSError, ValueError, TypeError, KeyError):
        known = None
    if known is None or any(known[k] != manifest[k] for k in ("tool", "jupyter_cache")):
        for folder in (cache, *saved):
            if folder.exists() and not dry_run:
                shutil.rmtree(folder)
        outcome = Outcome(True, tuple(nb.stem for nb in paths), True, {})
    else:
        try:
            reads = json.loads((cache / READS).read_text())
        except (OSError, ValueError):
            reads = {}
        reads = reads if isinstance(reads, dict) else {}
        why = {nb.stem: changed_reads(reads.get(nb.stem), root) for nb in paths}
        stale = [nb for nb in paths if why[nb.stem]]
        if stale and not dry_run:
            _remove_records(cache, stale)
        pages = known["extensions"] != manifest["extensions"]
        for folder in [] if dry_run else saved:
            if pages and folder.exists():
                shutil.rmtree(folder)
            elif notebooks is not None:
                for nb in stale:
                    (folder / notebooks.name / f"{nb.stem}.doctree").unlink(missing_ok=True)
        outcome = Outcome(
            False, tuple(nb.stem for nb in stale), pages, {nb.stem: why[nb.stem] for nb in stale}
        )
    if dry_run:
        return outcome
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
    parser.add_argument("--extensions", type=Path, default=ROOT / "book" / "_ext")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="say what the next make book executes again, and change nothing",
    )
    args = parser.parse_args(argv)
    outcome = refresh(
        args.cache,
        args.package,
        args.doctrees,
        args.notebooks,
        args.extensions,
        dry_run=args.dry_run,
    )
    would = "would " if args.dry_run else ""
    if outcome.everything:
        print(
            "book_cache: no manifest, or this script or jupyter-cache changed: "
            f"{args.cache} {would}start{'' if would else 's'} empty"
        )
    elif outcome.notebooks:
        for stem in outcome.notebooks:
            why = ", ".join(outcome.why[stem][:3]) + (" ..." if len(outcome.why[stem]) > 3 else "")
            print(f"book_cache: {would}execute again: {stem} (read {why})")
    else:
        print("book_cache: every cached notebook is reused")
    if outcome.pages and not outcome.everything:
        again = "would be read again" if args.dry_run else "is read again"
        print(f"book_cache: the Sphinx extensions changed: every page {again}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
