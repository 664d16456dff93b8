"""Execute notebooks the way the book build does, on the tiny training budget."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def execute(nb: nbformat.NotebookNode, cwd: Path, budget: str = "tiny", timeout: int = 600):
    """Run ``nb`` in place in a fresh ``python3`` kernel with ``DRLJAX_BUDGET=budget``."""
    old = os.environ.get("DRLJAX_BUDGET")
    os.environ["DRLJAX_BUDGET"] = budget  # inherited by the kernel process
    try:
        client = NotebookClient(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
        )
        client.execute()
    finally:
        if old is None:
            del os.environ["DRLJAX_BUDGET"]
        else:
            os.environ["DRLJAX_BUDGET"] = old
    return nb


def outputs(nb: nbformat.NotebookNode):
    """Yield ``(cell_index, output)`` for every output of every code cell."""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            for out in cell.get("outputs", []):
                yield i, out
