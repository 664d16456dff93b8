"""The words of the book's Sphinx extensions in gettext (``book/_ext/book_messages.py``): the
``extensions`` catalogue is extracted from ``book/_ext/*.py`` and kept in step by
``tools/editions.py catalogues``, compiled at build time and read in the build's language."""

from __future__ import annotations

import ast
import re
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import book_messages  # noqa: E402  (book/_ext/book_messages.py)
import editions  # noqa: E402  (tools/editions.py)

EXTENSIONS = ROOT / "book" / "_ext"
CATALOGUE = ROOT / "locales" / "ja" / "LC_MESSAGES" / "extensions.po"


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the extensions and of the Japanese catalogue of their words: (extensions,
    locales)."""
    extensions = tmp_path / "_ext"
    shutil.copytree(EXTENSIONS, extensions, ignore=shutil.ignore_patterns("__pycache__"))
    locales = tmp_path / "locales"
    (locales / "ja" / "LC_MESSAGES").mkdir(parents=True)
    shutil.copy(CATALOGUE, locales / "ja" / "LC_MESSAGES")
    return extensions, locales


def test_a_changed_english_text_turns_its_translation_fuzzy(tmp_path, monkeypatch):
    """Editing an English text in an extension, then the catalogue step, leaves its old
    Japanese as a fuzzy suggestion (which the check refuses and the build does not show); the
    unchanged copy leaves the catalogue untouched."""
    extensions, locales = _copy(tmp_path)
    po = locales / "ja" / "LC_MESSAGES" / "extensions.po"
    before = po.read_bytes()
    assert editions.update_extension_catalogue("ja", extensions, locales) == po
    assert po.read_bytes() == before  # in step: not written

    cards = extensions / "chapter_cards.py"
    assert cards.read_text().count('_("Open in Colab")') == 1
    cards.write_text(cards.read_text().replace('_("Open in Colab")', '_("Open it in Colab")'))
    editions.update_extension_catalogue("ja", extensions, locales)
    catalog = editions._read(po)
    entry = catalog.get("Open it in Colab")
    assert entry.fuzzy and entry.string == "Colab で開く"
    assert catalog.get("Open in Colab") is None
    others = [m for m in catalog if m.id and m.id != "Open it in Colab"]
    assert others and not any(m.fuzzy or not m.string for m in others)

    monkeypatch.setattr(editions, "LOCALES", locales)
    monkeypatch.setattr(editions, "EXTENSIONS", extensions)
    found = editions.problems("ja")
    assert found == ["extensions.po: fuzzy (English changed, review it): 'Open it in Colab'"]
    # compiled, the fuzzy entry is left out: the page shows the new English
    from babel.messages.mofile import read_mo

    book_messages.compile_catalogue("ja", [locales], tmp_path / "locale")
    with (tmp_path / "locale" / "ja" / "LC_MESSAGES" / "extensions.mo").open("rb") as f:
        compiled = read_mo(f)
    assert compiled.get("Open it in Colab") is None
    assert compiled.get("Run it").string == "実行する"


def test_an_english_text_not_yet_in_the_catalogue_is_reported(tmp_path, monkeypatch):
    """Without the catalogue step, a new or edited English text is out of step: the check
    (run by tests/test_editions.py on the real catalogue) names it."""
    extensions, locales = _copy(tmp_path)
    (extensions / "new_words.py").write_text('from book_messages import _\n_("Fresh words")\n')
    monkeypatch.setattr(editions, "LOCALES", locales)
    monkeypatch.setattr(editions, "EXTENSIONS", extensions)
    found = editions.problems("ja")
    assert found == ["extensions.po: not in the catalogue (run catalogues): 'Fresh words'"]
    editions.update_extension_catalogue("ja", extensions, locales)
    assert editions.problems("ja") == ["extensions.po: untranslated: 'Fresh words'"]


def test_a_translation_keeps_the_english_placeholders():
    from babel.messages.catalog import Message

    def check(english, translated):
        return editions.placeholder_differences(Message(english, translated))

    assert check("{cpu}, {cores} cores", "{cpu}、{cores} コア") == []
    assert check("on {date}", "{date}") == []
    assert check("{s:.0f} s", "{s:.0f} 秒") == []
    assert check("about {minutes} min", "約 {minutes} 分") == []
    assert check("on {date}", "測定日") == [
        "placeholders [] in the translation, ['date'] in the English"
    ]
    assert check("on {date}", "{day}") == [
        "placeholders ['day'] in the translation, ['date'] in the English"
    ]
    assert check("on {date}", "{date") == [
        "the translation is not a format string (expected '}' before end of string)"
    ]
    plural = Message(("{n} exercise", "{n} exercises"), ("演習 {n} 問",))
    assert editions.placeholder_differences(plural) == []


def test_the_extensions_words_read_in_the_builds_language(book_language):
    """The code that builds a page, in each edition: the solution and folded-cell labels and
    the list of benchmark chapters (the card, the tables and the search page's sentence:
    test_chapter_cards.py, test_book_extensions.py, test_site_search.py)."""
    import benchmark_chapters
    import cell_labels

    book_language("ja")
    assert cell_labels.labels(["solution"]) == ("解答を表示", "解答を隠す")
    assert cell_labels.labels(["hide-input"]) == ("コードを表示", "コードを隠す")
    assert benchmark_chapters.separators() == ("、", "、")
    book_language("en")
    assert cell_labels.labels(["solution"]) == ("Show solution", "Hide solution")
    assert cell_labels.labels(["hide-input"]) is None  # myst-nb's own "Show code cell source"
    assert benchmark_chapters.separators() == (", ", " and ")


def test_outside_a_build_the_words_are_english_and_plain_strings(monkeypatch):
    """Imported without a build (a test, a tool), ``_`` gives the English as a ``str``, not
    Sphinx's lazy proxy; ``ngettext`` counts in English."""
    from sphinx import locale

    monkeypatch.delitem(locale.translators, ("general", book_messages.DOMAIN), raising=False)
    assert not locale.is_translator_registered(book_messages.DOMAIN)
    assert type(book_messages._("Run it")) is str
    assert book_messages.ngettext("{n} exercise", "{n} exercises", 1) == "{n} exercise"


