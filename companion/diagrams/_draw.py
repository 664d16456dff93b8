"""Drawing primitives of the book's diagrams: a canvas in inches, boxes, arrows and labels.

Every diagram is drawn on one axes that covers the figure, in inches (``x`` to the right,
``y`` up), with the fonts and colours below, so that all diagrams look alike. Fonts are
large (:data:`SIZE` points, none under :data:`SMALL`) and figures at most
:data:`MAX_WIDTH` inches wide, so that a diagram scaled down to a phone's width stays
legible. The figure is white and opaque, with dark ink and light fills: the book's dark
mode shows images on a light backing, and Colab's dark theme shows them as they are.
"""

from __future__ import annotations

import io
from typing import NamedTuple

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path

#: Font sizes in points: box titles and labels, and the smallest text of any diagram.
SIZE, SMALL = 16.0, 14.0
#: Widest diagram, in inches: 500 px in the book (SVG at 96 px an inch), scaled by about
#: 0.7 on a 390 px phone, where the smallest text is then about 13 px.
MAX_WIDTH = 5.2
INK, MUTED, PAPER = "#1a1a1a", "#555555", "#ffffff"
#: (fill, edge) of a box by its role, the same in every diagram.
COLORS = {
    "agent": ("#d6e6f5", "#2a5d8f"),  # what acts or learns: agent, online network, devices
    "env": ("#fbe1c8", "#a85a12"),  # the environment and what it returns
    "data": ("#d8eed5", "#2e7433"),  # stored data: buffer, rollout, batches, parameters
    "compute": ("#e9def3", "#6a3f92"),  # a computation: target, loss, advantages, update
    "target": ("#fff3bf", "#8a6d00"),  # the target network, the target cell
    "plain": ("#f0f0f0", "#555555"),  # anything else
}
MONO = "DejaVu Sans Mono"


