"""A language switch on every page: the same page in the book's other edition.

The English edition sits at the site's root and the Japanese one under ``ja/``
(``tools/editions.py``), page for page, so the other edition's address of a page is its own
address with ``ja/`` added or taken away. The link is plain HTML at the top of the article:
it works offline and without JavaScript.
"""

from __future__ import annotations

from sphinx.application import Sphinx

#: (language, the link's text, the folder of its edition under the site's root)
EDITIONS = (("en", "English", ""), ("ja", "日本語", "ja/"))


def switch_html(pagename: str, language: str) -> str:
    """The switch for ``pagename`` (e.g. ``notebooks/07_dqn``) in the ``language`` edition.

    Raises:
        ValueError: if ``language`` is not an edition's.
    """
    own = {lang: folder for lang, _, folder in EDITIONS}
    if language not in own:
        raise ValueError(f"language: expected one of {sorted(own)}, got {language!r}")
    up = "../" * (pagename.count("/") + (1 if own[language] else 0))  # to the site's root
    links = [
        f'<a href="{up}{folder}{pagename}.html" hreflang="{lang}" lang="{lang}">{text}</a>'
        for lang, text, folder in EDITIONS
        if lang != language
    ]
    return f'<nav class="edition-switch" aria-label="Language">{" ".join(links)}</nav>\n'


def _add_switch(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if doctree is None or "body" not in context:  # the index, search and generated pages
        return
    context["body"] = switch_html(pagename, app.config.language or "en") + context["body"]


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _add_switch)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
