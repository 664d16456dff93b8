"""The language of the package's messages to the reader: the exercises' self-checks.

English is the default. The Japanese notebooks choose Japanese in their setup cell, by the
environment variable ``COMPANION_LANGUAGE=ja``; :func:`set_language` chooses for the running
process and wins over the variable. The translations are the gettext catalogue ``checks``
(``locales/<language>/LC_MESSAGES/checks.po``, compiled into ``companion/locale``).
"""

from __future__ import annotations

import os

#: The languages the messages are written in: English, and the Japanese edition's.
LANGUAGES = ("en", "ja")
#: The environment variable read when :func:`set_language` has not been called.
VARIABLE = "COMPANION_LANGUAGE"
#: The environment variable the book's build sets ("1") in the kernels it executes.
BOOK_BUILD = "DRLJAX_BOOK_BUILD"

_chosen: str | None = None


def _valid(language: object, name: str) -> str:
    if not isinstance(language, str) or language not in LANGUAGES:
        raise ValueError(f"{name}: expected one of {', '.join(LANGUAGES)}, got {language!r}")
    return language


def set_language(language: str | None) -> None:
    """Write the self-checks' messages in ``language`` ("en" or "ja") from now on; None goes
    back to the environment variable ``COMPANION_LANGUAGE`` (English where it is unset).

    Raises:
        ValueError: if ``language`` is neither None nor one of :data:`LANGUAGES`.
    """
    global _chosen
    _chosen = None if language is None else _valid(language, "language")


def book_build() -> bool:
    """Whether this process executes a notebook for the book's build, which shows every
    edition from one execution: the build sets :data:`BOOK_BUILD` to "1" (``make book``,
    ``tools/execute_notebooks.py``; the tests that check the build's outputs too), and
    myst-nb, which keeps the outputs, is installed. Elsewhere (Colab, Jupyter, a course
    lab's machine with the book's packages) a notebook shows the reader's language only."""
    if os.environ.get(BOOK_BUILD, "").strip() != "1":
        return False
    try:
        import myst_nb  # noqa: F401
    except ImportError:
        return False
    return True


def current_language() -> str:
    """The language the messages are written in now: the one :func:`set_language` chose,
    else ``COMPANION_LANGUAGE``, else "en".

    Raises:
        ValueError: if ``COMPANION_LANGUAGE`` is set to a language not in :data:`LANGUAGES`.
    """
    if _chosen is not None:
        return _chosen
    value = os.environ.get(VARIABLE, "").strip()
    return _valid(value, VARIABLE) if value else "en"
