"""companion.glue: the figures a chapter's prose quotes, glued for myst-nb, shown in Colab."""

from __future__ import annotations

import builtins
import sys

import IPython.display
import myst_nb.ext.glue as myst_glue
import pytest

from companion.glue import glue, words


def _without_myst_nb(monkeypatch) -> None:
    """Make ``import myst_nb`` fail, as it does in Colab."""
    real_import = builtins.__import__

    def no_myst_nb(name, *args, **kwargs):
        if name.startswith("myst_nb"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "myst_nb", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_myst_nb)


def test_glues_markdown_that_myst_nb_pastes(monkeypatch):
    shown = []
    monkeypatch.setattr(myst_glue, "ipy_display", lambda data, **kw: shown.append((data, kw)))
    glue(ratio="14–18×", steps="212,992")
    assert [kw["metadata"]["scrapbook"]["name"] for _, kw in shown] == ["ratio", "steps"]
    data, _ = shown[0]
    assert data["application/papermill.record/text/markdown"] == "14–18×"


def test_without_myst_nb_shows_the_figures_under_the_cell(monkeypatch):
    _without_myst_nb(monkeypatch)
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
        (
            {"verdict": "grew to"},
            ValueError,
            r"verdict: 'grew to' holds English words \(grew, to\)",
        ),
        ({"share": "4 of 33"}, ValueError, r"share: .*\(of\).*words\(en=\.\.\., ja=\.\.\.\)"),
    ],
)
def test_bad_input_names_the_figure(texts, error, words):
    with pytest.raises(error, match=words):
        glue(**texts)


def test_words_are_glued_in_both_languages_and_colab_shows_the_english(monkeypatch):
    shown = []
    monkeypatch.setattr(myst_glue, "ipy_display", lambda data, **kw: shown.append((data, kw)))
    glue(verdict=words(en="lowers", ja="下げます"), ratio="1.5")
    markdown = shown[0][0]["application/papermill.record/text/markdown"]
    assert markdown == (
        '<span class="edition-text" lang="en">lowers</span>'
        '<span class="edition-text" lang="ja">下げます</span>'
    )
    assert shown[1][0]["application/papermill.record/text/markdown"] == "1.5"


@pytest.mark.parametrize(
    "en, ja, error, match",
    [
        ("lowers", "", ValueError, "words: ja: the text is empty"),
        (3, "下げます", TypeError, "words: en: expected a str, got int"),
        ("**lowers**", "下げます", ValueError, "words: en: plain text expected"),
        ("lowers", "<b>下げ</b>", ValueError, "words: ja: plain text expected"),
    ],
)
def test_words_name_the_language_that_is_wrong(en, ja, error, match):
    with pytest.raises(error, match=match):
        words(en=en, ja=ja)


@pytest.mark.parametrize(
    "text, found",
    [
        ("14–18×", []),
        ("0.43 s, 3.2 GiB, 12 ms", []),  # units both editions write alike
        ("5.2e-04", []),
        ("the gap is `jnp.float32` rounding", ["the", "gap", "is", "rounding"]),
        (r"$\lambda = 0.9$ at best", ["at", "best"]),
        ("4 of its 4", ["of", "its"]),
        ("nan, JAX's CPU", []),
    ],
)
def test_english_words_skip_code_maths_and_units(text, found):
    from companion.glue import english_words

    assert english_words(text) == found


def test_a_figure_in_english_words_must_come_in_both_languages(monkeypatch):
    shown = []
    monkeypatch.setattr(myst_glue, "ipy_display", lambda data, **kw: shown.append((data, kw)))
    glue(share=words(en="4 of 33", ja="33 回中 4 回"), ratio="1.5×", memory="3.2 GiB")
    assert len(shown) == 3
    with pytest.raises(ValueError, match="words: ja: expected Japanese, got '4 of 33'"):
        words(en="4 of 33", ja="4 of 33")


def test_a_markdown_output_holds_both_languages_in_the_build_and_english_elsewhere(monkeypatch):
    from companion.glue import markdown

    table = markdown(
        en="| agent | steps |\n|---|---|\n| post | 6,000 |",
        ja="| エージェント | ステップ |\n|---|---|\n| post | 6,000 |",
    )
    blocks = table.data.split("\n\n</div>\n\n")
    assert (
        blocks[0]
        == '<div class="edition-text" lang="en">\n\n| agent | steps |\n|---|---|\n| post | 6,000 |'
    )
    assert blocks[1].startswith('<div class="edition-text" lang="ja">\n\n| エージェント |')
    _without_myst_nb(monkeypatch)
    assert markdown(en="Measured on AMD EPYC", ja="AMD EPYC で測定").data == "Measured on AMD EPYC"


@pytest.mark.parametrize(
    "en, ja, error, match",
    [
        ("a table", "", ValueError, "markdown: ja: the text is empty"),
        (None, "表", TypeError, "markdown: en: expected a str, got NoneType"),
        ("a table", "a table", ValueError, "markdown: ja: expected Japanese"),
    ],
)
def test_markdown_names_the_language_that_is_wrong(en, ja, error, match):
    from companion.glue import markdown

    with pytest.raises(error, match=match):
        markdown(en=en, ja=ja)
