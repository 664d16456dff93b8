"""The words of the book's figures in each edition's language: plots, diagrams, players.

A figure is drawn in English: its titles, axis labels, legends and annotations, a diagram's
boxes and labels. The Japanese edition shows the same figure with each of those texts
translated through the gettext catalogue :data:`DOMAIN` (``locales/<language>/LC_MESSAGES/
figures.po``, compiled into ``companion/locale`` like the tables' words, so a notebook reads
it on Colab too). ``tools/editions.py catalogues`` extracts the English texts from the code
that draws them (``tools/figure_messages.py``): the literal texts given to matplotlib's text
setters in the English notebooks (``ax.set_title("...")``, ``label="..."``) and in
``companion/viz.py`` and ``companion/diagrams``. An f-string is one message whose figures
are named placeholders (``f"over {num_seeds} seeds"`` is ``"over {num_seeds} seeds"``), so a
drawn text ``"over 5 seeds"`` finds its translation with the figure filled in; a text found
in no message stays as it is.

:func:`in_language` draws a figure's texts in a language for as long as a ``with`` block
lasts; Japanese is drawn with IPAexGothic (the ``matplotlib-fontja`` package, a dependency of
the companion), the Latin letters and digits in the figure's own font. :func:`editions` says
which languages an output is made in: both in the book's build (one execution serves both
editions, and the build keeps each page's own), else the reader's.
"""

from __future__ import annotations

import contextlib
import functools
import gettext
import importlib.util
import logging
import re
from pathlib import Path

from companion.language import LANGUAGES, book_build, current_language

#: The gettext domain of the figures' words.
DOMAIN = "figures"
LOCALE = Path(__file__).resolve().parent / "locale"
#: The Japanese font, shipped by ``matplotlib-fontja``.
JAPANESE_FONT = "IPAexGothic"
_FIELD = re.compile(r"\{(\w+)\}")


def _check_language(language: object) -> str:
    if not isinstance(language, str) or language not in LANGUAGES:
        raise ValueError(f"language: expected one of {', '.join(LANGUAGES)}, got {language!r}")
    return language


def editions() -> tuple[str, ...]:
    """The languages a figure is output in: every edition's in the book's build
    (:func:`companion.language.book_build`: each page keeps its own,
    ``book/_ext/figure_widths.py``), else the reader's
    (:func:`companion.language.current_language`)."""
    return LANGUAGES if book_build() else (current_language(),)


@functools.cache
def _catalogue(language: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, LOCALE, languages=[language], fallback=True)


@functools.cache
def _patterns(language: str) -> tuple:
    """(regular expression, translation) of each message with placeholders, longest first."""
    catalogue = _catalogue(language)
    found = []
    for english, translated in getattr(catalogue, "_catalog", {}).items():
        if not isinstance(english, str) or not _FIELD.search(english):
            continue
        parts, seen = [], set()
        for i, piece in enumerate(_FIELD.split(english)):
            if i % 2 == 0:
                parts.append(re.escape(piece))
            elif piece in seen:
                parts.append(f"(?P={piece})")
            else:
                seen.add(piece)
                parts.append(f"(?P<{piece}>.+?)")
        found.append((re.compile("".join(parts), re.S), translated))
    return tuple(sorted(found, key=lambda p: -len(p[0].pattern)))


def _fill(text: str, values: dict) -> str:
    """``text`` with each ``{name}`` of ``values`` replaced (a literal brace, as in maths'
    ``$v_{{i}}$``, stays)."""
    return _FIELD.sub(lambda field: values.get(field[1], field[0]), text)


