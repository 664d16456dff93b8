"""The Japanese edition's search splits a query into the words its index holds.

Sphinx indexes a Japanese page with its TinySegmenter
(``sphinx.search.ja.DefaultSplitter``): the compound for "value iteration" is stored as its
two words, "value" and "iteration". The search page splits the query with the ``splitQuery``
of ``searchtools.js``, at spaces and punctuation only, unless the language gives its own in
JavaScript (``SearchLanguage.js_splitter_code``, which Sphinx writes into
``language_data.js``); Sphinx 7.4's Japanese language gives none (sphinx-doc/sphinx#5318,
#13395), so a compound was looked up whole and found nothing.

This extension registers Sphinx's Japanese search language again
(:meth:`~sphinx.application.Sphinx.add_search_language`) with that JavaScript: the same
segmenter, its tables read from Sphinx's ``DefaultSplitter`` when the page is built and its
steps transcribed line for line (``search_language.js``), then the index's own filter (no
word of one character). ``tests/book/test_site_search.py`` checks that the two split the book's
Japanese text alike, and that the built edition finds its compounds. The English edition and
the index are unchanged.

Sphinx 7.4's Japanese catalogue also gives the search page's closing sentence ("Search
finished, found N page(s) ...") as an empty string in ``translations.js``, so the page said
nothing once it had found pages. The built ``translations.js`` gets that sentence in the
edition's language (:data:`MESSAGES`, translated in the book's own catalogue of the
extensions' words, ``book_messages``); any other message left empty there is taken out, so
the page shows Sphinx's English rather than nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from book_messages import N_, _  # book/_ext: the words in the build's language
from sphinx.application import Sphinx
from sphinx.search.ja import DefaultSplitter, SearchJapanese

SCRIPT = Path(__file__).with_name("search_language.js")


def splitter_js() -> str:
    """``splitQuery`` in JavaScript: Sphinx's ``DefaultSplitter`` with its tables."""
    model = {
        "tables": {k: v for k, v in vars(DefaultSplitter).items() if k.endswith("__")},
        "types": [[p.pattern, kind] for p, kind in DefaultSplitter.patterns_.items()],
        "space": "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace()),
    }
    text = json.dumps(model, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return SCRIPT.read_text().replace("/*MODEL*/", text)


#: Messages of Sphinx's JavaScript that its own catalogue leaves empty in some language: the
#: book's catalogue translates them (Sphinx's own text is the msgid).
MESSAGES = (N_("Search finished, found ${resultCount} page(s) matching the search query."),)


def complete_translations(script: str) -> str:
    """``translations.js`` (``script``) with each empty message given its :data:`MESSAGES`
    translation in the build's language, or taken out where there is none."""
    head, _paren, rest = script.partition("(")
    body, _paren, tail = rest.rpartition(")")
    catalogue = json.loads(body)
    ours = {message: _(message) for message in MESSAGES if _(message) != message}
    catalogue["messages"] = {
        message: ours.get(message, text)
        for message, text in catalogue["messages"].items()
        if text not in ("", [""]) or message in ours
    }
    return f"{head}({json.dumps(catalogue, indent=4, sort_keys=True)}){tail}"


def _complete_translations(app: Sphinx, exception) -> None:
    path = Path(app.outdir, "_static", "translations.js")
    if exception is None and app.builder.format == "html" and path.exists():
        path.write_text(complete_translations(path.read_text()))


class SearchJapaneseQuery(SearchJapanese):
    """Sphinx's Japanese search language, with its segmenter on the search page too."""

    js_splitter_code = splitter_js()

    def init(self, options: dict[str, str]) -> None:
        super().init(options)
        if type(self.splitter) is not DefaultSplitter:  # MeCab or Janome: not in JavaScript
            self.js_splitter_code = ""


def setup(app: Sphinx) -> dict:
    app.setup_extension("book_messages")
    app.add_search_language(SearchJapaneseQuery)
    app.connect("build-finished", _complete_translations)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
