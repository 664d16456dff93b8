"""Write student and solution copies of the notebooks for a course lab.

Cells tagged ``solution`` are replaced, in the student copy, by a stub that raises
``NotImplementedError`` with a hint; cells tagged ``book-only``, which only check the book's
own results (a regression run, an assertion of what the prose claims), are left out of it;
every other cell is copied unchanged. The hint is the cell's ``hint`` metadata when it has
one. The stub loses the tags that hide a solution in the book (``hide-input``,
``hide-cell``), so that students see the cell they are to fill in.

The book's prose quotes numbers of its run with myst-nb's ``{glue:md}`name``` role, which
only the book's build fills in: Jupyter and Colab show the role itself. In both copies each
role is replaced by the number the book's last build glued (read from its execution cache,
``_build/.jupyter_cache``, as ``tools/reader_notebooks.py`` does for the reader's notebooks),
the number the reader of the HTML page sees. Without an executed copy of a notebook in the
cache (no ``make book`` yet, or the notebook changed since), its roles read "(a number from
the book's run)", and the script says so. A glued phrase (``companion.glue.words``) is given
in the copies' language.

With ``--language ja`` the copies are made from the Japanese notebooks,
``notebooks/ja/*.ipynb`` (``tools/translate_notebooks.py``: the book's Japanese prose, the same
code), into ``lab/ja/``; their stubs and placeholders are in Japanese, and a stub's hint is
the translation of the cell's English ``hint`` in the catalogue ``locales/ja/LC_MESSAGES/lab.po``
(``tools/lab_messages.py``). Their code, its
comments and its outputs are in English; the self-checks' messages are in Japanese (the
Japanese notebooks' setup cell sets ``COMPANION_LANGUAGE=ja``).

    python tools/make_lab.py [--out lab]   # writes lab/student/*.ipynb and lab/solutions/*.ipynb
    python tools/make_lab.py --language ja # writes lab/ja/student/ and lab/ja/solutions/
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))

import lab_messages  # noqa: E402  (tools/: the copies' words and their catalogue)
import reader_notebooks  # noqa: E402  (tools/: the book's figures, filled in)
from edition_notebooks import notebook_path  # noqa: E402  (book/_ext: notebooks/ja/<name>)
from reader_notebooks import (  # noqa: E402, F401  (in_language, glued_values: for the tests)
    CACHE,
    book_figures,
    glued_values,
    in_language,
    resolve_glue,
)

SOLUTION_TAG = "solution"
#: A cell that only checks the book's own results: the student copy leaves it out.
BOOK_ONLY_TAG = "book-only"
HIDING_TAGS = ("hide-input", "hide-cell")  # the book hides solutions; stubs stay visible
#: What a role reads as in English when the book's run of its notebook is not at hand.
NO_FIGURE = reader_notebooks.NO_FIGURE


def stub_source(hint: str, language: str = "en") -> str:
    return f"{lab_messages.words(language)['stub']}\nraise NotImplementedError({hint!r})\n"


def student_copy(nb: nbformat.NotebookNode, language: str = "en") -> nbformat.NotebookNode:
    """A copy of ``nb`` whose solution cells are stubs, in ``language`` (a cell's ``hint``
    translated by the catalogue ``lab``, kept in English where it has no translation), without
    the cells tagged :data:`BOOK_ONLY_TAG`; other cells are unchanged.

    Raises:
        ValueError: if a cell tagged ``solution`` is not a code cell.
    """
    student = copy.deepcopy(nb)
    translate = lab_messages.translator(language)
    for i, cell in enumerate(student.cells):
        if SOLUTION_TAG in cell.get("metadata", {}).get("tags", []):
            if cell.cell_type != "code":
                raise ValueError(f"cell {i} is tagged {SOLUTION_TAG!r} but is not a code cell")
            hint = translate(cell.metadata.get("hint", lab_messages.MESSAGES["hint"]))
            cell.source = stub_source(hint, language)
            cell.metadata["tags"] = [
                t for t in cell.metadata["tags"] if t not in (SOLUTION_TAG, *HIDING_TAGS)
            ]
            cell.metadata["tags"].append("exercise")
            cell.outputs = []
            cell.execution_count = None
    student.cells = [
        c for c in student.cells if BOOK_ONLY_TAG not in c.get("metadata", {}).get("tags", [])
    ]
    return student


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--language", choices=sorted(reader_notebooks.EDITIONS), default="en")
    parser.add_argument("--out", type=Path, help="default: lab, or lab/<language>")
    parser.add_argument(
        "--cache", type=Path, default=CACHE, help="the book build's execution cache"
    )
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    language = args.language
    if args.out is None:
        args.out = ROOT / "lab" if language == "en" else ROOT / "lab" / language
    paths = args.notebooks or [
        ROOT / notebook_path(f"notebooks/{p.name}", language)
        for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
    ]
    if not paths:
        print("no notebooks found", file=sys.stderr)
        return 1
    absent = [p for p in paths if not p.is_file()]
    if absent:
        print(f"no {absent[0]}: python tools/editions.py notebooks writes it", file=sys.stderr)
        return 1
    for folder in ("student", "solutions"):
        (args.out / folder).mkdir(parents=True, exist_ok=True)
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        # the English notebook's run: both editions show the one execution
        english = ROOT / "notebooks" / path.name
        values, when = book_figures(path.name, args.cache) if english.is_file() else ({}, None)
        missing = resolve_glue(nb, values, language)
        if missing:
            why = "no executed copy in the cache" if when is None else "not glued by the run"
            print(
                f"{path.name}: {len(missing)} glued number(s) read "
                f"{lab_messages.words(language)['no_figure']!r} ({why}; run make book first)",
                file=sys.stderr,
            )
        stubs = sum(SOLUTION_TAG in c.metadata.get("tags", []) for c in nb.cells)
        dropped = sum(BOOK_ONLY_TAG in c.metadata.get("tags", []) for c in nb.cells)
        nbformat.write(student_copy(nb, language), args.out / "student" / path.name)
        nbformat.write(nb, args.out / "solutions" / path.name)
        print(
            f"{path.name}: {stubs} solution cell(s) replaced by stubs, "
            f"{dropped} {BOOK_ONLY_TAG} cell(s) left out"
        )
    print(f"wrote {args.out / 'student'} and {args.out / 'solutions'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
