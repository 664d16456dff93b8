"""Each chapter's self-check quiz: load it, check it, show it with jupyterquiz.

A quiz is ``notebooks/quizzes/<chapter>.json`` in jupyterquiz's format, HTML texts: a list of
``{"question", "type": "multiple_choice", "answers": [{"answer", "correct", "feedback"}, ...]}``.
Its Japanese translation, ``notebooks/quizzes/ja/<chapter>.json``, has the same questions and
answers in the same order, with the same correct answers. One execution serves both editions of
the book: the output holds both quizzes, and the page shows the one in its own language.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from companion._validate import folder_and_parents

#: Where :func:`load_quiz` downloads a quiz from when no local copy exists (Colab).
QUIZ_URL = "https://raw.githubusercontent.com/deep-rl-in-jax/book/main/notebooks/quizzes"
#: How many questions a chapter's quiz has.
MIN_QUESTIONS, MAX_QUESTIONS = 4, 6
#: The languages of the quizzes: English first (the source), then its translations.
LANGUAGES = ("en", "ja")


def check_quiz(questions: Any, name: str = "quiz") -> None:
    """Check a quiz (decoded JSON, see the module): 4 to 6 questions, 2+ answers each, one correct.

    Every question, answer and feedback must be non-empty HTML (no Markdown backticks).

    Raises:
        TypeError: if ``questions`` or a question has the wrong type.
        ValueError: naming ``name`` and the question (1-based): a wrong number of questions, answers
            or correct answers, an unknown type, a missing or empty text, backticks, escaped HTML.
    """
    if not isinstance(questions, list):
        raise TypeError(f"{name}: expected a list of questions, got {type(questions).__name__}")
    if not MIN_QUESTIONS <= len(questions) <= MAX_QUESTIONS:
        raise ValueError(
            f"{name}: expected {MIN_QUESTIONS} to {MAX_QUESTIONS} questions, got {len(questions)}"
        )
    for i, q in enumerate(questions, start=1):
        where = f"{name}, question {i}"
        if not isinstance(q, dict) or not isinstance(q.get("answers"), list):
            raise TypeError(f"{where}: expected a dict with a list of 'answers'")
        if q.get("type") != "multiple_choice":
            raise ValueError(f"{where}: type {q.get('type')!r}, expected 'multiple_choice'")
        if not isinstance(q.get("question"), str) or not q["question"].strip():
            raise ValueError(f"{where}: the question text is empty")
        if len(q["answers"]) < 2:
            raise ValueError(f"{where}: expected at least 2 answers, got {len(q['answers'])}")
        correct = sum(a.get("correct") is True for a in q["answers"])
        if correct != 1:
            raise ValueError(f"{where}: expected exactly one correct answer, got {correct}")
        texts = [("question", q["question"])]
        for j, a in enumerate(q["answers"], start=1):
            for field in ("answer", "feedback"):
                if not isinstance(a.get(field), str) or not a[field].strip():
                    raise ValueError(f"{where}, answer {j}: '{field}' is missing or empty")
                texts.append((f"answer {j} {field}", a[field]))
        for what, text in texts:
            if re.search(r"&lt;/?[a-z]+&gt;", text):
                raise ValueError(
                    f"{where}: the {what} has an escaped HTML tag, which shows as text"
                )
            if "`" in text:
                raise ValueError(
                    f"{where}: the {what} has Markdown backticks, which jupyterquiz shows as "
                    "they are; write HTML (<code>...</code>)"
                )


def _language_path(chapter: str, language: str) -> str:
    if language not in LANGUAGES:
        raise ValueError(f"language: expected one of {LANGUAGES}, got {language!r}")
    return f"{chapter}.json" if language == "en" else f"{language}/{chapter}.json"


def find_quiz_file(
    chapter: str, start: str | os.PathLike | None = None, language: str = "en"
) -> Path | None:
    """``quizzes/<chapter>.json`` (``quizzes/ja/<chapter>.json`` for Japanese) next to the
    notebooks, searched for from ``start`` (default: the working directory) and its parents;
    ``None`` outside a checkout of the book.

    Raises:
        TypeError: if ``start`` is not a path.
        ValueError: if ``language`` is not one of :data:`LANGUAGES`.
    """
    name = _language_path(chapter, language)
    for folder in folder_and_parents(start):
        for candidate in (folder / "quizzes", folder / "notebooks" / "quizzes"):
            if (candidate / name).is_file():
                return candidate / name
    return None


def load_quiz(chapter: str, language: str = "en") -> list[dict]:
    """The checked quiz of ``chapter`` (a notebook's name, such as ``"07_dqn"``) in ``language``.

    Read from ``notebooks/quizzes`` in a checkout of the book; elsewhere (Colab) downloaded
    from :data:`QUIZ_URL`.

    Raises:
        ValueError: if ``chapter`` is not a plain name or ``language`` not one of
            :data:`LANGUAGES`.
        TypeError, ValueError: if the quiz fails :func:`check_quiz`.
        FileNotFoundError: if the quiz is neither local nor downloadable (the message says why).
    """
    import urllib.error
    import urllib.request

    if not isinstance(chapter, str) or not re.fullmatch(r"[A-Za-z0-9_]+", chapter):
        raise ValueError(f"chapter: expected a notebook name such as '07_dqn', got {chapter!r}")
    name = _language_path(chapter, language)
    path = find_quiz_file(chapter, language=language)
    if path is not None:
        questions = json.loads(path.read_text())
    else:
        url = f"{QUIZ_URL}/{name}"
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                questions = json.loads(response.read().decode())
        except urllib.error.HTTPError as exc:
            raise FileNotFoundError(
                f"chapter: no quiz {chapter!r} here or in the repository ({url} answered "
                f"HTTP {exc.code})"
            ) from exc
        except OSError as exc:
            raise FileNotFoundError(
                f"chapter: no local quiz {chapter!r}, and {url} could not be reached "
                f"(no network? {getattr(exc, 'reason', exc)})"
            ) from exc
    check_quiz(questions, name)
    return questions


def show_quiz(chapter: str) -> None:
    """Show the quiz of ``chapter`` with jupyterquiz (answers shuffled, feedback on click).

    In the book's build (``companion.language.book_build``) each language's quiz is shown in its own
    ``<div class="edition-text" lang="...">``, which the book's style shows on pages of its
    language only (``editions.css``, as for :func:`companion.glue.markdown`); a translation
    that cannot be loaded is left out. Elsewhere (Colab, Jupyter) the quiz is shown in the
    reader's language (``companion.set_language``; English where it has no translation).
    Where the English quiz cannot be loaded (Colab without network), prints why and that the
    book's web page shows it, instead of failing the notebook.

    Raises:
        TypeError, ValueError: if ``chapter`` is not a plain name or its quiz is malformed.
    """
    from IPython.display import HTML, Javascript, display
    from IPython.utils.capture import capture_output
    from jupyterquiz import display_quiz

    try:
        quizzes = [("en", load_quiz(chapter))]
    except FileNotFoundError:
        from companion.glue import markdown

        display(
            markdown(
                "The quiz cannot be shown here: its file is not beside the notebook and the "
                "network cannot be reached. The book's web page shows it."
            )
        )
        return
    for language in LANGUAGES[1:]:
        try:
            quizzes.append((language, load_quiz(chapter, language)))
        except FileNotFoundError:
            pass
    from companion.language import book_build, current_language

    if not book_build():  # the book's build: every edition's quiz, each page its own
        reader = [q for q in quizzes if q[0] == current_language()]
        quizzes = reader or quizzes[:1]
    for language, questions in quizzes:
        with capture_output() as shown:
            display_quiz(questions, shuffle_answers=True, max_width=800)
        for output in shown.outputs:
            if "application/javascript" in output.data:
                display(Javascript(output.data["application/javascript"]))
            else:
                html = output.data["text/html"]
                display(HTML(f'<div class="edition-text" lang="{language}">{html}</div>'))
