"""The Japanese edition: its catalogues complete and in step, its quizzes, the language switch."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import editions  # noqa: E402  (tools/editions.py)
import language_switch  # noqa: E402  (book/_ext/language_switch.py)
import measure_pages  # noqa: E402  (tools/measure_pages.py: the Chromium driver)
import site_search  # noqa: E402  (tools/site_search.py)
from language_switch import switch_html  # noqa: E402

from companion import quiz  # noqa: E402


def _tool():
    return editions


def test_every_catalogue_entry_is_translated_and_none_is_fuzzy():
    found = _tool().problems("ja")
    assert not found, f"{len(found)} catalogue entries to translate or review:\n" + "\n".join(
        found[:40]
    )


@pytest.mark.subprocess
def test_the_catalogues_hold_exactly_the_english_messages(tmp_path):
    """A fresh extraction of the English source against locales/ja: an English paragraph
    changed without its translation being reviewed shows as missing here."""
    tool = _tool()
    pot = tool.extract(tmp_path)
    found = tool.problems("ja", pot)
    assert not found, "\n".join(found[:40])
    # the extracted templates name the book, as the catalogues made from them do
    setup = (pot / "book" / "setup.pot").read_text()
    assert '"Project-Id-Version: Deep reinforcement learning in JAX' in setup, setup[:400]


def test_every_catalogue_names_the_book():
    """sphinx-intl copies a template's header into a new catalogue: a header that names no
    project ("Project name not set") tells a translator's tool nothing."""
    unnamed = [
        str(po.relative_to(editions.LOCALES))
        for po in sorted(editions.LOCALES.rglob("*.po"))
        if "Project-Id-Version: Deep reinforcement learning in JAX" not in po.read_text()
    ]
    assert not unnamed, unnamed


def test_a_fuzzy_or_empty_entry_is_reported(tmp_path, monkeypatch):
    tool = _tool()
    folder = tmp_path / "ja" / "LC_MESSAGES" / "book"
    folder.mkdir(parents=True)
    (folder / "intro.po").write_text(
        'msgid ""\nmsgstr "Content-Type: text/plain; charset=utf-8\\n"\n\n'
        'msgid "Hello"\nmsgstr "こんにちは"\n\n'
        '#, fuzzy\nmsgid "Old sentence"\nmsgstr "古い文"\n\n'
        'msgid "New sentence"\nmsgstr ""\n'
    )
    monkeypatch.setattr(tool, "LOCALES", tmp_path)
    monkeypatch.setattr(tool, "EXTENSIONS", tmp_path / "no_code")  # no words of the code's
    monkeypatch.setattr(tool, "BENCH", tmp_path / "no_code")
    monkeypatch.setattr(tool, "CHECKS", tmp_path / "no_code")
    monkeypatch.setattr(tool, "FIGURES", tmp_path / "no_code")  # no notebooks, no drawing code
    monkeypatch.setattr(tool, "GLUE", tmp_path / "no_code")
    for name in (
        "QUIZZES",
        "PLAYGROUND",
        "LAB",
        "TITLE",
    ):  # nor quizzes, playground, lab words, title
        monkeypatch.setattr(tool, name, tmp_path / "no_code")
    found = tool.problems("ja")
    assert len(found) == 2
    assert "fuzzy" in found[0] and "Old sentence" in found[0]
    assert "untranslated" in found[1] and "New sentence" in found[1]


