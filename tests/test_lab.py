"""Student copies: solution cells become stubs, everything else is unchanged."""

import subprocess
import sys

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

from notebook_runner import NOTEBOOKS, ROOT, execute

sys.path.insert(0, str(ROOT / "tools"))
from make_lab import SOLUTION_TAG, student_copy  # noqa: E402


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_chapter_has_solutions_and_the_student_copy_stubs_them(path):
    nb = nbformat.read(path, as_version=4)
    student = student_copy(nb)
    solution_cells = [i for i, c in enumerate(nb.cells) if SOLUTION_TAG in c.metadata.get("tags", [])]
    assert solution_cells, f"{path.name} has no cell tagged {SOLUTION_TAG!r}"
    for i, (orig, stu) in enumerate(zip(nb.cells, student.cells)):
        if i in solution_cells:
            assert "raise NotImplementedError(" in stu.source
            assert orig.source not in stu.source
            assert "exercise" in stu.metadata["tags"]
        else:
            assert stu == orig
    assert len(student.cells) == len(nb.cells)
    assert nb.cells[solution_cells[0]].source != student.cells[solution_cells[0]].source  # nb untouched


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_student_copy_runs_up_to_its_first_stub(path):
    student = student_copy(nbformat.read(path, as_version=4))
    first_stub = next(i for i, c in enumerate(student.cells) if "exercise" in c.metadata.get("tags", []))
    with pytest.raises(CellExecutionError, match="NotImplementedError"):
        execute(student, cwd=path.parent)
    code_before = [c for c in student.cells[:first_stub] if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code_before)
    assert not any(o.output_type == "error" for c in code_before for o in c.outputs)


def test_make_lab_writes_both_copies(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "tools" / "make_lab.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True)
    for path in NOTEBOOKS:
        student = nbformat.read(tmp_path / "student" / path.name, as_version=4)
        solutions = nbformat.read(tmp_path / "solutions" / path.name, as_version=4)
        assert solutions == nbformat.read(path, as_version=4)
        assert any("NotImplementedError" in c.source for c in student.cells)
