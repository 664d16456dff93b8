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
