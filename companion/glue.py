"""Figures for a chapter's text, taken from the code that computed them.

A Markdown cell quotes a figure as ``{glue:md}`name``` and the code cell that computed it calls
``glue(name=text)``. The book's build (myst-nb's glue) pastes the text into the sentence, so
the prose says what this build's run, or the committed result it reads, says.

Where myst-nb is not installed (Colab), the Markdown cell shows the role as written; ``glue``
then shows the figures under the code cell that made them, one line, so that a reader can
read them there.
"""

from __future__ import annotations

import re

_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


def glue(**texts: str) -> None:
    """Make each ``name=text`` quotable in the chapter's Markdown as ``{glue:md}`name```.

    Args:
        **texts: Markdown text by name; each name lower-case letters, digits and ``_``. A
            figure is formatted here, where its precision can be seen
            (``glue(ratio=f"{r:.1f}")``), not in the sentence.

    Raises:
        TypeError: if a text is not a ``str``.
        ValueError: if no text is given or a text is empty.

    Source: myst-nb's ``glue`` (https://myst-nb.readthedocs.io/en/latest/render/glue.html).
    """
    if not texts:
        raise ValueError("glue: expected at least one name=text")
    for name, text in texts.items():
        if not _NAME.match(name):
            raise ValueError(f"glue: name {name!r}: expected lower-case letters, digits, _")
        if not isinstance(text, str):
            raise TypeError(
                f"glue: {name}: expected the figure as formatted text (a str), got "
                f"{type(text).__name__}; format it here, e.g. f'{{x:.2f}}'"
            )
        if not text.strip():
            raise ValueError(f"glue: {name}: the text is empty")
    from IPython.display import Markdown, display

    try:
        from myst_nb import glue as myst_glue
    except ImportError:  # Colab: show the figures where they were computed
        display(Markdown("; ".join(f"`{n}`: {t}" for n, t in texts.items())))
        return
    for name, text in texts.items():
        myst_glue(name, Markdown(text), display=False)
