"""The glossary (``book/glossary.md``) and the links to it from the chapters.

Each glossary entry ends with "Defined in {ref}`LABEL`.", the MyST label ``(LABEL)=`` of the
section that defines the term, and may carry a hidden MyST comment line that tells this test
how to find the term in prose (one place to edit, next to the definition):

    % aliases: mdp, markov decision processes
    % except: virtual environment, environment variable
    % unchecked: why the term is not looked for

A term is found by its entry name and its aliases, lower-cased, matched case-insensitively as
whole words (a hyphen counts as part of a word, so "greedy" does not match "ε-greedy"), with an
optional plural "s"; an occurrence inside an ``except`` phrase does not count. Only prose is
searched: code (spans and fenced blocks), math, headings, link targets, HTML and the targets
of MyST roles are removed first.

The rule: on every page that comes before the place that defines a term, in the reading order
of ``_toc.yml`` (earlier pages, and the earlier part of the defining page), the paragraph
with the term's first use on that page links to it, with a ``{term}`` role whose target is
the term or a ``{ref}`` to its label.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = "book/glossary"
#: Pages outside the reading order of this check: the glossary itself, the bibliography.
NOT_CHECKED = {GLOSSARY, "book/references"}
#: Directives whose content is not prose.
NON_PROSE_DIRECTIVES = {
    "code",
    "code-block",
    "code-cell",
    "sourcecode",
    "raw",
    "math",
    "bibliography",
    "toctree",
    "glossary",
    "literalinclude",
    "eval-rst",
    "chapter-times",
}

LABEL_LINE = re.compile(r"^\(([^()\s]+)\)=\s*$")
FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})\s*(.*?)\s*$")
HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
ROLE = re.compile(r"\{([A-Za-z][\w:+-]*)\}(`+)(.*?)\2", re.DOTALL)
EXPLICIT_TITLE = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.DOTALL)
INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(?:\\.|[^$\\])+?\$", re.DOTALL)
IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
HTML = re.compile(r"<!--.*?-->|</?[A-Za-z][^<>]*>", re.DOTALL)


@dataclass
class Paragraph:
    page: str  # the page as _toc.yml names it
    where: str  # "cell <id>" in a notebook, "line <n>" in a Markdown page
    position: tuple[int, int, int]  # (page, cell, line): reading order
    text: str  # prose only
    terms: set[str] = field(default_factory=set)  # {term} targets, lower-cased
    refs: set[str] = field(default_factory=set)  # {ref} targets
    uses: dict = field(default_factory=dict)  # entry name -> occurrences in text


@dataclass
class Entry:
    name: str
    label: str | None
    aliases: list[str]
    excepts: list[str]
    unchecked: str | None  # the reason, for a term that is not looked for

    def patterns(self) -> list[str]:
        return [self.name.lower()] + self.aliases


def toc_pages() -> list[str]:
    """The pages of ``_toc.yml`` in reading order: a chapter, then its sections (pages)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())

    def pages(entry: dict) -> list[str]:
        return [entry["file"]] + [p for s in entry.get("sections", []) for p in pages(s)]

    return [toc["root"]] + [
        page for part in toc["parts"] for ch in part["chapters"] for page in pages(ch)
    ]


def page_path(page: str) -> Path | None:
    for ext in (".ipynb", ".md"):
        if (ROOT / f"{page}{ext}").exists():
            return ROOT / f"{page}{ext}"
    return None


def page_cells(page: str) -> list[tuple[str | None, str]]:
    """``[(cell id, Markdown source)]``: a notebook's Markdown cells, or a page as one cell."""
    path = page_path(page)
    if path.suffix == ".md":
        return [(None, path.read_text())]
    cells = json.loads(path.read_text())["cells"]
    return [(c.get("id"), "".join(c["source"])) for c in cells if c["cell_type"] == "markdown"]


