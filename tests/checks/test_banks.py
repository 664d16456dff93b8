"""The wrong-answer banks together: every check has one, and most of their wrong answers
are told the mistake by name.

A bank row's verdict is a regex of the message that names the mistake, or ``generic(...)``
where the check can only say what differs; the module's test runs each row and requires
the message to be generic exactly where the verdict is (``answers.rejects``). The named
share, the named verdicts over all of them, must stay at 0.80 or more: a check whose
common slips get only the generic difference should name them.
"""

from __future__ import annotations

import companion.checks as checks
from checks.answers import Generic, banks, rights

#: The least share of the banks' wrong answers whose message names the mistake.
NAMED_SHARE = 0.80


def _verdicts() -> list:
    return [tuple(getattr(row, "values", row))[2] for bank in banks().values() for row in bank]


def test_every_check_has_a_bank():
    public = {name for name in checks.__all__ if name.startswith("check_")}
    found = banks()
    assert set(found) == public
    assert all(found[check] for check in public), [c for c in public if not found[c]]


def test_every_check_has_right_answers_in_two_styles_or_more():
    found = rights()
    public = {name for name in checks.__all__ if name.startswith("check_")}
    assert set(found) == public
    assert all(len(found[check]) >= 2 for check in public), {c: len(found[c]) for c in public}


def test_every_verdict_is_a_regex():
    verdicts = _verdicts()
    assert verdicts and all(isinstance(v, str) and v for v in verdicts)


def test_most_wrong_answers_are_told_the_mistake_by_name():
    verdicts = _verdicts()
    named = sum(not isinstance(v, Generic) for v in verdicts)
    share = named / len(verdicts)
    assert share >= NAMED_SHARE, f"{named} of {len(verdicts)} named: {share:.3f}"
