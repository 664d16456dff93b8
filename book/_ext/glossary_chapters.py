"""The glossary names the chapter of each definition.

Every glossary entry ends with "Defined in {ref}`LABEL`." (``tests/book/test_glossary.py`` reads
that sentence), which links to a section by its title alone. When the book is built, this
extension puts the chapter before the section, from where the label really is:
"Defined in chapter 5, *Reinforcement learning from first principles*, section 1. The Maze
as a Markov decision process." A label on a page that is not a chapter names the page:
"Defined in *Troubleshooting*, section ...". Nothing is typed twice, so moving a section to
another chapter moves its name in the glossary too.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.transforms.post_transforms import SphinxPostTransform

GLOSSARY = "book/glossary"
LEAD = "Defined in "
CHAPTER = re.compile(r"^notebooks/(\d+)_")


def where(env, label: str) -> tuple[str, str]:
    """``(chapter words, page title)`` of the page holding ``label``: ``("chapter 5", title)``
    for a chapter notebook, ``("", title)`` for another page."""
    found = env.get_domain("std").labels.get(label)
    if found is None:
        raise ExtensionError(f"{GLOSSARY}: 'Defined in' names an unknown label {label!r}")
    docname = found[0]
    title = env.titles[docname].astext() if docname in env.titles else docname
    number = CHAPTER.match(docname)
    return (f"chapter {int(number[1])}" if number else ""), title


class GlossaryChapters(SphinxPostTransform):
    """Insert the chapter and its title before each "Defined in" section link."""

    default_priority = 8  # before references are resolved

    def run(self, **kwargs) -> None:
        if self.env.docname != GLOSSARY:
            return
        for xref in list(self.document.findall(pending_xref)):
            if xref.get("reftype") != "ref":
                continue
            parent = xref.parent
            index = parent.index(xref)
            before = parent[index - 1] if index else None
            if not isinstance(before, nodes.Text) or not str(before).endswith(LEAD):
                continue
            chapter, title = where(self.env, xref["reftarget"])
            inserted = [
                nodes.Text(f"{chapter}, " if chapter else ""),
                nodes.emphasis(text=title),
                nodes.Text(", section "),
            ]
            for offset, node in enumerate(inserted):
                parent.insert(index + offset, node)


def setup(app: Sphinx) -> dict:
    app.add_post_transform(GlossaryChapters)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