@pytest.mark.parametrize(
    "english, translated, lost",
    [
        ("See {term}`transitions <Transition>`.", "{term}`遷移 <Transition>` を参照。", None),
        ("See {term}`Transition`.", "{term}`遷移 <Transition>` を参照。", None),
        (
            r"At most $\lceil T / \text{time limit} \rceil$.",
            r"高々 $\lceil T/\text{時間制限}\rceil$。",
            None,
        ),
        ("It took {glue:md}`run_s`.", "かかりました。", "roles: lost [('glue:md', 'run_s')]"),
        ("Call `jax.jit(f)` once.", "`jax.jit` を 1 回呼びます。", "code: lost ['jax.jit(f)']"),
        (
            "Read [chapter 4](04_maze.ipynb).",
            "[第 4 章](04_maze_in_depth.ipynb) を読みます。",
            "links: lost ['04_maze.ipynb']",
        ),
        (r"With $\gamma = 0.9$.", r"$\gamma = 0.99$ で。", "maths: lost ['$\\\\gamma=0.9$']"),
        ("Use `rlax`.", "`rlax` を使います（`rlax.lambda_returns`）。", None),  # code added: fine
        (
            "It took long.",
            "{glue:md}`run_s` かかりました。",
            "roles: lost [] added [('glue:md', 'run_s')]",
        ),
    ],
)
def test_a_translation_must_keep_the_englishs_roles_code_maths_and_links(english, translated, lost):
    """A translated paragraph that drops a glued figure, a cross-reference, inline code, a
    formula or a link loses what the English page shows, and one that adds a glued figure
    shows what the English does not; a term or reference may take a Japanese label, words
    inside ``\\text{}`` are prose, and code added to explain is allowed."""
    found = _tool().markup_differences(english, translated)
    if lost is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(lost), found


@pytest.mark.parametrize(
    "page, language, expected",
    [
        ("book/intro", "en", '<a href="../ja/book/intro.html" hreflang="ja" lang="ja">日本語</a>'),
        ("notebooks/07_dqn", "ja", '<a href="../../notebooks/07_dqn.html" hreflang="en"'),
        ("index", "en", '<a href="ja/index.html"'),
        ("index", "ja", '<a href="../index.html"'),
    ],
)
def test_the_switch_opens_the_same_page_in_the_other_edition(page, language, expected):
    html = switch_html(page, language)
    assert expected in html and html.count("<a ") == 1


def test_the_switch_names_an_unknown_language():
    with pytest.raises(ValueError, match="language: expected one of"):
        switch_html("book/intro", "fr")


def test_the_search_page_and_the_index_have_the_switch_too():
    """Sphinx writes the search page and the index from templates, not from a body: their
    switch goes to the templates (``book/_ext/templates``), which place it above the page;
    every other page has it at the top of its body."""
    app = SimpleNamespace(config=SimpleNamespace(language="ja"))
    for page in language_switch.TEMPLATED:
        context = {}
        language_switch._add_switch(app, page, f"{page}.html", context, None)
        assert f'<a href="../{page}.html" hreflang="en"' in context["edition_switch"]
        template = (language_switch.TEMPLATES / f"{page}.html").read_text()
        assert f'extends "!{page}.html"' in template and "{{ edition_switch }}" in template
    context = {"body": "<section>...</section>"}
    language_switch._add_switch(app, "book/intro", "page.html", context, object())
    assert context["body"].startswith('<nav class="edition-switch"')
    redirect = {"body": "<p>moved</p>"}
    language_switch._add_switch(app, "old", "page.html", redirect, None)
    assert redirect == {"body": "<p>moved</p>"}


#: A chapter page as the book lays it out: the switch, then sections with ids, tall enough
#: to scroll; and the search page's results.
SWITCH_PAGE = """<!DOCTYPE html><html lang="ja"><head><meta charset="utf-8"></head><body>
<nav class="edition-switch" aria-label="Language">
<a href="../../notebooks/x.html" hreflang="en" lang="en">English</a></nav>
<article class="bd-article"><section id="top"><h1>x</h1><p style="height:1500px">.</p>
<section id="value-iteration"><h2>b</h2><p style="height:1500px">.</p></section>
<section id="q-learning"><h2>c</h2><p style="height:3000px">.</p></section>
</section></article>%s<script src="editions.js"></script></body></html>"""


