"""Figures for a chapter's text, taken from the code that computed them.

A Markdown cell quotes a figure as ``{glue:md}`name``` and the code cell that computed it calls
``glue(name=text)``. The book's build (myst-nb's glue) pastes the text into the sentence, so
the prose says what this build's run, or the committed result it reads, says.

Words rather than figures ("lowers", a verdict) are glued in each of the book's languages,
``glue(verdict=words("lowers"))``: the English is written in the notebook and its translations
are in the gettext catalogue :data:`DOMAIN` (``locales/<language>/LC_MESSAGES/glue.po``,
compiled into ``companion/locale``), which ``make catalogues`` fills from every ``words("...")``
and ``markdown("...")`` of the notebooks, so that a changed English phrase shows as a
translation to review. A phrase with figures names them as placeholders filled in each
language, ``words("{low} to {high}", low=low, high=high)``; a placeholder given a phrase of
:func:`words` takes its text in each language. The page shows the text in its own language
(one execution serves the English and the Japanese edition).

A Markdown output that is prose or a results table a reader must read (a caption, a table's
headers) is shown in both languages the same way, ``display(markdown("...", n=n))``; a text
that the package composes in each language (a table of ``companion.bench``) is given as
``markdown(en=..., ja=...)``.

Outside the book's build (Colab, Jupyter: :func:`companion.language.book_build`), the
Markdown cell shows the role as written; ``glue``
then shows the figures under the code cell that made them, one line, so that a reader can
read them there, and :func:`markdown` shows its text, both in the reader's language
(``companion.set_language``; English unless chosen).
"""

from __future__ import annotations

import functools
import gettext
import re
from pathlib import Path
from typing import NamedTuple

#: The gettext domain of the phrases the notebooks glue or show in each language.
DOMAIN = "glue"
LOCALE = Path(__file__).resolve().parent / "locale"

_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
#: Letters that are not English words in a glued figure: units and names both editions share.
SHARED_WORDS = frozenset("ms ns GB MB KB TB GiB MiB KiB nan NaN inf CPU GPU TPU JAX XLA".split())
_WORD = re.compile(r"[A-Za-z]{2,}")
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff01-\uff5e]")


def english_words(text: str) -> list[str]:
    """The English words in ``text``: runs of two or more ASCII letters outside inline code
    (backticks) and maths (``$...$``), other than :data:`SHARED_WORDS`.

    Raises:
        TypeError: if ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"english_words: text: expected a str, got {type(text).__name__}")
    plain = re.sub(r"`[^`]*`|\$[^$]*\$", " ", text)
    return [w for w in _WORD.findall(plain) if w not in SHARED_WORDS]


class Words(NamedTuple):
    """A glued phrase in each of the book's languages (see :func:`words`)."""

    en: str
    ja: str

    def markdown(self) -> str:
        """Both texts, each in an inline element marked with its language; the book's style
        (``editions.css``) shows the page's own."""
        return "".join(
            f'<span class="edition-text" lang="{lang}">{text}</span>'
            for lang, text in (("en", self.en), ("ja", self.ja))
        )


@functools.cache
def _catalogue(language: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, LOCALE, languages=[language], fallback=True)


def translation(text: str, language: str) -> str:
    """``text``'s translation into ``language`` in the catalogue :data:`DOMAIN` (``text``
    itself in English, or when the catalogue has none).

    Raises:
        TypeError: if ``text`` is not a ``str``.
        ValueError: if ``language`` is not one of ``companion.language.LANGUAGES``.
    """
    from companion.language import LANGUAGES

    if not isinstance(text, str):
        raise TypeError(f"translation: text: expected a str, got {type(text).__name__}")
    if language not in LANGUAGES:
        raise ValueError(f"translation: language: expected one of {LANGUAGES}, got {language!r}")
    return text if language == "en" else _catalogue(language).gettext(text)


