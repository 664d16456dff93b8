"""The chapter quizzes (notebooks/quizzes/*.json) and ``companion.quiz``."""

import copy
import json
import urllib.error
import urllib.request

import nbformat
import pytest
from notebook_runner import NOTEBOOKS, ROOT

from companion import quiz

QUIZ_DIR = ROOT / "notebooks" / "quizzes"
IDS = [p.stem for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_chapter_has_a_valid_quiz_shown_before_its_summary(path):
    questions = json.loads((QUIZ_DIR / f"{path.stem}.json").read_text())
    quiz.check_quiz(questions, path.stem)
    nb = nbformat.read(path, as_version=4)
    calls = [
        i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "show_quiz(" in c.source
    ]
    assert len(calls) == 1, f"{path.name}: expected one quiz cell"
    cell = nb.cells[calls[0]]
    assert f'show_quiz("{path.stem}")' in cell.source, "the quiz of another chapter"
    assert "remove-input" in cell.metadata.get("tags", []), "the book shows the quiz, not its code"
    summary = next(i for i, c in enumerate(nb.cells) if "## What you learned" in c.source)
    assert calls[0] < summary


def test_no_quiz_without_a_chapter():
    assert {p.stem for p in QUIZ_DIR.glob("*.json")} == {p.stem for p in NOTEBOOKS}


@pytest.fixture
def good():
    return json.loads((QUIZ_DIR / "07_dqn.json").read_text())


@pytest.mark.parametrize(
    "spoil, message",
    [
        (
            lambda q: q[1]["answers"][2].update(correct=True),
            "07_dqn.json, question 2: expected exactly one correct answer, got 2",
        ),
        (
            lambda q: q[0]["answers"][0].update(correct=False),
            "question 1: expected exactly one correct answer, got 0",
        ),
        (
            lambda q: q[3]["answers"][1].pop("feedback"),
            "question 4, answer 2: 'feedback' is missing or empty",
        ),
        (
            lambda q: q[2]["answers"][0].update(answer="  "),
            "question 3, answer 1: 'answer' is missing or empty",
        ),
        (lambda q: q[0].update(type="numeric"), "question 1: type 'numeric'"),
        (
            lambda q: q[2].update(answers=q[2]["answers"][:1]),
            "question 3: expected at least 2 answers, got 1",
        ),
        (
            lambda q: q[1]["answers"][0].update(feedback="Use `stop_gradient`."),
            "question 2: the answer 1 feedback has Markdown backticks",
        ),
        (
            lambda q: q[0].update(question="V(s&lt;sub&gt;t+1&lt;/sub&gt;)?"),
            "question 1: the question has an escaped HTML tag",
        ),
        (lambda q: q.pop(), "expected 4 to 6 questions, got 3"),
        (lambda q: q.extend(copy.deepcopy(q[:3])), "expected 4 to 6 questions, got 7"),
    ],
    ids=[
        "two correct",
        "none correct",
        "no feedback",
        "empty answer",
        "other type",
        "one answer",
        "markdown",
        "escaped tag",
        "too few",
        "too many",
    ],
)
def test_a_broken_quiz_is_named_with_its_question(good, spoil, message):
    spoil(good)
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        quiz.check_quiz(good, "07_dqn.json")


def test_show_quiz_passes_the_checked_questions_to_jupyterquiz(monkeypatch):
    import jupyterquiz

    shown = []
    monkeypatch.setattr(
        jupyterquiz, "display_quiz", lambda questions, **kw: shown.append(questions)
    )
    monkeypatch.chdir(ROOT / "notebooks")  # where the notebooks run
    quiz.show_quiz("08_ppo_maze")
    assert shown == [  # the English quiz, then its Japanese translation
        json.loads((QUIZ_DIR / "08_ppo_maze.json").read_text()),
        json.loads((QUIZ_DIR / "ja" / "08_ppo_maze.json").read_text()),
    ]


def test_outside_a_checkout_the_quiz_is_downloaded_or_the_page_says_why(tmp_path, monkeypatch):
    import jupyterquiz

    monkeypatch.chdir(tmp_path)  # no quizzes folder here or above
    assert quiz.find_quiz_file("07_dqn") is None
    asked = []

    class Response:
        def __init__(self, body):
            self.body = body

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self):
            return self.body

    def online(url, timeout):
        asked.append(url)
        return Response((QUIZ_DIR / "07_dqn.json").read_bytes())

    monkeypatch.setattr(urllib.request, "urlopen", online)
    assert quiz.load_quiz("07_dqn")[0]["question"].startswith("Why does DQN")
    assert asked == [f"{quiz.QUIZ_URL}/07_dqn.json"]

    def offline(url, timeout):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    monkeypatch.setattr(jupyterquiz, "display_quiz", lambda *a, **k: pytest.fail("shown"))
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *items: shown.extend(items))
    quiz.show_quiz("07_dqn")
    (said,) = [item.data for item in shown]
    assert "the network cannot be reached" in said and "The book's web page shows it." in said


def test_the_right_answer_is_not_given_away_by_its_length():
    """Answers are shuffled on the page, but a right answer that is always the longest one
    gives itself away: across all quizzes it may be the longest in at most 40% of questions
    (chance, with four answers, is 25%)."""
    questions = [q for p in sorted(QUIZ_DIR.glob("*.json")) for q in json.loads(p.read_text())]
    longest = sum(
        max(len(a["answer"]) for a in q["answers"] if a["correct"])
        > max(len(a["answer"]) for a in q["answers"] if not a["correct"])
        for q in questions
    )
    assert longest <= 0.4 * len(questions), f"{longest} of {len(questions)}"
