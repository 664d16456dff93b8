"""A chapter card under the title of every chapter page.

The card says what the reader builds, which chapters to read first, how hard the chapter
is, how long its notebook took to execute in the build that made the page (and on a Colab
GPU, where that was measured), and links to the notebook in Colab. The facts come from one
file, ``book/chapters.yml`` (see its header); the execution time is myst-nb's record of
the same build (the figure ``{chapter-times}`` shows), so no number is typed by hand.

A chapter without an entry, or an entry that names an unknown prerequisite or difficulty,
fails the build with a message that names the chapter.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import yaml
from book_messages import N_, _, ngettext  # book/_ext: the words in the build's language
from docutils import nodes
from edition_notebooks import colab_link  # book/_ext: the reader's notebook of the page's edition
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.transforms.post_transforms import SphinxPostTransform

CARDS_FILE = "book/chapters.yml"
DIFFICULTIES = ("introductory", "intermediate", "advanced")
FIELDS = {"builds", "builds_ja", "prerequisites", "difficulty", "gpu_seconds"}


def load_cards(path: Path, chapters: list[str]) -> dict[str, dict]:
    """Read and check the chapter cards file.

    Args:
        path: ``book/chapters.yml``.
        chapters: the docnames of the chapter notebooks, in reading order.

    Returns:
        ``{docname: entry}`` for every chapter.

    Raises:
        ExtensionError: naming the chapter, if a chapter has no entry, an entry is for no
            chapter, a field is unknown or missing, a prerequisite is not an earlier chapter,
            or the difficulty is not one of ``DIFFICULTIES``.
    """
    cards = yaml.safe_load(path.read_text()) or {}
    missing = [c for c in chapters if c not in cards]
    extra = [c for c in cards if c not in chapters]
    if missing or extra:
        raise ExtensionError(
            f"{path}: chapters without a card: {missing}; cards for no chapter: {extra}"
        )
    for i, name in enumerate(chapters):
        card = cards[name]
        unknown = set(card) - FIELDS
        if unknown or not {"builds", "builds_ja", "prerequisites", "difficulty"} <= set(card):
            raise ExtensionError(
                f"{path}: {name}: expected the fields builds, builds_ja (its Japanese), "
                f"prerequisites, difficulty (and optionally gpu_seconds), got {sorted(card)}"
            )
        if card["difficulty"] not in DIFFICULTIES:
            raise ExtensionError(
                f"{path}: {name}: difficulty {card['difficulty']!r}, expected one of {DIFFICULTIES}"
            )
        for before in card["prerequisites"]:
            if before not in chapters[:i]:
                raise ExtensionError(
                    f"{path}: {name}: prerequisite {before!r} is not an earlier chapter"
                )
    return cards


@functools.cache
def _machine() -> tuple[str, int]:
    """The building machine as the benchmarks name it (``companion.bench.hardware``)."""
    from companion.bench import hardware

    hw = hardware()
    return hw["cpu"], hw["cpu_cores"]


#: The difficulties' words, translated on the page (``book_messages``).
LEVELS = {
    "introductory": N_("introductory"),
    "intermediate": N_("intermediate"),
    "advanced": N_("advanced"),
}


def _sharing(app, docname: str, runtime: float) -> str:
    """``", with N notebooks executing at a time"`` when ``tools/execute_notebooks.py``
    executed this notebook alongside others (its record in ``_build/notebook_seconds.json``
    holds this very runtime), else ``""``."""
    path = Path(app.srcdir) / "_build" / "notebook_seconds.json"
    if not path.is_file():
        return ""
    entry = json.loads(path.read_text()).get(f"{docname}.ipynb")
    if not entry or abs(entry["seconds"] - runtime) > 1e-6 or entry["jobs"] < 2:
        return ""
    return _(", with {jobs} notebooks executing at a time").format(jobs=entry["jobs"])


#: Reading speeds of the study-time estimate: prose in words a minute, code in lines a minute
#: (code is read slowly, line by line).
WORDS_PER_MINUTE = 180
EXERCISE = re.compile(r"^\d+\.\s", re.MULTILINE)  # "3. **Double DQN.** ..." numbers an exercise
CODE_LINES_PER_MINUTE = 8


def study_time(path) -> str:
    """The chapter's reading time, estimated from its notebook: its prose at
    ``WORDS_PER_MINUTE`` and its shown code at ``CODE_LINES_PER_MINUTE``, and its number of
    exercises (the cells of the "Exercises" section are not counted as reading), in the
    build's language (the estimate is the English one in every edition)."""
    nb = json.loads(Path(path).read_text())
    words = code = exercises = 0
    in_exercises = False
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "markdown":
            if "## Exercises" in text:
                in_exercises = True
                head, tail = text.split("## Exercises", 1)
                words += len(head.split())
                exercises += len(EXERCISE.findall(tail))
                continue
            if in_exercises:
                exercises += len(EXERCISE.findall(text))
            else:
                words += len(text.split())
        elif not in_exercises and not {"remove-input", "remove-cell", "colab-setup"} & set(tags):
            code += sum(1 for line in text.splitlines() if line.strip())
    minutes = words / WORDS_PER_MINUTE + code / CODE_LINES_PER_MINUTE
    if minutes >= 7.5:
        reading = _("about {minutes} min").format(minutes=f"{5 * round(minutes / 5):.0f}")
    else:
        reading = _("under 10 min")
    sentence = ngettext(
        "{reading} to read ({words:,} words, {code:,} lines of code), then {n} exercise",
        "{reading} to read ({words:,} words, {code:,} lines of code), then {n} exercises",
        exercises,
    )
    return sentence.format(reading=reading, words=words, code=code, n=exercises)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return _("{s:.0f} s").format(s=seconds)
    return _("{m:.1f} min").format(m=seconds / 60)


