"""The reader's notebooks: the chapters as Colab and Jupyter open them, with the book's figures.

The book's prose quotes numbers of its run with myst-nb's ``{glue:md}`name``` role, which
only the book's build fills in: Jupyter and Colab show the role itself. A reader's notebook is
a chapter's notebook (``notebooks/<name>.ipynb``, or ``notebooks/ja/<name>.ipynb`` for the
Japanese edition) with each role replaced by the value that the book's build glued (read
from its execution cache, ``_build/.jupyter_cache``), as the page of the same edition shows
it, and one sentence under its Colab badge saying that the figures come from the book's run
on the date of that run. Its code cells are the source notebook's, unchanged, and its badge
opens the reader's notebook (:data:`edition_notebooks.COLAB_BRANCH`).

``make book`` writes them, after both editions are built, into the site:
``_build/html/_notebooks/notebooks/<name>.ipynb`` and ``.../notebooks/ja/<name>.ipynb`` (the
repository's paths under ``_notebooks``), and makes each chapter page's ``.ipynb`` download
(``_sources/notebooks/<name>.ipynb`` of each edition) the reader's notebook of its edition. On
a push to ``main`` the book's workflow publishes ``_notebooks`` as the branch
:data:`edition_notebooks.COLAB_BRANCH` of the repository, one commit replacing the last, and
every Colab link of the book opens the notebook there.

The student and solution copies of the lab (``tools/make_lab.py``) fill in the figures with
the same functions.

    python tools/reader_notebooks.py [--site _build/html] [--cache _build/.jupyter_cache]
"""

from __future__ import annotations

import argparse
import copy
import gettext
import re
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import book_messages  # noqa: E402  (book/_ext: the extensions' catalogue)
import edition_notebooks  # noqa: E402  (book/_ext: the editions' notebooks and Colab)
import lab_messages  # noqa: E402  (tools/: the lab's words and their catalogue)
from edition_notebooks import COLAB_BRANCH, READER_NOTE, notebook_path  # noqa: E402

#: myst-nb's inline glue role, ``{glue:md}`name```, as the book's Markdown writes it.
GLUE_ROLE = re.compile(r"\{glue:md\}`([^`]+)`")
#: What a role reads as, in English, when the book's run of its notebook is not at hand (its
#: translations: the catalogue ``lab``, ``tools/lab_messages.py``).
NO_FIGURE = lab_messages.MESSAGES["no_figure"]
CACHE = ROOT / "_build" / ".jupyter_cache"
SITE = ROOT / "_build" / "html"
#: The site's folder of the reader's notebooks, at their repository paths.
FOLDER = "_notebooks"
#: The editions: ``{language: its site's folder under the English site}``.
EDITIONS = {"en": "", "ja": "ja"}
#: A glued phrase (``companion.glue.words``): one inline element per language.
EDITION_TEXT = re.compile(r'<span class="edition-text" lang="([a-z]+)">(.*?)</span>', re.DOTALL)
#: The cell of the sentence about the figures (its id).
NOTE_ID = "figures-of-the-books-run"
_COLAB_BLOB = re.compile(
    r"(https://colab\.research\.google\.com/github/[^/\s)]+/[^/\s)]+/blob/)[^/\s)]+/"
)


def glued_values(executed: nbformat.NotebookNode) -> dict[str, str]:
    """``{name: Markdown text}`` of every figure an executed notebook glued (myst-nb keeps
    each as a display output whose ``metadata.scrapbook`` names it)."""
    values = {}
    for cell in executed.cells:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook")
            if not record:
                continue
            data = output.get("data", {})
            prefix = record.get("mime_prefix", "")
            text = data.get(prefix + "text/markdown")
            if text is not None:
                values[record["name"]] = text if isinstance(text, str) else "".join(text)
    return values


def in_language(text: str, language: str) -> str:
    """A glued value as the ``language`` page shows it: of a phrase glued in each language
    (``<span class="edition-text" lang="...">`` elements, which Jupyter would show side by
    side), the one in ``language``; any other value as it is."""
    parts = dict(EDITION_TEXT.findall(text))
    if parts and EDITION_TEXT.sub("", text).strip() == "":
        return parts.get(language, parts.get("en", text))
    return text


def resolve_glue(
    nb: nbformat.NotebookNode, values: dict[str, str], language: str = "en"
) -> list[str]:
    """Replace, in ``nb``'s Markdown cells (in place), each ``{glue:md}`name``` role by
    ``values[name]`` (a phrase in ``language``), or by the language's placeholder
    (:data:`NO_FIGURE`) where ``values`` lacks it.

    Returns:
        the names not in ``values``, in order of appearance.
    """
    if language not in EDITIONS:
        raise ValueError(f"language {language!r}: expected one of {sorted(EDITIONS)}")
    placeholder = lab_messages.words(language)["no_figure"]
    missing: list[str] = []

    def figure(match: re.Match) -> str:
        name = match.group(1)
        if name in values:
            return in_language(values[name], language)
        missing.append(name)
        return placeholder

    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = GLUE_ROLE.sub(figure, cell.source)
    return missing


