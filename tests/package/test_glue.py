"""companion.glue: the figures a chapter's prose quotes, glued for myst-nb, shown in Colab."""

from __future__ import annotations

import builtins
import sys

import IPython.display
import myst_nb.ext.glue as myst_glue
import pytest

from companion.glue import glue, words

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


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
        ({"share": "4 of 33"}, ValueError, r'share: .*\(of\).*words\("\.\.\."\)'),
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


def test_outside_the_build_a_notebook_shows_the_readers_language_only(monkeypatch):
    """On a machine with the book's packages (myst-nb installed), a notebook run outside the
    build (a course lab, Jupyter) shows one language, the reader's: a Markdown output, the
    figures' editions and a glued figure; in the build (DRLJAX_BOOK_BUILD=1) every edition."""
    from companion import figure_words, language
    from companion.glue import glue, markdown, words

    assert language.book_build() and figure_words.editions() == ("en", "ja")
    monkeypatch.delenv(language.BOOK_BUILD)
    monkeypatch.setenv(language.VARIABLE, "ja")
    assert not language.book_build() and figure_words.editions() == ("ja",)
    assert markdown(en="Measured on AMD EPYC", ja="AMD EPYC で測定").data == "AMD EPYC で測定"
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *items: shown.extend(items))
    glue(note=words("(not measured here)"))
    assert (
        len(shown) == 1
        and "`note`: " in shown[0].data
        and "(not measured here)" not in (shown[0].data)
    )
    monkeypatch.setenv(language.BOOK_BUILD, "0")
    assert not language.book_build()


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


# --- the catalogue "glue": a phrase written once, in English ------------------------------


def test_a_phrase_takes_its_japanese_from_the_catalogue_with_its_figures_filled_in():
    """The committed catalogue (``companion/locale/ja/LC_MESSAGES/glue.mo``): a phrase, a
    phrase with placeholders, and a placeholder given a phrase (each language takes its own
    text)."""
    assert words("(never)") == ("(never)", "（未到達）")
    assert words("{low} to {high}", low="0.91", high="1.20") == ("0.91 to 1.20", "0.91〜1.20")
    run = words("(not measured here)")
    filled = words(
        "After a warm-up of {warmup} random steps, training runs whole blocks of eval_every "
        "iterations ({block} environment steps), each followed by an evaluation: {run}",
        warmup="1,000",
        block="2,500",
        run=run,
    )
    assert filled.en.endswith("an evaluation: (not measured here)"), filled.en
    assert filled.ja.startswith("1,000 ステップ") and filled.ja.endswith("（ここでは未測定）")


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: words("no such phrase in the catalogue"), ValueError, "no Japanese .*glue.po"),
        (lambda: words("{low} to {high}", low="1"), ValueError, r"placeholder 'high'"),
        (lambda: words("(never)", en="a", ja="b"), TypeError, "not both"),
        (lambda: words(en="a", ja="b", n=1), TypeError, r"placeholders \['n'\]"),
        (lambda: words(3), TypeError, "text: expected a str, got int"),
    ],
)
def test_a_phrase_that_cannot_be_given_in_both_languages_is_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_a_markdown_text_in_colab_is_in_the_readers_language(monkeypatch):
    from companion import set_language
    from companion.glue import markdown

    _without_myst_nb(monkeypatch)
    assert markdown("seed").data == "seed"
    set_language("ja")
    try:
        assert markdown("seed").data == "シード"
    finally:
        set_language(None)


def test_the_catalogue_finds_the_notebooks_phrases_and_refuses_a_computed_one(tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    import glue_messages

    code = (
        "x = words('(never)')\n"
        "%time y = glue.words('{n} seeds', n=3)\n"
        "z = markdown(en=table('en'), ja=table('ja'))\n"
    )
    assert glue_messages.code_messages(code) == [(1, "(never)"), (2, "{n} seeds")]
    with pytest.raises(glue_messages.ComputedText, match=r"cell 3, line 1: words\(f'\{n\} seeds'"):
        glue_messages.code_messages("words(f'{n} seeds')", "nb.ipynb, cell 3")
    with pytest.raises(glue_messages.ComputedText, match=r"words\(h, \.\.\.\)"):
        glue_messages.code_messages("[words(h) for h in ('seed', 'maze')]")


def test_a_changed_english_phrase_turns_its_japanese_fuzzy(tmp_path):
    """The catalogue kept in step with the notebooks (``make catalogues``): an edited English
    phrase becomes an entry to review, its old translation kept as a suggestion, which the
    book's tests refuse until a translator removes the mark."""
    import json

    sys.path.insert(0, str(ROOT / "tools"))
    import editions

    def notebook(text):
        cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": [text]}
        (tmp_path / "notebooks").mkdir(exist_ok=True)
        (tmp_path / "notebooks" / "nb.ipynb").write_text(json.dumps({"cells": [cell]}))

    locales = tmp_path / "locales"
    notebook("glue(x=words('(not measured here)'))")
    po = editions.update_code_catalogue("ja", "glue", tmp_path, locales)
    catalog = editions._read(po)
    catalog["(not measured here)"].string = "（ここでは未測定）"
    from babel.messages.pofile import write_po

    with po.open("wb") as f:
        write_po(f, catalog, width=88)
    notebook("glue(x=words('(not measured on this machine)'))")
    editions.update_code_catalogue("ja", "glue", tmp_path, locales)
    entry = editions._read(po)["(not measured on this machine)"]
    assert entry.fuzzy and entry.string == "（ここでは未測定）"


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_no_english_notebook_writes_japanese_in_its_code(path):
    """The Japanese of the pages lives in the catalogues only: a phrase a cell glues or shows
    is written once, in English (``words("...")``), so that an edit of it turns its
    translation fuzzy; a Japanese text in code would go stale unseen, and Colab would show it
    in the English notebook."""
    import json
    import re

    japanese = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff01-\uff5e]")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    found = [
        (number, line.strip()[:60])
        for number, cell in enumerate(cells, 1)
        if cell["cell_type"] == "code"
        for line in "".join(cell["source"]).splitlines()
        if japanese.search(line)
    ]
    assert not found, f"Japanese in the code of {path.name} (cell, line): {found[:5]}"


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_no_notebook_glues_english_as_a_plain_text(path):
    """Every branch of a cell, including the one a run takes only when a benchmark result
    cannot be read (in Colab, offline), glues words through ``words``: a plain text with
    English words (``glue(x="(not measured here)")``) raises in the one run that takes it."""
    import ast
    import json

    from IPython.core.inputtransformer2 import TransformerManager

    from companion.glue import english_words

    found = []
    for number, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"], 1):
        if cell["cell_type"] != "code":
            continue
        source = TransformerManager().transform_cell("".join(cell["source"]))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "glue":
                for keyword in node.keywords:
                    value = keyword.value
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        if english_words(value.value):
                            found.append((number, keyword.arg, value.value))
    assert not found, f"{path.name}: plain English glued (cell, name, text): {found}"
