"""The self-checks speak the reader's language: the wrong answers of the check banks, run in
Japanese, get the Japanese of the message they get in English, entry by entry of the
catalogue ``checks`` (``locales/ja/LC_MESSAGES/checks.po``); English stays the default.

The catalogue being complete (every entry translated, none fuzzy, in step with the code, the
compiled ``.mo`` its ``.po``) is ``tools/editions.py``'s check, run by test_editions.py and
test_extension_messages.py. Here: what a student sees. A message is a composition of
entries (``"{name}: {mistake}."`` around a named mistake, a contract around a description of
what the answer returned), so the English message is parsed back into its entries and their
filled-in values, and the Japanese one must be exactly those entries' translations filled in
with the same values (a value that is itself an entry translated too).
"""

from __future__ import annotations

import functools
import re
import string
from pathlib import Path

import jax
import pytest
from babel.messages.pofile import read_po

import companion
import companion.checks as checks
from checks.answers import RIGHT, banks
from companion import language
from companion.checks import CheckFailed
from companion.checks import _messages as messages

ROOT = Path(__file__).resolve().parents[2]
PO = ROOT / "locales" / "ja" / "LC_MESSAGES" / "checks.po"
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
#: Japanese characters, punctuation (「」。、) and full-width forms (（）：) included.
_JAPANESE_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\u3000-\u303f\uff01-\uff60"
#: A half-width space between two Japanese characters, or beside Japanese punctuation,
#: which Japanese does not write.
_SPACED = re.compile(
    f"[{_JAPANESE_CHARS}] (?=[{_JAPANESE_CHARS}])|[、。「」（）：！？] | (?=[、。「」（）：！？])"
)


def _rows(bank: list) -> list:
    """``(answer, English regex, marks, slip)`` for each row of a bank (a row's marks: a
    ``skipif`` for a JAX without the function the answer calls, a warning the answer raises)."""
    return [
        (*tuple(getattr(row, "values", row))[1:], getattr(row, "marks", ()), _slip(row))
        for row in bank
    ]


def _slip(row) -> str:
    """A row's slip as a test id: words joined by "_" (``-k`` selects one slip)."""
    slip = str(tuple(getattr(row, "values", row))[0])
    return re.sub(r"\W+", "_", slip).strip("_")[:60] or "row"


#: Every check, with the wrong answers of its bank (``test_<module>.py``) and a right answer.
WRONG = {check: (_rows(bank), RIGHT[check][0]) for check, bank in banks().items()}
CASES = [
    pytest.param(check, answer, english, marks=marks, id=f"{check[6:]}-{i}-{slip}")
    for check, (rows, _right) in WRONG.items()
    for i, (answer, english, marks, slip) in enumerate(rows)
]


@pytest.fixture(autouse=True)
def _english_after(monkeypatch):
    """Each test starts from the default (no choice, no variable) and leaves it so."""
    monkeypatch.delenv(language.VARIABLE, raising=False)
    monkeypatch.setattr(language, "_chosen", None)
    yield
    language.set_language(None)


#: Placeholders whose values are Python's or JAX's own words (an error's type and text, a
#: value's repr, a text the answer returned, a line of its code) or data (arrays, shapes,
#: lists, the arguments of a call): never translated, so never parsed.
OPAQUE = {"error", "message", "value", "text", "line", "arguments"}
#: Three English words in a row: prose, which a message in Japanese must not keep.
_PROSE = re.compile(r"\b[a-z]{2,} [a-z]{2,} [a-z]{2,}\b")
#: A parenthesised ending, one level of parentheses inside: the items' details that follow
#: a description of a tuple or a list.
_DETAIL = re.compile(r" \((?:[^()]|\([^()]*\))*\)$")

#: A Japanese message's first line left open: it ends in a Japanese word, a comma or a
#: bracket, where a sentence ends with 「。」 (or 「！」「？」), code or data.
_OPEN_END = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff、，（）「」]$")
#: A pass line that stops mid-sentence, on a comma or a particle.
_MID_SENTENCE = re.compile("(?:[、，（「]|[はがをにでとへも])$")