class Diagram(Figure):
    """A :class:`~matplotlib.figure.Figure` that also shows itself as SVG in Jupyter, so that
    the book's pages show it sharp at any width (myst-nb prefers SVG to PNG), its words in
    the reader's language, or in the book's build once in each edition's
    (:func:`companion.figure_words.editions`; each page keeps its own). ``boxes`` holds each
    :class:`Box` drawn on it, for the tests."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.boxes: list[Box] = []

    def svg(self, language: str = "en") -> str:
        """The diagram as SVG, its words in ``language`` (its texts drawn as paths), marked
        with its language (:func:`companion.figure_words.mark_svg`).

        Raises:
            ValueError: if ``language`` is not one of :data:`companion.language.LANGUAGES`.
        """
        from companion.figure_words import in_language, mark_svg

        buffer = io.StringIO()
        with in_language(self, language):
            with matplotlib.rc_context({"svg.hashsalt": "drl-jax-diagram", "svg.fonttype": "path"}):
                self.savefig(buffer, format="svg", facecolor=PAPER, metadata={"Date": None})
        return mark_svg(buffer.getvalue(), language)

    def _repr_svg_(self) -> str:
        from companion.language import current_language

        return self.svg(current_language())

    def _ipython_display_(self) -> None:
        from IPython.display import display

        from companion.figure_words import editions

        for language in editions():
            display({"image/svg+xml": self.svg(language)}, raw=True)


class Box(NamedTuple):
    """A drawn box: its patch, its text artists, its centre and size in inches."""

    patch: FancyBboxPatch
    texts: tuple
    x: float
    y: float
    w: float
    h: float

    @property
    def left(self) -> tuple[float, float]:
        return (self.x - self.w / 2, self.y)

    @property
    def right(self) -> tuple[float, float]:
        return (self.x + self.w / 2, self.y)

    @property
    def top(self) -> tuple[float, float]:
        return (self.x, self.y + self.h / 2)

    @property
    def bottom(self) -> tuple[float, float]:
        return (self.x, self.y - self.h / 2)

    def at(self, dx: float, dy: float) -> tuple[float, float]:
        """The point ``(dx, dy)`` from the centre, in units of half the width and height."""
        return (self.x + dx * self.w / 2, self.y + dy * self.h / 2)


def canvas(width: float, height: float):
    """A white :class:`Diagram` of ``width`` x ``height`` inches and its one axes, whose data
    coordinates are inches from the bottom-left corner. Returns ``(fig, ax)``."""
    if not 0 < width <= MAX_WIDTH:
        raise ValueError(f"width: expected at most {MAX_WIDTH} inches, got {width}")
    fig = Diagram(figsize=(width, height), dpi=100, facecolor=PAPER)
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0.0, width)
    ax.set_ylim(0.0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def label(ax, x: float, y: float, text: str, *, size: float = SMALL, color: str = INK, **kw):
    """A text centred at ``(x, y)`` (``ha``/``va`` to change); ``mono=True`` for code."""
    if kw.pop("mono", False):
        kw["family"] = MONO
    kw.setdefault("ha", "center")
    kw.setdefault("va", "center")
    return ax.text(x, y, text, fontsize=size, color=color, zorder=4, **kw)


def box(
    ax,
    x: float,
    y: float,
    w: float,
    h: float,
    title: str,
    sub: str | None = None,
    *,
    kind: str = "plain",
    size: float = SIZE,
    sub_size: float = SMALL,
    mono: bool = False,
    sub_mono: bool = False,
    bold: bool = True,
) -> Box:
    """A rounded box centred at ``(x, y)``, ``w`` x ``h`` inches, coloured by ``kind`` (a key
    of :data:`COLORS`), with a ``title`` and an optional second line ``sub``."""
    fill, edge = COLORS[kind]
    patch = FancyBboxPatch(
        (x - w / 2, y - h / 2),
        w,
        h,
        boxstyle="round,pad=0,rounding_size=0.08",
        facecolor=fill,
        edgecolor=edge,
        linewidth=1.8,
        zorder=2,
    )
    ax.add_patch(patch)
    weight = "bold" if bold else "normal"
    if sub is None:
        texts = (label(ax, x, y, title, size=size, weight=weight, mono=mono),)
    else:
        texts = (
            label(ax, x, y + 0.05, title, size=size, weight=weight, mono=mono, va="bottom"),
            label(ax, x, y - 0.05, sub, size=sub_size, mono=sub_mono, va="top"),
        )
    drawn = Box(patch, texts, x, y, w, h)
    ax.figure.boxes.append(drawn)
    return drawn


def arrow(
    ax,
    start: tuple[float, float],
    end: tuple[float, float],
    *,
    rad: float = 0.0,
    color: str = INK,
    dashed: bool = False,
    width: float = 1.8,
    head: bool = True,
) -> FancyArrowPatch:
    """An arrow from ``start`` to ``end`` (bent by ``rad``, as matplotlib's ``arc3``)."""
    patch = FancyArrowPatch(
        start,
        end,
        arrowstyle="-|>" if head else "-",
        mutation_scale=18,
        connectionstyle=f"arc3,rad={rad}",
        color=color,
        linewidth=width,
        linestyle=(0, (4, 3)) if dashed else "-",
        shrinkA=0,
        shrinkB=0,
        zorder=3,
    )
    ax.add_patch(patch)
    return patch


def path_arrow(ax, points, *, color: str = INK, dashed: bool = False) -> FancyArrowPatch:
    """An arrow along straight segments through ``points`` (an elbow arrow), head at the end."""
    patch = FancyArrowPatch(
        path=Path(points),
        arrowstyle="-|>",
        mutation_scale=18,
        color=color,
        linewidth=1.8,
        linestyle=(0, (4, 3)) if dashed else "-",
        joinstyle="miter",
        zorder=3,
    )
    ax.add_patch(patch)
    return patch
