"""Student copies: solution cells become stubs, glued figures are filled in, the code is unchanged."""

import ast
import re
import subprocess
import sys

import nbformat
import pytest
from notebook_runner import NOTEBOOKS, ROOT

sys.path.insert(0, str(ROOT / "tools"))
from make_lab import BOOK_ONLY_TAG, HIDING_TAGS, SOLUTION_TAG, student_copy  # noqa: E402


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_chapter_has_solutions_and_the_student_copy_stubs_them(path):
    nb = nbformat.read(path, as_version=4)
    student = student_copy(nb)
    solution_cells = [
        i for i, c in enumerate(nb.cells) if SOLUTION_TAG in c.metadata.get("tags", [])
    ]
    assert solution_cells, f"{path.name} has no cell tagged {SOLUTION_TAG!r}"
    kept = [
        (i, c) for i, c in enumerate(nb.cells) if BOOK_ONLY_TAG not in c.metadata.get("tags", [])
    ]
    assert [c.id for _, c in kept] == [c.id for c in student.cells]
    for (i, orig), stu in zip(kept, student.cells):
        if i in solution_cells:
            assert "raise NotImplementedError(" in stu.source
            assert orig.source not in stu.source
            assert "exercise" in stu.metadata["tags"]
        else:
            assert stu == orig
    assert "raise NotImplementedError(" not in nb.cells[solution_cells[0]].source  # untouched


def test_cells_that_only_check_the_books_results_are_left_out_of_the_student_copy():
    """Chapter 9's regression run of the saved configuration (about 10 s on the tiny budget)
    and its assertion about the untrained network's outputs check the book, not the student:
    the student copy leaves them out, the solutions keep them, and a book-only cell is never
    an exercise's cell."""
    nb = nbformat.read(ROOT / "notebooks" / "09_generalising.ipynb", as_version=4)
    book_only = [c.id for c in nb.cells if BOOK_ONLY_TAG in c.metadata.get("tags", [])]
    assert book_only == ["gen-g02", "8cd5b669"]
    student = student_copy(nb)
    assert len(student.cells) == len(nb.cells) - 2
    assert not {c.id for c in student.cells} & set(book_only)
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            tags = cell.metadata.get("tags", [])
            if BOOK_ONLY_TAG in tags:
                assert cell.cell_type == "code" and SOLUTION_TAG not in tags, (path.name, cell.id)
                assert "glue(" not in cell.source, (path.name, cell.id)  # the prose needs it


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_solutions_are_hidden_with_their_outputs_and_stubs_are_shown(path):
    nb = nbformat.read(path, as_version=4)
    student = student_copy(nb)
    for orig, stu in zip(nb.cells, student.cells):
        if SOLUTION_TAG in orig.metadata.get("tags", []):
            # hide-cell hides the outputs with the code: printed answers give nothing away
            assert (
                "hide-cell" in orig.metadata["tags"] and "hide-input" not in orig.metadata["tags"]
            )
            assert not set(HIDING_TAGS) & set(stu.metadata["tags"])


def test_stub_drops_every_hiding_tag():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["hide-cell", SOLUTION_TAG]}),
            nbformat.v4.new_code_cell(
                "y = 2", metadata={"tags": ["hide-input", SOLUTION_TAG, "keep"]}
            ),
            nbformat.v4.new_code_cell("z = 3", metadata={"tags": ["hide-cell"]}),
        ]
    )
    student = student_copy(nb)
    assert student.cells[0].metadata["tags"] == ["exercise"]
    assert student.cells[1].metadata["tags"] == ["keep", "exercise"]
    assert student.cells[2] == nb.cells[2]  # not a solution: unchanged, still hidden


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_student_copy_runs_up_to_its_first_stub(path, executed_notebook):
    """Before its first stub a student copy holds the chapter's own cells but the book-only
    ones, so the chapter's execution on the tiny budget (shared with tests/book/test_notebooks.py)
    runs the student copy's cells up to there: they must reach the stub without an error. No
    cell the student copy keeps reads a name that only a book-only cell binds. Nothing before
    the stub may depend on the folder it runs from (student copies run from lab/student/),
    and the stub raises NotImplementedError."""
    nb = nbformat.read(path, as_version=4)
    student = student_copy(nb)
    first_stub = next(
        i for i, c in enumerate(student.cells) if "exercise" in c.metadata.get("tags", [])
    )
    kept = [c for c in nb.cells if BOOK_ONLY_TAG not in c.metadata.get("tags", [])]
    assert [c.source for c in student.cells[:first_stub]] == [c.source for c in kept[:first_stub]]
    bound_by_book_only = set()
    for cell in nb.cells:
        if BOOK_ONLY_TAG in cell.metadata.get("tags", []):
            bound_by_book_only |= set(_bindings(cell.source))
        elif cell.cell_type == "code":
            bound_by_book_only -= set(_bindings(cell.source))
            names = [
                n for n in ast.walk(ast.parse(_python(cell.source))) if isinstance(n, ast.Name)
            ]
            stored = {n.id for n in names if not isinstance(n.ctx, ast.Load)}
            used = {n.id for n in names if isinstance(n.ctx, ast.Load)} - stored
            assert not used & bound_by_book_only, (path.name, cell.id, used & bound_by_book_only)
    before = {c.id for c in student.cells[:first_stub]}
    ran = executed_notebook(path)
    code_before = [
        c
        for c in ran.cells
        if c.id in before
        and c.cell_type == "code"
        and "skip-execution" not in c.metadata.get("tags", [])
    ]  # a skip-execution cell (a live widget) runs in Jupyter only, never in a build
    assert code_before and all(c.execution_count is not None for c in code_before)
    assert not any(o.output_type == "error" for c in code_before for o in c.outputs)
    assert not any("../" in c.source for c in code_before), "a relative path breaks in lab/student"
    with pytest.raises(NotImplementedError):
        exec(compile(student.cells[first_stub].source, f"{path.stem} stub", "exec"), {})