def _in_languages(name: str, text, en, ja, values: dict) -> tuple[str, str]:
    """The English and the Japanese of ``name``'s arguments: ``text`` and its catalogue
    translation filled with ``values``, or ``en`` and ``ja`` as given."""
    if text is None:
        if values:
            raise TypeError(f"{name}: placeholders {sorted(values)} given without a text")
        return en, ja
    if en is not None or ja is not None:
        raise TypeError(f"{name}: expected a text or en= and ja=, not both")
    if not isinstance(text, str):
        raise TypeError(f"{name}: text: expected a str, got {type(text).__name__}")
    pair = []
    for language in ("en", "ja"):
        filled = {k: getattr(v, language) if isinstance(v, Words) else v for k, v in values.items()}
        try:
            pair.append(translation(text, language).format(**filled))
        except (KeyError, IndexError) as error:
            raise ValueError(
                f"{name}: {text!r}: no value for the placeholder {error} (give it as "
                f"{name}(text, name=value))"
            ) from None
    if english_words(text) and translation(text, "ja") == text:
        raise ValueError(
            f"{name}: {text!r} has no Japanese in the catalogue {DOMAIN!r}: run make catalogues"
            f" and translate it in locales/ja/LC_MESSAGES/{DOMAIN}.po"
        )
    return pair[0], pair[1]


def words(text: str | None = None, /, *, en=None, ja=None, **values) -> Words:
    """A phrase to glue in English and in Japanese: ``glue(verdict=words("lowers"))``, its
    Japanese from the catalogue :data:`DOMAIN`; with figures, ``words("{n} seeds", n=n)``.
    ``words(en=..., ja=...)`` pairs two texts that code composed in each language.

    Raises:
        TypeError: if the text is not a ``str``, or both a text and ``en``/``ja`` are given.
        ValueError: if a text is empty, or holds Markdown or HTML markup (``<``, ``*``, a
            backtick), which an inline element would not render; if a placeholder has no
            value; if the catalogue has no Japanese for the text, or ``ja`` holds English
            words (:func:`english_words`) and no Japanese character.
    """
    en, ja = _in_languages("words", text, en, ja, values)
    for lang, part in (("en", en), ("ja", ja)):
        if isinstance(part, Words):
            continue
        if not isinstance(part, str):
            raise TypeError(f"words: {lang}: expected a str, got {type(part).__name__}")
        if not part.strip():
            raise ValueError(f"words: {lang}: the text is empty")
        if re.search(r"[<>*`]", part):
            raise ValueError(f"words: {lang}: plain text expected, got markup in {part!r}")
    if isinstance(ja, str) and english_words(ja) and not _JAPANESE.search(ja):
        raise ValueError(f"words: ja: expected Japanese, got {ja!r}")
    return Words(en, ja)


def listing(items, *, conjunction: str = "and") -> Words:
    """``items`` (texts, or phrases of :func:`words`) listed in each language: "4, 6 and 7"
    in English, each language's separators and conjunction from the catalogue :data:`DOMAIN`
    (Japanese lists with the ideographic comma); ``conjunction="or"`` for "1,000 or 200".

    Raises:
        ValueError: if ``items`` is empty or ``conjunction`` is neither "and" nor "or".
    """
    items = list(items)
    if not items:
        raise ValueError("listing: items: expected at least one item")
    if conjunction not in ("and", "or"):
        raise ValueError(f"listing: conjunction: expected 'and' or 'or', got {conjunction!r}")
    texts = [x if isinstance(x, Words) else Words(str(x), str(x)) for x in items]
    if len(texts) == 1:
        return texts[0]
    earlier = texts[0]
    for item in texts[1:-1]:
        earlier = words("{earlier}, {later}", earlier=earlier, later=item)
    if conjunction == "and":
        return words("{earlier} and {last}", earlier=earlier, last=texts[-1])
    return words("{earlier} or {last}", earlier=earlier, last=texts[-1])