def _prose_lines(source: str) -> tuple[list[str], dict[str, int]]:
    """The lines of ``source`` with what is not prose blanked (code blocks, non-prose
    directives, directive fences and options, headings, label lines), and
    ``{label: line}`` of its MyST labels."""
    lines, labels = [], {}
    stack = []  # open fences: (character, length, is prose inside)
    in_options = False
    for number, line in enumerate(source.split("\n")):
        fence = FENCE.match(line)
        if fence:
            char, length, info = fence[1][0], len(fence[1]), fence[2]
            closes = bool(stack) and not info and char == stack[-1][0] and length >= stack[-1][1]
        if stack and not stack[-1][2]:  # inside code: only its closing fence counts
            if fence and closes:
                stack.pop()
            lines.append("")
            continue
        if fence:
            if closes:
                stack.pop()  # the end of a directive
            elif info.startswith("{"):
                stack.append((char, length, info[1:].split("}")[0] not in NON_PROSE_DIRECTIVES))
                in_options = True
            elif char != ":":
                stack.append((char, length, False))  # a code block
            lines.append("")
            continue
        if in_options and re.match(r"^\s*:[\w-]+:", line):
            lines.append("")
            continue
        in_options = False
        label = LABEL_LINE.match(line)
        if label:
            labels[label[1]] = number
        if label or HEADING.match(line):
            lines.append("")
        else:
            lines.append(line)
    return lines, labels


def _clean(paragraph: Paragraph, text: str) -> str:
    """Record the paragraph's {term} and {ref} targets; return its prose: roles replaced by
    their shown text (a {term} or {ref} with an explicit title, a {term} without one) or
    removed, and code, math, images, link targets and HTML removed."""

    def role(match: re.Match) -> str:
        name, content = match[1], match[3].strip()
        explicit = EXPLICIT_TITLE.match(content)
        title, target = (explicit[1], explicit[2]) if explicit else (None, content)
        if name == "term":
            paragraph.terms.add(" ".join(target.split()).lower())
            return title if title is not None else target
        if name == "ref":
            paragraph.refs.add(target)
        return title if title is not None and name in ("ref", "doc", "numref") else " "

    text = ROLE.sub(role, text)
    text = IMAGE.sub(" ", text)
    for pattern in (CODE_SPAN, DISPLAY_MATH, INLINE_MATH):
        text = pattern.sub(" … ", text)
    text = LINK.sub(r"\1", text)
    text = HTML.sub(" ", text)
    return " ".join(text.split())


def page_paragraphs(page: str, page_index: int) -> tuple[list[Paragraph], dict[str, tuple]]:
    """The prose paragraphs of a page in order, and ``{label: (position, where)}`` of the
    labels it holds."""
    paragraphs, labels = [], {}
    for cell_index, (cell_id, source) in enumerate(page_cells(page)):
        lines, cell_labels = _prose_lines(source)
        for label, line in cell_labels.items():
            where = f"cell {cell_id}" if cell_id else f"line {line + 1}"
            labels[label] = ((page_index, cell_index, line), where)
        start = None
        for number, line in enumerate(lines + [""]):
            if line.strip() and start is None:
                start = number
            elif not line.strip() and start is not None:
                where = f"cell {cell_id}" if cell_id else f"line {start + 1}"
                paragraph = Paragraph(page, where, (page_index, cell_index, start), "")
                paragraph.text = _clean(paragraph, "\n".join(lines[start:number]))
                paragraphs.append(paragraph)
                start = None
    return paragraphs, labels


def _words(text: str) -> list[str]:
    """The comma-separated phrases of an aliases or except line, lower-cased."""
    return [a.strip().lower() for a in text.split(",") if a.strip()]


