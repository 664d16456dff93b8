"""The chapter cards (book/chapters.yml, drawn by book/_ext/chapter_cards.py)."""

import sys
from pathlib import Path

import pytest
import yaml
from sphinx.errors import ExtensionError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from chapter_cards import CARDS_FILE, load_cards  # noqa: E402

CHAPTERS = sorted(f"notebooks/{p.stem}" for p in (ROOT / "notebooks").glob("*.ipynb"))


def test_every_chapter_has_a_card_and_prerequisites_come_earlier():
    cards = load_cards(ROOT / CARDS_FILE, CHAPTERS)
    assert list(cards) == CHAPTERS  # in reading order
    assert cards["notebooks/01_jax_essentials"]["prerequisites"] == []
    for card in cards.values():
        assert card["builds"].endswith(".") and len(card["builds"]) <= 100
        assert card["builds_ja"].endswith("。") and card["builds_ja"] != card["builds"]


def _write(tmp_path, cards):
    path = tmp_path / "chapters.yml"
    path.write_text(yaml.safe_dump(cards))
    return path


@pytest.mark.parametrize(
    "change, named",
    [
        (lambda c: c.pop("notebooks/02_neural_networks"), "notebooks/02_neural_networks"),
        (
            lambda c: c.update({"notebooks/99_extra": c["notebooks/01_jax_essentials"]}),
            "notebooks/99_extra",
        ),
        (lambda c: c["notebooks/03_maze_first_look"].update(difficulty="hard"), "'hard'"),
        (
            lambda c: c["notebooks/02_neural_networks"].update(prerequisites=["notebooks/07_dqn"]),
            "'notebooks/07_dqn' is not an earlier",
        ),
        (
            lambda c: c["notebooks/04_maze_in_depth"].pop("builds"),
            "notebooks/04_maze_in_depth: expected the fields",
        ),
        (lambda c: c["notebooks/06_cartpole"].update(minutes=3), "'minutes'"),
        (
            lambda c: c["notebooks/05_rl_foundations"].pop("builds_ja"),
            "notebooks/05_rl_foundations: expected the fields builds, builds_ja",
        ),
    ],
    ids=[
        "missing",
        "extra",
        "difficulty",
        "later prerequisite",
        "no builds",
        "unknown field",
        "no Japanese",
    ],
)
def test_a_bad_cards_file_fails_the_build_naming_the_chapter(tmp_path, change, named):
    cards = yaml.safe_load((ROOT / CARDS_FILE).read_text())
    change(cards)
    with pytest.raises(ExtensionError, match=named.replace("(", r"\(").replace(")", r"\)")):
        load_cards(_write(tmp_path, cards), CHAPTERS)


def test_a_card_says_when_its_notebook_shared_the_machine(tmp_path):
    """The time on a card comes from myst-nb's record; when tools/execute_notebooks.py ran
    that very execution alongside others, the card says how many ran at once."""
    import json
    from types import SimpleNamespace

    from chapter_cards import _sharing

    app = SimpleNamespace(srcdir=str(tmp_path))
    assert _sharing(app, "notebooks/08_ppo_maze", 266.0) == ""  # no record: nothing to add
    (tmp_path / "_build").mkdir()
    record = {
        "notebooks/08_ppo_maze.ipynb": {"seconds": 266.0, "jobs": 2},
        "notebooks/01_jax_essentials.ipynb": {"seconds": 8.0, "jobs": 1},
    }
    (tmp_path / "_build" / "notebook_seconds.json").write_text(json.dumps(record))
    assert _sharing(app, "notebooks/08_ppo_maze", 266.0) == (
        ", with 2 notebooks executing at a time"
    )
    assert _sharing(app, "notebooks/08_ppo_maze", 250.0) == ""  # another execution's time
    assert _sharing(app, "notebooks/01_jax_essentials", 8.0) == ""  # ran alone
    assert _sharing(app, "notebooks/02_neural_networks", 21.0) == ""


