"""The self-checks' messages in the reader's language (:mod:`companion.language`).

Every message a check prints or raises is English in the code, inside ``_("...")``, a value
it fills in being a named placeholder (``_("{call} should return {contract}").format(...)``):
the argument names, steps, values and shapes stay as they are. The translations are the
gettext catalogue ``checks``, ``locales/<language>/LC_MESSAGES/checks.po``, which
``tools/editions.py catalogues`` extracts from ``companion/checks/*.py`` with Babel and
compiles into the package (``companion/locale/<language>/LC_MESSAGES/checks.mo``), read here
with Python's gettext (on Colab too).
"""

from __future__ import annotations

import functools
import gettext
import re
from pathlib import Path

from companion.language import current_language

#: The gettext domain of the checks' messages, and the package's compiled catalogues.
DOMAIN = "checks"
LOCALE = Path(__file__).resolve().parents[1] / "locale"


@functools.cache
def _catalogue(language: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, LOCALE, languages=[language], fallback=True)


def _(message: str) -> str:
    """``message`` (its English) in the current language; the English where it has no
    translation."""
    return _catalogue(current_language()).gettext(message)


#: Japanese characters: kana, kanji, Japanese punctuation and full-width forms.
_JAPANESE = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\u3000-\u303f\uff01-\uff60"
#: Japanese punctuation, beside which Japanese writes no space.
_PUNCTUATION = (
    "\u3001\u3002\uff0c\uff0e\u300c\u300d\u300e\u300f\uff08\uff09\uff1a\uff1b\uff01\uff1f"
)
#: A half-width space between two Japanese characters, or beside Japanese punctuation.
_NO_SPACE = re.compile(
    f"(?<=[{_JAPANESE}]) (?=[{_JAPANESE}])|(?<=[{_PUNCTUATION}]) | (?=[{_PUNCTUATION}])"
)


#: The end of a Japanese sentence left open: a Japanese word or a closing bracket.
_OPEN_END = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff09\u300d]$")
#: The Japanese full stop.
_FULL_STOP = "\u3002"


def finish(message: str, *, sentence: bool = False) -> str:
    """``message``, composed of entries and the values they fill in, as the current language
    writes it. A translation keeps a space on each side of a placeholder, which its value
    needs where it is code, a number or a Latin word (a shape, ``float32``); in Japanese no
    space stands between two Japanese words, so where the value is Japanese (the word for
    an integer dtype) the space between them goes, and so does one beside Japanese
    punctuation (a closing bracket after a shape). A ``sentence`` (a failure's message,
    whose first line is what went wrong) ends its first line with the Japanese full stop
    where the English leaves the last clause without one. Examples: the language test,
    ``tests/checks/test_language.py``."""
    if current_language() != "ja":
        return message
    message = _NO_SPACE.sub("", message)
    if sentence:
        first, newline, rest = message.partition("\n")
        if _OPEN_END.search(first):
            message = first + _FULL_STOP + newline + rest
    return message


def N_(message: str) -> str:  # noqa: N802 (gettext's name for a marked, untranslated text)
    """``message`` unchanged: marks a constant for the extraction, translated with ``_``."""
    return message