def _field(name: str, *body: nodes.Node) -> nodes.field:
    return nodes.field("", nodes.field_name(text=name), nodes.field_body("", *body))


def card_node(env, docname: str) -> nodes.Element:
    """The card of ``docname`` as a docutils admonition (prerequisites as page links), in
    the edition's language."""
    app = env.app
    language = app.config.language or "en"
    card = app.config.chapter_cards[docname]
    fields = nodes.field_list()
    builds = card["builds_ja"] if language == "ja" else card["builds"]
    fields += _field(_("You build"), nodes.paragraph(text=builds))
    # One link per line: chapter titles hold commas.
    before = nodes.bullet_list(classes=["chapter-card-prerequisites"])
    for target in card["prerequisites"]:
        link = pending_xref(
            refdoc=docname,
            reftarget="/" + target,
            reftype="doc",
            refdomain="std",
            refexplicit=False,
            refwarn=True,
        )
        link += nodes.inline(text=target.split("/")[-1])
        before += nodes.list_item("", nodes.paragraph("", "", link))
    if not card["prerequisites"]:
        before = nodes.paragraph(text=_("none: Python and NumPy"))
    fields += _field(_("Read first"), before)
    level = _(LEVELS[card["difficulty"]])
    fields += _field(_("Difficulty"), nodes.paragraph(text=level))
    fields += _field(_("Study time"), nodes.paragraph(text=study_time(env.doc2path(docname))))
    exec_data = NbMetadataCollector.get_doc_data(env).get(docname, {}).get("exec_data") or {}
    runtime = exec_data.get("runtime")
    if runtime is not None:
        cpu, cores = _machine()
        timing = _(
            "{duration} to execute the notebook on the machine that built this page "
            "({machine}{sharing})"
        ).format(
            duration=_duration(runtime),
            machine=_("{cpu}, {cores} cores").format(cpu=cpu, cores=cores),
            sharing=_sharing(app, docname, runtime),
        )
    else:
        timing = _("not executed in this build")
    if card.get("gpu_seconds") is not None:
        timing += _("; {duration} on a Colab GPU").format(duration=_duration(card["gpu_seconds"]))
    else:
        timing += _("; not measured on a GPU")
    fields += _field(_("Run time"), nodes.paragraph(text=timing))
    colab = colab_link(
        app.config.html_theme_options.get("repository_url", ""),
        str(env.doc2path(docname, False)),
        language,
    )
    link = nodes.reference("", _("Open in Colab"), refuri=colab)
    fields += _field(_("Run it"), nodes.paragraph("", "", link))
    box = nodes.admonition(classes=["chapter-card", "tip"])
    box += nodes.title(text=_("This page at a glance"))
    box += fields
    return box


class ChapterCardTransform(SphinxPostTransform):
    """Insert the card after the title of each chapter page (after all pages were read,
    so that every execution time is known)."""

    default_priority = 8  # before references are resolved

    def run(self, **kwargs) -> None:
        if self.env.docname not in self.app.config.chapter_cards:
            return
        section = next(iter(self.document.findall(nodes.section)), None)
        if section is None:
            raise ExtensionError(f"{self.env.docname}: a chapter page needs a title")
        title = next(iter(section.findall(nodes.title)))
        title.parent.insert(title.parent.index(title) + 1, card_node(self.env, self.env.docname))


def _load(app: Sphinx, config) -> None:
    chapters = sorted(
        str(p.relative_to(app.srcdir).with_suffix(""))
        for p in Path(app.srcdir, "notebooks").glob("*.ipynb")
    )
    config.chapter_cards = load_cards(Path(app.srcdir) / CARDS_FILE, chapters)


def _every_page_with_a_card(app: Sphinx, env):
    """Write every chapter page again when an execution time may have changed."""
    if not NbMetadataCollector.new_exec_data(env):
        return None
    return list(app.config.chapter_cards)


def setup(app: Sphinx) -> dict:
    app.setup_extension("book_messages")
    app.add_config_value("chapter_cards", {}, "env")
    app.connect("config-inited", _load)
    app.add_post_transform(ChapterCardTransform)
    app.connect("env-updated", _every_page_with_a_card)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