def _loose(text: str) -> str:
    """``text`` without its half-width spaces: a translation keeps a space on each side of a
    placeholder, and the message drops it where the value filled in is Japanese too or
    Japanese punctuation stands beside it (:func:`companion.checks._messages.finish`), so
    the parse below compares the words and values without the spaces between them (where
    a Japanese message has spaces is a test of its own)."""
    return text.replace(" ", "")


@functools.cache
def _catalogue() -> dict[str, str]:
    with PO.open("rb") as f:
        return {m.id: m.string for m in read_po(f) if m.id and m.string and not m.fuzzy}


def _parts(msgid: str) -> list[tuple[str, str | None]]:
    """``msgid`` as ``(literal, placeholder or None)`` pairs."""
    return [(literal, field) for literal, field, _s, _c in string.Formatter().parse(msgid)]


@functools.cache
def _templates() -> tuple:
    """``(msgid, parts, its translation's parts)``: the entries that hold placeholders (named
    ones: a ``{t+1}`` of a formula is text)."""
    found = []
    for msgid, translation in _catalogue().items():
        fields = [f for _, f in _parts(msgid) if f]
        if fields and all(f.isidentifier() for f in fields):
            found.append((msgid, _parts(msgid), _parts(_loose(translation))))
    return tuple(found)


def _fills(parts: list, text: str):
    """Every way ``text`` fills the placeholders of a template's ``parts`` (a value may be
    empty; a placeholder followed by another takes any split), one dict at a time."""
    if not parts:
        if text == "":
            yield {}
        return
    (literal, field), rest = parts[0], parts[1:]
    if not text.startswith(literal):
        return
    text = text[len(literal) :]
    if field is None:
        yield from _fills(rest, text)
        return
    for end in _ends(text, rest[0][0] if rest else None):
        for fill in _fills(rest, text[end:]):
            yield {field: text[:end], **fill}


def _ends(text: str, following: str | None):
    """Where a placeholder's value may end in ``text``: at its end when nothing follows,
    anywhere before another placeholder, else where the literal ``following`` begins (the
    only ends the rest of the parse can accept: trying the others made one message of
    check_q_learning take a minute)."""
    if following is None:
        return [len(text)]
    if following == "":
        return range(len(text) + 1)
    ends, start = [], text.find(following)
    while start != -1:
        ends.append(start)
        start = text.find(following, start + 1)
    return ends


@functools.cache
def _is_translation(english: str, japanese: str, opaque: bool = False) -> bool:
    """Whether ``japanese`` is the translation of ``english`` (an English message or a
    filled-in value): the entry's translation where ``english`` is an entry; where it fills
    an entry with placeholders, that entry's translation filled with the translations of
    the same values; else (a name, a shape, a number, an ``opaque`` value) itself, unless
    it is English prose that an entry's form fits."""
    catalogue = _catalogue()
    if opaque:
        return japanese == _loose(english)
    if english in catalogue:
        return japanese == _loose(catalogue[english])
    parsed = False
    for _msgid, parts, translated in _templates():
        for fill in _fills(parts, english):
            parsed = True
            for told in _fills(translated, japanese):
                if all(_is_translation(fill[f], told[f], f in OPAQUE) for f in fill):
                    return True
    # a description followed by its items' details, "a tuple of 2 arrays (int32 (10,), ...)":
    # the details are data, the same in both languages, after the description's translation
    detail = _DETAIL.search(english)
    if detail and detail.start() > 0 and japanese.endswith(_loose(detail.group())):
        head, told = english[: detail.start()], japanese[: -len(_loose(detail.group()))]
        if _is_translation(head, told):
            return True
    # data (a shape, a list, a number) stays as it is, even where it looks like a template
    return japanese == _loose(english) and not (parsed and _PROSE.search(english))


def _translates(english: str, japanese: str) -> bool:
    """Whether the message ``japanese`` is the translation of the message ``english``: its
    entries filled in, and a final 「。」 where the message's last clause had none (which
    :func:`companion.checks._messages.finish` adds to a failure's message)."""
    told = _loose(japanese)
    return _is_translation(english, told) or (
        told.endswith("。") and _is_translation(english, told[:-1])
    )


