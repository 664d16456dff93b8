"""Which chapters show committed benchmark results, read from the chapters themselves.

``{benchmark-chapters}`Chapters``` in a page becomes "Chapters 4, 6, 7, 9, 10, 11 and 12"
(each number a link to its chapter): the chapter notebooks whose code calls
``load_result`` or ``load_result_or_note`` (``companion.bench``), which read the results
committed in ``benchmarks/results/``. The role's text is the word put in front. A page that
uses the role is rebuilt whenever a chapter notebook changes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from book_messages import _  # book/_ext: the words in the build's language
from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxRole

LOADS = re.compile(r"\bload_result(?:_or_note)?\(")
CHAPTER = re.compile(r"^(\d+)_")


def benchmark_chapters(notebooks: Path) -> list[tuple[int, str]]:
    """``[(chapter number, docname)]`` of the notebooks in ``notebooks`` whose code cells load
    a committed benchmark result, in chapter order."""
    found = []
    for path in sorted(notebooks.glob("*.ipynb")):
        number = CHAPTER.match(path.name)
        cells = json.loads(path.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        if number and LOADS.search(code):
            found.append((int(number[1]), f"notebooks/{path.stem}"))
    return found


def _between(template: str) -> str:
    """The text between the two placeholders of ``template`` ("{a}, {b}" gives ", ")."""
    return template.split("}", 1)[1].rsplit("{", 1)[0]


def separators() -> tuple[str, str]:
    """(between two chapter numbers, before the last one) in the build's language."""
    # Translators: the separators of a list of chapter numbers ("4, 6 and 7"); only the text
    # between the two placeholders is used.
    return _between(_("{earlier}, {later}")), _between(_("{earlier} and {last}"))


class BenchmarkChapters(SphinxRole):
    def run(self):
        notebooks = Path(self.env.srcdir) / "notebooks"
        chapters = benchmark_chapters(notebooks)
        for path in notebooks.glob("*.ipynb"):
            self.env.note_dependency(str(path))
        lead = self.text.strip()
        if not chapters:
            return [nodes.Text(f"{lead} none")], []
        out = [nodes.Text(f"{lead} " if lead else "")]
        other, last = separators()
        for i, (number, docname) in enumerate(chapters):
            if i:
                out.append(nodes.Text(last if i == len(chapters) - 1 else other))
            link = pending_xref(
                refdoc=self.env.docname,
                reftarget="/" + docname,
                reftype="doc",
                refdomain="std",
                refexplicit=True,
                refwarn=True,
            )
            link += nodes.inline(text=str(number))
            out.append(link)
        return out, []


def setup(app: Sphinx) -> dict:
    app.setup_extension("book_messages")
    app.add_role("benchmark-chapters", BenchmarkChapters())
    return {"parallel_read_safe": True, "parallel_write_safe": True}
