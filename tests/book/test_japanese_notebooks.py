"""The Japanese notebooks (notebooks/ja, written by tools/translate_notebooks.py), the Japanese
pages' Colab buttons and downloads that give them, and the Japanese student copies."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace

import jax.numpy as jnp
import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import edition_notebooks  # noqa: E402  (book/_ext/edition_notebooks.py)
import editions  # noqa: E402  (tools/editions.py)
import make_lab  # noqa: E402  (tools/make_lab.py)
import translate_notebooks as tn  # noqa: E402  (tools/translate_notebooks.py)
from notebook_runner import NOTEBOOKS  # noqa: E402

ENGLISH = tn.english_notebooks()
SITE = ROOT / "_build" / "html"
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_GLUE = re.compile(r"\{glue:md\}`([^`]+)`")


def _repository() -> tuple[str, str]:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    return config["url"].removeprefix("https://github.com/"), config["branch"]


def _colab(path: str, branch: str | None = None) -> str:
    """The Colab address of the repository's ``path`` on ``branch`` (default: the book's)."""
    repo, default = _repository()
    return f"https://colab.research.google.com/github/{repo}/blob/{branch or default}/{path}"


def _reader(path: str) -> str:
    """The Colab address of the reader's notebook at ``path`` (the branch of Colab's links)."""
    return _colab(path, edition_notebooks.COLAB_BRANCH)


def test_the_committed_japanese_notebooks_are_what_the_catalogues_give():
    """notebooks/ja/*.ipynb are written from the English notebooks and locales/ja; a changed
    English notebook or catalogue entry leaves them stale until they are written again."""
    found = tn.stale("ja")
    assert not found, (
        "run: python tools/editions.py notebooks (make catalogues does too)\n" + "\n".join(found)
    )


@pytest.mark.parametrize("path", ENGLISH, ids=[p.stem for p in ENGLISH])
def test_a_japanese_notebook_has_the_english_code_and_translated_prose(path):
    """Same cells, ids and code (metadata included: the execution cache's key), no outputs,
    the python3 kernel, except that the setup cell ends by choosing Japanese for the
    self-checks' messages; each Markdown cell keeps its glued figures; the prose is Japanese;
    the badge opens the Japanese reader's notebook; relative links reach their files from
    notebooks/ja."""
    english = nbformat.read(path, as_version=4)
    japanese = nbformat.read(tn.translated_path(path, "ja"), as_version=4)
    assert japanese.metadata.kernelspec == english.metadata.kernelspec
    assert japanese.metadata.kernelspec.name == "python3"
    assert [c.get("id") for c in japanese.cells] == [c.get("id") for c in english.cells]
    for en, ja in zip(english.cells, japanese.cells):
        assert ja.cell_type == en.cell_type
        if en.cell_type == "code":
            english_source = en.source
            if "colab-setup" in en.metadata.get("tags", []):
                english_source = en.source.rstrip("\n") + tn.SETUP_LINES["ja"]
                assert 'os.environ["COMPANION_LANGUAGE"] = "ja"' in ja.source
            assert (ja.source, ja.metadata, ja.outputs) == (english_source, en.metadata, [])
            continue
        assert sorted(_GLUE.findall(ja.source)) == sorted(_GLUE.findall(en.source))
        if "remove-cell" not in en.metadata.get("tags", []):
            assert _JAPANESE.search(ja.source), ja.source[:80]
        for target in re.findall(r"\]\(([^)#]+)\)", ja.source):
            if not target.startswith("http"):
                assert (ROOT / "notebooks" / "ja" / target).resolve().is_file(), target
    title, badge = japanese.cells[:2]
    assert _JAPANESE.search(title.source) and title.source.startswith("# ")
    assert _reader(f"notebooks/ja/{path.name}") in badge.source


def test_the_japanese_setup_cell_makes_the_self_checks_speak_japanese(monkeypatch):
    """Run as the first cell of a Japanese notebook (the packages being installed, it only
    sets the variable), the setup cell makes a check's message Japanese."""
    import companion
    from companion.checks import CheckFailed, check_softplus_grad

    path = tn.translated_path(ENGLISH[0], "ja")
    setup = nbformat.read(path, as_version=4).cells
    source = next(c.source for c in setup if "colab-setup" in c.metadata.get("tags", []))
    from IPython.core.inputtransformer2 import TransformerManager

    monkeypatch.setenv("COMPANION_LANGUAGE", "en")  # restored after the test
    monkeypatch.setattr(companion.language, "_chosen", None)
    # everything is installed here, so the cell's %pip line never runs
    exec(TransformerManager().transform_cell(source), {})
    assert companion.current_language() == "ja"
    with pytest.raises(CheckFailed, match="符号が逆です"):
        check_softplus_grad(lambda w, x: -x / (1 + jnp.exp(-w * x)))


def test_the_japanese_notebooks_are_not_chapters():
    """Neither the book (its table of contents, its exclusions) nor the tests, the notebook
    cache or the execution that glob notebooks/*.ipynb take notebooks/ja for chapters."""
    assert {p.parent for p in NOTEBOOKS} == {ROOT / "notebooks"}
    assert "notebooks/ja" not in (ROOT / "_toc.yml").read_text()
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["only_build_toc_files"] and "notebooks/ja/*" in config["exclude_patterns"]
    assert {p.name for p in (ROOT / "notebooks" / "ja").glob("*.ipynb")} == {
        p.name for p in NOTEBOOKS
    }


class _Catalogue(tn.Catalogue):
    def __init__(self, translations: dict[str, str | None], fuzzy=()):
        self.path = Path("test.po")
        self.ids = set(translations)
        self.translations = {
            k: v for k, v in translations.items() if v is not None and k not in fuzzy
        }
        self.met = set()


def test_each_element_is_replaced_where_its_english_was():
    source = (
        "## 1. Title\n\n"
        "A paragraph\nover two lines.\n\n"
        "- an item\n  that wraps;\n- kept item\n\n"
        "| a | b |\n|---|---|\n| cell one | `x` |\n\n"
        "$$\nx = 1\n$$\n\n"
        ":::{admonition} A title\n:class: dropdown\nInside.\n:::"
    )
    catalogue = _Catalogue(
        {
            "1. Title": "1\\. 題",
            "A paragraph over two lines.": "段落です。",
            "an item that wraps;": "項目 {glue:md}`n` です。",
            "kept item": "古い訳",
            "a": "甲",
            "b": None,
            "cell one": "セル | 1",
            "`x`": None,
            "\nx = 1\n": "\nx = 2\n",
            "A title": "題名",
            "Inside.": "中身。",
        },
        fuzzy={"kept item"},
    )
    got = tn.translate_markdown(source, catalogue, "test")
    assert got == (
        "## 1\\. 題\n\n"
        "段落です。\n\n"
        "- 項目 {glue:md}`n` です。\n- kept item\n\n"
        "| 甲 | b |\n|---|---|\n| セル \\| 1 | `x` |\n\n"
        "$$\nx = 2\n$$\n\n"
        ":::{admonition} 題名\n:class: dropdown\n中身。\n:::"
    )
    assert catalogue.met == catalogue.ids


def test_a_message_missing_from_the_catalogue_or_one_the_cut_never_meets_is_an_error(
    tmp_path, monkeypatch
):
    with pytest.raises(tn.TranslationError, match="'New paragraph.' is not in test.po"):
        tn.translate_markdown("New paragraph.", _Catalogue({}), "test")
    english = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# Title")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )
    path = tmp_path / "x.ipynb"
    nbformat.write(english, path)
    catalogue = _Catalogue({"Title": "題", "Gone paragraph.": "消えた段落。"})
    with pytest.raises(tn.TranslationError, match="1 message.*'Gone paragraph.'"):
        tn.translate_notebook(path, "ja", catalogue)
    catalogue = _Catalogue({"Title": "題", "Intro.": "- 一覧ではない"})
    english.cells.append(nbformat.v4.new_markdown_cell("Intro."))
    nbformat.write(english, path)
    with pytest.raises(tn.TranslationError, match="other blocks than the English"):
        tn.translate_notebook(path, "ja", catalogue)


def test_the_catalogue_reads_as_sphinx_does(tmp_path):
    """Fuzzy and empty entries are messages, not translations: Sphinx's build shows them in
    English."""
    po = tmp_path / "x.po"
    po.write_text(
        'msgid ""\nmsgstr "Content-Type: text/plain; charset=utf-8\\n"\n\n'
        'msgid "Hello"\nmsgstr "こんにちは"\n\n'
        '#, fuzzy\nmsgid "Old"\nmsgstr "古い"\n\n'
        'msgid "New"\nmsgstr ""\n'
    )
    catalogue = tn.Catalogue(po)
    assert catalogue.ids == {"Hello", "Old", "New"}
    assert catalogue.translations == {"Hello": "こんにちは"}


# The Japanese pages: Colab and the download.


def _theme_context(sphinx_config: dict, language: str, pagename: str):
    """sphinx-book-theme's launch buttons for ``pagename`` under ``sphinx_config`` (as
    Jupyter Book makes it from a ``_config.yml``), then this book's extension."""
    from sphinx_book_theme.header_buttons import update_context_with_repository_info
    from sphinx_book_theme.header_buttons.launch import add_launch_buttons

    class Config(dict):
        __getattr__ = dict.__getitem__

    config = Config(
        html_theme_options=sphinx_config["html_theme_options"],
        html_context={},
        language=language,
    )
    env = SimpleNamespace(
        found_docs={pagename},
        metadata={pagename: {"kernelspec": {"name": "python3"}}},
        doc2path=lambda name, base=True: str(ROOT / f"{name}.ipynb") if base else f"{name}.ipynb",
    )
    app = SimpleNamespace(config=config, env=env, builder=None, srcdir=str(ROOT))
    update_context_with_repository_info(app)
    context = dict(
        config.html_context,
        pagename=pagename,
        sourcename=f"{pagename}.ipynb",
        header_buttons=[],
    )
    add_launch_buttons(app, pagename, "page.html", context, None)
    edition_notebooks._launch_buttons(app, pagename, "page.html", context, None)
    (group,) = [g for g in context["header_buttons"] if g["label"] == "launch-buttons"]
    return {b["text"]: b["url"] for b in group["buttons"]}


@pytest.mark.parametrize("language, folder", [("ja", "notebooks/ja"), ("en", "notebooks")])
def test_the_editions_configuration_gives_the_colab_button_its_own_notebook(language, folder):
    """The Japanese edition's configuration (``tools/editions.py``) loads the extension, and
    with it the theme's Colab button of a chapter opens the reader's notebook
    notebooks/ja/<name>.ipynb on the branch of the reader's notebooks, written from a file of
    the repository; the English edition's opens the English one there."""
    from jupyter_book.config import yaml_to_sphinx

    edition = editions.edition_config(None if language == "en" else language, "cache")
    recursive, override, _ = yaml_to_sphinx(edition)
    assert "edition_notebooks" in recursive["extensions"]
    assert override.get("language") == (None if language == "en" else language)
    buttons = _theme_context(recursive, language, "notebooks/07_dqn")
    assert buttons == {"Colab": _reader(f"{folder}/07_dqn.ipynb")}
    assert edition_notebooks.COLAB_BRANCH != _repository()[1]
    assert (ROOT / folder / "07_dqn.ipynb").is_file()


def test_the_japanese_download_is_the_japanese_notebook(tmp_path):
    sources = tmp_path / "_sources" / "notebooks"
    sources.mkdir(parents=True)
    (sources / "07_dqn.ipynb").write_text("english")
    (sources / "intro.md").write_text("page")
    env = SimpleNamespace(
        found_docs={"notebooks/07_dqn", "book/intro"},
        doc2path=lambda name, base=True: f"{name}.ipynb" if "notebooks" in name else f"{name}.md",
    )
    app = SimpleNamespace(
        config=SimpleNamespace(language="ja"),
        env=env,
        srcdir=str(ROOT),
        outdir=str(tmp_path),
        builder=SimpleNamespace(format="html"),
    )
    edition_notebooks._translated_sources(app, None)
    assert (sources / "07_dqn.ipynb").read_text() == (
        ROOT / "notebooks" / "ja" / "07_dqn.ipynb"
    ).read_text()
    assert (sources / "intro.md").read_text() == "page"


@pytest.mark.parametrize(
    "path, language, expected",
    [
        ("notebooks/07_dqn.ipynb", "ja", "notebooks/ja/07_dqn.ipynb"),
        ("notebooks/07_dqn.ipynb", "en", "notebooks/07_dqn.ipynb"),
        ("notebooks/07_dqn.ipynb", None, "notebooks/07_dqn.ipynb"),
        ("book/setup.md", "ja", "book/setup.md"),
    ],
)
def test_notebook_path(path, language, expected):
    assert edition_notebooks.notebook_path(path, language) == expected


@pytest.mark.skipif(
    not (SITE / "ja" / "notebooks").is_dir(), reason="no built book (make book) in _build/html"
)
@pytest.mark.parametrize("path", ENGLISH, ids=[p.stem for p in ENGLISH])
def test_the_built_pages_open_their_editions_notebook(path):
    """On the built Japanese page every Colab link (the launch menu, the chapter card) opens
    the reader's notebook notebooks/ja/<name>.ipynb and the .ipynb download is the Japanese
    reader's notebook (its badge opens it too); the English page's open the English one."""
    for site, folder in ((SITE / "ja", "notebooks/ja"), (SITE, "notebooks")):
        html = (site / "notebooks" / f"{path.stem}.html").read_text()
        links = re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', html)
        assert len(links) >= 2 and set(links) == {_reader(f"{folder}/{path.name}")}, links
        assert f'href="../_sources/notebooks/{path.name}"' in html
        download = nbformat.read(site / "_sources" / "notebooks" / path.name, as_version=4)
        japanese = bool(_JAPANESE.search(download.cells[0].source))
        assert japanese == (folder != "notebooks"), download.cells[0].source
        assert _reader(f"{folder}/{path.name}") in download.cells[1].source
        assert download.cells[2].id == "figures-of-the-books-run"


# The Japanese student copies (make lab EDITION=ja).


def test_every_hint_has_a_japanese_translation():
    """Each solution cell's hint is in the catalogue lab, translated (the catalogue check
    refuses an untranslated or fuzzy one), and a Japanese student copy gives it in Japanese."""
    import lab_messages  # noqa: PLC0415  (tools/lab_messages.py)

    hints = {hint for _, _, hint in lab_messages.hints()}
    translate = lab_messages.translator("ja")
    assert hints and all(_JAPANESE.search(translate(h)) for h in hints), [
        h for h in hints if not _JAPANESE.search(translate(h))
    ]
    assert all(_JAPANESE.search(text) for text in lab_messages.words("ja").values())


def test_a_glued_phrase_is_given_in_the_copys_language():
    both = '<span class="edition-text" lang="en">lower</span><span class="edition-text" lang="ja">低い</span>'
    assert make_lab.in_language(both, "ja") == "低い"
    assert make_lab.in_language(both, "en") == "lower"
    assert make_lab.in_language("55.8%", "ja") == "55.8%"


def test_make_lab_in_japanese_writes_japanese_copies(tmp_path):
    no_cache = str(tmp_path / "no-cache")  # every glued number reads the placeholder
    assert make_lab.main(["--language", "ja", "--out", str(tmp_path), "--cache", no_cache]) == 0
    for path in NOTEBOOKS:
        student = nbformat.read(tmp_path / "student" / path.name, as_version=4)
        solutions = nbformat.read(tmp_path / "solutions" / path.name, as_version=4)
        assert _JAPANESE.search(solutions.cells[0].source)
        stubs = [c for c in student.cells if "exercise" in c.metadata.get("tags", [])]
        assert stubs and all(c.source.startswith("# 演習") for c in stubs)
        assert all(_JAPANESE.search(c.source.splitlines()[1]) for c in stubs)
        for copy in (student, solutions):
            markdown = "".join(c.source for c in copy.cells if c.cell_type == "markdown")
            assert "{glue:" not in markdown and "edition-text" not in markdown