def translate(text: str, language: str) -> str:
    """``text`` (a figure's English text) in ``language``: its message's translation, a
    figure of an f-string filled in (itself translated where it is a message), else ``text``.

    Raises:
        TypeError: if ``text`` is not a ``str``.
        ValueError: if ``language`` is not one of :data:`companion.language.LANGUAGES`.
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    _check_language(language)
    if language == "en" or not text.strip():
        return text
    catalogue = _catalogue(language)
    found = catalogue.gettext(text)
    if found != text:
        return found
    for pattern, translated in _patterns(language):
        match = pattern.fullmatch(text)
        if match:
            values = {k: translate(v, language) for k, v in match.groupdict().items()}
            return _fill(translated, values)
    return text


@functools.cache
def japanese_font() -> str | None:
    """The family of the Japanese font (:data:`JAPANESE_FONT`), added to matplotlib's fonts
    from ``matplotlib-fontja``'s folder without importing it (an import would make it every
    figure's font); None where the package is not installed."""
    from matplotlib import font_manager

    spec = importlib.util.find_spec("matplotlib_fontja")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "fonts" / "ipaexg.ttf"
    if not path.exists():
        return None
    font_manager.fontManager.addfont(str(path))
    return JAPANESE_FONT


def _texts(fig) -> list:
    from matplotlib.text import Text

    return [t for t in fig.findobj(Text) if t.get_text()]


@contextlib.contextmanager
def in_language(fig, language: str):
    """Within the ``with`` block, ``fig``'s texts (titles, labels, legends, annotations) are
    in ``language`` (:func:`translate`), Japanese in :data:`JAPANESE_FONT` after the text's own
    font (before it in a text with maths); afterwards they are as before. English, or Japanese where the font is missing,
    changes nothing.

    Raises:
        TypeError: if ``fig`` is not a matplotlib ``Figure``.
        ValueError: if ``language`` is not one of :data:`companion.language.LANGUAGES`.
    """
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"fig: expected a matplotlib Figure, got {type(fig).__name__}")
    _check_language(language)
    font = None if language == "en" else japanese_font()
    if font is None:
        yield fig
        return
    saved, ticks = [], []
    for axis in (axis for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)):
        # tick labels in words (set_yticks(ticks, ["illegal", "legal"])) are made at each
        # draw by the axis's formatter: the axis gets fixed translated labels for the block
        english = [label.get_text() for label in axis.get_majorticklabels()]
        translated = [translate(text, language) for text in english]
        if translated != english:
            ticks.append((axis, axis.get_major_locator(), axis.get_major_formatter()))
            axis.set_ticks(axis.get_majorticklocs(), translated)
            for label in axis.get_majorticklabels():
                label.set_fontfamily([font, *label.get_fontfamily()])
    for text in _texts(fig):
        translated = translate(text.get_text(), language)
        if translated == text.get_text():
            continue
        family = text.get_fontfamily()
        saved.append((text, text.get_text(), family))
        text.set_text(translated)
        # mathtext draws its words in the first family only, so there Japanese comes first
        text.set_fontfamily([font, *family] if "$" in translated else [*family, font])
    # IPAexGothic has no bold: a bold Japanese text is drawn in its one weight, as meant
    fonts_log = logging.getLogger("matplotlib.font_manager")
    level = fonts_log.level
    fonts_log.setLevel(logging.ERROR)
    try:
        yield fig
    finally:
        fonts_log.setLevel(level)
        for text, english, family in saved:
            text.set_text(english)
            text.set_fontfamily(family)
        for axis, locator, formatter in ticks:
            axis.set_major_locator(locator)
            axis.set_major_formatter(formatter)


#: The comment a diagram's SVG carries (inside its ``<svg>`` element): its language and words.
SVG_MARK = "drljax:diagram"
_SVG_RECORD = re.compile(r"<!-- " + re.escape(SVG_MARK) + r" (\{.*?\}) -->")


def mark_svg(svg: str, language: str, alt: str = "") -> str:
    """``svg`` with a comment inside its ``<svg>`` element that records ``language`` and the
    words ``alt`` (:func:`svg_record` reads it).

    Raises:
        ValueError: if ``svg`` has no ``<svg>`` element, or ``language`` is not one of
            :data:`companion.language.LANGUAGES`.
    """
    import json

    _check_language(language)
    start = re.search(r"<svg\b[^>]*>", svg)
    if start is None:
        raise ValueError("svg: expected an SVG document with an <svg> element")
    record = json.dumps({"lang": language, "alt": alt}).replace("--", "- -")
    return f"{svg[: start.end()]}\n<!-- {SVG_MARK} {record} -->{svg[start.end() :]}"


