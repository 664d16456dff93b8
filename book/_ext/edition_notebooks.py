"""Every Colab link of the book opens the reader's notebook of the page's edition.

A chapter's notebook in the repository shows its prose's glued figures as myst-nb roles
(``{glue:md}`name```), which only the book's build fills in. The reader's notebooks
(``tools/reader_notebooks.py``, written by ``make book`` from the one execution: the figures
filled in as the pages show them) are published on the repository's branch
:data:`COLAB_BRANCH`, at the repository's paths: ``notebooks/<name>.ipynb`` and, for the
Japanese edition, ``notebooks/ja/<name>.ipynb`` (written from the English ones and the
catalogues by ``tools/translate_notebooks.py`` and committed). On every chapter page this
extension points the theme's Colab launch button (built by sphinx-book-theme from the
repository settings and the page's path) at the notebook of the page's edition on that
branch, and on a Japanese page replaces the page's downloadable source
(``_sources/notebooks/<name>.ipynb``, the ``.ipynb`` of the download menu) with the Japanese
notebook (``make book`` then replaces both editions' with the reader's notebooks). The chapter
card's "Open in Colab" link is made by :func:`colab_link` too (``chapter_cards.py``).

A notebook page of a translated edition without its translated notebook is a warning, which
fails the book's build.
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

from book_messages import N_  # book/_ext: the extensions' words, translated
from sphinx.application import Sphinx
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
#: The folder of the English notebooks; a translation lives in its subfolder ``<language>/``.
FOLDER = "notebooks"
#: The repository's branch of the reader's notebooks, which every Colab link opens (the book's
#: workflow publishes it on each push to ``main``).
COLAB_BRANCH = "colab"
#: The sentence under a reader's notebook's Colab badge (``tools/reader_notebooks.py``).
READER_NOTE = N_(
    "The figures in this notebook's text are those of the book's run on {date}; your own "
    "run will give slightly different ones."
)
COLAB = "https://colab.research.google.com/github/{repo}/blob/{branch}/{path}"


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


def colab_link(repository_url: str, path: str, language: str | None) -> str:
    """The Colab address of the reader's notebook of ``path`` (``notebooks/07_dqn.ipynb``) in
    ``language``'s edition, on the branch :data:`COLAB_BRANCH` of the GitHub repository at
    ``repository_url``."""
    if not repository_url.startswith("https://github.com/"):
        raise ValueError(f"repository_url {repository_url!r}: expected https://github.com/...")
    return COLAB.format(
        repo=repository_url.removeprefix("https://github.com/").strip("/"),
        branch=COLAB_BRANCH,
        path=notebook_path(path, language),
    )


def colab_launch_buttons(header_buttons: list, english: str, link: str) -> int:
    """Point every launch button whose address opens ``english`` on GitHub (the theme's Colab
    button: ``.../blob/<branch>/notebooks/07_dqn.ipynb``) at ``link``, in place.

    Returns:
        how many addresses were changed.
    """
    changed = 0
    for group in header_buttons:
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            url = button.get("url", "")
            if "/blob/" in url and url.endswith("/" + english):
                button["url"] = link
                changed += 1
    return changed


def _launch_buttons(app: Sphinx, pagename: str, templatename: str, context: dict, doctree):
    language = app.config.language or "en"
    english = _page_notebook(app, pagename)
    if english is None:
        return
    translated = notebook_path(english, language)
    if not Path(app.srcdir, translated).is_file():
        LOGGER.warning(
            f"{pagename}: no {translated} (run: python tools/editions.py notebooks)",
            location=pagename,
        )
        return
    repository = app.config.html_theme_options.get("repository_url", "")
    link = colab_link(repository, english, language)
    colab_launch_buttons(context.get("header_buttons", []), english, link)


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
