"""Every figure in a chapter's prose comes from code: glued (``{glue:md}`name```, see
``companion/glue.py``) from the run or the committed result, or a setting the chapter chose.

A number in a notebook's Markdown (prose only: code, maths, headings, link targets and the
targets of roles are left out, as in ``test_glossary``) passes when it is

- part of a phrase every chapter uses to point somewhere: "chapter 7", "section 3",
  "exercise 2", "sections 4–6", a year in a citation, a grid size "10 × 10";
- part of a phrase the notebook lists as a setting, in its metadata::

      "prose_settings": [{"phrase": "γ = 0.99", "why": "the discount the chapter chose"}]

  A phrase is matched literally; each needs a reason, and each must still occur (a stale entry
  fails). A setting is an input the chapter chose or a definition (a budget, a threshold, a
  maze's size, a hyperparameter), never an outcome of a run or a figure of a results file:
  those are glued.

Every ``{glue:md}`` name a notebook's Markdown uses appears as ``name=`` in a code cell that
calls ``glue``, so the build's missing-key warning is caught here first (``test_notebooks``
checks the executed notebook's glued names).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_glossary import Paragraph, _clean, _prose_lines

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

NUMBER = re.compile(r"(?<![\w.,])\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
LIST_MARKER = re.compile(r"^(\s*)(?:\d+[.)]|[-*+])\s+")
#: Phrases that point somewhere, in every chapter.
POINTERS = re.compile(
    r"\b(?:[Cc]hapters?|[Ss]ections?|§|[Ee]xercises?|[Qq]uestions?|[Pp]arts?|[Ee]q\.|"
    r"[Ee]quation|[Ss]tep)\s+\d+(?:\.\d+)*(?:\s*(?:–|-|to|and|,)\s*\d+(?:\.\d+)*)*"
    r"|§\s*\d+(?:\.\d+)*"
    r"|\b(?:19|20)\d\d[a-z]?\b"  # a year (citations, dates)
    r"|\b\d+\s*×\s*\d+(?:\s*×\s*\d+)?\b"  # a grid or array size, 10 × 10
)
GLUE_ROLE = re.compile(r"\{glue:md\}`([^`]+)`")
GLUE_NAME = re.compile(r"\b([a-z][a-z0-9_]*)\s*=(?!=)")


def _notebook(path: Path) -> dict:
    return json.loads(path.read_text())


def _settings(nb: dict) -> list[dict]:
    return nb.get("metadata", {}).get("prose_settings", [])


def prose_paragraphs(nb: dict) -> list[tuple[str, str]]:
    """``[(cell id, prose)]``: every paragraph of every Markdown cell, list markers removed."""
    found = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        lines, _ = _prose_lines("".join(cell["source"]))
        lines = [LIST_MARKER.sub(r"\1", line) for line in lines]
        for block in re.split(r"\n\s*\n", "\n".join(lines)):
            if block.strip():
                text = _clean(Paragraph("", "", (0, 0, 0), ""), block)
                found.append((cell.get("id", "?"), text))
    return found


def hand_typed_figures(nb: dict) -> list[str]:
    """``["cell <id>: …context…"]`` for every number that is neither pointer nor setting."""
    phrases = [s["phrase"] for s in _settings(nb)]
    found = []
    for cell_id, text in prose_paragraphs(nb):
        covered = [m.span() for m in POINTERS.finditer(text)]
        for phrase in phrases:
            covered += [(m.start(), m.end()) for m in re.finditer(re.escape(phrase), text)]
        for m in NUMBER.finditer(text):
            if not any(a <= m.start() and m.end() <= b for a, b in covered):
                found.append(f"cell {cell_id}: …{text[max(0, m.start() - 40) : m.end() + 25]}…")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_prose_states_no_figure_by_hand(path):
    figures = hand_typed_figures(_notebook(path))
    assert not figures, (
        f"{path.name}: a number in the prose that is no setting: glue it from the code that "
        "computed it ({glue:md}`name`), or list the phrase under prose_settings with why it is "
        "a setting:\n" + "\n".join(figures)
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_prose_settings_are_explained_and_used(path):
    nb = _notebook(path)
    text = "\n".join(t for _, t in prose_paragraphs(nb))
    for setting in _settings(nb):
        assert set(setting) == {"phrase", "why"} and setting["why"].strip(), setting
        assert re.search(r"\d", setting["phrase"]), setting
        assert setting["phrase"] in text, f"{path.name}: stale prose setting {setting}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_glued_name_is_glued_by_a_code_cell(path):
    nb = _notebook(path)
    markdown = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    code = [
        s
        for c in nb["cells"]
        if c["cell_type"] == "code" and "glue(" in (s := "".join(c["source"]))
    ]
    glued = {name for source in code for name in GLUE_NAME.findall(source)}
    used = {name for name in GLUE_ROLE.findall(markdown)}
    assert used <= glued, f"{path.name}: quoted but glued by no code cell: {sorted(used - glued)}"
    assert not re.search(r"\{glue(?::(?:text|any))?\}`", markdown), (
        f"{path.name}: quote a figure with {{glue:md}}, the role companion.glue.glue feeds"
    )


def test_a_hand_typed_figure_is_found():
    nb = {
        "metadata": {"prose_settings": [{"phrase": "γ = 0.99", "why": "chosen"}]},
        "cells": [
            {
                "cell_type": "markdown",
                "id": "a",
                "source": [
                    "## 3. Results\n\nIn chapter 7 (section 2) the 10 × 10 maze with γ = 0.99 took "
                    "212,992 steps, {glue:md}`steps` in all, `x = 5`, $n = 4$, 30% of the time.\n\n"
                    "1. an item\n2. [a link](07_dqn.ipynb) (Mnih et al., 2015)\n"
                ],
            }
        ],
    }
    found = hand_typed_figures(nb)
    assert len(found) == 2 and "212,992" in found[0] and "30%" in found[1], found
