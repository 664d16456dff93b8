"""A language switch on every page: the same page in the book's other edition.

The English edition sits at the site's root and the Japanese one under ``ja/``
(``tools/editions.py``), page for page, so the other edition's address of a page is its own
address with ``ja/`` added or taken away. The link is plain HTML at the top of the article:
it works offline and without JavaScript. The search page and the index, which Sphinx writes
from templates rather than from a page's body, get it from the templates in ``templates/``.

Both editions give a section the same id (the English title's), so with JavaScript the link
keeps the reader's place (``book/_static/editions.js``): the address's ``#section``, else the
section scrolled to, and on the search page the query.

The captions of the table of contents ("Getting started", ...) are translated here too, from
the root page's catalogue: ``sphinx-external-toc`` inserts the toctrees after Sphinx has
translated the page, so Sphinx's own translation never sees them.
"""

from __future__ import annotations

from pathlib import Path

from babel import Locale
from sphinx import addnodes, locale
from sphinx.application import Sphinx
from sphinx.util.i18n import docname_to_domain

#: (language, the link's text, the folder of its edition under the site's root). A link names
#: its edition in that edition's own language, on every page ("English", and Japanese's own
#: name for Japanese): the language's name in itself, from the Unicode CLDR (Babel), not a
#: text translated into the page's language.
EDITIONS = tuple(
    (language, Locale.parse(language).display_name, folder)
    for language, folder in (("en", ""), ("ja", "ja/"))
)


def edition_href(pagename: str, language: str, edition: str, base: str = "") -> str:
    """The address of ``pagename`` in the ``edition`` edition, from the same page of the
    ``language`` edition: relative (``../ja/book/intro.html``), or absolute where ``base``,
    the site's root address (Sphinx's ``html_baseurl``), is given.

    Raises:
        ValueError: if ``language`` or ``edition`` is not an edition's.
    """
    own = {lang: folder for lang, _, folder in EDITIONS}
    for name, value in (("language", language), ("edition", edition)):
        if value not in own:
            raise ValueError(f"{name}: expected one of {sorted(own)}, got {value!r}")
    if base:
        return f"{base.rstrip('/')}/{own[edition]}{pagename}.html"
    up = "../" * (pagename.count("/") + (1 if own[language] else 0))  # to the site's root
    return f"{up}{own[edition]}{pagename}.html"


def switch_html(pagename: str, language: str) -> str:
    """The switch for ``pagename`` (e.g. ``notebooks/07_dqn``) in the ``language`` edition.

    Raises:
        ValueError: if ``language`` is not an edition's.
    """
    links = [
        f'<a href="{edition_href(pagename, language, lang)}" hreflang="{lang}" lang="{lang}">'
        f"{text}</a>"
        for lang, text, _ in EDITIONS
        if lang != language
    ]
    return f'<nav class="edition-switch" aria-label="Language">{" ".join(links)}</nav>\n'


#: The pages Sphinx writes from a template of their own, which place ``edition_switch``.
TEMPLATED = ("search", "genindex")
TEMPLATES = Path(__file__).with_name("templates")


def _add_switch(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    switch = switch_html(pagename, app.config.language or "en")
    if pagename in TEMPLATED:
        context["edition_switch"] = switch
    elif doctree is not None and "body" in context:  # not a redirect or another generated page
        context["body"] = switch + context["body"]


def _add_templates(app: Sphinx, config) -> None:
    config.templates_path.append(str(TEMPLATES))


def _translate_captions(app: Sphinx, doctree) -> None:
    language = app.config.language or "en"
    if language == "en":
        return
    docname = app.env.docname
    dirs = [str(Path(app.srcdir, d)) for d in app.config.locale_dirs]
    domain = docname_to_domain(docname, app.config.gettext_compact)
    translator, found = locale.init(dirs, language, domain)
    if not found:
        return
    for toctree in doctree.findall(addnodes.toctree):
        caption = toctree.get("caption")
        if caption:
            toctree["caption"] = translator.gettext(caption)


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _add_templates)
    app.connect("html-page-context", _add_switch)
    app.add_js_file("editions.js", loading_method="defer")  # book/_static: keeps the place
    app.connect("doctree-read", _translate_captions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
