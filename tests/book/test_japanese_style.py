"""The Japanese edition's wording and typography, over every msgstr of the catalogues
(``locales/ja/LC_MESSAGES``) and every text of the Japanese quizzes (``notebooks/quizzes/ja``).

- **Terms.** ``locales/ja/terms.json`` gives, per idea, the preferred rendering and the
  variants refused (with the contexts where a word is allowed, such as セル for a notebook
  cell); its calques are refused in every form (「jit の下で」).
- **Spacing.** Between Japanese text and a term, a reference with a Japanese label, a link or
  emphasis whose visible text is Japanese there is no half-width space (Sphinx shows the
  space: 「観測と 行動 が」), and none beside Japanese punctuation (「、」「。」「（」...).
- **References.** A {ref} or {doc} without a label shows its page's or section's title (「1.
  マルコフ決定過程としての Maze」), so in a sentence it stands in 「」 (or alone in brackets).
- **Emphasis.** ``**...**`` and ``*...*`` render: CommonMark does not close ``**`` after
  punctuation when a letter follows (``**バグ。**エピソード`` shows its asterisks), so a
  bold run-in heading keeps its full stop outside (``**バグ**。エピソード``). The
  self-checks' messages (``checks.po``) are printed, not rendered: their asterisks are
  arithmetic.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
TERMS = ROOT / "locales" / "ja" / "terms.json"
CATALOGUES = ROOT / "locales" / "ja" / "LC_MESSAGES"
QUIZZES = ROOT / "notebooks" / "quizzes" / "ja"

JAPANESE = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\u3000-\u303f\uff01-\uff60"
JAPANESE_CHAR = re.compile(f"[{JAPANESE}]")
PUNCTUATION = "、。，．「」『』（）：；！？"
ROLE = re.compile(r"\{([a-z:-]+)\}`([^`]*)`")
LABELLED = re.compile(r"(.*?)\s*<([^<>]+)>$", re.DOTALL)
#: Inline markup in reading order: code and maths first, so that a ``*`` inside is not emphasis.
ITEM = re.compile(
    r"""(?P<code>`[^`]+`)
    |(?P<math>\$\$?[^$]+\$\$?)
    |(?P<role>\{(?P<rname>[a-z:-]+)\}`(?P<rbody>[^`]*)`)
    |(?P<link>\[(?P<ltext>[^\]]*)\]\([^)]*\))
    |(?P<strong>\*\*(?P<stext>[^*]+?)\*\*)
    |(?P<em>(?<!\*)\*(?P<etext>[^*\s][^*]*?)\*(?!\*))""",
    re.VERBOSE,
)
BARE_REFERENCE = re.compile(r"\{(ref|doc)\}`([^`<]+)`")


def _read_po(path: Path):
    from babel.messages.pofile import read_po

    with path.open("rb") as f:
        return read_po(f)


@cache
def catalogue_texts() -> tuple[tuple[str, str], ...]:
    """``(where, msgstr)`` for every translated catalogue entry."""
    found = []
    for po in sorted(CATALOGUES.rglob("*.po")):
        for message in _read_po(po):
            if message.id and isinstance(message.string, str) and message.string:
                english = message.id if isinstance(message.id, str) else message.id[0]
                where = f"{po.relative_to(CATALOGUES)} ({english[:50]!r})"
                found.append((where, message.string))
    return tuple(found)


@cache
def quiz_texts() -> tuple[tuple[str, str], ...]:
    """``(where, text)`` for every question, answer and feedback of the Japanese quizzes
    (decoded from JSON, so an escaped character is searched as itself)."""
    found = []
    for path in sorted(QUIZZES.glob("*.json")):
        for i, question in enumerate(json.loads(path.read_text()), start=1):
            found.append((f"quizzes/ja/{path.name} question {i}", question["question"]))
            for j, answer in enumerate(question["answers"], start=1):
                for field in ("answer", "feedback"):
                    if answer.get(field):
                        found.append((f"quizzes/ja/{path.name} q{i} a{j} {field}", answer[field]))
    return tuple(found)


def all_texts():
    return catalogue_texts() + quiz_texts()


def role_label(name: str, body: str) -> str | None:
    """What Sphinx shows for a role: a term's or a reference's label, a bare term's target;
    None where the page decides (a bare reference: the title) or the role is not text."""
    labelled = LABELLED.match(body)
    if name in ("term", "ref", "doc", "numref", "download"):
        if labelled:
            return labelled[1]
        return body if name == "term" else None
    return None


def prose(text: str) -> str:
    """``text`` as words a reader sees: roles by their label, inline code, maths and HTML
    tags replaced by a mark (＿) so that words on either side do not join."""
    text = ROLE.sub(lambda m: role_label(m[1], m[2]) or "＿", text)
    text = re.sub(r"<code>.*?</code>", "＿", text, flags=re.DOTALL)
    text = re.sub(r"`[^`]+`", "＿", text)
    text = re.sub(r"\$\$?[^$]+\$\$?", "＿", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"</?[A-Za-z][^<>]*>", "", text)
    return text.replace("*", "")


def visible(text: str) -> str:
    """The text of an inline item, with ``\\x00`` where it cannot be known here."""
    text = ROLE.sub(lambda m: role_label(m[1], m[2]) or "\x00", text)
    text = re.sub(r"`[^`]+`", "x", text)
    text = re.sub(r"\$[^$]+\$", "x", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return text.replace("*", "")


def _item_text(match: re.Match) -> str | None:
    if match["role"]:
        return role_label(match["rname"], match["rbody"])
    for kind, group in (("link", "ltext"), ("strong", "stext"), ("em", "etext")):
        if match[kind]:
            return visible(match[group])
    return None  # code and maths: a space before and after them is the rule


def spacing_problems(text: str) -> list[str]:
    """Each place where a half-width space stands between Japanese text and a link, term,
    labelled reference or emphasis whose visible text is Japanese on that side."""
    found = []
    for match in ITEM.finditer(text):
        shown = _item_text(match)
        if not shown or "\x00" in (shown[0], shown[-1]):
            continue
        start, end = match.span()
        if (
            JAPANESE_CHAR.match(shown[0])
            and start >= 2
            and text[start - 1] == " "
            and JAPANESE_CHAR.match(text[start - 2])
        ):
            found.append(text[max(0, start - 12) : end])
        if (
            JAPANESE_CHAR.match(shown[-1])
            and end + 1 < len(text)
            and text[end] == " "
            and JAPANESE_CHAR.match(text[end + 1])
        ):
            found.append(text[start : end + 12])
    return found


def punctuation_space_problems(text: str) -> list[str]:
    """Each half-width space beside Japanese punctuation (「、 $x$」, 「$x$ 、」, 「） {cite}」)."""
    pattern = f"[{PUNCTUATION}] | [{PUNCTUATION}]"
    return [text[max(0, m.start() - 12) : m.end() + 12] for m in re.finditer(pattern, text)]


def unquoted_references(text: str) -> list[str]:
    """Each {ref} or {doc} without a label that stands in a sentence outside 「」 or brackets:
    it shows a title, which Japanese quotes."""
    found = []
    for match in BARE_REFERENCE.finditer(text):
        start, end = match.span()
        alone_before = start == 0 or text[start - 1] in "「（("
        alone_after = end == len(text) or text[end] in "」）)"
        if not (alone_before and alone_after):
            found.append(text[max(0, start - 12) : end + 12])
    return found


_MARKDOWN = MarkdownIt("commonmark")


def unrendered_emphasis(text: str) -> bool:
    """Whether CommonMark leaves an asterisk of ``text``'s emphasis as a literal character."""
    text = re.sub(r"\$\$?[^$]+\$\$?", "M", text)
    text = ROLE.sub(lambda m: "R", text)
    html = _markdown_inline(text)
    html = re.sub(r"<code>.*?</code>", "", html, flags=re.DOTALL)
    return "*" in html


