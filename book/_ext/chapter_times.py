"""Tables of how long the chapters take to run: in this build, in a lab's student copy, and
on each device the notebooks were run on (``{device-times}``).

``{chapter-times}`` in a page is replaced, once every notebook has been executed (or read
from the execution cache), by a table with one row per executed chapter: its title (a
link), the seconds its notebook took to run and whether it succeeded. The figures are
myst-nb's execution records of the same build, the ones ``{nb-exec-table}`` shows; this
table names chapters instead of file paths and leaves out the cache bookkeeping.

The tables' words are translated with gettext when the page is read or written
(``book_messages``), the measurements filled into the translation afterwards, so a catalogue
entry does not change with each new measurement. The paragraphs are left out of the pages'
own catalogues.
"""

from __future__ import annotations

import json
from pathlib import Path

from book_messages import _  # book/_ext: the words in the build's language
from docutils import nodes
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective

_KEY = "has_chapter_times"


def _paragraph(text: str) -> nodes.paragraph:
    """A paragraph already in the page's language: left out of the message catalogues."""
    node = nodes.paragraph(text=text)
    node["translatable"] = False
    return node


class ChapterTimesNode(nodes.General, nodes.Element):
    """Placeholder replaced by the table after all documents are read."""


class ChapterTimes(SphinxDirective):
    def run(self):
        NbMetadataCollector.set_doc_data(self.env, self.env.docname, _KEY, True)
        return [ChapterTimesNode()]


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def _first_exercise(env, target: str, runtime: float | None) -> float | None:
    """The seconds ``target``'s cells before its first exercise took in the execution that
    gave ``runtime`` (``_build/notebook_seconds.json``, ``tools/execute_notebooks.py``)."""
    path = Path(env.srcdir) / "_build" / "notebook_seconds.json"
    if runtime is None or not path.is_file():
        return None
    entry = json.loads(path.read_text()).get(f"{target}.ipynb")
    if not entry or abs(entry["seconds"] - runtime) > 1e-6:
        return None
    return entry.get("to_first_exercise")


def _table(env, docname: str) -> nodes.table:
    table = nodes.table(classes=["colwidths-auto"])
    group = nodes.tgroup(cols=4)
    table += group
    for _column in range(4):
        group += nodes.colspec(colwidth=25)
    head = nodes.thead()
    group += head
    row = nodes.row()
    head += row
    heads = (
        # Translators: the head of a table's column of chapters.
        _("chapter"),
        _("execution time"),
        _("of which before the first exercise"),
        _("ran without error"),
    )
    for name in heads:
        row += nodes.entry("", _paragraph(name))
    body = nodes.tbody()
    group += body
    for target, data in sorted(NbMetadataCollector.get_doc_data(env).items()):
        exec_data = data.get("exec_data")
        if not exec_data:
            continue
        row = nodes.row()
        body += row
        link = pending_xref(
            refdoc=docname,
            reftarget="/" + target,
            reftype="doc",
            refdomain="std",
            refexplicit=False,
            refwarn=True,
        )
        link += nodes.inline(
            text=str(env.titles[target].astext()) if target in env.titles else target
        )
        row += nodes.entry("", nodes.paragraph("", "", link))
        runtime = exec_data.get("runtime")
        row += nodes.entry("", _paragraph(_minutes(runtime)))
        row += nodes.entry("", _paragraph(_minutes(_first_exercise(env, target, runtime))))
        row += nodes.entry("", _paragraph(_("yes") if exec_data.get("succeeded") else _("no")))
    return table


class ChapterTimesTransform(SphinxPostTransform):
    default_priority = 8  # before references are resolved

    def run(self, **kwargs) -> None:
        for node in list(self.document.findall(ChapterTimesNode)):
            node.replace_self(_table(self.env, self.env.docname))


def _pages_with_table(app: Sphinx, env):
    if not NbMetadataCollector.new_exec_data(env):
        return None
    return [d for d, data in NbMetadataCollector.get_doc_data(env).items() if data.get(_KEY)]


def _notebook_link(docname: str, stem: str) -> nodes.paragraph:
    """A paragraph linking to ``notebooks/<stem>`` (its title once references resolve)."""
    link = pending_xref(refdoc=docname, reftarget=f"/notebooks/{stem}", reftype="doc",
                        refdomain="std", refexplicit=False, refwarn=True)  # fmt: skip
    link += nodes.inline(text=stem)
    return nodes.paragraph("", "", link)


