"""Run the book's notebooks top to bottom on this machine's accelerator, and record the run.

Each notebook runs in a fresh Python process (one process at a time can hold a TPU chip),
cell by cell in an in-process IPython shell: no Jupyter kernel, so no sockets, which a locked
down accelerator machine may refuse. The hidden solution cells run, so every self-check of
the chapter is called on the chapter's own solution, as in the book's build: a notebook
passes only if no cell raises. Cells tagged ``skip-execution`` are skipped, as myst-nb
skips them.

For each notebook the JSON keeps: passed, seconds (wall clock, compilation included), the
number of code cells run, the slowest cell (by its first line), whether JAX's persistent
compilation cache was on (:func:`compilation_cache`) and, for a failure, the cell and the end
of its traceback (for a timeout, the last cell that finished). The head names the device (:func:`companion.bench.hardware`).
Rows are kept per device kind, so a run on a TPU adds to a file that holds a CPU's rows,
and ``--only`` adds rows to a device's earlier ones.

    python benchmarks/device_notebooks.py                  # all notebooks, tiny budget
    python benchmarks/device_notebooks.py --only 01_jax_essentials 07_dqn
    python benchmarks/device_notebooks.py --budget full    # the book's budgets

Writes ``benchmarks/results/device_notebooks.json`` (``--out`` to change). ``--timeout``
bounds each notebook's process (seconds); a notebook that runs past it is recorded as not
passed, with the reason.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NOTEBOOKS = ROOT / "notebooks"
RESULTS = HERE / "results" / "device_notebooks.json"
#: Lines of a failing cell's traceback kept in the JSON.
TRACEBACK_LINES = 25


def code_cells(path: Path) -> list[dict]:
    """The code cells of the notebook at ``path`` that a build executes (``skip-execution``
    cells left out), each as ``{"index", "id", "source", "tags"}`` (``id``: nbformat's cell
    id, which stays when cells are added above; ``index`` does not)."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        if "skip-execution" in tags:
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        cells.append({"index": index, "id": cell.get("id"), "source": source, "tags": tags})
    return cells


def _first_line(source: str) -> str:
    lines = [line for line in source.splitlines() if line.strip()]
    return lines[0][:80] if lines else ""


def run_one(path: Path, progress: Path | None = None) -> dict:
    """Run ``path``'s code cells in order in this process's IPython shell.

    Returns:
        dict: ``passed``, ``seconds``, ``cells`` (run), ``slowest`` (``{"id", "seconds",
        "first_line"}``: a cell named by its nbformat id, which stays when cells are added
        above, never by its index) and, on a failure, ``failed_cell`` (``{"id",
        "first_line"}``) and ``error`` (the traceback's end).
    """
    os.chdir(path.parent)  # as a kernel started on the notebook would
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    start = time.perf_counter()
    record: dict = {"passed": True, "cells": 0, "slowest": None}
    for cell in code_cells(path):
        cell_start = time.perf_counter()
        result = shell.run_cell(cell["source"], store_history=True)
        seconds = time.perf_counter() - cell_start
        record["cells"] += 1
        if record["slowest"] is None or seconds > record["slowest"]["seconds"]:
            record["slowest"] = {
                "id": cell["id"],
                "seconds": round(seconds, 2),
                "first_line": _first_line(cell["source"]),
            }
        record["last_cell"] = {
            "id": cell["id"],
            "seconds": round(seconds, 2),
            "first_line": _first_line(cell["source"]),
        }
        if progress is not None:  # what a timeout leaves behind
            progress.write_text(json.dumps(record))
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            lines = traceback.format_exception(type(error), error, error.__traceback__)
            text = "".join(lines).splitlines()
            record.update(
                passed=False,
                failed_cell={
                    "id": cell["id"],
                    "first_line": _first_line(cell["source"]),
                },
                error="\n".join(text[-TRACEBACK_LINES:]),
            )
            break
    record.pop("last_cell", None)  # kept only by the progress file
    record["seconds"] = round(time.perf_counter() - start, 2)
    return record


def compilation_cache() -> str:
    """``"on"`` where JAX's persistent compilation cache is set for the notebooks
    (``JAX_COMPILATION_CACHE_DIR``: programs compiled by a notebook run before on this machine
    load instead of compiling), else ``"off"``."""
    return "on" if os.environ.get("JAX_COMPILATION_CACHE_DIR") else "off"


def _run_in_process(path: Path, budget: str, timeout: float) -> dict:
    """:func:`run_one` in a fresh Python process; its stdout and stderr are discarded."""
    env = dict(os.environ, DRLJAX_BUDGET=budget, MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "record.json"
        start = time.perf_counter()
        try:
            done = subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--one",
                    str(path),
                    "--record",
                    str(out),
                ],
                env=env,
                timeout=timeout,
                check=False,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        except subprocess.TimeoutExpired:
            progress = out.with_suffix(".progress")
            done_cells = json.loads(progress.read_text()) if progress.is_file() else {}
            return {
                "passed": False,
                "seconds": round(time.perf_counter() - start, 2),
                "error": f"ran past --timeout {timeout:g} s",
                "cells": done_cells.get("cells", 0),
                "last_cell": done_cells.get("last_cell"),
                "slowest": done_cells.get("slowest"),
            }
        if not out.is_file():
            tail = "\n".join(done.stderr.splitlines()[-TRACEBACK_LINES:])
            return {
                "passed": False,
                "seconds": round(time.perf_counter() - start, 2),
                "error": f"the notebook's process ended without a record:\n{tail}",
            }
        return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="STEM", help="these notebooks only")
    parser.add_argument("--budget", choices=("tiny", "full"), default="tiny")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per notebook")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.one is not None:  # the child process
        record = run_one(args.one.resolve(), args.record.with_suffix(".progress"))
        from companion.bench import hardware

        record["hardware"] = hardware()
        args.record.write_text(json.dumps(record))
        return 0

    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    if args.only:
        known = {path.stem: path for path in paths}
        unknown = sorted(set(args.only) - set(known))
        if unknown:
            parser.error(f"--only: no notebook named {unknown}; expected some of {sorted(known)}")
        paths = [known[stem] for stem in args.only]

    results = json.loads(args.out.read_text()) if args.out.is_file() else {}
    results["benchmark"] = "device_notebooks"
    devices = results.setdefault("devices", {})
    for path in paths:  # this process never opens the device: each child does, in turn
        record = _run_in_process(path, args.budget, args.timeout)
        record["measured"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        record["compilation_cache"] = compilation_cache()
        head = record.pop("hardware", None)
        device = (head["devices"] or [head["backend"]])[0] if head else "unknown"
        entry = devices.setdefault(device, {"notebooks": {}})
        if entry.get("budget") not in (None, args.budget):
            entry["notebooks"] = {}  # rows of another budget are not comparable
        if head:
            entry.update(hardware=head)
        entry["budget"] = args.budget
        entry["notebooks"][path.stem] = record
        existing = {p.stem for p in NOTEBOOKS.glob("*.ipynb")}
        entry["notebooks"] = {k: v for k, v in sorted(entry["notebooks"].items()) if k in existing}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")
        verdict = "passed" if record["passed"] else "FAILED"
        print(f"{path.stem}: {verdict} in {record['seconds']:.0f} s", flush=True)
        if not record["passed"]:
            print(record["error"], flush=True)
    rows = [r for entry in devices.values() for r in entry["notebooks"].values()]
    return 0 if all(r["passed"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