def glossary_entries() -> list[Entry]:
    text = (ROOT / f"{GLOSSARY}.md").read_text()
    block = re.search(
        r"^(`{3,}|:{3,})\{glossary\}[^\n]*\n(.*?)^\1\s*$", text, re.DOTALL | re.MULTILINE
    )
    assert block, f"{GLOSSARY}.md has no {{glossary}} directive"
    entries: list[Entry] = []
    body: list[str] = []

    def finish():
        if not entries:
            return
        comment = re.compile(r"^\s*%\s*(aliases|except|unchecked):\s*(.*?)\s*$", re.MULTILINE)
        comments = dict(comment.findall("\n".join(body)))
        prose = "\n".join(line for line in body if not line.strip().startswith("%")).strip()
        label = re.search(r"Defined in \{ref\}`([^`<>]+)`\.$", prose)
        entry = entries[-1]
        entry.label = label[1].strip() if label else None
        entry.aliases = _words(comments.get("aliases", ""))
        entry.excepts = _words(comments.get("except", ""))
        entry.unchecked = comments.get("unchecked")

    for line in block[2].split("\n"):
        if line.strip() and not line[0].isspace():
            finish()
            entries.append(Entry(line.strip(), None, [], [], None))
            body = []
        else:
            body.append(line)
    finish()
    return entries


class Book:
    """The pages in reading order, their paragraphs and their labels."""

    def __init__(self):
        self.pages = [p for p in toc_pages() if p not in NOT_CHECKED]
        self.paragraphs: list[Paragraph] = []
        self.labels: dict[str, tuple] = {}  # label -> ((page, cell, line), where)
        for index, page in enumerate(self.pages):
            paragraphs, labels = page_paragraphs(page, index)
            self.paragraphs += paragraphs
            for label, place in labels.items():
                self.labels[label] = (page, *place)

    def definition(self, label: str) -> tuple[int, int, int] | None:
        """Where ``label`` is, in reading order."""
        return self.labels[label][1] if label in self.labels else None


def _phrase_regex(phrases: list[str], plural: bool) -> re.Pattern:
    words = "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in phrases)
    return re.compile(rf"(?<![\w-])(?:{words}){'s?' if plural else ''}(?![\w-])", re.IGNORECASE)


def term_uses(entries: list[Entry], text: str) -> dict[str, list[re.Match]]:
    """``{entry name: occurrences in text}`` for the checked entries. An occurrence inside an
    except phrase of its entry, or inside a longer occurrence of another term ("action" in
    "action mask"), does not count."""
    found = {}
    for entry in entries:
        if entry.unchecked:
            continue
        excluded = []
        if entry.excepts:
            excluded = [m.span() for m in _phrase_regex(entry.excepts, False).finditer(text)]
        matches = _phrase_regex(entry.patterns(), True).finditer(text)
        found[entry.name] = [m for m in matches if not _inside(m, excluded)]
    spans = {name: [m.span() for m in ms] for name, ms in found.items()}

    def in_longer_term(name: str, match: re.Match) -> bool:
        longer = [
            (a, b)
            for other, ss in spans.items()
            if other != name
            for a, b in ss
            if b - a > match.end() - match.start()
        ]
        return _inside(match, longer)

    return {name: [m for m in ms if not in_longer_term(name, m)] for name, ms in found.items()}


def _inside(match: re.Match, spans: list[tuple[int, int]]) -> bool:
    return any(a <= match.start() and match.end() <= b for a, b in spans)