@pytest.mark.browser
@pytest.mark.skipif(not site_search.browser_path(), reason="no Chromium on this machine")
def test_the_switch_keeps_the_readers_place(tmp_path):
    """``book/_static/editions.js`` in Chromium: the link gets the address's section, else the
    section scrolled to (none at the top of the page), and on the search page the query,
    before it is followed."""
    folder = tmp_path / "ja" / "notebooks"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "book" / "_static" / "editions.js", folder)
    (folder / "x.html").write_text(SWITCH_PAGE % "")
    (folder / "search.html").write_text(SWITCH_PAGE % '<div id="search-results"></div>')
    href = (
        "new Promise(r => setTimeout(r, 100)).then(() => {{ {0};"
        " const a = document.querySelector('nav.edition-switch a');"
        " a.dispatchEvent(new PointerEvent('pointerdown', {{bubbles: true}}));"
        " return a.getAttribute('href'); }})"
    )
    cases = [
        ("x.html#value-iteration", "", "../../notebooks/x.html#value-iteration"),
        ("x.html#no-such-id", "", "../../notebooks/x.html"),
        ("x.html", "", "../../notebooks/x.html"),
        ("x.html", "window.scrollTo(0, 3200)", "../../notebooks/x.html#q-learning"),
        ("x.html", "window.scrollTo(0, 1700)", "../../notebooks/x.html#value-iteration"),
        ("search.html?q=%E4%BE%A1%E5%80%A4", "", "../../notebooks/x.html?q=%E4%BE%A1%E5%80%A4"),
    ]
    browser = measure_pages.Browser(site_search.browser_path())
    try:
        session = measure_pages.open_tab(browser)
        got = []
        for address, before, _ in cases:
            browser.send("Page.navigate", {"url": "about:blank"}, session=session)
            url = f"{(folder / 'x.html').as_uri()[: -len('x.html')]}{address}"
            browser.send("Page.navigate", {"url": url}, session=session)
            assert browser.wait_event("Page.loadEventFired", session, timeout=30)
            got.append(measure_pages.evaluate(browser, session, href.format(before)))
    finally:
        browser.close()
    assert got == [expected for _, _, expected in cases]


QUIZZES = sorted((ROOT / "notebooks" / "quizzes").glob("*.json"))


def check_translation(english: list[dict], translated: list[dict], name: str = "quiz") -> None:
    """Check that a translated quiz asks the same questions as the English one.

    Raises:
        ValueError: naming ``name`` and the question: a different number of questions or
            answers, a different correct answer, or a text left in English.
    """
    quiz.check_quiz(translated, name)
    if len(english) != len(translated):
        raise ValueError(f"{name}: {len(translated)} questions, the English has {len(english)}")
    for i, (e, t) in enumerate(zip(english, translated), start=1):
        if [a["correct"] for a in e["answers"]] != [a["correct"] for a in t["answers"]]:
            raise ValueError(f"{name}, question {i}: the answers or the correct one differ")
        pairs = [(e["question"], t["question"])] + [
            (a[f], b[f]) for a, b in zip(e["answers"], t["answers"]) for f in ("answer", "feedback")
        ]
        for source, text in pairs:
            if source == text and re.search(r"[A-Za-z]{4,} [a-z]{3,}", source):
                raise ValueError(f"{name}, question {i}: not translated: {source[:60]!r}")


@pytest.mark.parametrize("path", QUIZZES, ids=[p.stem for p in QUIZZES])
def test_every_quiz_has_a_japanese_translation_with_the_same_answers(path):
    translated = path.parent / "ja" / path.name
    assert translated.is_file(), f"no Japanese quiz {translated.relative_to(ROOT)}"
    check_translation(
        json.loads(path.read_text()), json.loads(translated.read_text()), f"ja/{path.name}"
    )


def test_the_committed_translated_quizzes_are_what_the_catalogue_gives():
    """notebooks/quizzes/ja is written from the English quizzes and quizzes.po (make
    catalogues): an edit of a Japanese quiz by hand, or a catalogue entry not yet written
    out, shows here."""
    import quiz_messages  # noqa: PLC0415  (tools/quiz_messages.py)

    catalog = editions._read(editions.LOCALES / "ja" / "LC_MESSAGES" / "quizzes.po")
    for name, text in quiz_messages.written(catalog).items():
        committed = (ROOT / "notebooks" / "quizzes" / "ja" / name).read_text(encoding="utf-8")
        assert committed == text, f"ja/{name} differs from the catalogue: run make catalogues"


