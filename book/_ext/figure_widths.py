"""Figures that stay legible on a phone.

A matplotlib figure 11 inches wide is a PNG of 1,100 px; drawn at the width of a phone
(about 360 px) its 10-point labels are 4 px tall. Every image a notebook cell outputs gets
the class ``cell-figure`` and the width ``max(min(100%, W), 0.8 W)``, W its width in pixels:
its own width where that fits the column, and never less than 80% of it. On a desktop or a
tablet the theme's ``max-width: 100%`` still fits every figure to the column; on a phone
``book/_static/book.css`` lifts that limit, so a wide figure keeps 80% of its size (10-point
labels 11 px tall) and scrolls sideways inside its output box, and a small one keeps its own.
matplotlib's animations (``to_jshtml``) get the same width from their first frame. SVG
outputs, the book's diagrams, are the exception: they shrink to the column
(:func:`diagram_width`), since their type is drawn large enough for it.
"""

from __future__ import annotations

import base64
import re
import struct
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.images import get_image_size

#: The smallest share of its width a figure is drawn at on a phone.
FLOOR = 0.8
#: Where myst-nb writes the images that executed cells output.
OUTPUTS = "jupyter_execute"


def figure_width(pixels: int) -> str:
    """The CSS width of an output image ``pixels`` wide."""
    return f"max(min(100%, {pixels}px), {round(FLOOR * pixels)}px)"


def diagram_width(pixels: int) -> str:
    """The CSS width of an SVG output ``pixels`` wide (a diagram of ``companion.diagrams``):
    its own width, shrunk to the column where that is narrower. Vector drawings stay sharp
    when scaled, and the diagrams' type is sized to stay legible at a phone's width."""
    return f"min(100%, {pixels}px)"


#: A to_jshtml animation's image, and the first frame its script puts in it.
ANIMATION_IMAGE = re.compile(r'<img id="(_anim_img\w+)">')
FIRST_FRAME = re.compile(r'frames\[0\] = "data:image/png;base64,([A-Za-z0-9+/]{32})')


def png_width(head: bytes) -> int | None:
    """The width of a PNG from its first 24 bytes, or None if they are not a PNG's."""
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">I", head[16:20])[0]


def size_animations(html: str) -> str:
    """``html`` with each animation's image sized like an output figure."""

    def sized(match: re.Match) -> str:
        frame = FIRST_FRAME.search(html, match.end())
        width = frame and png_width(base64.b64decode(frame[1]))
        if not width:
            return match[0]
        return f'<img id="{match[1]}" class="cell-figure" style="width: {figure_width(width)};">'

    return ANIMATION_IMAGE.sub(sized, html)


def _size_output_images(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for image in doctree.findall(nodes.image):
        uri = image.get("uri", "")
        if OUTPUTS not in Path(uri).parts or "width" in image:
            continue
        size = get_image_size(str(Path(app.srcdir) / uri))
        if size is None:
            continue
        svg = uri.lower().endswith(".svg")
        image["width"] = diagram_width(size[0]) if svg else figure_width(size[0])
        image["classes"].append("cell-figure")
    for raw in list(doctree.findall(nodes.raw)):
        if "html" in raw.get("format", "") and "_anim_img" in raw.astext():
            raw.replace(raw[0], nodes.Text(size_animations(raw.astext())))


def setup(app: Sphinx) -> dict:
    app.connect("doctree-resolved", _size_output_images)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
