"""The maze playground's words, for the gettext catalogue ``playground``.

``book/_static/playground/strings.js`` holds every label and message of the playground page
(``playground.js``) in English, in its ``en`` block, each under a key. Their translations are
the catalogue ``locales/<language>/LC_MESSAGES/playground.po`` (the key as ``msgctxt``, the
English as ``msgid``), and ``make catalogues`` writes each language's block of
``strings.js`` from it (:func:`write`), so that an English label changed without its
translation being reviewed shows as a fuzzy entry, as the prose does; a message not yet
translated is written in English there (and the catalogue check fails).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from book_title import book_title  # tools/, beside this file

ROOT = Path(__file__).resolve().parents[1]
STRINGS = ROOT / "book" / "_static" / "playground" / "strings.js"
#: A language's block: ``  en: {`` ... ``  }``.
_BLOCK = re.compile(r"^  (?P<lang>[a-z]{2}): \{\n(?P<body>.*?)^  \}", re.S | re.M)
#: One message: ``    key: 'text' +\n      'more text',``.
_ENTRY = re.compile(r"^    (?P<key>\w+): (?P<value>.*?),?\s*(?=^    \w+: |\Z)", re.S | re.M)
_LITERAL = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\"""")


def blocks(text: str) -> dict[str, dict[str, str]]:
    """``{language: {key: message}}`` of the blocks of ``strings.js``'s text.

    Raises:
        ValueError: a message that is not string literals joined by ``+``.
    """
    found = {}
    for block in _BLOCK.finditer(text):
        messages = {}
        for entry in _ENTRY.finditer(block["body"]):
            value = entry["value"].strip()
            pieces = _LITERAL.findall(value)
            if not pieces or _LITERAL.sub("", value).replace("+", "").strip():
                raise ValueError(
                    f"strings.js: {entry['key']}: expected string literals joined by +"
                )
            messages[entry["key"]] = "".join(ast.literal_eval(p) for p in pieces)
        found[block["lang"]] = messages
    return found


def template(strings: Path = STRINGS):
    """The English messages (``en`` block) as a Babel template catalogue (domain
    ``playground``), each with its key as context."""
    from babel.messages.catalog import Catalog

    catalog = Catalog(domain="playground", project=book_title(), fuzzy=False)
    if not strings.is_file():  # no playground: no words
        return catalog
    for key, text in blocks(strings.read_text(encoding="utf-8"))["en"].items():
        catalog.add(text, locations=[("book/_static/playground/strings.js", 1)], context=key)
    return catalog


def written(catalog, language: str, strings: Path = STRINGS) -> str:
    """The text of ``strings.js`` with the block of ``language`` written from ``catalog``
    (translated entries; a fuzzy or missing one gives the English)."""
    text = strings.read_text(encoding="utf-8")
    english = blocks(text)["en"]
    lines = []
    for key, source in english.items():
        message = catalog.get(source, context=key)
        ok = message is not None and message.string and not message.fuzzy
        lines.append(
            f"    {key}: {json.dumps(message.string if ok else source, ensure_ascii=False)}"
        )
    body = ",\n".join(lines) + "\n"
    for block in _BLOCK.finditer(text):
        if block["lang"] == language:
            return text[: block.start("body")] + body + text[block.end("body") :]
    raise ValueError(f"strings.js: no block for the language {language!r}")


def write(catalog, language: str, strings: Path = STRINGS) -> bool:
    """Write ``language``'s block of ``strings.js`` from ``catalog``; whether it changed."""
    new = written(catalog, language, strings)
    if new == strings.read_text(encoding="utf-8"):
        return False
    strings.write_text(new, encoding="utf-8")
    return True