def test_a_changed_english_question_turns_its_translation_fuzzy(tmp_path):
    """A quiz's question reworded in English: its entry becomes one to review (the old
    translation kept as a suggestion) and the translated quiz keeps the English until a
    translator has reviewed it, which the catalogue check and the quiz check both refuse."""
    import quiz_messages  # noqa: PLC0415

    quizzes = tmp_path / "quizzes"
    quizzes.mkdir()
    question = {
        "question": "Which call compiles?",
        "type": "multiple_choice",
        "answers": [
            {"answer": "The first.", "correct": True, "feedback": "A new shape compiles."},
            {"answer": "None.", "correct": False, "feedback": "jit compiles on a first call."},
        ],
    }
    (quizzes / "01_x.json").write_text(json.dumps([question]))
    locales = tmp_path / "locales"
    po = editions.update_code_catalogue("ja", "quizzes", quizzes, locales)
    catalog = editions._read(po)
    for message in catalog:
        if message.id:
            message.string = "訳：" + message.id
    from babel.messages.pofile import write_po

    with po.open("wb") as f:
        write_po(f, catalog, width=88)
    assert (
        json.loads(quiz_messages.written(editions._read(po), quizzes)["01_x.json"])[0]["question"]
        == "訳：Which call compiles?"
    )
    question["question"] = "Which of the calls compiles?"
    (quizzes / "01_x.json").write_text(json.dumps([question]))
    editions.update_code_catalogue("ja", "quizzes", quizzes, locales)
    entry = editions._read(po).get("Which of the calls compiles?", context="01_x")
    assert entry.fuzzy and entry.string == "訳：Which call compiles?"
    written = json.loads(quiz_messages.written(editions._read(po), quizzes)["01_x.json"])
    assert written[0]["question"] == "Which of the calls compiles?"  # English until reviewed


def test_the_playgrounds_japanese_is_what_the_catalogue_gives_and_follows_the_english(
    tmp_path,
):
    """strings.js's Japanese block is written from playground.po (make catalogues); an
    English message reworded turns fuzzy, and its block keeps the English until reviewed."""
    import shutil

    import playground_messages as pm  # noqa: PLC0415  (tools/playground_messages.py)

    catalog = editions._read(editions.LOCALES / "ja" / "LC_MESSAGES" / "playground.po")
    assert pm.written(catalog, "ja") == pm.STRINGS.read_text(encoding="utf-8"), (
        "strings.js's ja block differs from the catalogue: run make catalogues"
    )
    strings = shutil.copy(pm.STRINGS, tmp_path / "strings.js")
    locales = tmp_path / "locales"
    shutil.copytree(editions.LOCALES / "ja", locales / "ja")
    text = strings.read_text(encoding="utf-8").replace("run: 'Run',", "run: 'Run it',", 1)
    strings.write_text(text, encoding="utf-8")
    po = editions.update_code_catalogue("ja", "playground", strings, locales)
    entry = editions._read(po).get("Run it", context="run")
    assert entry.fuzzy and entry.string == "実行"
    assert pm.blocks(pm.written(editions._read(po), "ja", strings))["ja"]["run"] == "Run it"


def test_a_translated_quiz_with_another_correct_answer_is_refused():
    english = quiz.load_quiz("07_dqn")
    wrong = json.loads(json.dumps(english))
    for question in wrong:
        for answer in question["answers"]:
            answer["answer"] = answer["feedback"] = question["question"] = "訳"
    wrong[1]["answers"][0]["correct"], wrong[1]["answers"][1]["correct"] = False, True
    with pytest.raises(ValueError, match="question 2: the answers or the correct one differ"):
        check_translation(english, wrong, "ja/07_dqn.json")
    untranslated = json.loads(json.dumps(english))
    with pytest.raises(ValueError, match="question 1: not translated"):
        check_translation(english, untranslated, "ja/07_dqn.json")


def test_the_quiz_output_holds_each_language_in_its_own_block():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()  # as in a notebook's kernel: display() publishes outputs
    try:
        with capture_output() as shown:
            quiz.show_quiz("07_dqn")
    finally:
        InteractiveShell.clear_instance()
    html = [o.data["text/html"] for o in shown.outputs if "text/html" in o.data]
    blocks = [h for h in html if h.startswith('<div class="edition-text"')]
    languages = [b.split('lang="')[1].split('"')[0] for b in blocks]
    assert languages == ["en", "ja"]  # the book's style (editions.css) shows the page's own
    scripts = [o for o in shown.outputs if "application/javascript" in o.data]
    assert len(scripts) == 2
    japanese = json.loads((ROOT / "notebooks" / "quizzes" / "ja" / "07_dqn.json").read_text())
    assert json.dumps(japanese[0]["question"]) in scripts[1].data["application/javascript"]