class LabTimes(SphinxDirective):
    """The committed measurement of how long each student copy runs to its first exercise."""

    def run(self):
        path = Path(self.env.srcdir) / "benchmarks" / "results" / "lab_times.json"
        self.env.note_dependency(str(path))
        result = json.loads(path.read_text())
        hw = result["hardware"]
        dates = sorted(
            {c.get("measured", result["date"])[:10] for c in result["chapters"].values()}
        )
        measured = _(
            "Measured {date} with {cpu}, {cores} cores, JAX {jax} (benchmarks/lab_times.py), "
            "one chapter at a time, on the tiny budget: the seconds from the kernel's start to "
            "the first exercise's stub, and the slowest cell on the way."
        )
        intro = _paragraph(measured.format(
            date=_dates(dates), cpu=hw["cpu"], cores=hw["cpu_cores"], jax=hw["jax"]))  # fmt: skip
        table = nodes.table(classes=["colwidths-auto"])
        group = nodes.tgroup(cols=3)
        table += group
        for _column in range(3):
            group += nodes.colspec(colwidth=33)
        head = nodes.thead()
        group += head
        row = nodes.row()
        head += row
        for name in (_("chapter"), _("to the first exercise"), _("slowest cell")):
            row += nodes.entry("", _paragraph(name))
        body = nodes.tbody()
        group += body
        for stem, chapter in sorted(result["chapters"].items()):
            row = nodes.row()
            body += row
            row += nodes.entry("", _notebook_link(self.env.docname, stem))
            row += nodes.entry("", _paragraph(_minutes(chapter["seconds"])))
            slow = chapter["slowest"][0] if chapter["slowest"] else None
            cell = nodes.paragraph()
            if slow:
                cell += nodes.literal(text=slow["first_line"])
                cell += nodes.Text(f" … ({_minutes(slow['seconds'])})")
            row += nodes.entry("", cell)
        return [intro, table]


class DeviceTimes(SphinxDirective):
    """The committed run of every notebook on each device (``device_notebooks.json``): one
    column per device, the seconds each notebook took or the cell it stopped at."""

    def run(self):
        path = Path(self.env.srcdir) / "benchmarks" / "results" / "device_notebooks.json"
        self.env.note_dependency(str(path))
        devices = json.loads(path.read_text())["devices"]
        names = sorted(devices, key=lambda name: (name != "cpu", name))  # the CPU first
        intro = _(
            "Each notebook ran top to bottom in a fresh process, on the tiny budget, its "
            "solution cells included (benchmarks/device_notebooks.py): a time means the "
            "notebook ran without error and every self-check accepted the chapter's own "
            "solution. JAX's persistent compilation cache was on, so a program compiled by a "
            "notebook run earlier on the same machine was loaded, not compiled again. A "
            "notebook that stopped shows the first line of the cell it stopped at; a dash "
            "marks one not run on that device."
        )
        out = [_paragraph(intro)]
        for name in names:
            entry = devices[name]
            hw = entry["hardware"]
            dates = sorted({row["measured"][:10] for row in entry["notebooks"].values()})
            measured = _(
                "{device}: measured {date} with JAX {jax}, Python {python}, on a host with "
                "{cores} CPU cores."
            )
            out.append(_paragraph(measured.format(
                device=_device_name(name), date=_dates(dates), jax=hw["jax"],
                python=hw["python"], cores=hw["cpu_cores"])))  # fmt: skip
        table = nodes.table(classes=["colwidths-auto"])
        group = nodes.tgroup(cols=1 + len(names))
        table += group
        for _column in range(1 + len(names)):
            group += nodes.colspec(colwidth=100 // (1 + len(names)))
        head = nodes.thead()
        group += head
        row = nodes.row()
        head += row
        for text in [_("chapter"), *map(_device_name, names)]:
            row += nodes.entry("", _paragraph(text))
        body = nodes.tbody()
        group += body
        stems = sorted({stem for entry in devices.values() for stem in entry["notebooks"]})
        for stem in stems:
            row = nodes.row()
            body += row
            row += nodes.entry("", _notebook_link(self.env.docname, stem))
            for name in names:
                row += nodes.entry("", _device_cell(devices[name]["notebooks"].get(stem)))
        out.append(table)
        return out


def _device_name(kind: str) -> str:
    """A device kind as JAX names it, for a column head (JAX calls every CPU ``cpu``)."""
    return "CPU" if kind == "cpu" else kind


def _dates(dates: list[str]) -> str:
    """The day of a measurement, or the first and last days of one made over several."""
    if len(dates) == 1:
        return _("on {date}").format(date=dates[0])
    return _("between {first} and {last}").format(first=dates[0], last=dates[-1])


def _device_cell(record: dict | None) -> nodes.paragraph:
    """One notebook's run on one device: its time, where it stopped, or a dash."""
    if record is None:
        return _paragraph("–")
    if record["passed"]:
        return _paragraph(_minutes(record["seconds"]))
    if "failed_cell" in record:
        # the cell's first line goes where the translation has "{cell}", as code
        # Translators: {cell} is the first line of the cell the notebook stopped at, as code.
        before, cell_slot, after = _("stopped at {cell}").partition("{cell}")
        if not cell_slot:
            raise ValueError("the translation of 'stopped at {cell}' lost its {cell}")
        cell = _paragraph(before)
        line = record["failed_cell"]["first_line"]
        cell += nodes.literal(text=line if len(line) <= 32 else line[:31].rsplit(" ", 1)[0] + "…")
        cell += nodes.Text(after)
        return cell
    return _paragraph(_("ran past {limit}").format(limit=_minutes(record["seconds"])))


def setup(app: Sphinx) -> dict:
    app.setup_extension("book_messages")
    app.add_node(ChapterTimesNode)
    app.add_directive("chapter-times", ChapterTimes)
    app.add_directive("lab-times", LabTimes)
    app.add_directive("device-times", DeviceTimes)
    app.add_post_transform(ChapterTimesTransform)
    app.connect("env-updated", _pages_with_table)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
