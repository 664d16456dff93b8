"""The English words of the book's figures, for the gettext catalogue ``figures``.

``companion.figure_words`` translates a figure's drawn texts through this catalogue. The
messages are found in the code that draws the figures, without markers in the notebooks:

- the literal texts given to matplotlib's text setters (:data:`TEXT_CALLS`, by argument
  position, and the keywords :data:`TEXT_KEYWORDS`: ``ax.set_title("...")``,
  ``ax.plot(x, y, label="...")``, ``ax.set(xlabel="...")``, an animation's
  ``titles=[...]`` and ``captions=[... for t in ...]``, each item, also given by name:
  ``titles=titles`` after ``titles = [...]`` or ``titles.append(...)``), both texts of a conditional
  (``"a" if c else "b"``) and the pieces of a ``+`` of texts as one; a loop variable given
  as a text takes the texts of the literal it loops over (``for ax, title in [(a, "x")]``,
  ``for name, g in d.items()`` with ``d`` a dict literal);
- an f-string as one message whose figures are named placeholders, after the expression
  (``f"over {num_seeds} seeds"`` is ``"over {num_seeds} seeds"``, ``{config.gamma}`` is
  ``{gamma}``; a format spec is dropped, since the drawn text is matched with the figure
  already formatted);
- a text marked ``N_("...")`` (``companion.figure_words.N_``), and the diagrams' boxes and
  labels (``box(ax, x, y, w, h, title, sub)``, ``label(ax, x, y, text)``);
- a code cell's ``mystnb.image.alt`` (a diagram's alternative text).

A text without an English word (``"$y$"``, ``"Q(s, a)"``, ``"{n} x {n}"``) is left out: it
reads the same in every edition. Sources: the English notebooks (``notebooks/*.ipynb``),
``companion/viz.py``, ``companion/figure_words.py`` and ``companion/diagrams/*.py``.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from book_title import book_title  # tools/, beside this file

ROOT = Path(__file__).resolve().parents[1]
#: A call's name and the positions of its arguments that are drawn as text.
TEXT_CALLS = {
    "set_title": (0,),
    "set_xlabel": (0,),
    "set_ylabel": (0,),
    "suptitle": (0,),
    "supxlabel": (0,),
    "supylabel": (0,),
    "set_label": (0,),
    "set_text": (0,),
    "set_xticks": (1,),  # set_yticks(ticks, ["illegal", "legal"])
    "set_yticks": (1,),
    "set_xticklabels": (0,),
    "set_yticklabels": (0,),
    "annotate": (0,),
    "text": (2,),
    "label": (3,),  # companion.diagrams: label(ax, x, y, text)
    "box": (5, 6),  # companion.diagrams: box(ax, x, y, w, h, title, sub)
    "N_": (0,),
}
#: Keyword arguments drawn as text.
TEXT_KEYWORDS = frozenset(
    {"title", "label", "xlabel", "ylabel", "sub", "titles", "captions", "labels"}
)
_WORD = re.compile(r"[A-Za-z]{2,}")
#: Letters that are not English words: units and names every edition shares.
SHARED_WORDS = frozenset("ms ns GB MB KB CPU GPU TPU JAX XLA".split())


def sources(root: Path = ROOT) -> list[Path]:
    """The files whose code draws the book's figures."""
    found = sorted((root / "notebooks").glob("*.ipynb"))
    found += [root / "companion" / "viz.py", root / "companion" / "figure_words.py"]
    found += sorted((root / "companion" / "diagrams").glob("*.py"))
    return [p for p in found if p.exists()]


def has_words(text: str) -> bool:
    """Whether ``text`` holds an English word outside maths and placeholders."""
    plain = re.sub(r"\$[^$]*\$|\{\w+\}", " ", text)
    return any(w not in SHARED_WORDS for w in _WORD.findall(plain))