def markdown(text: str | None = None, /, *, en=None, ja=None, **values):
    """A Markdown output (a caption, a results table) in English and in Japanese:
    ``markdown("Mean return over {n} seeds", n=n)``, its Japanese from the catalogue
    :data:`DOMAIN`, or ``markdown(en=..., ja=...)`` for two texts composed in each language.

    In the book's build (``companion.language.book_build``) the output holds both texts, each in a block
    ``<div class="edition-text" lang="...">`` that the book's style shows on pages of its
    language only; elsewhere (Colab, plain Jupyter) it is the text in the reader's language
    (``companion.set_language``; English unless chosen). Both texts should be built from the
    same formatted figures.

    Returns:
        an ``IPython.display.Markdown`` to ``display`` or to leave as a cell's last value.

    Raises:
        TypeError: as :func:`words`; if ``en`` or ``ja`` is not a ``str``.
        ValueError: if either text is empty; if ``ja`` holds no Japanese character; as
            :func:`words` for a text's placeholders and translation.
    """
    from IPython.display import Markdown

    en, ja = _in_languages("markdown", text, en, ja, values)
    for lang, part in (("en", en), ("ja", ja)):
        if not isinstance(part, str):
            raise TypeError(f"markdown: {lang}: expected a str, got {type(part).__name__}")
        if not part.strip():
            raise ValueError(f"markdown: {lang}: the text is empty")
    if not _JAPANESE.search(ja):
        raise ValueError(f"markdown: ja: expected Japanese, got {ja[:60]!r}")
    from companion.language import book_build, current_language

    if not book_build():
        return Markdown(ja if current_language() == "ja" else en)
    return Markdown(
        "\n\n".join(
            f'<div class="edition-text" lang="{lang}">\n\n{part.strip()}\n\n</div>'
            for lang, part in (("en", en), ("ja", ja))
        )
    )


def glue(**texts: str | Words) -> None:
    """Make each ``name=text`` quotable in the chapter's Markdown as ``{glue:md}`name```.

    Args:
        **texts: Markdown text by name; each name lower-case letters, digits and ``_``. A
            figure is formatted here, where its precision can be seen
            (``glue(ratio=f"{r:.1f}")``), not in the sentence; words are given in each
            language with :func:`words`.

    Raises:
        TypeError: if a text is neither a ``str`` nor :func:`words`.
        ValueError: if no text is given or a text is empty; if a plain ``str`` holds English
            words (:func:`english_words`): the Japanese edition pastes the same text, so
            words go through :func:`words`.

    Source: myst-nb's ``glue`` (https://myst-nb.readthedocs.io/en/latest/render/glue.html).
    """
    if not texts:
        raise ValueError("glue: expected at least one name=text")
    for name, text in texts.items():
        if not _NAME.match(name):
            raise ValueError(f"glue: name {name!r}: expected lower-case letters, digits, _")
        if isinstance(text, Words):
            continue
        if not isinstance(text, str):
            raise TypeError(
                f"glue: {name}: expected the figure as formatted text (a str), got "
                f"{type(text).__name__}; format it here, e.g. f'{{x:.2f}}'"
            )
        if not text.strip():
            raise ValueError(f"glue: {name}: the text is empty")
        if english_words(text):
            raise ValueError(
                f"glue: {name}: {text!r} holds English words ({', '.join(english_words(text)[:3])}),"
                " which the Japanese edition would show as they are; give the phrase through"
                ' the catalogue: glue(name=words("..."))'
            )
    from IPython.display import Markdown, display

    from companion.language import book_build, current_language

    if not book_build():  # Colab, Jupyter: show the figures where they were computed
        language = current_language()
        shown = {n: getattr(t, language) if isinstance(t, Words) else t for n, t in texts.items()}
        display(Markdown("; ".join(f"`{n}`: {t}" for n, t in shown.items())))
        return
    from myst_nb import glue as myst_glue

    for name, text in texts.items():
        markdown = text.markdown() if isinstance(text, Words) else text
        myst_glue(name, Markdown(markdown), display=False)
