"""companion.glue: the figures a chapter's prose quotes, glued for myst-nb, shown in Colab."""

from __future__ import annotations

import builtins
import sys

import IPython.display
import myst_nb.ext.glue as myst_glue
import pytest

from companion.glue import glue


def test_glues_markdown_that_myst_nb_pastes(monkeypatch):
    shown = []
    monkeypatch.setattr(myst_glue, "ipy_display", lambda data, **kw: shown.append((data, kw)))
    glue(ratio="14–18×", steps="212,992")
    assert [kw["metadata"]["scrapbook"]["name"] for _, kw in shown] == ["ratio", "steps"]
    data, _ = shown[0]
    assert data["application/papermill.record/text/markdown"] == "14–18×"


def test_without_myst_nb_shows_the_figures_under_the_cell(monkeypatch):
    real_import = builtins.__import__

    def no_myst_nb(name, *args, **kwargs):
        if name.startswith("myst_nb"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "myst_nb", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_myst_nb)
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    glue(ratio="14–18×", steps="212,992")
    (markdown,) = shown
    assert markdown.data == "`ratio`: 14–18×; `steps`: 212,992"


@pytest.mark.parametrize(
    "texts, error, words",
    [
        ({}, ValueError, "at least one"),
        ({"ratio": 0.3}, TypeError, "ratio: expected the figure as formatted text"),
        ({"ratio": " "}, ValueError, "ratio: the text is empty"),
        ({"Ratio": "1"}, ValueError, "'Ratio'"),
    ],
)
def test_bad_input_names_the_figure(texts, error, words):
    with pytest.raises(error, match=words):
        glue(**texts)
