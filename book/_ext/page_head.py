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

``tools/measure_pages.py`` fails any page that throws or logs a script error.
"""

from __future__ import annotations

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


def _page_context(app, pagename, templatename, context, doctree):
    name_the_edition(context.get("header_buttons", []), app.config.language)
    if "script_files" in context:
        context["script_files"] = unique_scripts(context["script_files"])
    context["default_mode"] = context.get("default_mode") or "auto"


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _page_context, priority=900)  # after the theme's
    return {"parallel_read_safe": True, "parallel_write_safe": True}