#: Checks that judge an answer by whether it traced inside the check (check_batched_rollout
#: reads whether the answer stepped the check's short episodes): the same function object,
#: compiled at the first run and found in JAX's cache at the second, would be judged on
#: other episodes, so each run gets a new function that calls the answer.
_FRESH = {"check_batched_rollout"}


def _message(check: str, answer) -> str:
    run = functools.wraps(answer)(lambda *args: answer(*args)) if check in _FRESH else answer
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed) as failure:
        getattr(checks, check)(run)
    return str(failure.value)


@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
@pytest.mark.parametrize("check, answer, english", CASES)
def test_a_wrong_answer_is_told_in_japanese(check, answer, english):
    """The English message is the bank's; in Japanese, the same message is the catalogue's
    translation of each of its entries, and it is Japanese (a message the catalogue lacks
    would come out in English and match nothing here)."""
    said = _message(check, answer)
    assert re.search(english, said), said
    companion.set_language("ja")
    told = _message(check, answer)
    assert _JAPANESE.search(told) and told != said, told
    # a generic difference: its first line is the message, then the inputs and the arrays
    first, *rest = said.split("\n")
    told_first, *told_rest = told.split("\n")
    assert _translates(first, told_first), (first, told_first)
    # written as Japanese: no space between Japanese words, the sentence ended
    assert not _SPACED.search(told), _SPACED.findall(told)
    assert not _OPEN_END.search(told_first), told_first
    assert told_rest or not told_first.endswith(("：", ":")), told_first
    assert len(told_rest) == len(rest)
    if rest:
        assert told_rest[0] == _catalogue()["The inputs:"]


def _mistakes_of(check: str, answer) -> list[str]:
    """The named mistakes of ``check``'s cases (every message its verdict could name), as
    the check builds them, by running it on a right answer."""
    seen = []
    core = __import__("companion.checks.core", fromlist=["verdict"])
    original = core.verdict

    def spy(name, cases, outputs, *args, **kwargs):
        seen.extend(m for case in cases for m in case.mistakes)
        return original(name, cases, outputs, *args, **kwargs)

    module = __import__(f"companion.checks.{checks._LAZY[check]}", fromlist=["verdict"])
    with pytest.MonkeyPatch.context() as mp, jax.debug_key_reuse(False):
        if hasattr(module, "verdict"):  # a check that names its mistakes by branches has none
            mp.setattr(module, "verdict", spy)
        getattr(checks, check)(answer)
    return list(dict.fromkeys(seen))


@pytest.mark.parametrize("check", [c for c in WRONG])
def test_every_named_mistake_is_told_in_japanese(check, capsys):
    """Beyond the banks' wrong answers: every mistake a check's verdict can name, English
    in English and its catalogue translation in Japanese; the pass line too."""
    right = WRONG[check][1]
    english = _mistakes_of(check, right)
    passed = capsys.readouterr().out
    companion.set_language("ja")
    japanese = _mistakes_of(check, right)
    told = capsys.readouterr().out
    catalogue = _catalogue()
    assert len(japanese) == len(english)
    for en, ja in zip(english, japanese):
        assert en in catalogue or any(
            next(_fills(parts, en), None) is not None for _, parts, _translated in _templates()
        ), en
        assert _JAPANESE.search(ja) and _translates(en, ja), (en, ja)
        assert not _SPACED.search(ja), _SPACED.findall(ja)
    assert passed.startswith("check passed: ")
    assert told.startswith("チェックに合格：") and _JAPANESE.search(told[8:])
    assert _translates(passed.strip(), told.strip())
    assert not _SPACED.search(told), _SPACED.findall(told)
    assert not _MID_SENTENCE.search(told.strip()), told


def test_english_is_the_default_and_the_variable_chooses(monkeypatch):
    assert companion.current_language() == "en"
    assert messages._("The inputs:") == "The inputs:"
    monkeypatch.setenv("COMPANION_LANGUAGE", "ja")
    assert companion.current_language() == "ja"
    assert messages._("The inputs:") == "入力："
    companion.set_language("en")  # the call wins over the variable
    assert messages._("The inputs:") == "The inputs:"
    companion.set_language(None)  # back to the variable
    assert companion.current_language() == "ja"
    monkeypatch.setenv("COMPANION_LANGUAGE", "")
    assert companion.current_language() == "en"