def test_a_changed_catalogue_reads_every_page_again(tmp_path):
    """The tables are translated when their page is read and the cards when it is written:
    with a new catalogue, a saved environment gives every page again."""
    env = SimpleNamespace(found_docs={"b", "a"})
    assert book_messages._read_again_when_changed("1", None, env, set(), set(), set()) == [
        "a",
        "b",
    ]
    assert book_messages._read_again_when_changed("1", None, env, set(), set(), set()) == []
    assert book_messages._read_again_when_changed("2", None, env, set(), set(), set()) == [
        "a",
        "b",
    ]


def test_the_catalogue_compiles_into_the_build_folder(tmp_path):
    """At an extension's setup, before Sphinx compiles the catalogues it finds (after setup,
    beside their .po), so a first build has the words too; English has no catalogue."""
    digest = book_messages.compile_catalogue("ja", [ROOT / "locales"], tmp_path)
    assert len(digest) == 64
    assert (tmp_path / "ja" / "LC_MESSAGES" / "extensions.mo").is_file()
    assert book_messages.compile_catalogue("en", [ROOT / "locales"], tmp_path) == ""
    assert not (tmp_path / "en").exists()


JAPANESE = re.compile(r"[\u3000-\u30ff\u3400-\u9fff\uff00-\uffef]")


def test_no_japanese_in_the_extensions_code():
    """The extensions' words live in the catalogue: a Japanese text in their code (anything
    but a docstring or a comment) would be a translation that nothing keeps in step."""
    found = []
    for path in sorted(EXTENSIONS.glob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and JAPANESE.search(node.value)
            ):
                found.append(f"{path.name}:{node.lineno}: {node.value[:40]!r}")
    assert not found, found