@pytest.mark.subprocess
def test_make_lab_writes_both_copies(tmp_path):
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "make_lab.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    for path in NOTEBOOKS:
        student = nbformat.read(tmp_path / "student" / path.name, as_version=4)
        solutions = nbformat.read(tmp_path / "solutions" / path.name, as_version=4)
        source = nbformat.read(path, as_version=4)
        assert [c.source for c in solutions.cells if c.cell_type == "code"] == [
            c.source for c in source.cells if c.cell_type == "code"
        ]
        assert any("NotImplementedError" in c.source for c in student.cells)
        for copy in (student, solutions):  # Jupyter would show the role, not the figure
            assert not any("{glue:" in c.source for c in copy.cells if c.cell_type == "markdown")


def test_glued_figures_are_filled_in_from_the_books_run():
    from make_lab import NO_FIGURE, glued_values, resolve_glue

    executed = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("glue(rate=...)")
    prefix = "application/papermill.record/"
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={prefix + "text/markdown": "55.8%", prefix + "text/plain": "<Markdown>"},
            metadata={"scrapbook": {"name": "rate", "mime_prefix": prefix}},
        ),
        nbformat.v4.new_output("stream", text="printed, not glued"),
    ]
    executed.cells = [cell]
    assert glued_values(executed) == {"rate": "55.8%"}

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("It solves {glue:md}`rate` in {glue:md}`secs` s."),
        nbformat.v4.new_code_cell("print('{glue:md}`rate`')"),  # code is left alone
    ]
    missing = resolve_glue(nb, glued_values(executed))
    assert nb.cells[0].source == f"It solves 55.8% in {NO_FIGURE} s."
    assert nb.cells[1].source == "print('{glue:md}`rate`')"
    assert missing == ["secs"]


CHECK_CALL = re.compile(r"\b((?:companion\.checks\.)?check_\w+)\(")


def _python(source: str) -> str:
    """A cell's code as IPython runs it (its magics turned into calls)."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def _bindings(source: str) -> dict[str, ast.stmt]:
    """``{name: statement}`` for every top-level name a cell binds (IPython's magics read as
    IPython reads them)."""
    found = {}
    for node in ast.parse(_python(source)).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                found[(alias.asname or alias.name).split(".")[0]] = node
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        found[name.id] = node
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_check_the_text_calls_runs_in_the_student_copy(path):
    """A check that the prose calls, as written (``check_x(answer)`` or
    ``companion.checks.check_x(answer)``), is bound in the student copy by a cell that is not
    a stub, before the stub the student writes the answer in; running that cell's import
    gives the companion's check."""
    import companion.checks

    student = student_copy(nbformat.read(path, as_version=4))
    bound: dict[str, ast.stmt] = {}
    pending: list[tuple[int, str]] = []  # (markdown cell, call as written)
    for i, cell in enumerate(student.cells):
        if cell.cell_type == "markdown":
            pending += [(i, call) for call in CHECK_CALL.findall(cell.source)]
        elif "exercise" in cell.metadata.get("tags", []):
            for where, call in pending:
                head = call.split(".")[0]
                assert head in bound, (
                    f"{path.name}: cell {where} tells students to call {call}(...), but in the "
                    f"student copy no cell before the stub (cell {i}) binds {head!r}"
                )
                namespace: dict = {}
                exec(compile(ast.Module([bound[head]], []), path.name, "exec"), namespace)
                function = namespace[head]
                for part in call.split(".")[1:]:
                    function = getattr(function, part)
                assert function is getattr(companion.checks, call.rpartition(".")[2]), call
            pending = []
        elif cell.cell_type == "code":
            bound.update(_bindings(cell.source))
    assert not pending, f"{path.name}: checks named after the last stub: {pending}"


EXERCISE_ITEM = re.compile(r"^(\d+)\.\s+(.*?)(?=^\d+\.\s|^#|\Z)", re.MULTILINE | re.DOTALL)


def exercise_items(nb) -> list[tuple[str, str]]:
    """``[(number, text)]``: every numbered item under an "Exercises" or "Find the bug"
    heading of the notebook's Markdown."""
    items, inside = [], False
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for block in re.split(r"^(?=#{2,3} )", cell.source, flags=re.MULTILINE):
            heading = block.splitlines()[0] if block.startswith("#") else None
            if heading is not None:
                inside = bool(re.match(r"#{2,3} (Exercises|Find the bug)", heading))
            if inside:
                items += [(m[1], m[2]) for m in EXERCISE_ITEM.finditer(block)]
    return items


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_exercise_names_its_check(path):
    """Each exercise tells the student which check to run on the answer, as a call."""
    items = exercise_items(nbformat.read(path, as_version=4))
    assert items, f"{path.name}: no numbered exercises under an Exercises heading"
    unchecked = [number for number, text in items if not CHECK_CALL.search(text)]
    assert not unchecked, f"{path.name}: exercises without a check call: {unchecked}"
