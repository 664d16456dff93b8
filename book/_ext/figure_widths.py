"""Figures that fit the reader's screen, and stay legible on it.

A phone's text column is 358 px wide (:data:`companion.figures.PHONE_COLUMN_PX`). Every
figure a notebook cell outputs fits the column it is drawn in, and never shows its type
under :data:`companion.figures.MIN_FONT_PX` (10 px):

- A matplotlib figure shown with ``companion.figures.show_panels`` comes as one PNG per
  panel, each recording its figure, row and smallest type ``F`` px (:func:`panel_record`).
  The panels of a figure go in a ``div.figure-panels``, one ``div.figure-row`` per row of
  the figure (a flex box that wraps), each panel in a ``div.figure-panel`` that may shrink
  from its width ``W`` to ``L = W * min(1, 10 / F)``, where its type is 10 px, and no
  further, and grows in proportion to ``W`` (so the panels of a row keep one scale and one
  height): on a desktop a row's panels stand side by side, shrunk together where the row
  is wider than the column; on a phone a panel that would shrink past ``L`` beside its
  neighbour wraps below it (:func:`panel_style`). Each panel carries ``data-font-px`` and
  ``data-width``, which the site check reads to measure the type as drawn.
- Other PNG outputs and the SVG diagrams of ``companion.diagrams`` (drawn with type for a
  0.7 scale) take their own width, shrunk to the column where that is narrower.
- matplotlib's animations (``to_jshtml``) get the width of their first frame, shrunk to the
  column; ``companion.viz`` records their smallest type on the image.

One execution serves both editions, so a figure's words are output in each language
(``companion.figure_words``): a panel's PNG records its language, a diagram's SVG carries it
in a comment (:data:`companion.figure_words.SVG_MARK`). Each edition's pages keep the images
of their own language and drop the others' before Sphinx copies them
(:func:`output_language`), so a page weighs what one language's figures weigh; a panel's
recorded words become its alternative text, and a cell's own alternative text
(``mystnb.image.alt``) is put in the page's language. An animation comes as one player per
language, each marked with it (``companion.figure_words.mark_player``): a page keeps its
language's player (``keep_player``), whose controls are in that language.
"""

from __future__ import annotations

import base64
import re
import struct
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.images import get_image_size

from companion.figure_words import keep_player, svg_record, translate, translate_player
from companion.figures import MIN_FONT_PX, panel_record

#: Where myst-nb writes the images that executed cells output.
OUTPUTS = "jupyter_execute"


def figure_width(pixels: int) -> str:
    """The CSS width of an output image ``pixels`` wide that is not a panel: its own width,
    shrunk to the column where that is narrower."""
    return f"min(100%, {pixels}px)"


#: The SVG diagrams shrink the same way: their type is drawn for it.
diagram_width = figure_width


def legible_width(pixels: int, font_px: float | None) -> float:
    """The narrowest a panel ``pixels`` wide whose smallest type is ``font_px`` may be drawn:
    where that type is :data:`MIN_FONT_PX` (its own width if it is smaller already; half of
    it for a panel without type)."""
    if not font_px:
        return pixels / 2
    return pixels * min(1.0, MIN_FONT_PX / font_px)


def panel_style(pixels: int, font_px: float | None) -> str:
    """The flex item style of a panel ``pixels`` wide in a figure whose smallest type is
    ``font_px``: its basis and least width where its type is 10 px, its most its own width,
    and it grows in proportion to its width."""
    least = round(legible_width(pixels, font_px), 1)
    return (
        f"flex: {pixels} {pixels} {least}px; min-width: min(100%, {least}px); "
        f"max-width: {pixels}px;"
    )


def output_language(path: Path) -> str | None:
    """The language whose words an output image (a panel's PNG, a diagram's SVG) is drawn
    in, or None for an image that records none (it serves every edition)."""
    if path.suffix.lower() == ".png":
        record = panel_record(path.read_bytes())
    elif path.suffix.lower() == ".svg":
        record = svg_record(path.read_text(encoding="utf-8", errors="replace"))
    else:
        return None
    return record.get("lang") if record else None


def _language(app: Sphinx) -> str:
    return getattr(getattr(app, "config", None), "language", None) or "en"


def _drop_other_editions(app: Sphinx, doctree: nodes.document) -> None:
    """Remove the output images drawn in another language than the build's, and a cell
    output left empty by it."""
    language = _language(app)
    for image in list(doctree.findall(nodes.image)):
        uri = image.get("uri", "")
        if OUTPUTS not in Path(uri).parts:
            continue
        found = output_language(Path(app.srcdir) / uri)
        if found is None or found == language:
            continue
        node = image.parent if isinstance(image.parent, nodes.reference) else image
        parent = node.parent
        parent.remove(node)
        while parent is not None and not parent.children and parent.parent is not None:
            parent, child = parent.parent, parent
            parent.remove(child)