def test_study_time_counts_prose_code_and_exercises(tmp_path):
    """Reading time from the prose (180 words a minute) and the shown code (8 lines a minute),
    neither counting the exercises, which are counted apart; hidden and setup cells are not
    read."""
    import json

    from chapter_cards import study_time

    def cell(kind, text, tags=()):
        return {"cell_type": kind, "metadata": {"tags": list(tags)}, "source": text}

    cells = [
        cell("markdown", "word " * 1800),  # 10 min
        cell("code", "x = 1\n\ny = 2\n" * 40),  # 80 lines: 10 min
        cell("code", "hidden = 1\n" * 500, ["remove-input"]),
        cell("code", "%pip install x\n" * 50, ["colab-setup"]),
        cell("markdown", "## Exercises\n\n1. **One.** Do it.\n2. **Two.** " + "word " * 900),
        cell("markdown", "3. **Find the bug.** Here."),
        cell("code", "solution = 1\n" * 300),
    ]
    path = tmp_path / "chapter.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    assert study_time(path) == (
        "about 20 min to read (1,800 words, 80 lines of code), then 3 exercises"
    )
    path.write_text(json.dumps({"cells": cells[:1]}))
    assert (
        study_time(path) == "about 10 min to read (1,800 words, 0 lines of code), then 0 exercises"
    )


def test_the_study_time_reads_in_each_editions_language(tmp_path, book_language):
    """Hand-made notebook: 360 words of prose (2 min) and 64 code lines (8 min) make 10 min,
    rounded to 10; one exercise. The words are the build's language's (its catalogue of the
    extensions' words), the figures the English edition's."""
    import json

    from chapter_cards import _duration, study_time

    cells = [
        {"cell_type": "markdown", "source": ["word " * 360]},
        {"cell_type": "code", "metadata": {}, "source": ["x = 1\n" * 64]},
        {"cell_type": "markdown", "source": ["## Exercises\n\n1. Do it.\n"]},
    ]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    english = "about 10 min to read (360 words, 64 lines of code), then 1 exercise"
    assert study_time(path) == english
    book_language("ja")
    assert study_time(path) == (
        "読むのに約 10 分（英語版で 360 語、コード 64 行）、その後に演習 1 問"
    )
    assert _duration(40.2) == "40 秒"
    assert _duration(1032.0) == "17.2 分"
    book_language("en")
    assert study_time(path) == english
    assert _duration(40.2) == "40 s" and _duration(1032.0) == "17.2 min"


def _card_env(language: str, tmp_path):
    """What :func:`chapter_cards.card_node` reads of a build: the chapter 7 card, a 100 s
    execution of its notebook, the repository."""
    from types import SimpleNamespace

    cards = load_cards(ROOT / CARDS_FILE, CHAPTERS)
    config = SimpleNamespace(
        language=language,
        chapter_cards=cards,
        html_theme_options={"repository_url": "https://github.com/o/b"},
    )
    return SimpleNamespace(
        app=SimpleNamespace(config=config, srcdir=str(tmp_path)),
        doc2path=lambda doc, base=True: ROOT / f"{doc}.ipynb" if base else f"{doc}.ipynb",
        nb_metadata={"notebooks/07_dqn": {"exec_data": {"runtime": 100.0}}},
    )


def test_a_card_is_written_in_its_pages_language(tmp_path, monkeypatch, book_language):
    """The card as a page of each edition gets it: every label, the difficulty, the times and
    the Colab link in the build's language, from the catalogue of the extensions' words."""
    import chapter_cards
    import edition_notebooks

    monkeypatch.setattr(chapter_cards, "_machine", lambda: ("Test CPU", 2))
    book_language("ja")
    card = chapter_cards.card_node(_card_env("ja", tmp_path), "notebooks/07_dqn")
    text = card.astext()
    for words in (
        "このページの概要",
        "作るもの",
        "先に読むページ",
        "難易度",
        "上級",
        "学ぶ時間の目安",
        "このページをビルドしたマシン（Test CPU、2 コア）でノートブックの実行に 1.7 分",
        "Colab で開く",
    ):
        assert words in text, words
    link = card.next_node(lambda n: "refuri" in n)["refuri"]
    # the reader's notebook of the page's edition, on the branch every Colab link opens
    branch = edition_notebooks.COLAB_BRANCH
    assert (
        link
        == f"https://colab.research.google.com/github/o/b/blob/{branch}/notebooks/ja/07_dqn.ipynb"
    )
    for english in ("This page", "You build", "Difficulty", "advanced", "min", "cores", "GPU;"):
        assert english not in text, english
    book_language("en")
    text = chapter_cards.card_node(_card_env("en", tmp_path), "notebooks/07_dqn").astext()
    for words in (
        "This page at a glance",
        "You build",
        "Read first",
        "Difficulty",
        "advanced",
        "Study time",
        "1.7 min to execute the notebook on the machine that built this page (Test CPU, 2 cores)",
        "Open in Colab",
    ):
        assert words in text, words