@pytest.mark.parametrize("bad", ["fr", "JA", "", None, 1, ["ja"]])
def test_the_switch_refuses_a_language_it_has_not(bad, monkeypatch):
    if bad is None:  # None is the reset, and valid
        companion.set_language(bad)
        return
    with pytest.raises(ValueError, match=r"^language: expected one of en, ja, got "):
        companion.set_language(bad)
    assert companion.current_language() == "en"  # unchanged
    if isinstance(bad, str) and bad:
        monkeypatch.setenv("COMPANION_LANGUAGE", bad)
        with pytest.raises(ValueError, match=r"^COMPANION_LANGUAGE: expected one of en, ja"):
            companion.current_language()


def test_the_parser_is_not_fooled_by_an_untranslated_message():
    """The checks above would pass an English message in Japanese if ``_translates`` took a
    message made of entries for itself: it does not, nor a wrong entry."""
    english = "grad_g: the sign is wrong."
    assert _translates(english, "grad_g: 符号が逆です。")
    assert not _translates(english, english)
    assert not _translates(english, "grad_g: the sign is wrong。")
    assert not _translates(english, "grad_g: 分母が抜けています。")
    assert _translates("a float32 array of shape (3,)", "形 (3,) の float32 配列")
    assert not _translates("a float32 array of shape (3,)", "形 (4,) の float32 配列")
    assert _translates("an integer array of shape (3,)", "形 (3,) の整数型配列")
    assert _translates("grad_x", "grad_x")  # no entry: itself
    described = "a tuple of 2 arrays (int32 (10,), float32 (10, 2))"
    assert _translates(described, "2 個の配列からなる tuple (int32 (10,), float32 (10, 2))")
    assert not _translates(described, "2 個の配列からなる tuple (int32 (9,), float32 (10, 2))")


@pytest.mark.parametrize(
    "message, finished",
    [
        ("形 (3,) の 整数型 配列 です", "形 (3,) の整数型配列です"),
        ("x は （ 形 () ） を", "x は（形 ()）を"),
        ("{'a': 1} です （ 値 ）", "{'a': 1} です（値）"),
        ("マスク 5 個 での legal_fraction(masks) は", "マスク 5 個での legal_fraction(masks) は"),
        ("a, b: 1 2", "a, b: 1 2"),
    ],
)
def test_a_japanese_message_has_no_space_between_japanese_words(message, finished):
    """:func:`finish` drops the spaces that join a Japanese value into a Japanese frame, and
    any beside Japanese punctuation, and keeps those between Japanese and code or numbers;
    English is left as it is."""
    assert messages.finish(message) == message
    companion.set_language("ja")
    assert messages.finish(message) == finished
    assert not _SPACED.search(finished)
    assert _SPACED.search(message) or message == finished


@pytest.mark.parametrize(
    "message, finished",
    [
        ("返したのは None です", "返したのは None です。"),
        ("配列に int() を使わないでください（x）", "配列に int() を使わないでください（x）。"),
        ("符号が逆です。", "符号が逆です。"),
        (
            "参照実装と違います\n入力：\n  x float32 (3,)",
            "参照実装と違います。\n入力：\n  x float32 (3,)",
        ),
        ("迷路（1 が壁）：\n[[0 1]]", "迷路（1 が壁）：\n[[0 1]]"),
        ("grad_g(w, x) = 0.5", "grad_g(w, x) = 0.5"),
    ],
)
def test_a_failure_ends_its_sentence_in_japanese(message, finished):
    """A failure's first line ends with 「。」 where its last clause is open (a Japanese word
    or bracket); a pass line (not a sentence) and English are left as they are."""
    assert messages.finish(message, sentence=True) == message
    companion.set_language("ja")
    assert messages.finish(message, sentence=True) == finished
    assert messages.finish(message) == message
