"""Every sentence of the chapters that compares measured figures carries the test that licenses
its comparison word (the book's statistics rule, chapter 7 section 6: ``companion.stats``).

A sentence is a comparison when it quotes a glued figure (``{glue:md}``) and uses a comparison
word (fewer, faster, ahead, more keys, ...). It passes when it states its test's result in
the same sentence (a p-value, an interval, or "within the spread"), or when it is listed in
:data:`NOT_A_CLAIM` with the reason it compares nothing measured. The direction each such
sentence states is checked in the chapter's own code (``stats.require``), which stops the
build when a re-run contradicts it.
"""

from __future__ import annotations

import json
import re

import pytest
from notebook_runner import ROOT

COMPARISON = re.compile(
    r"\b(fewer|ahead|faster|slower|sooner|more stable|less stable|outperform\w*|better than|"
    r"worse than|more (?:keys|seeds) |higher than|lower than|longer than|shorter than)",
    re.I,
)
LICENSED = re.compile(r"\bp [=≤≥]|\bintervals?\b|within the spread")
#: The start of a flagged sentence that compares nothing measured, and why.
NOT_A_CLAIM = {
    "Its last committed result, and the ratio of this page's figures": (
        "06: says when a ratio falls below 1 (a slower machine), no comparison of results"
    ),
    "Does an agent trained only on 10 × 10 mazes": "09: 'fewer' iterations, a setting",
    "A likely reason: training always ran exactly": "09: 'fewer' steps, a setting",
    "- **DQN** (CartPole) keeps": "11: 'faster' in a question of design, not a result",
    "The rest, GAE and the gradient epochs": "11: Amdahl's law, an identity",
    "If the rollout takes a share $p$ of the update": "11: Amdahl's law, an identity",
    "NVLink is tens of times faster": "12: hardware facts cited, not measured here",
}


def _unlicensed(sentence: str) -> bool:
    """A comparison of measured figures that does not state its test."""
    return bool(
        "{glue:md}" in sentence and COMPARISON.search(sentence) and not LICENSED.search(sentence)
    )


def _sentences():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            text = " ".join("".join(cell["source"]).split())
            for sentence in re.split(r"(?<=[.;:?])\s+(?=[A-Z(*-])", text):
                if "{glue:md}" in sentence and COMPARISON.search(sentence):
                    yield path.stem, sentence


def test_every_comparison_sentence_states_its_test():
    found = list(_sentences())
    assert len(found) >= 5  # the scan sees the chapters' comparisons (chapters 7 and 10)
    unlicensed = [
        (stem, s[:160])
        for stem, s in found
        if _unlicensed(s) and not any(s.startswith(k) for k in NOT_A_CLAIM)
    ]
    assert not unlicensed, (
        "comparison words without the test that licenses them (state the test's result in "
        f"the sentence, or list it in NOT_A_CLAIM with why): {unlicensed}"
    )
    stale = [k for k in NOT_A_CLAIM if not any(s.startswith(k) for _, s in found)]
    assert not stale, f"NOT_A_CLAIM entries that match no sentence any more: {stale}"


@pytest.mark.parametrize(
    "sentence, flagged",
    [
        ("The Huber loss solved {glue:md}`a`, fewer seeds than the squared loss.", True),
        ("On {glue:md}`n` keys it is faster (p = {glue:md}`p`).", False),
        ("The two are {glue:md}`x` apart: within the spread.", False),
        ("Training is faster on a GPU.", False),  # no measured figure
    ],
)
def test_the_scan_flags_an_unlicensed_comparison(sentence, flagged):
    assert _unlicensed(sentence) == flagged


#: A comparison word inside a string that a chapter's code composes for the page.
COMPOSED = re.compile(
    r"\b(fewer|ahead|faster|slower|sooner|closer|further|more|less|higher|lower|longer|"
    r"shorter|better|worse|outperform\w*|above|below|exceed\w*|beats?|behind)\b",
    re.I,
)
#: Code cells (by id) that compose a glued phrase with a comparison word, and the rule that
#: licenses it. Everywhere else the claim is written once in the prose and only its figures
#: are glued; the cell asserts the claim's direction.
COMPOSED_OK: dict[str, str] = {}


def _english_strings(source: str):
    """The string constants (f-string parts included) of a cell's code that hold no Japanese."""
    import ast

    code = "\n".join(
        line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))
    )
    tree = ast.parse(code)
    # the claim an assertion or stats.require checks, an error message, a docstring or a
    # comment is for the maintainer, not composed for the page
    skipped = set()
    for node in ast.walk(tree):
        checks = isinstance(node, ast.Call) and getattr(
            node.func, "attr", getattr(node.func, "id", "")
        ) in ("require", "AssertionError", "ValueError")
        if isinstance(node, (ast.Assert, ast.Raise)) or checks:
            skipped |= {id(n) for n in ast.walk(node)}
        if isinstance(node, (ast.FunctionDef, ast.Module)) and ast.get_docstring(node):
            skipped.add(id(node.body[0].value))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skipped
        ):
            if not re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", node.value):
                yield node.value


