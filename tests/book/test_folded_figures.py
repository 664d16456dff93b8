"""No figure is folded away as code (``tools/folded_figures.py``): the check itself, on
notebooks and pages made here, and on the built book when there is one (``.ci/check_site.py``
checks it after ``make book``; ``tests/book/test_notebooks.py`` checks each tiny-budget run)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import folded_figures  # noqa: E402  (tools/folded_figures.py)

SITE = ROOT / "_build" / "html"
PNG = {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}}
SVG = {"output_type": "display_data", "data": {"image/svg+xml": "<svg/>"}}
FRAMES = {"output_type": "display_data", "data": {"text/html": ["<div>", "<img src='a.png'>"]}}
TEXT = {"output_type": "stream", "name": "stdout", "text": "done\n"}


def notebook(*cells) -> dict:
    return {
        "cells": [
            {"cell_type": "code", "metadata": {"tags": tags}, "source": "", "outputs": outs}
            for tags, outs in cells
        ]
    }


@pytest.mark.parametrize(
    "tags, outs, folded",
    [
        (["hide-cell"], [PNG], True),  # chapter 5's value maps, before they were unfolded
        (["hide-output"], [SVG], True),
        (["hide-input", "hide-output"], [TEXT, FRAMES], True),
        (["hide-input"], [PNG], False),  # the code folds, the figure shows
        (["hide-cell"], [TEXT], False),
        (["hide-cell", "solution"], [PNG], False),  # an answer folds whole
        ([], [PNG], False),
    ],
)
def test_a_folded_figure_in_a_notebook_is_found(tags, outs, folded):
    problems = folded_figures.notebook_problems(notebook(([], [TEXT]), (tags, outs)))
    assert problems == ([f"cell 1 ({', '.join(tags)}) folds a figure away"] if folded else [])


def cell_html(tags: list[str], output: str) -> str:
    """A code cell as myst-nb writes it: the fold, the input, then the output."""
    classes = " ".join(f"tag_{t}" for t in tags)
    return (
        f'<div class="cell {classes} docutils container">\n'
        '<details class="hide above-input"><summary>Show code cell source</summary>\n'
        '<div class="cell_input docutils container"><div class="highlight"><pre>x</pre></div>'
        "</div>\n</details>\n"
        f'<div class="cell_output docutils container">{output}</div>\n</div>\n'
    )


def test_a_folded_figure_on_a_page_is_found():
    figure = '<img alt="../_images/a.png" src="../_images/a.png" />'
    page = (
        "<html><body><article>"
        + cell_html(["hide-input"], figure)
        + cell_html(["hide-cell"], f"<div class='output text_plain'><pre>1</pre></div>{figure}")
        + cell_html(["hide-cell", "solution"], figure)
        + cell_html(["hide-output"], "<svg><rect/></svg>")
        + cell_html(["hide-cell"], "<pre>no figure</pre>")
        + "<div>after the cells <img src='x.png'/></div></article></body></html>"
    )
    assert folded_figures.page_problems(page) == [
        "a cell tagged hide-cell folds 1 figure(s) away",
        "a cell tagged hide-output folds 1 figure(s) away",
    ]


@pytest.mark.skipif(
    not (SITE / "notebooks").is_dir(),
    reason="the book is not built (make book); .ci/check_site.py checks it after the build",
)
def test_no_built_page_folds_a_figure_away():
    """Every chapter page of both editions, as ``make book`` ran it on the full budget."""
    assert folded_figures.site_problems(SITE) == []
