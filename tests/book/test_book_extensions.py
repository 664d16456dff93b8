"""The book's small Sphinx extensions: the chapter the glossary names for each definition
(``book/_ext/glossary_chapters.py``), and what every page's head holds
(``book/_ext/page_head.py``: one copy of each script, the other edition, a preview)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from docutils import nodes
from sphinx.errors import ExtensionError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from glossary_chapters import where  # noqa: E402


def _env(labels: dict[str, str], titles: dict[str, str]):
    std = SimpleNamespace(labels={k: (v, k, "a section") for k, v in labels.items()})
    titled = {doc: nodes.title(text=t) for doc, t in titles.items()}
    return SimpleNamespace(get_domain=lambda name: std, titles=titled)


def test_a_definition_names_its_chapter_or_its_page():
    env = _env(
        {"rl-mdp": "notebooks/05_rl_foundations", "trouble": "book/troubleshooting"},
        {"notebooks/05_rl_foundations": "RL from first principles", "book/troubleshooting": "Help"},
    )
    assert where(env, "rl-mdp") == ("chapter 5", "RL from first principles")
    assert where(env, "trouble") == ("", "Help")
    with pytest.raises(ExtensionError, match="unknown label 'nowhere'"):
        where(env, "nowhere")


def _directive(language: str):
    """What the ``{lab-times}`` and ``{device-times}`` directives read of a build of the
    ``language`` edition (the committed measurements)."""
    config = SimpleNamespace(language=language)
    env = SimpleNamespace(
        srcdir=str(ROOT), docname="book/teachers", config=config, note_dependency=lambda p: None
    )
    return SimpleNamespace(env=env)


def test_the_time_tables_speak_the_pages_language_and_stay_out_of_the_catalogues(
    book_language,
):
    """The tables' words come from the catalogue of the extensions' words, in the build's
    language, the measurements filled in; their paragraphs are marked untranslatable, so a
    re-measurement leaves no stale entry in the pages' catalogues."""
    from chapter_times import DeviceTimes, LabTimes, _paragraph
    from sphinx.util.nodes import is_translatable

    lab = json.loads((ROOT / "benchmarks" / "results" / "lab_times.json").read_text())
    cpu = lab["hardware"]["cpu"]
    book_language("ja")
    intro, table = LabTimes.run(_directive("ja"))
    assert f"{cpu}（" in intro.astext() and "で測定しました" in intro.astext()
    heads = [e.astext() for e in table.findall(nodes.entry)][:3]
    assert heads == ["章", "最初の演習まで", "最も遅いセル"]
    out = DeviceTimes.run(_directive("ja"))
    assert out[0].astext().startswith("各ノートブックを新しいプロセスで")
    assert "で測定。" in out[1].astext()
    assert next(out[-1].findall(nodes.entry)).astext() == "章"
    book_language("en")
    intro, table = LabTimes.run(_directive("en"))
    assert intro.astext().startswith("Measured ") and f"with {cpu}, " in intro.astext()
    heads = [e.astext() for e in table.findall(nodes.entry)][:3]
    assert heads == ["chapter", "to the first exercise", "slowest cell"]
    out = DeviceTimes.run(_directive("en"))
    assert out[0].astext().startswith("Each notebook ran top to bottom")
    node = _paragraph(intro.astext())
    node.source, node.line = "teachers.md", 1  # a paragraph with a source is extracted...
    assert not is_translatable(node)  # ...unless it says it is not translatable
    node["translatable"] = True
    assert is_translatable(node)


def test_device_times_cell_shows_the_time_the_stopping_cell_or_a_dash(book_language):
    from chapter_times import _device_cell

    assert _device_cell(None).astext() == "–"
    assert _device_cell({"passed": True, "seconds": 62.1}).astext() == "62 s"
    assert _device_cell({"passed": True, "seconds": 402.0}).astext() == "6.7 min"
    stopped = {
        "passed": False,
        "seconds": 13.1,
        "error": "AssertionError",
        "failed_cell": {"cell": 15, "first_line": "def selu(x):"},
    }
    cell = _device_cell(stopped)
    assert cell.astext() == "stopped at def selu(x):"
    assert cell.children[1].tagname == "literal"
    timed_out = {"passed": False, "seconds": 402.4, "error": "ran past --timeout 400 s"}
    assert _device_cell(timed_out).astext() == "ran past 6.7 min"
    book_language("ja")
    cell = _device_cell(stopped)
    assert cell.astext() == "def selu(x): で停止"
    assert cell.children[0].tagname == "literal"
    assert _device_cell(timed_out).astext() == "6.7 min を超過"
    book_language("en")
    stopped["failed_cell"]["first_line"] = "# Solution 1: every layer but the last, then the last"
    assert _device_cell(stopped).astext() == "stopped at # Solution 1: every layer but…"


def test_a_page_loads_each_script_once():
    """sphinx-thebe's inline configuration, added twice by a second read of the environment,
    declares a const twice: a SyntaxError on every page."""
    from page_head import unique_scripts
    from sphinx.builders.html._assets import _JavaScript

    config = 'const THEBE_JS_URL = "https://unpkg.com/thebe@0.8.2/lib/index.js"'
    scripts = [
        _JavaScript("_static/a.js"),
        _JavaScript(None, body=config),
        _JavaScript("_static/thebe.js", **{"async": "async"}),
        _JavaScript("", body=config),  # as Sphinx's registry hands it over the second time
        _JavaScript(None, body="const OTHER = 1"),
        _JavaScript("_static/thebe.js", **{"async": "async"}),
        "_static/plain.js",
    ]
    kept = unique_scripts(scripts)
    assert kept == [scripts[0], scripts[1], scripts[2], scripts[4], scripts[6]]