def _markdown_inline(text: str) -> str:
    return _MARKDOWN.renderInline(text.replace("\\*", ""))


def forbidden_uses(entry: dict, text: str) -> list[str]:
    """The matches of ``entry``'s forbidden patterns in ``text``'s prose that none of its
    allowed patterns covers."""
    words = prose(text)
    allowed = [m.span() for a in entry.get("allowed", []) for m in re.finditer(a, words)]
    found = []
    for pattern in entry["forbidden"]:
        for match in re.finditer(pattern, words):
            if not any(a <= match.start() and match.end() <= b for a, b in allowed):
                found.append(words[max(0, match.start() - 15) : match.end() + 15])
    return found


@cache
def table() -> dict:
    return json.loads(TERMS.read_text())


def _report(found: list[tuple[str, str]], what: str) -> str:
    lines = [f"{len(found)} {what}:"] + [f"  {where}: {snippet!r}" for where, snippet in found]
    return "\n".join(lines[:60])


# --- the table itself -------------------------------------------------------------------


def test_the_term_table_is_well_formed():
    entries = table()["terms"]
    assert entries, "locales/ja/terms.json holds no terms"
    for entry in entries:
        assert {"en", "preferred", "forbidden"} <= set(entry), entry
        for pattern in entry["forbidden"] + entry.get("allowed", []):
            re.compile(pattern)
        for preferred in entry["preferred"]:
            assert not forbidden_uses(entry, preferred), (entry["en"], preferred)
    for calque in table()["calques"]:
        re.compile(calque["forbidden"])
        assert calque["rule"]


