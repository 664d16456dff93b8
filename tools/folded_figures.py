"""No figure is folded away as code: a cell that draws a figure may fold its code
(``hide-input``), never the figure with it (``hide-cell``, ``hide-output``), since the prose
discusses the figure and a reader does not open "Show code cell content" to find it. An
exercise's solution (``solution``) folds whole, its figure with it: it is the answer.

Checked on an executed notebook (:func:`notebook_problems`: ``tests/book/test_notebooks.py`` on
each tiny-budget run) and on the built pages of both editions (:func:`site_problems`:
``.ci/check_site.py`` after ``make book``, which runs every notebook on its full budget).

    python tools/folded_figures.py [_build/html]
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The tags that fold a cell's output: its whole cell, or its output alone.
FOLDS = ("hide-cell", "hide-output")
#: What shows a figure in an output's HTML (a figure, a diagram, an animation's frames).
_DRAWN = re.compile(r"<(img|svg|video|canvas)\b", re.I)


def folds_its_output(tags) -> bool:
    """Whether a cell with ``tags`` hides its output behind a fold (a solution aside)."""
    return "solution" not in tags and any(t in tags for t in FOLDS)


def is_figure(output: dict) -> bool:
    """Whether a notebook ``output`` shows a figure: an image of any type, or HTML that
    draws one."""
    data = output.get("data", {})
    return any(k.startswith("image/") for k in data) or bool(
        _DRAWN.search("".join(data.get("text/html", "")))
    )


def notebook_problems(nb: dict) -> list[str]:
    """The cells of an executed notebook (nbformat's JSON) that fold a figure away."""
    problems = []
    for i, cell in enumerate(nb["cells"]):
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "code" and folds_its_output(tags):
            if any(is_figure(o) for o in cell.get("outputs", [])):
                problems.append(f"cell {i} ({', '.join(tags)}) folds a figure away")
    return problems


class _Cells(HTMLParser):
    """The cells of a built page (myst-nb's ``div.cell``, classed ``tag_<tag>``) that fold
    their output, and the figures drawn inside each."""

    def __init__(self):
        super().__init__()
        self.depth = 0  # open divs
        self.open = None  # (depth, tags) of the folded cell being read
        self.found = []  # (tags, figures)

    def handle_starttag(self, tag, attrs):
        if tag == "div":
            self.depth += 1
            classes = (dict(attrs).get("class") or "").split()
            tags = [c.removeprefix("tag_") for c in classes if c.startswith("tag_")]
            if self.open is None and "cell" in classes and folds_its_output(tags):
                self.open = (self.depth, tags)
                self.found.append((tags, 0))
        elif self.open is not None and tag in ("img", "svg", "video", "canvas"):
            tags, count = self.found[-1]
            self.found[-1] = (tags, count + 1)

    def handle_endtag(self, tag):
        if tag == "div":
            if self.open is not None and self.depth == self.open[0]:
                self.open = None
            self.depth -= 1


def page_problems(html: str) -> list[str]:
    """The cells of a built page that fold a figure away."""
    parser = _Cells()
    parser.feed(html)
    return [
        f"a cell tagged {', '.join(tags)} folds {count} figure(s) away"
        for tags, count in parser.found
        if count
    ]


def site_problems(site: Path) -> list[str]:
    """Every chapter page of every edition under ``site`` whose cells fold a figure away."""
    problems = []
    for page in sorted(site.glob("notebooks/*.html")) + sorted(site.glob("*/notebooks/*.html")):
        for problem in page_problems(page.read_text()):
            problems.append(f"{page.relative_to(site)}: {problem}")
    return problems


if __name__ == "__main__":
    found = site_problems(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "html")
    print("\n".join(found) or "no figure is folded away")
    sys.exit(1 if found else 0)
