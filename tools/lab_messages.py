"""The words the lab's copies add to a notebook, for the gettext catalogue ``lab``.

``tools/make_lab.py`` writes student copies whose solution cells are stubs: a first line, and
a hint (a solution cell's ``hint`` metadata, or :data:`MESSAGES` ``"hint"``);
``tools/reader_notebooks.py`` fills a glued figure the book's run does not have with a
placeholder. Those texts are written here and in the notebooks in English; their translations
are the catalogue ``locales/<language>/LC_MESSAGES/lab.po``, which ``make catalogues`` keeps in
step (:func:`template`), so that a reworded hint turns its translation fuzzy, as the prose does.
A copy in a language takes each text's translation, or the English where it has none.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

from book_title import book_title  # tools/, beside this file

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LOCALES = ROOT / "locales"
#: The lab's own words, in English.
MESSAGES = {
    "stub": "# Exercises: replace this cell with your solutions.",
    "hint": (
        "Write your solutions to the exercises above in this cell. The checks in "
        "companion.checks say what is wrong, not only that it is wrong."
    ),
    "no_figure": "(a number from the book's run)",
}


def hints(folder: Path = NOTEBOOKS) -> list[tuple[str, int, str]]:
    """(notebook, cell number, hint) of every solution cell's ``hint`` in the English
    notebooks of ``folder``."""
    found = []
    for path in sorted(folder.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for number, cell in enumerate(cells, 1):
            hint = cell.get("metadata", {}).get("hint")
            if hint:
                found.append((path.name, number, hint))
    return found


def template(folder: Path = NOTEBOOKS):
    """The lab's English texts as a Babel template catalogue (domain ``lab``): its own words
    and every solution cell's hint."""
    from babel.messages.catalog import Catalog

    catalog = Catalog(domain="lab", project=book_title(), fuzzy=False)
    if not folder.is_dir():  # no notebooks: no lab
        return catalog
    for key, text in MESSAGES.items():
        catalog.add(text, locations=[("tools/lab_messages.py", 1)], auto_comments=[key])
    for name, number, hint in hints(folder):
        catalog.add(hint, locations=[(f"notebooks/{name}", number)])
    return catalog


@functools.cache
def _translations(language: str, locales: Path = LOCALES) -> dict[str, str]:
    if language == "en":
        return {}
    from babel.messages.pofile import read_po

    po = locales / language / "LC_MESSAGES" / "lab.po"
    if not po.is_file():
        return {}
    with po.open("rb") as f:
        catalog = read_po(f)
    return {m.id: m.string for m in catalog if m.id and m.string and not m.fuzzy}


def translator(language: str) -> Callable[[str], str]:
    """``translate(text)``: ``text`` in ``language`` from the catalogue ``lab`` (the English
    where it has no reviewed translation)."""
    table = _translations(language)
    return lambda text: table.get(text, text)


def words(language: str) -> dict[str, str]:
    """:data:`MESSAGES` in ``language``."""
    translate = translator(language)
    return {key: translate(text) for key, text in MESSAGES.items()}
