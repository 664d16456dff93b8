"""Figures that fit the reader's screen: each panel of a matplotlib figure as a PNG of its own.

A figure of several panels saved as one PNG is as wide as all of them: a phone's column
(:data:`PHONE_COLUMN_PX`) shows an 11-inch figure of two panels at a third of its size, its
10-point labels under 5 px. :func:`show_panels` shows each panel (an ``Axes`` with its title,
labels and legend, and the colorbars and twin axes drawn beside it) as a PNG of its own, cut
from one drawing of the figure, so the panels of a row keep one height and line up. The book
lays them side by side where its column holds them and below one another where it does not
(``book/_ext/figure_widths.py``); Jupyter and Colab show them one under another.

Each PNG records in a text chunk (:data:`PANEL_KEY`) its figure, its row, its language, its
words (title and axis labels: the image's alternative text) and its smallest type in pixels: the book never draws a panel so small that this type is under
:data:`MIN_FONT_PX`, and the site check measures the type as a phone draws it
(``tools/measure_pages.py``). A figure is legible on a phone when ``font * min(1, 358 /
width) >= 10`` for each panel: 9-point type (12.5 px at 100 dpi) in a panel at most 447 px
(4.4 inches) wide, or 10-point type in one at most 497 px wide.

The words are drawn in each edition's language (:mod:`companion.figure_words`): in the
book's build :func:`show_panels` outputs the panels in English and again in Japanese, and
each edition's pages keep the PNGs of their own language; in Jupyter and Colab it shows the
reader's.
"""

from __future__ import annotations

import io
import json
import uuid
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # matplotlib is imported where it is used: the book's extensions read
    from matplotlib.figure import Figure  # the constants and records without it

#: The text column of a 390-px phone (the page's padding taken off), in CSS px.
PHONE_COLUMN_PX = 358
#: The smallest type, in CSS px, that a figure may show on a phone: an x-height of about
#: 5 px, 0.85 mm on a 390-px phone, about 10 minutes of arc at 30 cm: twice the size of a
#: letter at the limit of 20/20 vision, the reserve at which short labels read without
#: effort. It is also the size D3 and Vega-Lite draw axis labels at, on every screen.
MIN_FONT_PX = 10.0
#: The PNG text chunk that records a panel's figure, row and smallest type.
PANEL_KEY = "drljax:panel"
#: Margin kept around a panel's drawing, in inches.
PAD_INCHES = 0.05


def _check_figure(fig) -> Figure:
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    fig = plt.gcf() if fig is None else fig
    if not isinstance(fig, Figure):
        raise TypeError(f"fig: expected a matplotlib Figure, got {type(fig).__name__}")
    return fig


def smallest_font_px(artists, dpi: float) -> float | None:
    """The smallest type, in px at ``dpi``, of the visible non-empty texts in ``artists``
    (each searched through its children: tick labels, titles, legends, annotations)."""
    from matplotlib.text import Text

    if isinstance(dpi, bool) or not isinstance(dpi, (int, float)) or not dpi > 0:
        raise ValueError(f"dpi: expected a positive number, got {dpi!r}")
    sizes = [
        text.get_fontsize() * dpi / 72
        for artist in artists
        for text in artist.findobj(Text)
        if text.get_visible() and text.get_text().strip()
    ]
    return round(min(sizes), 2) if sizes else None


def _figure_texts(fig: Figure) -> list:
    """The figure's own texts and legends (a suptitle, ``fig.text``, ``fig.legend``)."""
    from matplotlib.text import Text

    own = [*fig.texts, *fig.legends]
    for name in ("_suptitle", "_supxlabel", "_supylabel"):
        text = getattr(fig, name, None)
        if text is not None:
            own.append(text)
    return [a for a in own if a.get_visible() and (not isinstance(a, Text) or a.get_text())]


def _gap(a, b) -> float:
    """The squared distance between two boxes (0 where they overlap)."""
    dx = max(a.x0 - b.x1, b.x0 - a.x1, 0)
    dy = max(a.y0 - b.y1, b.y0 - a.y1, 0)
    return dx * dx + dy * dy


