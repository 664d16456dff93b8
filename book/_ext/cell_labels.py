"""The labels of folded code cells, in the page's language, and "Show solution" for solutions.

myst-nb folds a cell tagged ``hide-input`` (or ``hide-cell``, ``hide-output``) under a button
labelled "Show code cell source". An exercise's solution (a cell tagged ``solution``, see
``tools/make_lab.py``) is labelled as a solution instead, and on a page of the Japanese
edition every label is in Japanese. The labels are set on the cell before myst-nb wraps it
(its ``HideInputCells`` post-transform, priority 199), so the notebooks carry no labels.
"""

from __future__ import annotations

from book_messages import N_, _  # book/_ext: the words in the build's language
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

SOLUTION_TAG = "solution"
#: (show, hide) of a solution, translated on the page (``book_messages``)
SOLUTION = (N_("Show solution"), N_("Hide solution"))
#: (show, hide) of any other folded cell where the page's language has a translation of
#: them; elsewhere (in English) the cell keeps myst-nb's labels ("Show code cell source",
#: whose "{type}" myst-nb fills with "source", "output", "outputs" or "content")
# Translators: the button of a folded code cell (English pages keep myst-nb's
# "Show code cell source", "Show code cell output", ...).
CODE = (N_("Show code"), N_("Hide code"))


def labels(tags) -> tuple[str, str] | None:
    """(show, hide) for a folded cell with ``tags`` in the build's language; None: myst-nb's."""
    if SOLUTION_TAG in (tags or ()):
        return _(SOLUTION[0]), _(SOLUTION[1])
    translated = _(CODE[0]), _(CODE[1])
    return None if translated == CODE else translated


class CellLabels(SphinxPostTransform):
    default_priority = 150  # before myst-nb's HideInputCells (199) reads the labels
    formats = ("html",)

    def run(self, **kwargs) -> None:
        for node in self.document.findall(nodes.container):
            if node.get("nb_element") != "cell_code" or not node.get("hide_mode"):
                continue
            chosen = labels(node.get("cell_metadata", {}).get("tags"))
            if chosen is not None:
                node["prompt_show"], node["prompt_hide"] = chosen


def setup(app: Sphinx) -> dict:
    app.setup_extension("book_messages")
    app.add_post_transform(CellLabels)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
