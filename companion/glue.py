"""Figures for a chapter's text, taken from the code that computed them.

A Markdown cell quotes a figure as ``{glue:md}`name``` and the code cell that computed it calls
``glue(name=text)``. The book's build (myst-nb's glue) pastes the text into the sentence, so
the prose says what this build's run, or the committed result it reads, says.

Words rather than figures ("lowers", a verdict) are glued in each of the book's languages,
``glue(verdict=words(en="...", ja="..."))``: the page shows the text in its own language (one
execution serves the English and the Japanese edition).

A Markdown output that is prose or a results table a reader must read (a caption, a table's
headers) is shown in both languages the same way, ``display(markdown(en=..., ja=...))``.

Where myst-nb is not installed (Colab), the Markdown cell shows the role as written; ``glue``
then shows the figures under the code cell that made them, one line, so that a reader can
read them there (words in English), and :func:`markdown` shows the English.
"""

from __future__ import annotations

import re
from typing import NamedTuple

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


def words(*, en: str, ja: str) -> Words:
    """A phrase to glue in English and in Japanese: ``glue(verdict=words(en=..., ja=...))``.

    Raises:
        TypeError: if ``en`` or ``ja`` is not a ``str``.
        ValueError: if either is empty, or holds Markdown or HTML markup (``<``, ``*``, a
            backtick), which an inline element would not render; if ``ja`` holds English
            words (:func:`english_words`) and no Japanese character.
    """
    for lang, text in (("en", en), ("ja", ja)):
        if isinstance(text, Words):
            continue
        if not isinstance(text, str):
            raise TypeError(f"words: {lang}: expected a str, got {type(text).__name__}")
        if not text.strip():
            raise ValueError(f"words: {lang}: the text is empty")
        if re.search(r"[<>*`]", text):
            raise ValueError(f"words: {lang}: plain text expected, got markup in {text!r}")
    if isinstance(ja, str) and english_words(ja) and not _JAPANESE.search(ja):
        raise ValueError(f"words: ja: expected Japanese, got {ja!r}")
    return Words(en, ja)


def markdown(*, en: str, ja: str):
    """A Markdown output (a caption, a results table) in English and in Japanese.

    In the book's build (myst-nb installed) the output holds both texts, each in a block
    ``<div class="edition-text" lang="...">`` that the book's style shows on pages of its
    language only; elsewhere (Colab, plain Jupyter) it is the English alone. Both texts
    should be built from the same formatted figures.

    Returns:
        an ``IPython.display.Markdown`` to ``display`` or to leave as a cell's last value.

    Raises:
        TypeError: if ``en`` or ``ja`` is not a ``str``.
        ValueError: if either is empty, or if ``ja`` holds no Japanese character.
    """
    from IPython.display import Markdown

    for lang, text in (("en", en), ("ja", ja)):
        if not isinstance(text, str):
            raise TypeError(f"markdown: {lang}: expected a str, got {type(text).__name__}")
        if not text.strip():
            raise ValueError(f"markdown: {lang}: the text is empty")
    if not _JAPANESE.search(ja):
        raise ValueError(f"markdown: ja: expected Japanese, got {ja[:60]!r}")
    try:
        import myst_nb  # noqa: F401  (the book's build)
    except ImportError:
        return Markdown(en)
    return Markdown(
        "\n\n".join(
            f'<div class="edition-text" lang="{lang}">\n\n{text.strip()}\n\n</div>'
            for lang, text in (("en", en), ("ja", ja))
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
                " which the Japanese edition would show as they are; give the phrase in both"
                " languages: glue(name=words(en=..., ja=...))"
            )
    from IPython.display import Markdown, display

    try:
        from myst_nb import glue as myst_glue
    except ImportError:  # Colab: show the figures where they were computed
        shown = {n: t.en if isinstance(t, Words) else t for n, t in texts.items()}
        display(Markdown("; ".join(f"`{n}`: {t}" for n, t in shown.items())))
        return
    for name, text in texts.items():
        markdown = text.markdown() if isinstance(text, Words) else text
        myst_glue(name, Markdown(markdown), display=False)
