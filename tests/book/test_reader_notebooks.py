"""The reader's notebooks (tools/reader_notebooks.py): what Colab and Jupyter open, in both
editions, with the book's figures in the prose; and the workflow that publishes them on the
branch every Colab link of the book opens."""

from __future__ import annotations

import re
import sys
from datetime import datetime

import nbformat
import pytest
import yaml
from notebook_runner import NOTEBOOKS, ROOT

sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import edition_notebooks  # noqa: E402  (book/_ext/edition_notebooks.py)
import reader_notebooks as rn  # noqa: E402  (tools/reader_notebooks.py)

WHEN = datetime(2026, 12, 6, 23, 39)
PREFIX = "application/papermill.record/"
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")


def _glued(**values: str) -> nbformat.NotebookNode:
    """A small executed notebook whose one cell glued ``values`` as myst-nb records them."""
    cell = nbformat.v4.new_code_cell("glue(...)")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={PREFIX + "text/markdown": text, PREFIX + "text/plain": "<Markdown>"},
            metadata={"scrapbook": {"name": name, "mime_prefix": PREFIX}},
        )
        for name, text in values.items()
    ]
    return nbformat.v4.new_notebook(cells=[cell])


def _code(nb) -> list[tuple]:
    """Every code cell as the execution cache keys it: id, source, metadata."""
    return [(c.id, c.source, c.metadata) for c in nb.cells if c.cell_type == "code"]


def test_a_reader_notebook_quotes_the_books_figures_under_a_note_of_the_run():
    phrase = (
        '<span class="edition-text" lang="en">lower</span>'
        '<span class="edition-text" lang="ja">低い</span>'
    )
    values = rn.glued_values(_glued(rate="55.8%", trend=phrase))
    assert values == {"rate": "55.8%", "trend": phrase}
    source = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# A chapter"),
            nbformat.v4.new_markdown_cell(
                "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
                "(https://colab.research.google.com/github/o/r/blob/main/notebooks/a.ipynb)"
            ),
            nbformat.v4.new_markdown_cell("It solves {glue:md}`rate`, {glue:md}`trend`."),
            nbformat.v4.new_code_cell("print('{glue:md}`rate`')", metadata={"tags": ["x"]}),
        ]
    )
    before = nbformat.writes(source)
    for language, trend in (("en", "lower"), ("ja", "低い")):
        reader, missing = rn.reader_notebook(source, values, WHEN, language)
        assert missing == []
        assert [c.source for c in reader.cells][::3] == [
            "# A chapter",
            f"It solves 55.8%, {trend}.",
        ]
        assert "/blob/colab/notebooks/a.ipynb)" in reader.cells[1].source
        note = reader.cells[2]
        assert note.id == rn.NOTE_ID and note.cell_type == "markdown"
        assert "2026-12-06" in note.source
        assert bool(_JAPANESE.search(note.source)) == (language == "ja"), note.source
        assert _code(reader) == _code(source)  # the code is left alone, roles and all
    assert nbformat.writes(source) == before  # the source is not changed
    reader, missing = rn.reader_notebook(source, {"rate": "55.8%"}, WHEN, "en")
    assert missing == ["trend"] and rn.NO_FIGURE in reader.cells[3].source
    with pytest.raises(ValueError, match="language 'fr'"):
        rn.reader_notebook(source, values, WHEN, "fr")


@pytest.mark.parametrize("language", ["en", "ja"])
def test_every_chapters_reader_notebook_has_no_raw_role_and_the_sources_code(language):
    """With a value for every role (as the book's run glues them), no {glue:md} role is left
    in any notebook of the edition, its code cells are the source notebook's, byte for byte,
    and its badge opens the reader's notebook."""
    for path in NOTEBOOKS:
        source = nbformat.read(
            ROOT / edition_notebooks.notebook_path(f"notebooks/{path.name}", language),
            as_version=4,
        )
        markdown = "".join(c.source for c in source.cells if c.cell_type == "markdown")
        names = set(rn.GLUE_ROLE.findall(markdown))
        reader, missing = rn.reader_notebook(
            source, {name: f"<{name}>" for name in names}, WHEN, language
        )
        assert missing == []
        text = "".join(c.source for c in reader.cells if c.cell_type == "markdown")
        assert "{glue:" not in text and all(f"<{name}>" in text for name in names)
        assert _code(reader) == _code(source)
        assert rn.colab_link(f"notebooks/{path.name}", language) in reader.cells[1].source
        assert len(reader.cells) == len(source.cells) + 1