def _excerpt(text: str, match: re.Match, width: int = 200) -> str:
    """The sentence (or list item, or table cell) of ``text`` around ``match``, shortened to
    about ``width`` characters."""
    stops = [(m.start(), m.end()) for m in re.finditer(r"(?<=[.!?;|])\s+|\s-\s", text)]
    start = max([0] + [b for a, b in stops if b <= match.start()])
    end = min([len(text)] + [a for a, b in stops if a >= match.end()])
    cut_start, cut_end = max(start, match.start() - width // 2), min(end, start + width)
    cut_end = max(cut_end, min(end, match.end() + width // 2))
    return "…" * (cut_start > start) + text[cut_start:cut_end] + "…" * (cut_end < end)


@pytest.fixture(scope="module")
def book() -> Book:
    return Book()


@pytest.fixture(scope="module")
def entries() -> list[Entry]:
    return glossary_entries()


def test_glossary_is_in_the_toc_and_entries_are_complete_and_sorted(entries):
    assert GLOSSARY in toc_pages(), f"{GLOSSARY} is not in _toc.yml"
    assert entries, "the glossary has no entries"
    problems = [
        f"{e.name}: no final sentence 'Defined in {{ref}}`LABEL`.'"
        for e in entries
        if e.label is None
    ]
    problems += [
        f"{e.name}: both aliases and 'unchecked'" for e in entries if e.unchecked and e.aliases
    ]
    names = [e.name for e in entries]
    assert len({n.casefold() for n in names}) == len(names), "two entries have the same name"
    assert not problems, "\n".join(problems)
    expected = sorted(names, key=str.casefold)
    assert names == expected, (
        "the glossary entries are not in alphabetical order; the order should be:\n"
        + "\n".join(expected)
    )


def test_every_term_role_names_a_glossary_entry(book, entries):
    names = {e.name.casefold() for e in entries}
    glossary, _ = page_paragraphs(GLOSSARY, -1)
    unknown = sorted(
        {
            (p.page, p.where, t)
            for p in book.paragraphs + glossary
            for t in p.terms
            if t.casefold() not in names
        }
    )
    assert not unknown, "{term} roles whose target is not a glossary entry:\n" + "\n".join(
        f"  {page}, {where}: {term!r}" for page, where, term in unknown
    )


def test_every_label_the_glossary_refers_to_exists(book, entries):
    glossary, _ = page_paragraphs(GLOSSARY, -1)
    labels = {e.label for e in entries if e.label} | {r for p in glossary for r in p.refs}
    missing = []
    for label in sorted(labels):
        if label in book.labels:
            continue
        files = sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("book/*.md"))
        pages = [str(f.relative_to(ROOT).with_suffix("")) for f in files]
        elsewhere = [p for p in pages if label in page_paragraphs(p, -1)[1]]
        note = f" (it is in {', '.join(elsewhere)}, not in _toc.yml)" if elsewhere else ""
        missing.append(f"  ({label})= is on no page of the book{note}")
    assert not missing, "labels the glossary refers to that do not exist:\n" + "\n".join(missing)


def test_first_use_before_the_definition_links_to_the_glossary(book, entries):
    for paragraph in book.paragraphs:
        paragraph.uses = term_uses(entries, paragraph.text)
    offences = []
    for entry in entries:
        if entry.unchecked or entry.label is None:
            continue
        defined = book.definition(entry.label)
        if defined is None:
            continue  # reported by test_every_label_the_glossary_refers_to_exists
        targets = {entry.name.casefold()}
        seen_pages = set()
        for paragraph in book.paragraphs:
            if paragraph.position >= defined:
                break
            if paragraph.page in seen_pages:
                continue
            found = paragraph.uses[entry.name]
            if not found:
                continue
            seen_pages.add(paragraph.page)
            if targets & {t.casefold() for t in paragraph.terms} or entry.label in paragraph.refs:
                continue
            offences.append(
                (
                    paragraph.position,
                    paragraph.page,
                    paragraph.where,
                    entry.name,
                    _excerpt(paragraph.text, found[0]),
                )
            )
    offences.sort()
    assert not offences, (
        f"{len(offences)} first uses of a term, before the place that defines it, without a "
        "{term} link to the glossary (or a {ref} to the term's label) in their paragraph:\n"
        + "\n".join(
            f"  {page}, {where}, {term!r}: {excerpt}" for _, page, where, term, excerpt in offences
        )
    )


def test_the_notation_tables_code_names_are_the_codes():
    """The glossary's notation table says how the code spells each symbol: every name in its
    code column is a name the companion package or a chapter's code uses."""
    text = (ROOT / "book" / "glossary.md").read_text()
    table = text[text.index("## Notation") : text.index("## Terms")]
    rows = [line for line in table.splitlines() if line.startswith("| $")]
    assert len(rows) >= 10, rows
    code = "\n".join(p.read_text() for p in (ROOT / "companion").rglob("*.py"))
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        code += "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    for row in rows:
        names = re.findall(r"`(\w+)`", row.split("|")[3])
        assert names, row
        for name in names:
            assert re.search(rf"\b{name}\b", code), f"{name} ({row.split('|')[1].strip()})"
