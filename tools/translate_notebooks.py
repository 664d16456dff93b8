"""The translated notebooks, ``notebooks/<language>/<name>.ipynb``, from the English notebooks
and the edition's catalogues (``locales/<language>/LC_MESSAGES/notebooks/<name>.po``).

The Japanese HTML edition translates a notebook's Markdown with Sphinx's gettext: each
paragraph, heading, table cell, admonition title and display formula of the parsed page is
one message, its text the Markdown source of that element with its lines joined by spaces,
and the catalogue's translation replaces it. This module cuts each Markdown cell the same
way, with the book's own MyST parser (the Markdown extensions of Jupyter Book's
configuration), and puts each translation where its English source was: a paragraph of a list
keeps its marker, a heading its ``#``, a table cell its row, an admonition its fence and
options. What Sphinx would leave in English stays English: a message the catalogue has not
translated, or one marked fuzzy. Code cells are copied unchanged (their comments are
English), but for the setup cell (tagged ``colab-setup``, which the book hides and the HTML
edition takes from the English notebook), which gains :data:`SETUP_LINES`: the self-checks'
messages in the edition's language. Outputs are empty, the kernelspec is the English
notebook's (python3), so the book's execution cache matches every other cell of the
translated notebook; glue roles stay as they are written. A cell the book removes (the Open-in-Colab badge) is not in the catalogue: its
Colab link is pointed at the translated notebook. Relative links out of ``notebooks/`` gain a
``../``. A code cell's metadata stays as it is too (a solution's ``hint``, which
``tools/make_lab.py`` translates for the student copies), since the execution cache's key
includes it.

The cut is checked against the catalogue: every message of a cell must be in the page's
catalogue and every catalogue message must be met, and the translated Markdown must parse
into the same blocks as the English; otherwise nothing is written and the error says which
message. The notebooks are committed (Colab opens them by their path in the repository);
``python tools/editions.py catalogues`` writes them again after bringing the catalogues in
step, and ``tests/book/test_japanese_notebooks.py`` fails while the committed ones differ from
what this module writes.

    python tools/translate_notebooks.py [--check]   # write (or compare) notebooks/ja/*.ipynb
"""

from __future__ import annotations

import argparse
import copy
import functools
import re
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from edition_notebooks import notebook_path  # noqa: E402  (book/_ext/edition_notebooks.py)

NOTEBOOKS = ROOT / "notebooks"
LOCALES = ROOT / "locales"
#: Jupyter Book 1.x's default MyST extensions (``parse.myst_enable_extensions``).
MYST_EXTENSIONS = ("colon_fence", "dollarmath", "linkify", "substitution", "tasklist")
#: Directives whose argument is a title (a message) and whose body is Markdown.
TITLED = frozenset({"admonition", "dropdown", "topic", "sidebar"})
#: Directives without an argument whose body, first line included, is Markdown.
UNTITLED = frozenset(
    "attention caution danger error hint important note seealso tip warning".split()
)
#: What each edition's setup cell (tagged ``colab-setup``) adds after the English one's code:
#: the self-checks then speak the edition's language (companion/language.py).
SETUP_LINES = {
    "ja": (
        "\n\nimport os\n\n"
        'os.environ["COMPANION_LANGUAGE"] = "ja"  # the self-checks\' messages in Japanese'
    ),
}
_FENCE_INFO = re.compile(r"\{([\w:-]+)\}\s*(.*)")
_OPTION = re.compile(r":[\w-]+:")


class TranslationError(ValueError):
    """The cut of a notebook's Markdown and its catalogue disagree."""


@functools.cache
def markdown_parser():
    """markdown-it with the MyST extensions the book's build enables."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    extra = (config.get("parse") or {}).get("myst_enable_extensions") or []
    extensions = set(MYST_EXTENSIONS) | set(extra)
    return create_md_parser(MdParserConfig(enable_extensions=extensions), RendererHTML)


def message_id(source: str) -> str:
    """The message Sphinx extracts from an element's Markdown source (``rawsource``)."""
    return source.replace("\n", " ").strip()


class Catalogue:
    """One page's catalogue as Sphinx's build reads it: ``translations`` holds the entries
    translated and not fuzzy; ``ids`` every message, translated or not."""

    def __init__(self, path: Path):
        from babel.messages.pofile import read_po

        with path.open("rb") as f:
            catalog = read_po(f)
        self.path = path
        self.ids: set[str] = set()
        self.translations: dict[str, str] = {}
        for message in catalog:
            if not message.id or not isinstance(message.id, str):
                continue
            self.ids.add(message.id)
            if message.string and not message.fuzzy and message.string.strip():
                self.translations[message.id] = message.string
        self.met: set[str] = set()

    def translate(self, text: str, where: str, literal: bool = False) -> str | None:
        """The translation of the element whose Markdown is ``text``; None to keep it. A
        ``literal`` element's message (a display formula) is its source as it is."""
        msgid = text if literal else message_id(text)
        if msgid not in self.ids:
            raise TranslationError(
                f"{where}: {msgid[:70]!r} is not in {self.path.name} "
                "(run python tools/editions.py catalogues)"
            )
        self.met.add(msgid)
        translated = self.translations.get(msgid)
        return None if translated is None or translated == msgid else translated


