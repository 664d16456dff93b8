"""The chapter cards (book/chapters.yml, drawn by book/_ext/chapter_cards.py)."""

import sys
from pathlib import Path

import pytest
import yaml
from sphinx.errors import ExtensionError

ROOT = Path(__file__).resolve().parents[1]
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


def test_the_study_time_reads_in_each_editions_language(tmp_path):
    """Hand-made notebook: 360 words of prose (2 min) and 64 code lines (8 min) make 10 min,
    rounded to 10; one exercise."""
    import json

    from chapter_cards import _duration, study_time

    cells = [
        {"cell_type": "markdown", "source": ["word " * 360]},
        {"cell_type": "code", "metadata": {}, "source": ["x = 1\n" * 64]},
        {"cell_type": "markdown", "source": ["## Exercises\n\n1. Do it.\n"]},
    ]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    assert study_time(path) == "about 10 min to read (360 words, 64 lines of code), then 1 exercise"
    assert study_time(path, "ja") == (
        "読むのに約 10 分（英語版で 360 語、コード 64 行）、その後に演習 1 問"
    )
    assert _duration(40.2) == "40 s" and _duration(40.2, "ja") == "40 秒"
    assert _duration(1032.0, "ja") == "17.2 分"