@pytest.mark.parametrize("entry", table()["terms"], ids=lambda e: e["en"][:40])
def test_each_preferred_rendering_is_in_use(entry):
    text = "\n".join(prose(t) for _, t in all_texts())
    missing = [p for p in entry["preferred"] if p not in text]
    assert not missing, f"{entry['en']}: {missing} used nowhere; is the entry stale?"


# --- the catalogues and quizzes ----------------------------------------------------------


@pytest.mark.parametrize("entry", table()["terms"], ids=lambda e: e["en"][:40])
def test_one_rendering_per_term(entry):
    found = [(where, s) for where, text in all_texts() for s in forbidden_uses(entry, text)]
    rule = entry.get("rule", "")
    assert not found, _report(found, f"uses of a variant; write {entry['preferred']} ({rule})")


@pytest.mark.parametrize("calque", table()["calques"], ids=lambda c: c["forbidden"])
def test_no_calque(calque):
    found = [
        (where, words[max(0, m.start() - 15) : m.end() + 15])
        for where, text in all_texts()
        for words in [ROLE.sub(lambda r: role_label(r[1], r[2]) or "＿", text)]
        for m in re.finditer(calque["forbidden"], words)
    ]
    assert not found, _report(found, f"calques ({calque['rule']})")


def test_no_space_between_japanese_and_a_japanese_term_link_or_emphasis():
    found = [(w, s) for w, text in catalogue_texts() for s in spacing_problems(text)]
    assert not found, _report(found, "half-width spaces between Japanese words")


def test_no_space_beside_japanese_punctuation():
    found = [(w, s) for w, text in all_texts() for s in punctuation_space_problems(text)]
    assert not found, _report(found, "half-width spaces beside Japanese punctuation")


def test_a_colon_after_japanese_is_full_width():
    """「ランダムな迷路：成功率」, not 「ランダムな迷路: 成功率」: after a Japanese word the colon is
    Japanese punctuation (in maths, code and Latin text an ASCII colon stays)."""
    after_japanese = re.compile(r"[\u3040-\u30ff\u3400-\u9fff）]: ")
    found = [(w, text[:60]) for w, text in all_texts() if after_japanese.search(text)]
    assert not found, _report(found, "ASCII colons after Japanese")


def test_a_title_shown_by_a_reference_is_quoted():
    found = [(w, s) for w, text in catalogue_texts() for s in unquoted_references(text)]
    assert not found, _report(found, "references in a sentence without 「」")


#: Catalogues of text not rendered as Markdown: the self-checks' messages (printed; their
#: asterisks are products and powers, ``gamma**k``) and the quizzes' (HTML: ``V*`` is V-star).
PLAIN = ("checks.po", "quizzes.po")


def test_every_emphasis_renders():
    found = [
        (w, text[:70])
        for w, text in catalogue_texts()
        if not w.startswith(PLAIN) and unrendered_emphasis(text)
    ]
    assert not found, _report(found, "entries whose asterisks CommonMark shows")


#: Kanji, katakana and what stands for a noun in code or maths.
_NOUN = "\u3400-\u4dbf\u4e00-\u9fff\u30a1-\u30ffー0-9A-Za-z_＿)）"
#: Two subjects in one clause, 「遷移がポールが倒れた」: a が after a noun, then only a noun
#: (no kana: no verb, no other particle between), then が again; not the が of a verb
#: (「曲がる」「上がり」「下がった」).
DOUBLED_GA = re.compile(f"[{_NOUN}] ?が(?![らりるれろっ])[{_NOUN} ]+が(?![らりるれろっ])")


def doubled_ga(text: str) -> list[str]:
    """Where ``text``'s prose puts two subjects marked by が in one clause."""
    words = prose(text)
    return [words[max(0, m.start() - 15) : m.end() + 15] for m in DOUBLED_GA.finditer(words)]


def test_no_doubled_ga_in_one_clause():
    found = [(w, s) for w, text in all_texts() for s in doubled_ga(text)]
    assert not found, _report(found, "clauses with two subjects in が")


