"""What every page's head loads runs without a script error.

- **One copy of each script.** sphinx-thebe adds its inline configuration
  (``const THEBE_JS_URL = ...``) each time the environment is read; the second copy reaches
  the page with the filename ``""`` instead of ``None``, which Sphinx's own check for
  duplicates tells apart, and its second ``const`` declaration is a SyntaxError on every page.
  Each page keeps the first of identical scripts.
- **A colour mode from the start.** pydata-sphinx-theme reads the reader's saved mode, else
  the page's template variable ``default_mode``; left empty, a first visit logs "Got invalid
  theme mode" before falling back to ``auto``. The book sets ``auto`` (the reader's system
  setting).

- **An issue that names its edition.** The theme's "Open issue" link titles the issue "Issue
  on page /notebooks/07_dqn.html" in both editions; on a page of another edition than the
  English one the title carries the edition's folder ("/ja/notebooks/07_dqn.html"), the
  page's address in the built site.

- **Its other edition, and a preview.** Every page names itself in each edition with
  ``<link rel="alternate" hreflang="en|ja" href="...">`` (and ``x-default``, the English
  page), so a search engine sends a reader to the page in their language, and has the
  OpenGraph tags a shared link's preview reads: ``og:title`` (the page's title),
  ``og:type`` (``website`` for the landing page, else ``article``), ``og:description``
  (the page's first paragraph of prose, cut to :data:`DESCRIPTION_CHARS`, else the landing
  page's), ``og:locale`` (``en_US``, ``ja_JP``) with the other edition's as
  ``og:locale:alternate``, and ``og:site_name``. The addresses are relative to the page while
  the book has no ``html_baseurl`` (the site's root address; the Japanese edition is its
  ``ja/`` folder), absolute with ``og:url`` once it has one (and Sphinx's canonical link
  then names the page in its own edition).

``tools/measure_pages.py`` fails any page that throws or logs a script error.
"""

from __future__ import annotations

import html
import re
import unicodedata

from docutils import nodes
from language_switch import EDITIONS, edition_href
from sphinx.application import Sphinx


def _identity(script) -> tuple:
    """What makes two script entries the same: the file, or the inline body, and attributes."""
    if isinstance(script, str):
        return (script,)
    attributes = getattr(script, "attributes", {}) or {}
    # an inline script's filename is None when first added and "" once Sphinx's registry has
    # handed it over again: the same script either way
    return (getattr(script, "filename", None) or None, tuple(sorted(attributes.items())))


def unique_scripts(scripts: list) -> list:
    """``scripts`` (Sphinx's ``script_files`` of a page) with each repeat after the first
    removed, in order."""
    seen, kept = set(), []
    for script in scripts:
        identity = _identity(script)
        if identity not in seen:
            seen.add(identity)
            kept.append(script)
    return kept


#: How sphinx-book-theme's "Open issue" link starts the issue's title: "Issue on page /".
ISSUE_TITLE = "Issue%20on%20page%20%2F"


def name_the_edition(buttons: list, language: str | None) -> None:
    """In the theme's header ``buttons`` (nested groups), put the edition's folder
    (``language``, e.g. ``ja``) into the "Open issue" link's title; English pages unchanged."""
    if language in (None, "", "en"):
        return
    for button in buttons:
        if button.get("label") == "source-issues-button":
            button["url"] = button["url"].replace(ISSUE_TITLE, f"{ISSUE_TITLE}{language}%2F", 1)
        name_the_edition(button.get("buttons", []), language)


#: Each edition's locale as OpenGraph writes it.
OG_LOCALES = {"en": "en_US", "ja": "ja_JP"}

#: The most characters of a page's first paragraph that ``og:description`` keeps (previews
#: show about 150 to 200).
DESCRIPTION_CHARS = 200

#: Japanese's full stop and comma, where a description is cut (named: the extensions' code holds
#: no Japanese text).
FULL_STOP = unicodedata.lookup("IDEOGRAPHIC FULL STOP")
COMMA = unicodedata.lookup("IDEOGRAPHIC COMMA")

#: The parents of a page's paragraphs of prose: a paragraph in a list, a table, a card or an
#: admonition is not a description of the page.
_PROSE_PARENTS = (nodes.section, nodes.document)