def _composed_in(source: str) -> list[str]:
    """The comparison words in the English strings a cell composes for the page."""
    return sorted(
        {m.group(0).lower() for s in _english_strings(source) for m in COMPOSED.finditer(s)}
    )


def _glue_cells():
    """``(notebook stem, cell id, source)`` of every code cell that glues something."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and "glue(" in source:
                yield path.stem, cell["id"], source


def _check_listed(found: list, allowed: dict, what: str) -> None:
    """Fail on a found cell that ``allowed`` does not list, and on a listed one not found."""
    unlicensed = [f for f in found if f[1] not in allowed]
    assert not unlicensed, (
        f"{what} (write the claim once in the prose, glue its figures and assert the claim in "
        f"the cell; or list the cell with why): {unlicensed}"
    )
    stale = set(allowed) - {f[1] for f in found}
    assert not stale, f"listed cells that no longer match: {stale}"


def test_no_comparison_word_is_composed_in_code():
    found = [(stem, cid, hits) for stem, cid, src in _glue_cells() if (hits := _composed_in(src))]
    _check_listed(found, COMPOSED_OK, "code that composes a comparison word for the page")


@pytest.mark.parametrize(
    "source, hits",
    [
        ("glue(x=words(en=f\"{'closer' if a < b else 'no closer'}\", ja='近い'))", ["closer"]),
        ("glue(x=f'{r:.2f} times as long')", []),
        ("assert a < b, 'The page says fewer keys solve'\nglue(x='1')", []),
        ("stats.require(c, -1, 'fewer final policies solve')\nglue(p='0.01')", []),
        ("glue(x=words(en='faster', ja='より速い'))", ["faster"]),
    ],
)
def test_the_code_scan_finds_a_composed_comparison(source, hits):
    assert _composed_in(source) == hits


#: Code cells (by id) that choose between two wordings by a result, and why that is no claim.
BRANCHED_OK = {
    "b7e2c4a1": "10: span() writes one value or a range of values, a format",
    "5a594f3e": "07: whether total_steps fills whole blocks, arithmetic on the config",
    "gen-g06": "09: mazes of one size or of several, a format",
}


def _words_in(nodes, code: str) -> list[str]:
    """The English texts (the first argument, or ``en=``) of the ``words(...)`` calls under
    ``nodes``, less placeholders for an absent result (an English text that starts with a
    parenthesis, "(not measured here)")."""
    import ast

    found = []
    for node in nodes:
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "words":
                en = call.args[:1] or [k.value for k in call.keywords if k.arg == "en"]
                if en and isinstance(en[0], ast.Constant) and str(en[0].value).startswith("("):
                    continue
                found.append(ast.get_source_segment(code, en[0]) if en else "words(...)")
    return found


def _branched_wordings(source: str) -> list[str]:
    """The wordings a cell chooses between by a condition: both arms of an ``if`` (or a
    conditional expression) build page text with ``words``."""
    import ast

    code = "\n".join(
        line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))
    )
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.If):
            arms = (node.body, node.orelse)
        elif isinstance(node, ast.IfExp):
            arms = ([node.body], [node.orelse])
        else:
            continue
        first, second = _words_in(arms[0], code), _words_in(arms[1], code)
        if first and second:
            found += first + second
    return sorted(set(found))


def test_no_cell_chooses_its_wording_by_a_result():
    found = [
        (stem, cid, wordings[:2])
        for stem, cid, src in _glue_cells()
        if (wordings := _branched_wordings(src))
    ]
    _check_listed(found, BRANCHED_OK, "a cell that words the page by a result")


@pytest.mark.parametrize(
    "source, flagged",
    [
        ("x = words(en='grew', ja='増') if a > b else words(en='stayed', ja='同')", True),
        (
            "if r is None:\n    t = words(en='(not measured here)', ja='（未測定）')\nelse:\n"
            "    t = words(en=f'{r:.2f} times', ja=f'{r:.2f} 倍')",
            False,
        ),
        ("assert a > b\nt = words(en=f'{a} against {b}', ja=f'{a} 対 {b}')", False),
        ("x = words('grew') if a > b else words('stayed')", True),
        (
            "if r is None:\n    t = words('(not measured here)')\nelse:\n"
            "    t = words('{r} times', r=f'{r:.2f}')",
            False,
        ),
    ],
)
def test_the_branch_scan_tells_a_verdict_from_a_placeholder(source, flagged):
    assert bool(_branched_wordings(source)) == flagged