def svg_record(svg: str) -> dict | None:
    """What :func:`mark_svg` recorded in ``svg`` (its language and words), or None."""
    import json

    if not isinstance(svg, str):
        raise TypeError(f"svg: expected the text of an SVG, got {type(svg).__name__}")
    found = _SVG_RECORD.search(svg[:4096])
    return json.loads(found.group(1)) if found else None


def N_(message: str) -> str:  # noqa: N802 (gettext's name for a marked, untranslated text)
    """``message`` unchanged: marks a constant for the extraction, translated with
    :func:`translate`."""
    return message


#: The words of matplotlib's animation player (``FuncAnimation.to_jshtml``): its buttons'
#: titles and its repetition modes.
PLAYER_WORDS = (
    N_("Decrease speed"),
    N_("First frame"),
    N_("Previous frame"),
    N_("Play backwards"),
    N_("Pause"),
    N_("Play"),
    N_("Next frame"),
    N_("Last frame"),
    N_("Increase speed"),
    N_("Repetition mode"),
    N_("Once"),
    N_("Loop"),
    N_("Reflect"),
)
_PLAYER_WORD = re.compile(
    r'(?P<attr>(?:title|aria-label)=")(?P<a>[^"]+)(?=")'
    r'|(?P<label><label for="_anim_radio\d_\w+">)(?P<b>[^<]+)(?=</label>)'
)


#: The marks around a player in one language, where a cell outputs one per edition.
_PLAYER_MARK = "<!-- drljax:player {language} -->"
_PLAYER_END = "<!-- /drljax:player -->"
_MARKED_PLAYER = re.compile(
    re.escape(_PLAYER_MARK).replace(r"\{language\}", r"(?P<language>[\w-]+)")
    + r"(?P<html>.*?)"
    + re.escape(_PLAYER_END),
    re.S,
)


def mark_player(html: str, language: str) -> str:
    """``html`` (one animation player) marked as drawn in ``language``, for
    :func:`keep_player`.

    Raises:
        TypeError: if ``html`` is not a ``str``.
        ValueError: if ``language`` is not one of :data:`companion.language.LANGUAGES`.
    """
    if not isinstance(html, str):
        raise TypeError(f"html: expected a str, got {type(html).__name__}")
    return _PLAYER_MARK.format(language=_check_language(language)) + html + _PLAYER_END


def keep_player(html: str, language: str) -> str:
    """``html`` with only the players marked in ``language`` (:func:`mark_player`) and what
    lies outside the marks; an output without marks is returned as it is.

    Raises:
        TypeError: if ``html`` is not a ``str``.
        ValueError: if ``language`` is not one of :data:`companion.language.LANGUAGES`.
    """
    if not isinstance(html, str):
        raise TypeError(f"html: expected a str, got {type(html).__name__}")
    _check_language(language)
    return _MARKED_PLAYER.sub(
        lambda match: match["html"] if match["language"] == language else "", html
    )


def translate_player(html: str, language: str) -> str:
    """``html`` with the words of each animation player in it (:data:`PLAYER_WORDS`: the
    buttons' titles and labels for screen readers, the repetition modes) in ``language``.

    Raises:
        TypeError: if ``html`` is not a ``str``.
        ValueError: if ``language`` is not one of :data:`companion.language.LANGUAGES`.
    """
    if not isinstance(html, str):
        raise TypeError(f"html: expected a str, got {type(html).__name__}")
    _check_language(language)
    if language == "en":
        return html

    def translated(match: re.Match) -> str:
        head, word = (match["attr"], match["a"]) if match["attr"] else (match["label"], match["b"])
        return head + (translate(word, language) if word in PLAYER_WORDS else word)

    return _PLAYER_WORD.sub(translated, html)
