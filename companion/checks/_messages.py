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


def N_(message: str) -> str:  # noqa: N802 (gettext's name for a marked, untranslated text)
    """``message`` unchanged: marks a constant for the extraction, translated with ``_``."""
    return message
