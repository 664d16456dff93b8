"""Execute the book's notebooks that the execution cache lacks, several at a time.

``jupyter-book build`` (myst-nb in ``cache`` mode) executes the notebooks one after another.
Their cells are mostly single-threaded (tracing, XLA compilation, small array programs), so
on a machine with several cores most of them sit idle. This script runs first in
``make book``: it finds every notebook of ``_toc.yml`` that has no matching record in the
jupyter-cache (same code cells as the notebook on disk), executes those in parallel, one
kernel per worker, longest first, and stores each result in the cache the way myst-nb does
(``execution_seconds`` included). The build that follows then finds every notebook cached
and executes nothing.

A notebook that raises is not cached: the script prints its traceback, keeps it in
``_build/reports/<name>.log`` (which CI uploads when a run fails) and exits with status 1,
and ``make book`` stops there.

    python tools/execute_notebooks.py [--jobs N] [--cache _build/.jupyter_cache]

The seconds each notebook took, how many of them its cells before the first exercise (the
first ``solution`` cell) took, and how many notebooks ran at a time, are kept in
``_build/notebook_seconds.json``: the next run starts the longest first, the chapter cards
say when a notebook shared the machine (it then runs slower than alone), and the teacher's
guide's table of execution times shows the time to the first exercise.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import book_cache  # noqa: E402  (tools/book_cache.py: what an execution read)

ROOT = Path(__file__).resolve().parents[1]
#: Where the seconds of the last executions are kept (next to the cache, outside it).
SECONDS = ROOT / "_build" / "notebook_seconds.json"


def book_notebooks(toc: Path) -> list[Path]:
    """The ``.ipynb`` files that ``toc`` (a jupyter-book ``_toc.yml``) lists, in order."""
    found: list[Path] = []

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                path = (toc.parent / node["file"]).with_suffix(".ipynb")
                if path.is_file():
                    found.append(path)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(yaml.safe_load(toc.read_text()))
    return found


def seconds_to_first_exercise(notebook) -> float | None:
    """The seconds the code cells before the first ``solution`` cell took, from nbclient's
    timing records (``record_timing``); None without a solution cell or records."""
    from datetime import datetime

    def parse(stamp: str) -> datetime:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    total = 0.0
    for cell in notebook.cells:
        if "solution" in cell.metadata.get("tags", []):
            return total
        timing = cell.metadata.get("execution", {})
        if cell.cell_type == "code" and "shell.execute_reply" in timing:
            total += (
                parse(timing["shell.execute_reply"]) - parse(timing["iopub.execute_input"])
            ).total_seconds()
    return None


def _execute(
    path: str, timeout: int
) -> tuple[str, dict | None, float, str | None, float | None, dict]:
    """Run one notebook in its own folder (as myst-nb does with ``run_in_temp: false``), its
    kernel recording the files it reads (``book_cache.recorded_reads``)."""
    import tempfile

    from jupyter_cache.executors.utils import single_nb_execution

    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "reads"
        # this worker's environment is the kernel's: set for each notebook it runs; the
        # kernel outputs every edition's words (companion.language.book_build)
        os.environ.update(book_cache.recording_env(record, ROOT), DRLJAX_BOOK_BUILD="1")
        start = time.time()
        result = single_nb_execution(
            notebook,
            cwd=str(Path(path).parent),
            allow_errors=False,
            timeout=timeout,
            meta_override=True,
            record_timing=True,
            # The book shows no widget (tests/book/test_notebooks.py: a widget's output is removed from
            # the page), so none of their state is kept: a page with widget state would load
            # require.js and the widget manager from a CDN for nothing.
            store_widget_state=False,
        )
        reads = book_cache.recorded_reads(record, ROOT, since=start)
    if result.err is not None:
        return path, None, result.time, result.exc_string, None, reads
    to_first_exercise = seconds_to_first_exercise(notebook)
    for cell in notebook.cells:  # the cached notebook carries no timing records
        cell.metadata.pop("execution", None)
    return path, notebook, result.time, None, to_first_exercise, reads


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--cache", type=Path, default=ROOT / "_build" / ".jupyter_cache")
    parser.add_argument("--toc", type=Path, default=ROOT / "_toc.yml")
    parser.add_argument("--config", type=Path, default=ROOT / "_config.yml")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs: expected a positive number of workers, got {args.jobs}")

    from jupyter_cache import get_cache

    timeout = yaml.safe_load(args.config.read_text())["execute"]["timeout"]
    cache = get_cache(str(args.cache))
    try:
        return _execute_missing(cache, args, timeout)
    finally:
        cache.db.dispose()  # close the cache's SQLite connections (Python 3.13 warns otherwise)


def _execute_missing(cache, args, timeout: float) -> int:
    """Execute the book's notebooks that ``cache`` lacks, store them in it; 0, or 1 if any
    notebook raised."""
    from jupyter_cache.base import CacheBundleIn

    todo = []
    for path in book_notebooks(args.toc):
        try:
            cache.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            todo.append(path)
    if not todo:
        print("execute_notebooks: every notebook is in the cache")
        return 0

    known = json.loads(SECONDS.read_text()) if SECONDS.is_file() else {}

    def expected_seconds(path: Path) -> float:
        entry = known.get(str(path.relative_to(ROOT)))
        return entry["seconds"] if entry else path.stat().st_size / 1e3

    todo.sort(key=expected_seconds, reverse=True)
    jobs = min(args.jobs, len(todo))
    print(f"execute_notebooks: {len(todo)} notebook(s), {jobs} at a time", flush=True)

    failed = []
    start = time.perf_counter()
    # spawn, not fork: a forked child of a process with threads (JAX's, in the tests) can
    # deadlock
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=spawn) as pool:
        futures = [pool.submit(_execute, str(p), timeout) for p in todo]
        for future in concurrent.futures.as_completed(futures):
            path, notebook, took, error, to_first_exercise, reads = future.result()
            rel = str(Path(path).relative_to(ROOT))
            if error is not None:
                failed.append(rel)
                print(f"execute_notebooks: {rel} raised after {took:.0f} s:\n{error}", flush=True)
                report = ROOT / "_build" / "reports" / f"{Path(path).stem}.log"
                report.parent.mkdir(parents=True, exist_ok=True)
                report.write_text(f"{rel} raised after {took:.0f} s:\n{error}\n")
                continue
            record = cache.add_nb_to_project(path)
            cache.cache_notebook_bundle(
                CacheBundleIn(notebook, record.uri, data={"execution_seconds": took}),
                check_validity=False,
                overwrite=True,
            )
            book_cache.store_reads(args.cache, Path(path).stem, reads)
            known[rel] = {"seconds": took, "jobs": jobs, "to_first_exercise": to_first_exercise}
            print(f"execute_notebooks: {rel} in {took:.0f} s", flush=True)
    SECONDS.parent.mkdir(parents=True, exist_ok=True)
    SECONDS.write_text(json.dumps(known, indent=1) + "\n")
    print(f"execute_notebooks: done in {time.perf_counter() - start:.0f} s", flush=True)
    if failed:
        print(f"execute_notebooks: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
