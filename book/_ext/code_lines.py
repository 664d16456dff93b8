"""Code boxes that wrap on a phone with a visible continuation.

Every line of a highlighted code box (code cells, their printed output, literal blocks) is
drawn inside ``<span class="cl">``, and a line indented by N spaces carries ``style="--i:N"``.
On a desktop the spans change nothing. On a narrow screen ``book/_static/book.css`` wraps
long lines instead of making the reader scroll the box sideways, and draws each wrapped part
indented four columns deeper than the line it continues (a hanging indent), so a continuation
never looks like a statement of its own. Copying a box copies the code unchanged: the spans
add no text.
"""

from __future__ import annotations

import html
import re

from pygments.formatters import HtmlFormatter
from sphinx.application import Sphinx

_TAG = re.compile(r"<[^>]*>")


def indent_of(line: str) -> int:
    """The number of leading spaces of an HTML-highlighted ``line`` (tags removed)."""
    text = html.unescape(_TAG.sub("", line))
    return len(text) - len(text.lstrip(" "))


class LineFormatter(HtmlFormatter):
    """Pygments' HTML formatter with every source line in ``<span class="cl">``."""

    def wrap(self, source):
        return super().wrap(self._lines(source))

    @staticmethod
    def _lines(source):
        for is_line, text in source:
            if not is_line:
                yield is_line, text
                continue
            body, end = (text[:-1], "\n") if text.endswith("\n") else (text, "")
            indent = indent_of(body)
            style = f' style="--i:{indent}"' if indent else ""
            yield 1, f'<span class="cl"{style}>{body}</span>{end}'


def _use_line_formatter(app: Sphinx) -> None:
    highlighter = getattr(app.builder, "highlighter", None)
    if highlighter is not None and getattr(highlighter, "dest", "html") == "html":
        highlighter.formatter = LineFormatter


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", _use_line_formatter)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