def test_make_book_writes_both_editions_reader_notebooks_and_downloads(tmp_path, monkeypatch):
    """``write`` gives every chapter in both editions, at the repository's paths under
    ``_notebooks``, and makes each page's .ipynb download its edition's reader's notebook; a
    chapter its cache has not executed stops it, naming the chapter."""
    downloads = {
        lang: tmp_path / folder / "_sources" / "notebooks" for lang, folder in rn.EDITIONS.items()
    }
    for folder in downloads.values():
        folder.mkdir(parents=True)

    def figures(name, cache):
        nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
        markdown = "".join(c.source for c in nb.cells if c.cell_type == "markdown")
        return {n: "42" for n in rn.GLUE_ROLE.findall(markdown)}, WHEN

    monkeypatch.setattr(rn, "book_figures", figures)
    written = rn.write(tmp_path, tmp_path / "cache")
    assert len(written) == 2 * len(NOTEBOOKS)
    for path in NOTEBOOKS:
        for language in ("en", "ja"):
            repository_path = edition_notebooks.notebook_path(f"notebooks/{path.name}", language)
            reader = tmp_path / rn.FOLDER / repository_path
            assert reader in written
            assert (downloads[language] / path.name).read_text() == reader.read_text()
            assert "{glue:" not in reader.read_text()
    monkeypatch.setattr(rn, "book_figures", lambda name, cache: ({}, None))
    with pytest.raises(SystemExit, match=NOTEBOOKS[0].name):
        rn.write(tmp_path, tmp_path / "cache")


def test_the_note_is_translated_in_the_extensions_catalogue():
    japanese = rn.translation(edition_notebooks.READER_NOTE, "ja")
    assert japanese != edition_notebooks.READER_NOTE and _JAPANESE.search(japanese)
    assert "{date}" in japanese
    assert rn.translation(edition_notebooks.READER_NOTE, "en") == edition_notebooks.READER_NOTE


def test_every_colab_link_opens_the_reader_notebooks_branch():
    """The chapter card and the theme's button (``colab_link``) open the branch that the
    workflow publishes, which is not the branch of the sources."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    url = config["url"]
    link = edition_notebooks.colab_link(url, "notebooks/07_dqn.ipynb", "ja")
    assert link == (
        f"https://colab.research.google.com/github/{url.removeprefix('https://github.com/')}"
        f"/blob/{edition_notebooks.COLAB_BRANCH}/notebooks/ja/07_dqn.ipynb"
    )
    assert edition_notebooks.COLAB_BRANCH != config["branch"]
    with pytest.raises(ValueError, match="repository_url"):
        edition_notebooks.colab_link("https://gitlab.com/o/r", "notebooks/07_dqn.ipynb", "en")
    cards = (ROOT / "book" / "_ext" / "chapter_cards.py").read_text()
    assert "colab_link(" in cards and "colab.research.google.com" not in cards


def test_make_book_writes_them_and_the_workflow_publishes_them_on_that_branch():
    """``make book`` ends by writing the reader's notebooks into the site; on a push to main a
    job of the book workflow, not the build that .ci/run mirrors, pushes the site's
    ``_notebooks`` as the branch Colab's links open, with the only write permission."""
    book = (ROOT / "Makefile").read_text().split("\nbook:", 1)[1].split("\n\n", 1)[0]
    assert (
        book.strip()
        .splitlines()[-1]
        .strip()
        .endswith("tools/reader_notebooks.py --site _build/html")
    )
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    assert "write" not in workflow["permissions"].get("contents", "")
    uploads = [
        s
        for s in workflow["jobs"]["build"]["steps"]
        if s.get("uses", "").startswith("actions/upload-artifact") and "if" not in s
    ]  # a step with a condition (the reports of a failed run) is not the notebooks
    assert [s["with"]["path"] for s in uploads] == [f"_build/html/{rn.FOLDER}"]
    (job,) = [
        j for j in workflow["jobs"].values() if j.get("permissions", {}).get("contents") == "write"
    ]
    assert job["needs"] == "build" and "refs/heads/main" in job["if"]
    script = "\n".join(s.get("run", "") for s in job["steps"])
    assert f"git push --force origin HEAD:{edition_notebooks.COLAB_BRANCH}" in script
    downloads = [
        s for s in job["steps"] if s.get("uses", "").startswith("actions/download-artifact")
    ]
    assert downloads and downloads[0]["with"]["name"] == uploads[0]["with"]["name"]
