"""The labels of folded code cells, in the page's language, and "Show solution" for solutions.

myst-nb folds a cell tagged ``hide-input`` (or ``hide-cell``, ``hide-output``) under a button
labelled "Show code cell source". An exercise's solution (a cell tagged ``solution``, see
``tools/make_lab.py``) is labelled as a solution instead, and on a page of the Japanese
edition every label is in Japanese. The labels are set on the cell before myst-nb wraps it
(its ``HideInputCells`` post-transform, priority 199), so the notebooks carry no labels.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

SOLUTION_TAG = "solution"
#: language: ((show, hide) for a solution, (show, hide) for other folded cells or None to
#: keep myst-nb's, whose "{type}" becomes "source", "output", "outputs" or "content")
LABELS = {
    "en": (("Show solution", "Hide solution"), None),
    "ja": (("解答を表示", "解答を隠す"), ("コードを表示", "コードを隠す")),
}


def labels(tags, language: str) -> tuple[str, str] | None:
    """(show, hide) for a folded cell with ``tags`` on a page in ``language``; None: myst-nb's.

    An unknown language gets the English labels.
    """
    solution, other = LABELS.get(language, LABELS["en"])
    return solution if SOLUTION_TAG in (tags or ()) else other


class CellLabels(SphinxPostTransform):
    default_priority = 150  # before myst-nb's HideInputCells (199) reads the labels
    formats = ("html",)

    def run(self, **kwargs) -> None:
        language = self.app.config.language or "en"
        for node in self.document.findall(nodes.container):
            if node.get("nb_element") != "cell_code" or not node.get("hide_mode"):
                continue
            chosen = labels(node.get("cell_metadata", {}).get("tags"), language)
            if chosen is not None:
                node["prompt_show"], node["prompt_hide"] = chosen


def setup(app: Sphinx) -> dict:
    app.add_post_transform(CellLabels)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