def _panels(fig: Figure, renderer) -> list[list]:
    """The figure's axes grouped by panel: each subplot with the axes at its place (twins)
    and the axes without a place of their own (colorbars, insets) nearest to it."""
    axes = [ax for ax in fig.axes if ax.get_visible()]
    main = [ax for ax in axes if ax.get_subplotspec() is not None and not hasattr(ax, "_colorbar")]
    if not main:
        main = axes[:1]
    groups: dict[tuple, list] = {}
    for ax in main:
        groups.setdefault(tuple(np.round(ax.get_position().bounds, 4)), []).append(ax)
    panels = list(groups.values())
    for ax in axes:
        if not any(ax in panel for panel in panels):
            box = ax.get_window_extent(renderer)
            min(panels, key=lambda panel: _gap(panel[0].get_window_extent(renderer), box)).append(
                ax
            )
    return panels


def _rows(panels: list[list], renderer) -> list[list[list]]:
    """Panels in rows (top first), each row left to right: panels whose axes overlap in
    height share a row."""
    rows: list[list] = []
    for panel in sorted(panels, key=lambda p: -p[0].get_window_extent(renderer).y1):
        box = panel[0].get_window_extent(renderer)
        for row in rows:
            other = row[0][0].get_window_extent(renderer)
            overlap = min(box.y1, other.y1) - max(box.y0, other.y0)
            if overlap > 0.5 * min(box.height, other.height):
                row.append(panel)
                break
        else:
            rows.append([panel])
    return [sorted(row, key=lambda p: p[0].get_window_extent(renderer).x0) for row in rows]


def _panel_words(panel: list) -> str:
    """A panel's title and axis labels, one text: the image's alternative text."""
    ax = panel[0]
    parts = [ax.get_title(loc) for loc in ("left", "center", "right")]
    parts += [ax.get_ylabel(), ax.get_xlabel()]
    return "; ".join(" ".join(p.split()) for p in parts if p.strip())


def panel_pngs(fig: Figure | None = None, language: str = "en") -> list[bytes]:
    """The PNG of each panel of ``fig`` (the current figure when ``None``), rows top first,
    left to right, cut from one drawing at the figure's dpi, its words in ``language``
    (:func:`companion.figure_words.in_language`); each records its figure, row, language,
    words and smallest type (:data:`PANEL_KEY`).

    Raises:
        TypeError: if ``fig`` is not a matplotlib ``Figure``.
        ValueError: if ``language`` is not one of :data:`companion.language.LANGUAGES`.
        ValueError: a figure of several panels with a suptitle, ``fig.text`` or ``fig.legend``
            (no panel holds them: give the panel its title or legend), or with no axes.
    """
    from companion.figure_words import in_language

    fig = _check_figure(fig)
    if not fig.axes:
        raise ValueError("fig: the figure has no axes (no panel to show)")
    with in_language(fig, language):
        if language == "en":
            return _panel_pngs(fig, language)
        positions = [ax.get_position() for ax in fig.axes]
        try:
            _fit_words(fig)
            return _panel_pngs(fig, language)
        finally:
            for ax, position in zip(fig.axes, positions):
                ax.set_position(position)


def _fit_words(fig: Figure) -> None:
    """Lay ``fig`` out again (``tight_layout``) where its words, translated after the figure
    was laid out for the English ones, reach past the figure or into a neighbouring panel;
    a figure whose words fit keeps its layout."""
    import warnings

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    figure_box = fig.bbox
    boxes = [ax.get_tightbbox(renderer) for ax in fig.axes if ax.get_visible()]
    outside = any(
        b.x0 < figure_box.x0 - 0.5
        or b.x1 > figure_box.x1 + 0.5
        or b.y0 < figure_box.y0 - 0.5
        or b.y1 > figure_box.y1 + 0.5
        for b in boxes
    )
    overlap = any(
        a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
    )
    if (outside or overlap) and fig.get_layout_engine() is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # axes tight_layout cannot place keep theirs
            fig.tight_layout(pad=0.3)


