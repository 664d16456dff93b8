"""Write student and solution copies of the notebooks for a course lab.

Cells tagged ``solution`` are replaced, in the student copy, by a stub that
raises ``NotImplementedError`` with a hint; every other cell is copied
unchanged. The hint is the cell's ``hint`` metadata when it has one. The stub
loses the tags that hide a solution in the book (``hide-input``, ``hide-cell``),
so that students see the cell they are to fill in.

    python tools/make_lab.py [--out lab]   # writes lab/student/*.ipynb and lab/solutions/*.ipynb
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
SOLUTION_TAG = "solution"
HIDING_TAGS = ("hide-input", "hide-cell")  # the book hides solutions; stubs stay visible
DEFAULT_HINT = (
    "Write your solutions to the exercises above in this cell. The checks in "
    "companion.checks say what is wrong, not only that it is wrong."
)


def stub_source(hint: str) -> str:
    return (
        "# Exercises: replace this cell with your solutions.\n"
        f"raise NotImplementedError({hint!r})\n"
    )


def student_copy(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` whose solution cells are stubs; other cells are unchanged.

    Raises:
        ValueError: if a cell tagged ``solution`` is not a code cell.
    """
    student = copy.deepcopy(nb)
    for i, cell in enumerate(student.cells):
        if SOLUTION_TAG in cell.get("metadata", {}).get("tags", []):
            if cell.cell_type != "code":
                raise ValueError(f"cell {i} is tagged {SOLUTION_TAG!r} but is not a code cell")
            cell.source = stub_source(cell.metadata.get("hint", DEFAULT_HINT))
            cell.metadata["tags"] = [
                t for t in cell.metadata["tags"] if t not in (SOLUTION_TAG, *HIDING_TAGS)
            ]
            cell.metadata["tags"].append("exercise")
            cell.outputs = []
            cell.execution_count = None
    return student


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "lab")
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb"))
    if not paths:
        print("no notebooks found", file=sys.stderr)
        return 1
    for folder in ("student", "solutions"):
        (args.out / folder).mkdir(parents=True, exist_ok=True)
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        stubs = sum(SOLUTION_TAG in c.metadata.get("tags", []) for c in nb.cells)
        nbformat.write(student_copy(nb), args.out / "student" / path.name)
        nbformat.write(nb, args.out / "solutions" / path.name)
        print(f"{path.name}: {stubs} solution cell(s) replaced by stubs")
    print(f"wrote {args.out / 'student'} and {args.out / 'solutions'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