def test_an_issue_opened_on_a_japanese_page_names_its_edition():
    from page_head import name_the_edition

    def buttons():
        url = (
            "https://github.com/o/b/issues/new?title=Issue%20on%20page%20%2Fnotebooks/07_dqn.html"
            "&body=Your%20issue%20content%20here."
        )
        issue = {"type": "link", "url": url, "label": "source-issues-button"}
        source = {"type": "link", "url": "https://github.com/o/b", "label": "source-file-button"}
        return [{"type": "group", "label": "source-buttons", "buttons": [source, issue]}]

    japanese = buttons()
    name_the_edition(japanese, "ja")
    source, issue = japanese[0]["buttons"]
    assert "title=Issue%20on%20page%20%2Fja%2Fnotebooks/07_dqn.html&" in issue["url"]
    assert source["url"] == "https://github.com/o/b"
    english = buttons()
    name_the_edition(english, "en")
    assert english == buttons()


def test_a_description_is_the_first_paragraph_of_prose_cut_where_a_sentence_ends():
    from page_head import DESCRIPTION_CHARS, first_paragraph, shorten

    page = nodes.document(None, None)
    section = nodes.section()
    note = nodes.note("", nodes.paragraph(text="Not this one."))
    items = nodes.bullet_list("", nodes.list_item("", nodes.paragraph(text="nor this")))
    section += [nodes.title(text="A page"), note, items, nodes.paragraph(text="The  first\nprose.")]
    page += section
    assert first_paragraph(page) == "The first prose."
    assert first_paragraph(None) == first_paragraph(nodes.document(None, None)) == ""
    assert shorten("Short.") == "Short."
    long = "A first sentence that is long enough to keep, " * 3 + "and so on. " + "word " * 40
    cut = shorten(long)
    assert cut.endswith("and so on.") and len(cut) <= DESCRIPTION_CHARS
    words = shorten("word " * 60)
    assert words.endswith("word…") and len(words) <= DESCRIPTION_CHARS
    japanese = shorten("\u3042" * 150 + "\u3002" + "\u3044" * 100)  # a sentence end past half
    assert japanese == "\u3042" * 150 + "\u3002"
    unbroken = shorten("\u3042" * 300)
    assert unbroken == "\u3042" * (DESCRIPTION_CHARS - 1) + "…"


def small_site(folder: Path, language: str, baseurl: str = "") -> Path:
    """A two-page Sphinx site in the book's theme with ``page_head``, built in its own
    process in ``language``; returns its HTML folder."""
    import subprocess

    src = folder / "src"
    (src / "sub").mkdir(parents=True)
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
        "extensions = ['page_head']\nproject = 'A small book'\n"
        "html_theme = 'sphinx_book_theme'\nhtml_title = 'A small book'\n"
    )
    (src / "index.rst").write_text(
        "Small book\n==========\n\nA book about *small* things & <tags>.\n\n"
        ".. toctree::\n\n   sub/page\n"
    )
    (src / "sub" / "page.rst").write_text(
        "A *page*\n========\n\n.. note::\n\n   Not this one.\n\n- nor this\n\n"
        "The first paragraph of prose. It goes on.\n"
    )
    out = folder / "html"
    settings = ["-D", f"language={language}"]
    if baseurl:
        settings += ["-D", f"html_baseurl={baseurl}"]
    subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-W", "-b", "html", *settings, str(src), str(out)],
        check=True,
        capture_output=True,
    )
    return out


def head_of(page: Path) -> tuple[dict, dict]:
    """A built page's ``<link rel="alternate">`` addresses by language and its OpenGraph
    properties (a repeated one as a list)."""
    import re

    head = page.read_text().split("</head>")[0]
    links = dict(re.findall(r'<link rel="alternate" hreflang="([^"]+)" href="([^"]*)"', head))
    properties: dict = {}
    for name, value in re.findall(r'<meta property="(og:[^"]+)" content="([^"]*)"', head):
        properties[name] = [*properties[name], value] if name in properties else value
    return links, properties


@pytest.mark.subprocess
def test_every_page_names_its_other_edition_and_has_a_preview(tmp_path):
    """In the theme's head: the page in each edition (relative addresses without a base
    address, absolute with one), its title, type, first paragraph and locale."""
    english = small_site(tmp_path / "en", "en")
    links, og = head_of(english / "sub" / "page.html")
    assert links == {
        "en": "../sub/page.html",
        "ja": "../ja/sub/page.html",
        "x-default": "../sub/page.html",
    }
    assert og == {
        "og:title": "A page",
        "og:type": "article",
        "og:description": "The first paragraph of prose. It goes on.",
        "og:locale": "en_US",
        "og:locale:alternate": "ja_JP",
        "og:site_name": "A small book",
    }
    links, og = head_of(english / "index.html")
    assert links["ja"] == "ja/index.html" and og["og:type"] == "website"
    assert og["og:description"] == "A book about small things &amp; &lt;tags&gt;."
    for name in ("search", "genindex"):  # written from templates: the book's description
        links, og = head_of(english / f"{name}.html")
        assert links["ja"] == f"ja/{name}.html"
        assert og["og:description"] == "A book about small things &amp; &lt;tags&gt;."
    japanese = small_site(tmp_path / "ja", "ja", "https://example.org/book/")
    links, og = head_of(japanese / "sub" / "page.html")
    assert links == {
        "en": "https://example.org/book/sub/page.html",
        "ja": "https://example.org/book/ja/sub/page.html",
        "x-default": "https://example.org/book/sub/page.html",
    }
    assert og["og:locale"] == "ja_JP" and og["og:locale:alternate"] == "en_US"
    assert og["og:url"] == links["ja"]
    text = (japanese / "sub" / "page.html").read_text()
    assert f'<link rel="canonical" href="{links["ja"]}" />' in text
