"""The words of the book's code in gettext: the Sphinx extensions' (``book/_ext/
book_messages.py``, domain ``extensions``), the benchmark tables' (``companion/bench/
words.py``, domain ``companion``) and the self-checks' (``companion/checks/_messages.py``,
domain ``checks``). Their catalogues are extracted from the code and kept in step by
``tools/editions.py catalogues``; the extensions' is compiled at build time and read in the
build's language, the package's two are compiled into the package and read by Python's
gettext."""

from __future__ import annotations

import ast
import re
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import book_messages  # noqa: E402  (book/_ext/book_messages.py)
import editions  # noqa: E402  (tools/editions.py)

EXTENSIONS = ROOT / "book" / "_ext"
BENCH = ROOT / "companion" / "bench"
CHECKS = ROOT / "companion" / "checks"
MESSAGES = ROOT / "locales" / "ja" / "LC_MESSAGES"


def _copy(tmp_path: Path, monkeypatch, domain: str) -> tuple[Path, Path]:
    """A copy of ``domain``'s code and of its Japanese catalogue, which the catalogue step and
    the check then read instead (the other domain: no code, no catalogue): (code, locales)."""
    source = {"extensions": EXTENSIONS, "companion": BENCH, "checks": CHECKS}[domain]
    code = tmp_path / "code"
    shutil.copytree(source, code, ignore=shutil.ignore_patterns("__pycache__"))
    locales = tmp_path / "locales"
    (locales / "ja" / "LC_MESSAGES").mkdir(parents=True)
    shutil.copy(MESSAGES / f"{domain}.po", locales / "ja" / "LC_MESSAGES")
    monkeypatch.setattr(editions, "LOCALES", locales)
    monkeypatch.setattr(editions, "PACKAGE_LOCALE", tmp_path / "package_locale")
    for name, other in (("EXTENSIONS", "extensions"), ("BENCH", "companion"), ("CHECKS", "checks")):
        monkeypatch.setattr(editions, name, code if domain == other else tmp_path / "none")
    monkeypatch.setattr(editions, "FIGURES", tmp_path / "none")  # tests/book/test_figure_words.py
    for name in ("GLUE", "QUIZZES", "PLAYGROUND", "LAB"):  # test_glue.py, test_editions.py
        monkeypatch.setattr(editions, name, tmp_path / "none")
    if domain != "extensions":  # the book's title is an entry of extensions.po
        monkeypatch.setattr(editions, "TITLE", tmp_path / "none")
    return code, locales


#: (domain, file, an English text in it, the text edited, its Japanese)
EDITS = [
    ("extensions", "chapter_cards.py", "Open in Colab", "Open it in Colab", "Colab で開く"),
    ("companion", "tables.py", "seeds solved", "seeds that solved", "解けたシード"),
    ("checks", "core.py", "a triple", "a 3-tuple", "3 つ組"),
]


@pytest.mark.parametrize(
    "domain, file, english, edited, japanese", EDITS, ids=["ext", "bench", "checks"]
)
def test_a_changed_english_text_turns_its_translation_fuzzy(
    tmp_path, monkeypatch, domain, file, english, edited, japanese
):
    """Editing an English text in the code, then the catalogue step, leaves its old Japanese
    as a fuzzy suggestion (which the check refuses and the compiled catalogue leaves out);
    the unchanged copy leaves the catalogue untouched."""
    code, locales = _copy(tmp_path, monkeypatch, domain)
    message = re.compile(r"\b_\(\s*" + re.escape(f'"{english}"'))  # the text as a message
    holders = [p.name for p in sorted(code.rglob("*.py")) if message.search(p.read_text())]
    assert holders == [file], f"pick a message only {file} holds, not {english!r} ({holders})"
    po = locales / "ja" / "LC_MESSAGES" / f"{domain}.po"
    before = po.read_bytes()
    assert editions.update_code_catalogue("ja", domain, code, locales) == po
    assert po.read_bytes() == before  # in step: not written

    source = code / file
    assert source.read_text().count(f'_("{english}"') == 1
    source.write_text(source.read_text().replace(f'_("{english}"', f'_("{edited}"'))
    editions.update_code_catalogue("ja", domain, code, locales)
    catalog = editions._read(po)
    entry = catalog.get(edited)
    assert entry.fuzzy and entry.string == japanese
    assert catalog.get(english) is None
    others = [m for m in catalog if m.id and m.id != edited]
    assert others and not any(m.fuzzy or not m.string for m in others)

    found = editions.problems("ja")
    if domain in editions.PACKAGE_DOMAINS:  # the compiled catalogue is missing from the copy
        assert found.pop().endswith(f"{domain}.mo: missing (run catalogues)")
        editions.compile_package_catalogue("ja", domain=domain)
        assert editions.package_catalogue_differences("ja", domain) == []
    assert found == [f"{domain}.po: fuzzy (English changed, review it): {edited!r}"]
    # compiled, the fuzzy entry is left out: the page or table shows the new English
    from babel.messages.mofile import read_mo

    book_messages.compile_catalogue("ja", [locales], tmp_path / "locale")
    mo = tmp_path / "locale" / "ja" / "LC_MESSAGES" / "extensions.mo"
    if domain in editions.PACKAGE_DOMAINS:
        mo = tmp_path / "package_locale" / "ja" / "LC_MESSAGES" / f"{domain}.mo"
    with mo.open("rb") as f:
        compiled = read_mo(f)
    assert compiled.get(edited) is None
    assert compiled.get(others[0].id).string == others[0].string


