"""How long a student copy runs before its first exercise, on the lab's tiny budget.

``make lab`` writes student copies (``tools/make_lab.py``: every solution cell replaced by a
stub that raises ``NotImplementedError``). A student who opens one runs the chapter's cells
from the top; the first stub stops "Run all". This script does the same for each chapter:
it makes the student copy, runs it in a fresh kernel with ``DRLJAX_BUDGET=tiny`` (the setting
the teacher's guide offers for a shorter lab) until the stub raises, and records the seconds
that took and the slowest cells on the way (the teacher's guide shows the table).

    python benchmarks/lab_times.py [--quick] [--out benchmarks/results/lab_times.json]

``--quick`` runs chapter 1 only. ``--only STEM [STEM ...]`` times the named notebooks again
and keeps the other chapters' rows of the committed JSON, dropping rows of notebooks that no
longer exist; each row records the date it was measured (``measured``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _cell_seconds(cell) -> float | None:
    """Seconds between a cell's start and its reply (nbclient's ``record_timing``)."""
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return None
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def time_to_first_exercise(path: Path, timeout: int = 1200) -> dict:
    """Run ``path``'s student copy on the tiny budget up to its first stub.

    Returns ``{"seconds", "cells", "slowest": [{"id", "seconds", "first_line"}]}``: each slow
    cell named by nbformat's cell id, which stays when cells are added or left out above it
    (an index would name another cell then), and its first line.

    Raises:
        RuntimeError: if a cell before the stub raises, or the stub does not.
    """
    sys.path.insert(0, str(ROOT / "tools"))
    from make_lab import student_copy

    nb = student_copy(nbformat.read(path, as_version=4))
    first = next(i for i, c in enumerate(nb.cells) if "exercise" in c.metadata.get("tags", []))
    nb.cells = nb.cells[: first + 1]
    os.environ["DRLJAX_BUDGET"] = "tiny"
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as exc:
        if "NotImplementedError" not in str(exc):
            raise RuntimeError(
                f"{path.name}: a cell before the first exercise raised: {exc}"
            ) from exc
    else:
        raise RuntimeError(f"{path.name}: the first stub did not raise")
    seconds = time.perf_counter() - start
    timed = [(c.id, _cell_seconds(c), c.source) for c in nb.cells[:first] if c.cell_type == "code"]
    slowest = sorted((t for t in timed if t[1] is not None), key=lambda t: -t[1])[:3]
    return {
        "seconds": seconds,
        "cells": len(timed),
        "slowest": [
            {"id": j, "seconds": s, "first_line": src.strip().splitlines()[0][:80]}
            for j, s, src in slowest
        ],
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="chapter 1 only")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "lab_times.json")
    parser.add_argument(
        "--only", nargs="+", metavar="STEM", help="time these notebooks; keep the other rows"
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from measure import result_header

    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    stems = [p.stem for p in paths]
    chapters, kept_from = {}, None
    if args.only:
        unknown = sorted(set(args.only) - set(stems))
        if unknown:
            raise SystemExit(f"--only: no notebook named {unknown}; the notebooks are {stems}")
        if args.quick:
            raise SystemExit("--only: times chapters at the lab's budget; it excludes --quick")
        old = json.loads(args.out.read_text())
        kept_from = old["date"]
        chapters = {
            stem: {"measured": row.get("measured", old["date"]), **row}
            for stem, row in old["chapters"].items()
            if stem in stems
        }
        paths = [p for p in paths if p.stem in args.only]
    elif args.quick:
        paths = paths[:1]
    header = result_header("lab_times", args.quick)
    for path in paths:
        chapters[path.stem] = {"measured": header["date"], **time_to_first_exercise(path)}
        print(f"{path.stem}: {chapters[path.stem]['seconds']:.0f} s", flush=True)
    chapters = {stem: chapters[stem] for stem in stems if stem in chapters}
    result = {**header, "budget": "tiny", "chapters": chapters}
    if kept_from:
        result["rows_kept_from"] = kept_from
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
