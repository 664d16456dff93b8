"""Format the code cells of the notebooks the way the book prints them.

Every code cell is formatted with ruff at the line length of the book's pages (92
characters), with short calls on one line (no magic trailing commas).
A comment at the end of a statement that had to be split is moved onto its own line above
the statement, so that no call is broken around a comment. Cells with IPython magics (the
Colab setup cell) are left as they are. Tool directives (``# fmt: skip``, ``# noqa``,
``# type: ignore``) are not allowed in the notebooks: readers would see them.

    python tools/format_notebooks.py            # format every notebook in place
    python tools/format_notebooks.py --check    # exit 1 and name the cells that would change
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
LINE_LENGTH = 92
DIRECTIVE = re.compile(r"#\s*(fmt:\s*(skip|off|on)\b|noqa\b|type:\s*ignore\b)")
CLOSING_WITH_COMMENT = re.compile(r"^(\s*)([)\]}][)\]},]*)(\s+#.*)$")


def _ruff(code: str) -> str:
    command = [sys.executable, "-m", "ruff", "format", "--line-length", str(LINE_LENGTH)]
    command += ["--config", "format.skip-magic-trailing-comma=true"]
    command += ["--config", "lint.isort.split-on-trailing-comma=false"]
    command += ["--stdin-filename", "cell.py", "-"]
    run = subprocess.run(command, input=code, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise ValueError(run.stderr.strip())
    return run.stdout


def _lift_comments(code: str) -> str:
    """Move ``)  # comment`` comments above the statement whose call they split."""
    lines = code.split("\n")
    for i, line in enumerate(lines):
        match = CLOSING_WITH_COMMENT.match(line)
        if not match:
            continue
        depth, j = 0, i
        while j >= 0:  # find the line that opens the bracket this line closes
            depth += sum(lines[j].count(c) for c in ")]}") - sum(lines[j].count(c) for c in "([{")
            if depth <= 0:
                break
            j -= 1
        if j < 0:
            continue
        indent = re.match(r"\s*", lines[j]).group(0)
        comment = match.group(3).strip()
        lines[i] = match.group(1) + match.group(2)
        lines.insert(j, f"{indent}{comment}")
    return "\n".join(lines)


def format_cell(code: str) -> str:
    """The formatted source of one code cell (unchanged if it uses IPython magics)."""
    if not code.strip() or any(line.lstrip().startswith(("%", "!")) for line in code.split("\n")):
        return code
    formatted = _ruff(code)
    lifted = _lift_comments(formatted)
    if lifted != formatted:
        formatted = _ruff(lifted)
    return formatted.rstrip("\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report, do not write")
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb"))
    problems = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        changed = False
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if DIRECTIVE.search(cell.source):
                problems.append(
                    f"{path.name} cell {i}: a tool directive (# fmt:, # noqa, # type: ignore)"
                )
            new = format_cell(cell.source)
            if new != cell.source:
                changed = True
                problems.append(f"{path.name} cell {i}: not formatted")
                cell.source = new
        if changed and not args.check:
            nbformat.write(nb, path)
    for problem in problems:
        print(problem)
    return 1 if args.check and problems else 0


if __name__ == "__main__":
    sys.exit(main())