def _name(node: ast.AST) -> str:
    """A placeholder's name for an f-string's expression."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        key = node.slice
        if (
            isinstance(key, ast.Constant)
            and isinstance(key.value, str)
            and key.value.isidentifier()
        ):
            return key.value
        return _name(node.value)
    if isinstance(node, ast.Call):
        return _name(node.func)
    return "value"


def _template(node: ast.AST, names: dict) -> str | None:
    """The message of a text expression: a literal, an f-string with named placeholders, a
    ``+`` of those; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
                continue
            source = ast.unparse(value.value)
            if source not in names:
                base = _name(value.value)
                taken = set(names.values())
                name, n = base, 2
                while name in taken:
                    name, n = f"{base}{n}", n + 1
                names[source] = name
            parts.append("{" + names[source] + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _template(node.left, names), _template(node.right, names)
        return None if left is None or right is None else left + right
    return None


def _texts(node: ast.AST) -> list[str]:
    """The messages of an argument drawn as text (both texts of a conditional, and those
    inside an f-string's expressions)."""
    if isinstance(node, ast.IfExp):
        return _texts(node.body) + _texts(node.orelse)
    if isinstance(node, (ast.List, ast.Tuple)):  # titles=["a", f"b {n}"]
        return [text for item in node.elts for text in _texts(item)]
    if isinstance(node, ast.ListComp):  # captions=[f"step {t}" for t in ...]
        return _texts(node.elt)
    found = []
    whole = _template(node, {})
    if whole is not None:
        found.append(whole)
    if isinstance(node, (ast.JoinedStr, ast.BinOp)):
        for value in ast.walk(node):
            if isinstance(value, ast.IfExp):
                found += _texts(value.body) + _texts(value.orelse)
    return found


def _loop_values(tree: ast.AST) -> dict[str, list[ast.AST]]:
    """What each loop variable takes from a literal: ``for ax, title in [(a, "x"), ...]``
    gives ``title`` the ``"x"``s; ``for name, g in d.items()`` or ``for name in d`` (``d`` a
    dict literal) the keys of ``d``; through ``zip(...)`` and nested targets too."""
    bound = {
        t.id: node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Dict, ast.List, ast.Tuple))
        for t in node.targets
        if isinstance(t, ast.Name)
    }

    def rows(expr: ast.AST) -> list[ast.AST]:
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            if expr.func.attr == "items" and isinstance(expr.func.value, ast.Name):
                found = bound.get(expr.func.value.id)
                if isinstance(found, ast.Dict):
                    return [ast.Tuple(elts=[k, v]) for k, v in zip(found.keys, found.values)]
            return []
        if isinstance(expr, ast.Name):
            found = bound.get(expr.id)
            if isinstance(found, ast.Dict):
                return [k for k in found.keys if k is not None]
            expr = found
        return list(expr.elts) if isinstance(expr, (ast.List, ast.Tuple)) else []

    values: dict[str, list[ast.AST]] = {}

    def bind(target: ast.AST, elements: list[ast.AST]) -> None:
        if isinstance(target, ast.Name):
            values.setdefault(target.id, []).extend(elements)
        elif isinstance(target, ast.Tuple):
            for i, part in enumerate(target.elts):
                bind(
                    part,
                    [e.elts[i] for e in elements if isinstance(e, ast.Tuple) and i < len(e.elts)],
                )

    for node in ast.walk(tree):
        if not isinstance(node, ast.For):
            continue
        source, target = node.iter, node.target
        if (
            isinstance(source, ast.Call)
            and getattr(source.func, "id", "") == "zip"
            and isinstance(target, ast.Tuple)
        ):
            for part, argument in zip(target.elts, source.args):
                bind(part, rows(argument))
        else:
            bind(target, rows(source))
    return values


def _list_values(tree: ast.AST) -> dict[str, list[ast.AST]]:
    """What a list of texts given by name holds: ``titles = [f"env {e}" for e in ...]``
    gives ``titles`` the f-string, ``titles.append(f"...")`` adds the appended text."""
    values: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.ListComp)):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(node.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append"
            and isinstance(node.func.value, ast.Name)
            and node.args
        ):
            values.setdefault(node.func.value.id, []).append(node.args[0])
    return values


def code_texts(source: str) -> list[tuple[int, str]]:
    """(line, message) of every text the code ``source`` draws (see the module's notes); a
    source that does not parse (a cell with IPython's ``%`` lines) is read without them."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        lines = [
            line if not line.lstrip().startswith(("%", "!")) else "" for line in source.split("\n")
        ]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            return []
    found = []
    loops = _loop_values(tree)
    lists = _list_values(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        arguments = [node.args[i] for i in TEXT_CALLS.get(name, ()) if i < len(node.args)]
        arguments += [k.value for k in node.keywords if k.arg in TEXT_KEYWORDS]
        arguments += [  # a list of texts given by name: titles=titles
            value
            for k in node.keywords
            if k.arg in ("titles", "captions") and isinstance(k.value, ast.Name)
            for value in lists.get(k.value.id, [])
        ]
        for argument in arguments:
            found += [(node.lineno, text) for text in _texts(argument) if has_words(text)]
            names = [n.id for n in ast.walk(argument) if isinstance(n, ast.Name)]
            for value in (v for name in names for v in loops.get(name, [])):
                found += [(node.lineno, text) for text in _texts(value) if has_words(text)]
    return found


def notebook_texts(path: Path) -> list[tuple[int, str]]:
    """(cell number, message) of each text a notebook's code cells draw, and of each cell's
    image alternative text (``mystnb.image.alt``)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for number, cell in enumerate(nb["cells"], 1):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        found += [(number, text) for _, text in code_texts(source)]
        alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
        if alt:
            found.append((number, alt))
    return found


def template(root: Path = ROOT):
    """The figures' English messages as a Babel template catalogue (domain ``figures``), each
    with the files (and line or cell) it was found at."""
    from babel.messages.catalog import Catalog

    catalog = Catalog(domain="figures", project=book_title(), fuzzy=False)
    for path in sources(root):
        where = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
        if path.suffix == ".ipynb":
            found = notebook_texts(path)
        else:
            found = code_texts(path.read_text(encoding="utf-8"))
        for line, text in found:
            catalog.add(text, locations=[(where, line)])
    return catalog