def _panel_pngs(fig: Figure, language: str) -> list[bytes]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.transforms import Bbox
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    pixels = np.asarray(canvas.buffer_rgba())
    height, width = pixels.shape[:2]
    pad = PAD_INCHES * fig.dpi
    own = _figure_texts(fig)
    panels = _panels(fig, renderer)
    if len(panels) > 1 and own:
        names = ", ".join(repr(a.get_text()) if hasattr(a, "get_text") else "a legend" for a in own)
        raise ValueError(
            f"fig: figure-level text or legend ({names}) belongs to no panel; with several "
            "panels, draw it in one (its title, its legend)"
        )
    rows = _rows(panels, renderer)
    name = uuid.uuid4().hex[:12]
    boxes = {}
    for row in rows:
        for panel in row:
            boxes[id(panel)] = Bbox.union(
                [ax.get_tightbbox(renderer) for ax in panel]
                + [a.get_window_extent(renderer) for a in own]
            )
    fonts = {id(p): smallest_font_px([*p, *own], fig.dpi) for row in rows for p in row}
    pngs = []
    for r, row in enumerate(rows):
        top = max(boxes[id(p)].y1 for p in row) + pad  # display coordinates: y up
        bottom = min(boxes[id(p)].y0 for p in row) - pad
        y0, y1 = max(0, int(np.floor(height - top))), min(height, int(np.ceil(height - bottom)))
        for c, panel in enumerate(row):
            box = boxes[id(panel)]
            # half the gap to a neighbour at most, so no panel shows a piece of the next
            left = box.x0 - min(pad, (box.x0 - boxes[id(row[c - 1])].x1) / 2 if c else pad)
            right = box.x1 + min(
                pad, (boxes[id(row[c + 1])].x0 - box.x1) / 2 if c + 1 < len(row) else pad
            )
            x0, x1 = max(0, int(np.floor(left))), min(width, int(np.ceil(right)))
            info = PngInfo()
            record = {
                "figure": name,
                "row": r,
                "lang": language,
                "alt": _panel_words(panel),
                "font_px": fonts[id(panel)],
            }
            info.add_text(PANEL_KEY, json.dumps(record))
            out = io.BytesIO()
            Image.fromarray(pixels[y0:y1, x0:x1]).save(out, format="png", pnginfo=info)
            pngs.append(out.getvalue())
    return pngs


def show_panels(fig: Figure | None = None) -> None:
    """Show ``fig`` (the current figure when ``None``) one panel at a time, each a PNG of its
    own (:func:`panel_pngs`), and close it. A figure of one panel shows as one PNG, with its
    figure-level texts. The panels are shown in each language of
    :func:`companion.figure_words.editions`: the reader's, or in the book's build every
    edition's, one after the other (each page keeps its own).

    Raises:
        TypeError, ValueError: as :func:`panel_pngs`.
    """
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    from companion.figure_words import editions

    fig = _check_figure(fig)
    try:
        for language in editions():
            for png in panel_pngs(fig, language):
                display(Image(data=png, format="png"))
    finally:
        plt.close(fig)


def panel_record(png: bytes) -> dict | None:
    """What :func:`panel_pngs` recorded in a PNG (its figure, row, language, words and
    smallest type in px), or ``None`` for a PNG without the record.

    Raises:
        TypeError: if ``png`` is not bytes.
    """
    if not isinstance(png, (bytes, bytearray)):
        raise TypeError(f"png: expected the bytes of a PNG, got {type(png).__name__}")
    position = 8
    while position + 8 <= len(png):
        length = int.from_bytes(png[position : position + 4], "big")
        kind = png[position + 4 : position + 8]
        body = png[position + 8 : position + 8 + length]
        if kind == b"tEXt" and body.startswith(PANEL_KEY.encode() + b"\0"):
            return json.loads(body[len(PANEL_KEY) + 1 :].decode("latin-1"))
        if kind in (b"IDAT", b"IEND"):
            return None
        position += 12 + length
    return None