def test_an_english_text_not_yet_in_the_catalogue_is_reported(tmp_path, monkeypatch):
    """Without the catalogue step, a new or edited English text is out of step: the check
    (run by tests/book/test_editions.py on the real catalogue) names it."""
    code, locales = _copy(tmp_path, monkeypatch, "extensions")
    (code / "new_words.py").write_text('from book_messages import _\n_("Fresh words")\n')
    found = editions.problems("ja")
    assert found == ["extensions.po: not in the catalogue (run catalogues): 'Fresh words'"]
    editions.update_code_catalogue("ja", "extensions", code, locales)
    assert editions.problems("ja") == ["extensions.po: untranslated: 'Fresh words'"]


@pytest.mark.parametrize("domain", ["companion", "checks"])
def test_the_packages_compiled_catalogue_is_its_po(domain):
    """The package ships ``companion/locale/ja/LC_MESSAGES/<domain>.mo`` (a notebook on Colab
    reads it): it holds exactly the translated entries of ``locales/ja/.../<domain>.po``."""
    assert domain in editions.PACKAGE_DOMAINS
    assert editions.package_catalogue_differences("ja", domain) == []


def test_a_stale_compiled_catalogue_is_reported(tmp_path, monkeypatch):
    code, locales = _copy(tmp_path, monkeypatch, "companion")
    editions.compile_package_catalogue("ja")
    po = locales / "ja" / "LC_MESSAGES" / "companion.po"
    po.write_text(po.read_text().replace('msgstr "解けたシード"', 'msgstr "解けた鍵"'))
    assert editions.package_catalogue_differences("ja") == [
        "".join(
            (
                str(tmp_path / "package_locale" / "ja" / "LC_MESSAGES" / "companion.mo"),
                ": not as its .po says (run catalogues): 'seeds solved'",
            )
        )
    ]


def test_the_tables_words_need_only_pythons_gettext():
    """The tables run in a notebook's kernel, on Colab too: their words module imports
    nothing beyond the standard library (no Sphinx, no Babel)."""
    tree = ast.parse((BENCH / "words.py").read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_the_tables_words_read_in_each_language():
    from companion.bench import words

    assert words._of(3, 5, "en") == "3 of 5" and words._of(3, 5, "ja") == "5 個中 3 個"
    assert words._envs(1, "en") == "1 env" and words._envs("16", "en") == "16 envs"
    assert words._envs("16", "ja") == "16 環境"
    assert words._label("chapter", "ja") == "第 7 章の設定"
    assert words._label("a label of no catalogue", "ja") == "a label of no catalogue"
    with pytest.raises(ValueError, match="language: expected one of"):
        words._("key", "fr")


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
    """The code that builds a page, in each edition: the solution and folded-cell labels (the
    card, the tables and the search page's sentence: test_chapter_cards.py,
    test_site_search.py)."""
    import cell_labels

    book_language("ja")
    assert cell_labels.labels(["solution"]) == ("解答を表示", "解答を隠す")
    assert cell_labels.labels(["hide-input"]) == ("コードを表示", "コードを隠す")
    book_language("en")
    assert cell_labels.labels(["solution"]) == ("Show solution", "Hide solution")
    assert cell_labels.labels(["hide-input"]) is None  # myst-nb's own "Show code cell source"


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


def test_no_japanese_in_the_code_with_a_catalogue():
    """The extensions' and the tables' words live in their catalogues: a Japanese text in
    their code (anything but a docstring or a comment) would be a translation that nothing
    keeps in step."""
    found = []
    for path in sorted([*EXTENSIONS.glob("*.py"), *BENCH.glob("*.py")]):
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
