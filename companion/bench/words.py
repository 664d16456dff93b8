"""The words of the benchmark tables (:mod:`companion.bench.tables`) in each language.

The tables are written in English: every header, sentence and row label is a message of the
gettext domain :data:`DOMAIN`, ``_(message, language)`` (a figure is a named placeholder,
``{ratio}``, filled in after translation). The translations live with the book's others, in
``locales/<language>/LC_MESSAGES/companion.po``: ``tools/editions.py catalogues`` extracts the
messages from ``companion/bench/*.py`` with Babel and updates that catalogue (a changed
English text turns its translation fuzzy), and ``tests/book/test_editions.py`` refuses it
incomplete or out of step.

The tables are made in a notebook's kernel, on Colab too, where neither Sphinx nor Babel need
be installed, and in both languages in one process (``glue.markdown(en=..., ja=...)``). So the
package ships the compiled catalogue, ``companion/locale/<language>/LC_MESSAGES/
companion.mo`` (package data, written from the ``.po`` by the catalogue step and committed;
``tests/book/test_extension_messages.py`` checks that it holds exactly the ``.po``'s
translations), which Python's own :mod:`gettext` reads for the language each call names.
"""

from __future__ import annotations

import functools
import gettext
import re
from pathlib import Path
from typing import Any

#: The languages a table can be written in: English, and the Japanese edition's.
LANGUAGES = ("en", "ja")
#: The gettext domain of the tables' words, and the package's folder of compiled catalogues.
DOMAIN = "companion"
LOCALE = Path(__file__).resolve().parents[1] / "locale"


def N_(message: str) -> str:  # noqa: N802 (gettext's name for a marked, untranslated text)
    """``message`` unchanged: marks a constant for the extraction, translated with ``_``."""
    return message


POST_TASKS = {
    "post-medium": N_("post's maze, 4 pairs"),
    "post-medium-9": N_("post's maze, 9 pairs"),
    "book-medium": N_("book's maze, 9 pairs"),
}
#: Row labels the results hold (a benchmark's variant or configuration), translated in the
#: catalogue; a label not listed here is shown as the result names it.
LABELS = (
    N_("post"),
    N_("book"),
    N_("this book"),
    N_("the post"),
    # source_posts: the post's PPO with one change, and its DQN with CartPole-v1's rules
    N_("mask fixed (-inf in the loss)"),
    N_("value broadcast fixed"),
    N_("all 9 pairs drawn"),
    N_("post on the book's medium maze"),
    N_("CartPole-v1 reward and truncation"),
    # dqn_stability: chapter 7's configuration and each lever taken away
    N_("chapter"),
    N_("without LayerNorm"),
    N_("1 gradient step per iteration"),
    N_("batch 64"),
    N_("constant learning rate"),
    N_("Polyak τ = 0.005 every step"),
    N_("buffer 10,000"),
    # dqn_stability's grid: the target networks
    N_("no target network"),
    N_("copy every 10"),
    N_("copy every 200"),
    N_("Polyak, lag of a copy every 10"),
    N_("Polyak, lag of a copy every 200"),
)


def _check_language(language: Any) -> str:
    if language not in LANGUAGES:
        raise ValueError(f"language: expected one of {LANGUAGES}, got {language!r}")
    return language


@functools.cache
def _catalogue(language: str) -> gettext.NullTranslations:
    """``language``'s compiled catalogue (English: none, the messages as they are)."""
    return gettext.translation(DOMAIN, LOCALE, languages=[language], fallback=True)


def _(message: str, language: str) -> str:
    """``message`` (its English) in ``language``; the English where it has no translation."""
    return _catalogue(_check_language(language)).gettext(message)


def ngettext(singular: str, plural: str, n: int, language: str) -> str:
    """The form of ``singular``/``plural`` for ``n`` things, in ``language``."""
    return _catalogue(_check_language(language)).ngettext(singular, plural, n)


def _label(text: str, language: str) -> str:
    return _(text, language) if text in LABELS else text


def _tasks(language: str) -> dict:
    return {task: _(name, language) for task, name in POST_TASKS.items()}


def _of(k: Any, n: Any, language: str) -> str:
    """``"k of n"`` in ``language``."""
    return _("{k} of {n}", language).format(k=k, n=n)


def _of_text(text: Any, language: str) -> str:
    """A result's ``"k of n"`` in ``language``."""
    found = re.fullmatch(r"(\d+) of (\d+)", str(text))
    return _of(found.group(1), found.group(2), language) if found else str(text)


def _not_reached(language: str) -> str:
    return _("not reached", language)


def _count(value: Any, language: str, fmt: str = "{:,}") -> str:
    return _not_reached(language) if value is None else fmt.format(value)


def _envs(n: Any, language: str) -> str:
    """``"1 env"``, ``"16 envs"`` in ``language`` (``n`` as a result's key, a string)."""
    count = int(n) if str(n).isdigit() else 2
    return ngettext("{n} env", "{n} envs", count, language).format(n=n)


def _seconds(value: Any, language: str) -> str:
    return _not_reached(language) if value is None else f"{value:.1f}"
