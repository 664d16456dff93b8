"""The quizzes' texts, for the gettext catalogue ``quizzes``, and the translated quizzes.

A chapter's quiz is ``notebooks/quizzes/<name>.json``, written in English: a list of
questions, each with its answers and their feedback (``companion.quiz``). Its translation,
``notebooks/quizzes/<language>/<name>.json``, is written from it and the catalogue
``locales/<language>/LC_MESSAGES/quizzes.po`` by ``make catalogues`` (:func:`write`), so that
an English question, answer or feedback changed without its translation being reviewed
shows as a fuzzy entry, as the prose does. Each text is a message in the context of its quiz
(``msgctxt`` is the quiz's name): the same English in two quizzes may read differently.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path

from book_title import book_title  # tools/, beside this file

ROOT = Path(__file__).resolve().parents[1]
QUIZZES = ROOT / "notebooks" / "quizzes"
#: The fields of a question, and of each of its answers, that are read.
QUESTION_FIELDS = ("question",)
ANSWER_FIELDS = ("answer", "feedback")


def texts(quiz: list[dict]) -> list[tuple[int, str]]:
    """(question number, text) of every text of ``quiz`` a reader reads, in order."""
    found = []
    for number, question in enumerate(quiz, 1):
        found += [(number, question[f]) for f in QUESTION_FIELDS if f in question]
        for answer in question.get("answers", []):
            found += [(number, answer[f]) for f in ANSWER_FIELDS if f in answer]
    return found


def template(folder: Path = QUIZZES):
    """The English quizzes' texts as a Babel template catalogue (domain ``quizzes``), each
    in the context of its quiz's name, with its question number."""
    from babel.messages.catalog import Catalog

    catalog = Catalog(domain="quizzes", project=book_title(), fuzzy=False)
    for path in sorted(folder.glob("*.json")):
        quiz = json.loads(path.read_text(encoding="utf-8"))
        for number, text in texts(quiz):
            catalog.add(text, locations=[(f"quizzes/{path.name}", number)], context=path.stem)
    return catalog


def translated(quiz: list[dict], name: str, translate: Callable[[str, str], str | None]):
    """``quiz`` with each text replaced by ``translate(text, name)``; a text it has no
    translation for stays English (the catalogue check reports it)."""
    out = copy.deepcopy(quiz)
    for question in out:
        for field in QUESTION_FIELDS:
            if field in question:
                question[field] = translate(question[field], name) or question[field]
        for answer in question.get("answers", []):
            for field in ANSWER_FIELDS:
                if field in answer:
                    answer[field] = translate(answer[field], name) or answer[field]
    return out


def dumps(quiz: list[dict]) -> str:
    """A quiz as the repository stores it."""
    return json.dumps(quiz, indent=1, ensure_ascii=False) + "\n"


def written(catalog, folder: Path = QUIZZES) -> dict[str, str]:
    """``{name: text}`` of every translated quiz that ``catalog`` (a Babel catalogue of the
    domain ``quizzes``: translated entries, fuzzy ones left out) gives."""

    def translate(text: str, name: str) -> str | None:
        message = catalog.get(text, context=name)
        return None if message is None or message.fuzzy or not message.string else message.string

    return {
        path.name: dumps(
            translated(json.loads(path.read_text(encoding="utf-8")), path.stem, translate)
        )
        for path in sorted(folder.glob("*.json"))
    }


def write(catalog, language: str, folder: Path = QUIZZES) -> list[Path]:
    """Write ``<folder>/<language>/<name>.json`` for every English quiz; returns the paths
    whose text changed."""
    changed = []
    for name, text in written(catalog, folder).items():
        path = folder / language / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed
