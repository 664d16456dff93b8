"""A translated edition's notebook pages open and download the notebook in its language.

The Japanese notebooks are ``notebooks/ja/<name>.ipynb``, written from the English ones and
the catalogues by ``tools/translate_notebooks.py`` and committed, so that Colab can open them
from the repository by path. On a Japanese chapter page this extension points the theme's
Colab launch button (built by sphinx-book-theme from the repository settings and the page's
path) at that notebook, and replaces the page's downloadable source
(``_sources/notebooks/<name>.ipynb``, the ``.ipynb`` of the download menu) with it. The
chapter card's "Open in Colab" link takes its path from :func:`notebook_path` too
(``chapter_cards.py``). The English edition is left as the theme makes it.

A notebook page of a translated edition without its translated notebook is a warning, which
fails the book's build.
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

from sphinx.application import Sphinx
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
#: The folder of the English notebooks; a translation lives in its subfolder ``<language>/``.
FOLDER = "notebooks"


def notebook_path(path: str, language: str | None) -> str:
    """The repository path of the notebook ``path`` (e.g. ``notebooks/07_dqn.ipynb``) in
    the edition of ``language``: ``notebooks/ja/07_dqn.ipynb`` for Japanese, ``path`` itself
    for English (or ``None``) and for a file outside ``notebooks/``."""
    pure = PurePosixPath(path)
    if language in (None, "en") or pure.parent != PurePosixPath(FOLDER):
        return path
    return str(pure.parent / language / pure.name)


def _page_notebook(app: Sphinx, pagename: str) -> str | None:
    """The repository path of ``pagename``'s notebook (``notebooks/07_dqn.ipynb``), or None
    for a page that is not a chapter notebook."""
    if pagename not in app.env.found_docs:
        return None
    path = PurePosixPath(app.env.doc2path(pagename, False))
    return str(path) if path.suffix == ".ipynb" and path.parent == PurePosixPath(FOLDER) else None


def translated_launch_buttons(header_buttons: list, english: str, translated: str) -> int:
    """Point every launch button whose address ends with ``/english`` (the theme's Colab
    button: ``.../blob/<branch>/notebooks/07_dqn.ipynb``) at ``translated``, in place.

    Returns:
        how many addresses were changed.
    """
    changed = 0
    for group in header_buttons:
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            url = button.get("url", "")
            if url.endswith("/" + english):
                button["url"] = url[: -len(english)] + translated
                changed += 1
    return changed


def _launch_buttons(app: Sphinx, pagename: str, templatename: str, context: dict, doctree):
    language = app.config.language or "en"
    english = _page_notebook(app, pagename) if language != "en" else None
    if english is None:
        return
    translated = notebook_path(english, language)
    if not Path(app.srcdir, translated).is_file():
        LOGGER.warning(
            f"{pagename}: no {translated} (run: python tools/editions.py notebooks)",
            location=pagename,
        )
        return
    translated_launch_buttons(context.get("header_buttons", []), english, translated)


def _translated_sources(app: Sphinx, exception) -> None:
    """Replace each notebook page's downloadable source by the translated notebook."""
    language = app.config.language or "en"
    if exception is not None or language == "en" or app.builder.format != "html":
        return
    for pagename in sorted(app.env.found_docs):
        english = _page_notebook(app, pagename)
        if english is None:
            continue
        translated = Path(app.srcdir, notebook_path(english, language))
        target = Path(app.outdir, "_sources", english)
        if translated.is_file() and target.parent.is_dir():
            shutil.copyfile(translated, target)


def setup(app: Sphinx) -> dict:
    # after sphinx-book-theme's own handler (priority 501), which makes the buttons
    app.connect("html-page-context", _launch_buttons, priority=600)
    app.connect("build-finished", _translated_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
