"""The book's search as a reader uses it: the Japanese edition finds its compound words.

Sphinx indexes a Japanese page split into words by its TinySegmenter (「価値反復」 as 価値 and
反復); ``book/_ext/search_language.py`` gives the search page the same splitter in
JavaScript. Here: the two split the book's Japanese text alike (V8); a small Japanese site
built with and without the extension is searched in Chromium (without it, the compounds find
nothing); the built book's editions are searched (``tools/site_search.py``, which
``.ci/check_site.py`` also runs after ``make book``; skipped here when the book is not built).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from sphinx.search.ja import DefaultSplitter

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import search_language  # noqa: E402  (book/_ext/search_language.py)
import site_search  # noqa: E402  (tools/site_search.py)

SITE = ROOT / "_build" / "html"
BROWSER = site_search.browser_path()
no_browser = pytest.mark.skipif(
    BROWSER is None,
    reason="no Chromium on this machine (chromium, chromium-browser or google-chrome on PATH)",
)


def indexed_words(text: str) -> list[str]:
    """The words Sphinx's Japanese index takes from ``text``, in order (before lower case)."""
    return [w for w in DefaultSplitter({}).split(text) if len(w) > 1 or len(w.lower()) > 1]


def japanese_texts() -> list[str]:
    """Every translated message of the book's Japanese catalogues."""
    texts = []
    for po in sorted((ROOT / "locales" / "ja" / "LC_MESSAGES").rglob("*.po")):
        with po.open("rb") as f:
            for message in read_po(f):
                if message.id and isinstance(message.string, str) and message.string:
                    texts.append(message.string)
    return texts


@pytest.fixture(scope="module")
def js():
    """V8 with the search page's ``splitQuery`` loaded."""
    mini_racer = pytest.importorskip("py_mini_racer")
    ctx = mini_racer.MiniRacer()
    ctx.eval(search_language.splitter_js())
    return lambda expr: json.loads(ctx.eval(f"JSON.stringify({expr})"))


def test_the_query_splits_as_sphinx_indexed_the_book(js):
    """``splitQuery`` gives, for every translated message of the book and a few odd strings
    (empty, one letter, full-width, astral characters, spaces of several kinds), the words
    that Sphinx's index takes from the same text."""
    texts = japanese_texts()
    assert len(texts) > 500
    texts += [
        "",
        "a",
        "強",
        "強化学習",
        "価値 反復",
        "Ｅ１と１",
        "𠮷野家の🍣",
        " \u3000経験\t再生\n",
    ]
    got = js(f"{json.dumps(texts, ensure_ascii=False)}.map(splitQuery)")
    differ = [(t, g, indexed_words(t)) for t, g in zip(texts, got) if g != indexed_words(t)]
    assert not differ, differ[:3]


@pytest.mark.parametrize(
    "query, words",
    [
        ("強化学習", ["強化", "学習"]),
        ("価値反復", ["価値", "反復"]),
        ("経験再生バッファ", ["経験", "再生", "バッファ"]),
        ("Q 学習", ["学習"]),  # a word of one character is not in the index
    ],
)
def test_a_compound_is_split_into_the_indexed_words(js, query, words):
    assert js(f"splitQuery({json.dumps(query)})") == words == indexed_words(query)


class OtherSplitter(DefaultSplitter):
    """Another splitter (as Sphinx's MeCab or Janome ones are), named by its import path."""


def test_the_splitter_is_left_out_for_another_japanese_splitter():
    """Sphinx's MeCab or Janome splitters have no JavaScript: the search page keeps its own."""
    language = search_language.SearchJapaneseQuery({})
    assert "function splitQuery" in language.js_splitter_code
    other = search_language.SearchJapaneseQuery({"type": f"{__name__}.OtherSplitter"})
    assert other.js_splitter_code == ""


def test_the_search_pages_closing_sentence_is_filled_in(book_language):
    """In the build's language, from the catalogue of the extensions' words; a message with
    no translation there (English) is taken out, so Sphinx's English shows."""
    script = (
        "Documentation.addTranslations({\n"
        '    "locale": "ja",\n'
        '    "messages": {\n'
        '        "Search Results": "\\u691c\\u7d22\\u7d50\\u679c",\n'
        '        "Search finished, found ${resultCount} page(s) matching the search query.": "",\n'
        '        "Created using": ""\n'
        "    },\n"
        '    "plural_expr": "0"\n'
        "});"
    )
    book_language("ja")
    done = search_language.complete_translations(script)
    assert done.startswith("Documentation.addTranslations(") and done.endswith(");")
    catalogue = json.loads(done[done.index("(") + 1 : done.rindex(")")])
    assert catalogue["messages"] == {
        "Search Results": "検索結果",
        "Search finished, found ${resultCount} page(s) matching the search query.": (
            "検索が完了し、${resultCount} ページが見つかりました。"
        ),
    }
    assert catalogue["plural_expr"] == "0"
    book_language("en")
    done = search_language.complete_translations(script)
    catalogue = json.loads(done[done.index("(") + 1 : done.rindex(")")])
    assert catalogue["messages"] == {"Search Results": "検索結果"}


PAGES = {
    "a": "本書は強化学習の入門です。価値反復も扱います。",
    "b": "DQN は経験再生バッファから学習します。",
    "c": "ここには何もありません。",
}


def small_site(folder: Path, extension: bool) -> Path:
    """A Japanese Sphinx site of :data:`PAGES`, built in its own process, with or without
    ``search_language``; returns its HTML folder."""
    src = folder / "src"
    src.mkdir(parents=True)
    extensions = ["search_language"] if extension else []
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
        f"extensions = {extensions!r}\nlanguage = 'ja'\nproject = 't'\n"
    )
    toctree = "".join(f"   {name}\n" for name in PAGES)
    (src / "index.rst").write_text(f"索引\n====\n\n.. toctree::\n\n{toctree}")
    for name, text in PAGES.items():
        (src / f"{name}.rst").write_text(f"{name.upper()}\n=\n\n{text}\n")
    out = folder / "html"
    subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-W", "-b", "html", str(src), str(out)],
        check=True,
        capture_output=True,
    )
    return out


@pytest.mark.browser
@pytest.mark.subprocess
@no_browser
def test_a_small_japanese_site_finds_its_compounds_only_with_the_extension(tmp_path):
    """Searched in Chromium, each compound finds the one page that holds it, and the page
    says how many it found; Sphinx's own search page found none of them."""
    queries = ["強化学習", "価値反復", "経験再生バッファ"]
    ours = site_search.search(small_site(tmp_path / "ours", True), queries)
    assert {q: r["pages"] for q, r in ours.items()} == {
        "強化学習": ["a.html"],
        "価値反復": ["a.html"],
        "経験再生バッファ": ["b.html"],
    }
    for result in ours.values():
        assert result["summary"] == "検索が完了し、1 ページが見つかりました。"
        assert result["errors"] == []
    stock = site_search.search(small_site(tmp_path / "stock", False), queries)
    assert all(r["pages"] == [] for r in stock.values()), stock


@pytest.mark.browser
@no_browser
@pytest.mark.skipif(
    not (SITE / "ja" / "search.html").exists(),
    reason="the book is not built (make book); .ci/check_site.py searches it after the build",
)
def test_the_built_book_finds_every_page_that_holds_a_search_term():
    """In the Japanese edition 「強化学習」, 「価値反復」 and 「経験再生バッファ」, in the
    English one "value iteration" and "replay buffer": each finds every page whose text holds
    it (``site_search.search_problems``, as the site check runs it)."""
    assert site_search.search_problems(SITE) == []