def _continuation(prefix: str) -> str:
    """The prefix of a paragraph's further lines: the first line's, markers as spaces."""
    return re.sub(r"[^>\s]", " ", prefix)


def _replace_inline(lines: list[str], start: int, end: int, content: str, new: str) -> list[str]:
    """Lines ``start:end`` (one element whose inline Markdown is ``content``) with ``new``."""
    first = content.split("\n")[0]
    at = lines[start].find(first)
    if at < 0:
        raise TranslationError(f"line {start + 1}: {first[:60]!r} not found in its source")
    prefix = lines[start][:at]
    head, *rest = new.split("\n")
    return [prefix + head] + [_continuation(prefix) + line for line in rest]


def _translate_row(line: str, cells: list[str], catalogue: Catalogue, where: str) -> str:
    out, cursor = [], 0
    for content in cells:
        if not content.strip():
            continue
        at = line.find(content, cursor)
        if at < 0:
            raise TranslationError(f"{where}: table cell {content[:60]!r} not found")
        translated = catalogue.translate(content, where)
        out.append(line[cursor:at])
        out.append(content if translated is None else translated.replace("|", "\\|"))
        cursor = at + len(content)
    return "".join(out) + line[cursor:]


def _translate_fence(token, lines: list[str], catalogue: Catalogue, where: str) -> list[str]:
    """An admonition's fence, its title and body translated; other directives unchanged."""
    start, end = token.map
    block = lines[start:end]
    match = _FENCE_INFO.match(token.info.strip())
    name = match.group(1) if match else ""
    if name not in TITLED | UNTITLED:
        return block
    argument = match.group(2).strip()
    indent = block[0][: len(block[0]) - len(block[0].lstrip())]
    opening = block[0]
    body = token.content.split("\n")
    if body and body[-1] == "":
        body.pop()
    if name in TITLED and argument:
        translated = catalogue.translate(argument, where)
        if translated is not None:
            opening = opening.replace(argument, translated, 1)
    elif argument:  # the first line of an untitled directive's body
        opening = opening[: opening.index("}") + 1]
        body.insert(0, argument)
    options = 0
    if body and body[0].strip() == "---":
        options = body.index("---", 1) + 1
    else:
        while options < len(body) and _OPTION.match(body[options]):
            options += 1
    text = translate_markdown("\n".join(body[options:]), catalogue, where)
    new_body = body[:options] + (text.split("\n") if body[options:] else [])
    closing = block[-1] if len(block) > 1 and block[-1].strip().startswith(token.markup) else None
    return (
        [opening]
        + [indent + line if line else line for line in new_body]
        + ([closing] if closing is not None else [])
    )


def translate_markdown(source: str, catalogue: Catalogue, where: str) -> str:
    """``source`` (a Markdown cell) with each of its messages translated by ``catalogue``."""
    lines = source.split("\n")
    tokens = markdown_parser().parse(source)
    edits: list[tuple[int, int, list[str]]] = []  # (start, end, new lines)
    for i, token in enumerate(tokens):
        if token.type in ("paragraph_open", "heading_open"):
            content = tokens[i + 1].content
            if not message_id(content):
                continue
            translated = catalogue.translate(content, where)
            if translated is None:
                continue
            start, end = token.map
            if token.type == "heading_open" and token.markup in ("=", "-"):  # underlined
                end -= 1
            edits.append((start, end, _replace_inline(lines, start, end, content, translated)))
        elif token.type == "tr_open":
            cells, j = [], i + 1
            while tokens[j].type != "tr_close":
                if tokens[j].type == "inline":
                    cells.append(tokens[j].content)
                j += 1
            start = token.map[0]
            edits.append(
                (start, start + 1, [_translate_row(lines[start], cells, catalogue, where)])
            )
        elif token.type.startswith("math_block"):
            translated = catalogue.translate(token.content, where, literal=True)
            if translated is None:
                continue
            start, end = token.map
            block = "\n".join(lines[start:end])
            if token.content not in block:
                raise TranslationError(f"{where}: a formula's source not found at line {start}")
            edits.append((start, end, block.replace(token.content, translated, 1).split("\n")))
        elif token.type in ("colon_fence", "fence") and token.info.strip().startswith("{"):
            start, end = token.map
            edits.append((start, end, _translate_fence(token, lines, catalogue, where)))
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = new
    return "\n".join(lines)