class figure_panels(nodes.General, nodes.Element):
    """A figure's panels (``div.figure-panels``), its rows and each panel: a ``div`` with the
    node's classes, ``style`` and ``data`` attributes."""


def _visit_div(self, node: figure_panels) -> None:
    attributes = {f"data-{k}": v for k, v in node.get("data", {}).items()}
    if node.get("style"):
        attributes["style"] = node["style"]
    self.body.append(self.starttag(node, "div", "", **attributes))


def _depart_div(self, node: figure_panels) -> None:
    self.body.append("</div>")


#: A to_jshtml animation's image, and the first frame its script puts in it.
ANIMATION_IMAGE = re.compile(r'<img id="(_anim_img\w+)"([^>]*)>')
FIRST_FRAME = re.compile(r'frames\[0\] = "data:image/png;base64,([A-Za-z0-9+/]{32})')


def png_width(head: bytes) -> int | None:
    """The width of a PNG from its first 24 bytes, or None if they are not a PNG's."""
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">I", head[16:20])[0]


def size_animations(html: str) -> str:
    """``html`` with each animation's image sized to its first frame, shrunk to the column."""

    def sized(match: re.Match) -> str:
        frame = FIRST_FRAME.search(html, match.end())
        width = frame and png_width(base64.b64decode(frame[1]))
        if not width or "style=" in match[2]:
            return match[0]
        style = f"width: {figure_width(width)};"
        return f'<img id="{match[1]}"{match[2]} class="cell-figure" style="{style}">'

    return ANIMATION_IMAGE.sub(sized, html)


def _panels(images: list[tuple[nodes.image, dict, int]]) -> figure_panels:
    """The ``div.figure-panels`` of one figure's panel images, row by row."""
    figure_font = min((r["font_px"] for _, r, _ in images if r.get("font_px")), default=None)
    box = figure_panels(classes=["figure-panels"])
    row = None
    for image, record, width in images:
        if row is None or record["row"] != row["data"]["row"]:
            row = figure_panels(classes=["figure-row"], data={"row": record["row"]})
            box += row
        image["classes"] += ["cell-figure", "no-scaled-link"]
        panel = figure_panels(
            classes=["figure-panel"],
            style=panel_style(width, figure_font),
            data={"width": width, "font-px": record.get("font_px") or ""},
        )
        panel += image
        row += panel
    return box


def _size_output_images(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    html = getattr(getattr(app, "builder", None), "format", "html") == "html"
    _drop_other_editions(app, doctree)
    figures: list[list] = []  # consecutive panel images of one figure, in one parent
    for image in list(doctree.findall(nodes.image)):
        uri = image.get("uri", "")
        if OUTPUTS not in Path(uri).parts or "width" in image:
            continue
        path = Path(app.srcdir) / uri
        size = get_image_size(str(path))
        if size is None:
            continue
        record = panel_record(path.read_bytes()) if uri.lower().endswith(".png") else None
        if image.get("alt"):  # a cell's own (mystnb.image.alt), in the catalogue figures
            image["alt"] = translate(image["alt"], _language(app))
        elif record and record.get("alt"):
            image["alt"] = record["alt"]
        if record is None or not html:
            image["width"] = figure_width(size[0])
            image["classes"].append("cell-figure")
            continue
        last = figures[-1][-1] if figures else None
        if (
            last is not None
            and last[0].parent is image.parent
            and last[1]["figure"] == record["figure"]
            and image.parent.index(image) == image.parent.index(last[0]) + 1
        ):
            figures[-1].append((image, record, size[0]))
        else:
            figures.append([(image, record, size[0])])
    for images in figures:
        first = images[0][0]
        parent, at = first.parent, first.parent.index(first)
        for image, _, _ in images:
            parent.remove(image)
        parent.insert(at, _panels(images))
    language = _language(app)
    for raw in list(doctree.findall(nodes.raw)):
        if "html" in raw.get("format", "") and "_anim_img" in raw.astext():
            html = translate_player(size_animations(keep_player(raw.astext(), language)), language)
            raw.replace(raw[0], nodes.Text(html))


def setup(app: Sphinx) -> dict:
    app.add_node(figure_panels, html=(_visit_div, _depart_div))
    app.connect("doctree-resolved", _size_output_images)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