#: A full stop of the English that is a sentence's, not an ellipsis (``gamma * r_t + ...``).
_SENTENCE_END = re.compile(r"(?<!\.)[.!?]$")
#: How a Japanese sentence ends: 「。」「！」「？」, or code and data in ASCII.
_JAPANESE_END = re.compile(r"[。！？!-~]$")


def test_a_check_message_ends_its_sentence():
    """A self-check message whose English ends a sentence (a hint: "... damps the swing.")
    ends one in Japanese too, with 「。」 (the messages without a full stop are parts that
    a frame ends, 「{name}: {mistake}。」, and a failure's message is ended where it is
    composed: ``tests/checks/test_language.py``)."""
    found = [
        (message.id[:50], message.string[-30:])
        for message in _read_po(CATALOGUES / "checks.po")
        if message.id and message.string and not message.fuzzy
        if _SENTENCE_END.search(message.id.rstrip()) and not _JAPANESE_END.search(message.string)
    ]
    assert not found, _report(found, "check messages that end a sentence in English only")


# --- the checkers on examples ------------------------------------------------------------


@pytest.mark.parametrize(
    "text, problems",
    [
        ("観測と {term}`行動 <Action>` がどのような形か", 2),
        ("観測と{term}`行動 <Action>`がどのような形か", 0),
        ("と {term}`GAE <Generalised advantage estimation>` の実装", 0),  # Latin label
        ("と {term}`Action` を", 0),  # a bare term shows its English target
        ("その **検出器** は", 2),
        ("その**検出器**は", 0),
        ("処理が *キューに入った* 時点", 2),
        ("`jax.jit` の *静的* 引数", 2),
        ("第 9 章「[汎化](09_generalising.ipynb)」", 0),
        ("[第 9 章](09.ipynb) の節", 1),
        ("定義は {ref}`rl-mdp` にあります", 0),  # the title: see the reference check
        ("$x$ の **PPO** の", 0),
    ],
)
def test_the_spacing_check(text, problems):
    assert len(spacing_problems(text)) == problems


@pytest.mark.parametrize(
    "text, quoted",
    [
        ("定義は {ref}`rl-mdp` にあります。", False),
        ("定義は「{ref}`rl-mdp`」にあります。", True),
        ("（{ref}`rl-td`）", True),
        ("{doc}`../notebooks/07_dqn`", True),
        ("（{doc}`/notebooks/01_jax_essentials` の PRNG キーの節）", False),
        ("{ref}`ベルマン最適方程式 <rl-optimality>`にあたります", True),  # labelled
    ],
)
def test_the_reference_check(text, quoted):
    assert (unquoted_references(text) == []) == quoted


@pytest.mark.parametrize(
    "text, renders",
    [
        ("**バグ**。エピソードは", True),
        ("**バグ。**エピソードは", False),
        ("**バグ。** エピソードは", True),
        ("そして**「行動マスク」**を見ます", False),
        ("そして「**行動マスク**」を見ます", True),
        ("$a * b$ と `x*y`", True),
    ],
)
def test_the_emphasis_check(text, renders):
    assert unrendered_emphasis(text) != renders


def test_the_term_check_reads_prose_and_allows_its_contexts():
    cell = next(e for e in table()["terms"] if e["preferred"] == ["マス"])
    assert forbidden_uses(cell, "ゴールのセルまで歩きます")
    assert not forbidden_uses(cell, "下のセルを実行し、セルフチェックを呼びます")
    assert not forbidden_uses(cell, "`cell` と {term}`マス <cell>`")
    discount = next(e for e in table()["terms"] if "割引係数" in e["preferred"])
    assert forbidden_uses(discount, "jumanji はどちらにも割引率 0 を与えます")
    assert forbidden_uses(discount, "どの終わり方でも{term}`割引率 <discount>`は 0 になります")
    assert not forbidden_uses(discount, "{term}`割引率 <discount>` $\\gamma$ が 0.9 のとき")


@pytest.mark.parametrize(
    "text, doubled",
    [
        ("collect: 5 個の遷移がポールが倒れて終わっているのに", True),
        ("`x` が `y` が 0 のとき", True),
        ("ポールが 12 度を超えるかカートがレールを外れた", False),
        ("曲線が曲がるのは伸びが鈍るところで", False),
        ("エピソードが多いほど精度が上がります", False),
        ("上がふさがっているとき", False),
    ],
)
def test_the_doubled_ga_check(text, doubled):
    assert bool(doubled_ga(text)) == doubled