def first_paragraph(doctree) -> str:
    """The text of the first paragraph that is a section's own (not in a list, a table, a
    card or an admonition), its whitespace made single spaces; "" if there is none."""
    if doctree is None:
        return ""
    for paragraph in doctree.findall(nodes.paragraph):
        if isinstance(paragraph.parent, _PROSE_PARENTS):
            text = " ".join(paragraph.astext().split())
            if text:
                return text
    return ""


def shorten(text: str, limit: int = DESCRIPTION_CHARS) -> str:
    """``text`` if it has at most ``limit`` characters, else cut at its last sentence end or
    space within them (at ``limit`` where there is none, as in Japanese) with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    for ends in (FULL_STOP, ". "):
        at = cut.rfind(ends)
        if at >= limit // 2:
            return cut[: at + 1]
    at = cut.rfind(" ")
    return (cut[:at] if at >= limit // 2 else cut).rstrip(f" ,;:{COMMA}") + "…"


def head_tags(
    pagename: str,
    language: str,
    title: str,
    description: str,
    site_name: str,
    root: str,
    base: str = "",
) -> str:
    """The ``<link rel="alternate">`` and OpenGraph tags of ``pagename`` in the ``language``
    edition (``title`` as HTML, the rest plain text; ``root`` the landing page's name)."""

    def attribute(value: str) -> str:
        return html.escape(value, quote=True)

    tags = [
        f'<link rel="alternate" hreflang="{lang}" '
        f'href="{attribute(edition_href(pagename, language, lang, base))}" />'
        for lang, _, _ in EDITIONS
    ]
    default = edition_href(pagename, language, EDITIONS[0][0], base)
    tags.append(f'<link rel="alternate" hreflang="x-default" href="{attribute(default)}" />')
    plain_title = " ".join(html.unescape(re.sub(r"<[^>]*>", "", title)).split())
    properties = [
        ("og:title", plain_title),
        ("og:type", "website" if pagename == root else "article"),
        ("og:description", shorten(description)),
        ("og:locale", OG_LOCALES[language]),
        *(("og:locale:alternate", OG_LOCALES[lang]) for lang, _, _ in EDITIONS if lang != language),
        ("og:site_name", site_name),
    ]
    if base:
        properties.append(("og:url", edition_href(pagename, language, language, base)))
    tags += [
        f'<meta property="{name}" content="{attribute(value)}" />'
        for name, value in properties
        if value
    ]
    return "\n".join(tags) + "\n"


#: The landing page's first paragraph, per source folder and language: the book's
#: description, for a page without prose of its own (the search page, the index).
_BOOK_DESCRIPTIONS: dict[tuple[str, str], str] = {}


def book_description(app) -> str:
    key = (str(app.srcdir), app.config.language or "en")
    if key not in _BOOK_DESCRIPTIONS:
        try:
            doctree = app.env.get_doctree(app.config.root_doc)
        except (FileNotFoundError, OSError, KeyError):
            doctree = None
        _BOOK_DESCRIPTIONS[key] = first_paragraph(doctree) or app.config.project or ""
    return _BOOK_DESCRIPTIONS[key]


def _page_context(app, pagename, templatename, context, doctree):
    name_the_edition(context.get("header_buttons", []), app.config.language)
    if "script_files" in context:
        context["script_files"] = unique_scripts(context["script_files"])
    context["default_mode"] = context.get("default_mode") or "auto"
    language = app.config.language or "en"
    if language in OG_LOCALES:
        tags = head_tags(
            pagename,
            language,
            context.get("title") or context.get("docstitle", ""),
            first_paragraph(doctree) or book_description(app),
            " ".join((context.get("docstitle") or app.config.project or "").split()),
            app.config.root_doc,
            app.config.html_baseurl or "",
        )
        context["metatags"] = context.get("metatags", "") + tags
        if app.config.html_baseurl:  # Sphinx's canonical address, in this page's edition
            context["pageurl"] = edition_href(pagename, language, language, app.config.html_baseurl)


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _page_context, priority=900)  # after the theme's
    return {"parallel_read_safe": True, "parallel_write_safe": True}