def executed_copy(nb: nbformat.NotebookNode, cache: Path):
    """The book build's executed copy of ``nb`` from the jupyter-cache at ``cache`` (the same
    code cells) and the time of that execution, or ``(None, None)`` when the cache has none."""
    if not Path(cache).is_dir():
        return None, None
    from jupyter_cache import get_cache

    store = get_cache(cache)
    try:
        pk, merged = store.merge_match_into_notebook(copy.deepcopy(nb))
    except KeyError:
        return None, None
    return merged, store.get_cache_record(pk).created


def book_figures(name: str, cache: Path = CACHE) -> tuple[dict[str, str], datetime | None]:
    """The figures that the book's run of the chapter ``name`` (``07_dqn.ipynb``) glued and
    the time of that run, from its English notebook's executed copy in ``cache`` (both
    editions show the one execution); ``({}, None)`` without one."""
    english = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    executed, when = executed_copy(english, cache)
    return (glued_values(executed), when) if executed is not None else ({}, None)


def translation(message: str, language: str) -> str:
    """``message`` of the extensions' catalogue (``book/_ext/book_messages.py``) in
    ``language``, as the book's pages give it (English where it has no translation)."""
    if language == "en":
        return message
    with tempfile.TemporaryDirectory() as tmp:
        book_messages.compile_catalogue(language, [ROOT / "locales"], Path(tmp))
        found = gettext.translation(book_messages.DOMAIN, tmp, [language], fallback=True)
        return found.gettext(message)


def colab_link(path: str, language: str = "en") -> str:
    """The Colab address of the reader's notebook of ``path`` (``notebooks/07_dqn.ipynb``) in
    ``language``'s edition, for ``_config.yml``'s repository (as the pages link it)."""
    import yaml

    repository = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    return edition_notebooks.colab_link(repository["url"], path, language)


def reader_notebook(
    nb: nbformat.NotebookNode, values: dict[str, str], when: datetime, language: str = "en"
) -> tuple[nbformat.NotebookNode, list[str]]:
    """The reader's copy of ``nb`` (a notebook of ``language``'s edition): its roles replaced
    by ``values`` (:func:`resolve_glue`), its Colab links opening the branch
    :data:`COLAB_BRANCH`, and, after its first two cells (the title and the Colab badge), a
    Markdown cell saying that the figures come from the book's run on ``when``'s date. Code
    cells are unchanged; ``nb`` is not.

    Returns:
        the copy, and the names of the roles that ``values`` lacks.
    """
    reader = copy.deepcopy(nb)
    missing = resolve_glue(reader, values, language)
    for cell in reader.cells:
        if cell.cell_type == "markdown":
            cell.source = _COLAB_BLOB.sub(rf"\g<1>{COLAB_BRANCH}/", cell.source)
    note = translation(READER_NOTE, language).format(date=f"{when:%Y-%m-%d}")
    cell = nbformat.v4.new_markdown_cell(f"*{note}*")
    cell.id = NOTE_ID
    reader.cells.insert(2, cell)
    return reader, missing


def write(site: Path = SITE, cache: Path = CACHE) -> list[Path]:
    """Write every chapter's reader's notebook of both editions into ``site/_notebooks`` and
    make it the chapter page's ``.ipynb`` download in ``site`` (and ``site/ja``).

    Returns:
        the notebooks written.

    Raises:
        SystemExit: naming the notebook, when the cache has no executed copy of a chapter or
            a role names a figure its run did not glue (run ``make book``).
    """
    written = []
    for english in sorted((ROOT / "notebooks").glob("*.ipynb")):
        values, when = book_figures(english.name, cache)
        if when is None:
            raise SystemExit(f"{english.name}: no executed copy in {cache} (run make book)")
        for language, folder in EDITIONS.items():
            path = notebook_path(f"notebooks/{english.name}", language)
            reader, missing = reader_notebook(
                nbformat.read(ROOT / path, as_version=4), values, when, language
            )
            if missing:
                raise SystemExit(f"{path}: figures its run did not glue: {missing}")
            out = site / FOLDER / path
            out.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(reader, out)
            download = site / folder / "_sources" / "notebooks" / english.name
            if download.parent.is_dir():
                nbformat.write(reader, download)
            written.append(out)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=SITE, help="the built book")
    parser.add_argument(
        "--cache", type=Path, default=CACHE, help="the book build's execution cache"
    )
    args = parser.parse_args(argv)
    written = write(args.site, args.cache)
    print(f"{len(written)} reader's notebooks in {args.site / FOLDER}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