def _quiz_shown_in(language: str):
    """What chapter 7's quiz cell shows (IPython's captured outputs) to a reader of
    ``language``, in an IPython shell of its own; the language is reset after."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from companion import set_language

    set_language(language)
    InteractiveShell.instance()
    try:
        with capture_output() as out:
            quiz.show_quiz("07_dqn")
    finally:
        InteractiveShell.clear_instance()
        set_language(None)
    return out


@pytest.mark.parametrize("language, shown", [("en", "en"), ("ja", "ja")])
def test_outside_the_book_the_quiz_is_in_the_readers_language(monkeypatch, language, shown):
    """In Colab or Jupyter (no myst-nb, so no edition style) one quiz is shown, the one of the
    reader's language: a Japanese notebook's setup chooses Japanese."""
    import builtins
    import sys as _sys

    real_import = builtins.__import__

    def no_myst_nb(name, *args, **kwargs):
        if name.startswith("myst_nb"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(_sys.modules, "myst_nb", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_myst_nb)
    out = _quiz_shown_in(language)
    html = [o.data["text/html"] for o in out.outputs if "text/html" in o.data]
    assert [h.split('lang="')[1].split('"')[0] for h in html] == [shown]


@pytest.mark.parametrize("language", ["en", "ja"])
def test_a_quiz_that_cannot_be_loaded_is_said_so_in_the_readers_language(monkeypatch, language):
    """Where the quiz's file is not at hand and the network cannot be reached, the cell says
    so in the reader's language, and the notebook goes on."""
    from companion import language as languages

    def unreachable(chapter, language="en"):
        raise FileNotFoundError(f"chapter: no local quiz {chapter!r} and no network")

    monkeypatch.setattr(quiz, "load_quiz", unreachable)
    monkeypatch.delenv(languages.BOOK_BUILD, raising=False)
    out = _quiz_shown_in(language)
    (shown,) = [o.data["text/markdown"] for o in out.outputs if "text/markdown" in o.data]
    expected = {"en": "The quiz cannot be shown here", "ja": "ここではクイズを表示できません"}
    assert shown.startswith(expected[language])


def test_the_editions_title_comes_from_the_catalogue_and_follows_the_english(tmp_path, monkeypatch):
    """The Japanese edition's title is the catalogue ``extensions``' translation of
    _config.yml's title: a changed English title leaves it fuzzy, and the build refuses it."""
    import book_title  # tools/book_title.py

    po = editions.LOCALES / "ja" / "LC_MESSAGES" / "extensions.po"
    assert book_title.edition_title("ja") == editions._read(po).get(book_title.book_title()).string
    assert editions.edition_config("ja", "off")["title"] == book_title.edition_title("ja")
    assert book_title.edition_title("ja") != book_title.book_title()
    # the English title changes: the catalogue's entry turns fuzzy, the edition has no title
    config = tmp_path / "_config.yml"
    config.write_text("title: Deep reinforcement learning in JAX, 2e\n")
    monkeypatch.setattr(editions, "TITLE", config)
    monkeypatch.setattr(book_title, "CONFIG", config)
    editions.update_code_catalogue("ja", "extensions", locales=_copy_locales(tmp_path))
    updated = editions._read(tmp_path / "ja" / "LC_MESSAGES" / "extensions.po")
    entry = updated.get("Deep reinforcement learning in JAX, 2e")
    assert entry is not None and entry.fuzzy and entry.string == "JAX による深層強化学習"
    with pytest.raises(SystemExit, match="has no translation"):
        book_title.edition_title("ja", locales=tmp_path)


def _copy_locales(tmp_path: Path) -> Path:
    folder = tmp_path / "ja" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    shutil.copy(editions.LOCALES / "ja" / "LC_MESSAGES" / "extensions.po", folder)
    return tmp_path