def _blocks(source: str) -> list[str]:
    """The block structure of Markdown ``source``: its block tokens' types and nesting."""
    return [f"{t.type}/{t.level}" for t in markdown_parser().parse(source) if t.type != "inline"]


def _relinked(source: str) -> str:
    """Relative links out of ``notebooks/`` one folder deeper."""
    return re.sub(r"\]\(\.\./", "](../../", source)


def translate_notebook(
    path: Path, language: str, catalogue: Catalogue | None = None
) -> nbformat.NotebookNode:
    """The ``language`` edition of the English notebook at ``path``.

    Raises:
        TranslationError: if a message of the notebook is not in its catalogue, a catalogue
            message is in none of its cells, or a translation changes the blocks of a cell.
    """
    if catalogue is None:
        folder = LOCALES / language / "LC_MESSAGES" / "notebooks"
        catalogue = Catalogue(folder / path.with_suffix(".po").name)
    english = nbformat.read(path, as_version=4)
    nb = copy.deepcopy(english)
    nb.metadata = nbformat.from_dict({"kernelspec": english.metadata["kernelspec"]})
    english_path = f"{NOTEBOOKS.name}/{path.name}"
    translated_path = notebook_path(english_path, language)
    for i, cell in enumerate(nb.cells):
        where = f"{path.name}, cell {i}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if "colab-setup" in cell.metadata.get("tags", []):
                cell.source = cell.source.rstrip("\n") + SETUP_LINES.get(language, "")
            continue
        if cell.cell_type != "markdown":
            continue
        if "remove-cell" in cell.metadata.get("tags", []):  # not in the book, nor its catalogue
            cell.source = cell.source.replace(f"/{english_path})", f"/{translated_path})")
        else:
            cell.source = translate_markdown(cell.source, catalogue, where)
            if _blocks(cell.source) != _blocks(english.cells[i].source):
                raise TranslationError(
                    f"{where}: the translation parses into other blocks than the English "
                    "(a paragraph that starts with '1. ', '- ' or '#'?)"
                )
        cell.source = _relinked(cell.source)
    unmet = sorted(catalogue.ids - catalogue.met)
    if unmet:
        raise TranslationError(
            f"{path.name}: {len(unmet)} message(s) of {catalogue.path.name} in no cell, such "
            f"as {unmet[0][:70]!r} (run python tools/editions.py catalogues)"
        )
    return nb


def english_notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def translated_path(path: Path, language: str) -> Path:
    """Where the ``language`` edition of the English notebook ``path`` is written."""
    return ROOT / notebook_path(f"{NOTEBOOKS.name}/{path.name}", language)


def render(nb: nbformat.NotebookNode) -> str:
    """The file's text, as nbformat writes it (the English notebooks' form)."""
    return nbformat.writes(nb) + "\n"


def stale(language: str) -> list[str]:
    """The translated notebooks that differ from what :func:`translate_notebook` writes now
    (or are missing, or have no English notebook), one line each."""
    found = []
    expected = set()
    for path in english_notebooks():
        target = translated_path(path, language)
        expected.add(target)
        if not target.is_file():
            found.append(f"{target.relative_to(ROOT)}: missing")
        elif target.read_text() != render(translate_notebook(path, language)):
            found.append(f"{target.relative_to(ROOT)}: differs from its English and catalogue")
    folder = NOTEBOOKS / language
    for extra in sorted(set(folder.glob("*.ipynb")) - expected):
        found.append(f"{extra.relative_to(ROOT)}: no English notebook {extra.name}")
    return found


def write(language: str) -> list[Path]:
    """Write every ``language`` notebook (all translated first, so an error writes none) and
    remove those whose English notebook is gone. Returns the paths written."""
    done = {
        translated_path(p, language): render(translate_notebook(p, language))
        for p in english_notebooks()
    }
    folder = NOTEBOOKS / language
    folder.mkdir(exist_ok=True)
    for extra in set(folder.glob("*.ipynb")) - set(done):
        extra.unlink()
    for target, text in done.items():
        if not target.is_file() or target.read_text() != text:
            target.write_text(text)
    return sorted(done)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--language", default="ja")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    try:
        if args.check:
            found = stale(args.language)
            print("\n".join(found) or f"notebooks/{args.language} is up to date")
            return 1 if found else 0
        written = write(args.language)
    except TranslationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {len(written)} notebooks to notebooks/{args.language}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
