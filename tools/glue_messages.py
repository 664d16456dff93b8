"""The English phrases the notebooks glue or show in each language, for the catalogue ``glue``.

``companion.glue.words("...")`` and ``companion.glue.markdown("...")`` take their Japanese
from the gettext catalogue ``glue``; this module finds their English in the English
notebooks' code cells: the literal text given as the first argument of every call named
``words`` or ``markdown`` (``glue.words(...)`` too), each with the cell it is in. A call whose
first argument is an f-string is refused (:class:`ComputedText`): its figures belong in
named placeholders, ``words("{n} seeds", n=n)``, so that the catalogue holds one message
whatever the run's figures. A call with ``en=`` and ``ja=`` (two texts composed in each
language by the package) holds no message.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from book_title import book_title  # tools/, beside this file

ROOT = Path(__file__).resolve().parents[1]
#: The functions whose first argument is a message of the catalogue.
CALLS = frozenset({"words", "markdown"})


class ComputedText(ValueError):
    """A ``words``/``markdown`` call whose text is computed (an f-string, a ``+``)."""


def _parse(source: str) -> ast.Module | None:
    """A code cell as Python, IPython's magics and shell lines turned into calls (as the
    kernel runs them); None if it does not parse."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return ast.parse(TransformerManager().transform_cell(source))
    except SyntaxError:
        return None


def code_messages(source: str, where: str = "<cell>") -> list[tuple[int, str]]:
    """(line, message) of every catalogue text in the code ``source``.

    Raises:
        ComputedText: a ``words``/``markdown`` call whose first argument is not a literal.
    """
    tree = _parse(source)
    found = []
    for node in ast.walk(tree) if tree is not None else ():
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("run_line_magic", "run_cell_magic"):  # %time x = words("..."): its code
            code = node.args[-1]
            if isinstance(code, ast.Constant) and isinstance(code.value, str):
                found += [(node.lineno, t) for _, t in code_messages(code.value, where)]
            continue
        if name not in CALLS:
            continue
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.append((node.lineno, first.value))
        else:  # an f-string, a variable: no message the catalogue could hold
            raise ComputedText(
                f"{where}, line {node.lineno}: {name}({ast.unparse(first)[:60]}, ...): give the "
                'text as a literal with named placeholders, e.g. words("{n} seeds", n=n)'
            )
    return found


def notebook_messages(path: Path) -> list[tuple[int, str]]:
    """(cell number, message) of every catalogue text in a notebook's code cells."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for number, cell in enumerate(nb["cells"], 1):
        if cell["cell_type"] == "code":
            where = f"{path.name}, cell {number}"
            found += [(number, text) for _, text in code_messages("".join(cell["source"]), where)]
    return found


def template(root: Path = ROOT):
    """The English messages of the English notebooks (``<root>/notebooks/*.ipynb``) and of
    ``companion/glue.py`` and ``companion/quiz.py`` as a Babel template catalogue (domain ``glue``), each with the
    notebooks and cells (or lines) it was found in.

    Raises:
        ComputedText: as :func:`code_messages`.
    """
    from babel.messages.catalog import Catalog

    catalog = Catalog(domain="glue", project=book_title(), fuzzy=False)
    found = []
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        found += [(f"notebooks/{path.name}", cell, text) for cell, text in notebook_messages(path)]
    # the package's own phrases: the separators of a list, the quiz that cannot be shown
    for name in ("glue.py", "quiz.py"):
        package = root / "companion" / name
        if package.is_file():
            source = package.read_text(encoding="utf-8")
            found += [(f"companion/{name}", n, t) for n, t in code_messages(source, name)]
    for where, line, text in found:
        flags = ("python-brace-format",) if "{" in text else ()
        catalog.add(text, locations=[(where, line)], flags=flags)
    return catalog
