"""The book's editions: English at ``_build/html``, Japanese at ``_build/html/ja``.

Both editions render the same executed notebooks: the Japanese build reads the English build's
execution cache (``_build/.jupyter_cache``, keyed by the notebooks' code, which translation
does not change), so ``make book`` executes each notebook once. The Japanese prose comes from
Sphinx's message catalogues, ``locales/ja/LC_MESSAGES/**/*.po`` (one per page), kept in step
with the English source by ``sphinx-intl``.

    python tools/editions.py catalogues   # extract the English messages; update locales/ja
    python tools/editions.py notebooks    # notebooks/ja/*.ipynb from the catalogues
    python tools/editions.py build ja     # the Japanese edition into _build/html/ja
    python tools/editions.py check        # every entry translated, none fuzzy, all in step

``catalogues`` runs Sphinx's ``gettext`` builder with notebook execution off (only the
Markdown is read) into ``_build/gettext``, then ``sphinx-intl update``: a changed English
paragraph becomes a new, untranslated entry and its old translation is kept as a fuzzy
suggestion, which ``check`` refuses until a translator reviews it. The words of the book's
own code are extracted into more catalogues and updated the same way
(:func:`update_code_catalogue`): the Sphinx extensions' (a chapter card, the time tables, the
folded cells' labels; ``book/_ext/*.py``, domain ``extensions``,
``book/_ext/book_messages.py``), the benchmark tables' (``companion/bench/*.py``, domain
``companion``, ``companion/bench/words.py``), the self-checks' (``companion/checks/*.py``,
domain ``checks``, ``companion/checks/_messages.py``), the figures' (plots' labels,
diagrams' words, the animation player's controls; domain ``figures``,
``companion/figure_words.py``, found by ``tools/figure_messages.py``) and the phrases the
notebooks glue into their prose or show as results (domain ``glue``,
``companion/glue.py``, found by ``tools/glue_messages.py``); the package ships the last four
compiled (``companion/locale``, :func:`compile_package_catalogue`). The quizzes' texts are a
catalogue too (domain ``quizzes``, ``tools/quiz_messages.py``), from which each language's
quizzes are written (``notebooks/quizzes/<language>/``, committed), and so are the maze
playground's words (domain ``playground``, ``tools/playground_messages.py``: each language's
block of ``book/_static/playground/strings.js``), and the lab's (domain ``lab``,
``tools/lab_messages.py``: the stubs' words and each solution cell's hint). It then writes the
translated notebooks (``notebooks/ja/<name>.ipynb``, committed: the Japanese pages' Colab
button opens them) from the English notebooks and the catalogues
(``tools/translate_notebooks.py``); ``notebooks`` writes only those.
"""

from __future__ import annotations

import argparse
import re
import shutil
import string
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import yaml
from book_title import book_title, edition_title  # tools/, beside this file

ROOT = Path(__file__).resolve().parents[1]
LOCALES = ROOT / "locales"
#: The book's Sphinx extensions, whose words (``_("...")``) make the catalogue ``extensions``
#: (book/_ext/book_messages.py).
EXTENSIONS = ROOT / "book" / "_ext"
#: The benchmark tables, whose words make the catalogue ``companion``, compiled into
#: ``PACKAGE_LOCALE`` for the package to read (companion/bench/words.py).
BENCH = ROOT / "companion" / "bench"
#: The exercises' self-checks, whose messages make the catalogue ``checks``, compiled into
#: ``PACKAGE_LOCALE`` too (companion/checks/_messages.py).
CHECKS = ROOT / "companion" / "checks"
PACKAGE_LOCALE = ROOT / "companion" / "locale"
PACKAGE_DOMAIN = "companion"
#: The figures' words (plots, diagrams, the animation player's controls), found in the
#: notebooks and the package by ``tools/figure_messages.py`` (companion/figure_words.py).
FIGURES = ROOT
#: The phrases the notebooks glue or show in each language (``companion.glue.words``), found
#: in the English notebooks by ``tools/glue_messages.py``.
GLUE = ROOT
#: The quizzes' texts, from the English quizzes (``tools/quiz_messages.py``), from which
#: ``catalogues`` writes each language's quizzes.
QUIZZES = ROOT / "notebooks" / "quizzes"
#: The maze playground's words, from the English block of its strings.js
#: (``tools/playground_messages.py``), from which ``catalogues`` writes each language's block.
PLAYGROUND = ROOT / "book" / "_static" / "playground" / "strings.js"
#: The lab's words (stub lines, hints, placeholders: ``tools/lab_messages.py``), from the
#: English notebooks' solution cells and the lab's tools.
LAB = ROOT / "notebooks"
#: The file whose ``title`` the catalogue ``extensions`` holds too (``book_title.py``).
TITLE = ROOT / "_config.yml"
#: The catalogues the package ships compiled.
PACKAGE_DOMAINS = (PACKAGE_DOMAIN, "checks", "figures", "glue")


def code_domains() -> dict[str, Path]:
    """The catalogues of the book's code: gettext domain -> the folder whose ``*.py`` hold
    its English messages (``figures``: the repository, whose notebooks and drawing code
    ``tools/figure_messages.py`` reads; ``glue``: the repository, whose notebooks
    ``tools/glue_messages.py`` reads)."""
    return {
        "extensions": EXTENSIONS,
        PACKAGE_DOMAIN: BENCH,
        "checks": CHECKS,
        "figures": FIGURES,
        "glue": GLUE,
        "quizzes": QUIZZES,
        "playground": PLAYGROUND,
        "lab": LAB,
    }


#: The editions besides the English one (each title: ``book_title.edition_title``).
LANGUAGES = ("ja",)
CACHE = ROOT / "_build" / ".jupyter_cache"


def edition_config(language: str | None, execute: str) -> dict:
    """``_config.yml`` for one edition: ``language`` None for the message extraction.

    Paths that Jupyter Book reads relative to the configuration file are made absolute, so
    the configuration can be written anywhere; the execution cache is the English build's.
    """
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    sphinx = config.setdefault("sphinx", {})
    sphinx["local_extensions"] = {
        name: str(ROOT / path) for name, path in sphinx.get("local_extensions", {}).items()
    }
    config.setdefault("execute", {}).update(execute_notebooks=execute, cache=str(CACHE))
    settings = sphinx.setdefault("config", {})
    settings.update(gettext_compact=False, gettext_uuid=False, gettext_location=False)
    if language is not None:
        config["title"] = edition_title(language)
        settings.update(language=language, locale_dirs=[str(LOCALES)])
    return config


def _jupyter_book(config: dict, out: Path, *args: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "_config.yml"
        path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
        command = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT)]
        command += ["--config", str(path), "--path-output", str(out), *args]
        subprocess.run(command, check=True)


def extract(out: Path) -> Path:
    """The English messages as ``.pot`` files under ``out`` (returned: their folder), their
    headers naming the book (``Project-Id-Version``)."""
    config = edition_config(None, "off")
    config["sphinx"]["config"].update(project=config["title"], version="")
    _jupyter_book(config, out, "--builder", "custom", "--custom-builder", "gettext")
    return out / "_build" / "gettext"


def catalogues(languages=tuple(LANGUAGES)) -> None:
    """Extract the English messages, bring every language's catalogues in step and write
    its notebooks from them (:func:`notebooks`)."""
    pot = extract(ROOT / "_build" / "gettext-source")
    for language in languages:
        subprocess.run(
            [str(Path(sys.executable).parent / "sphinx-intl"), "update", "-p", str(pot)]
            + ["-l", language, "-d", str(LOCALES), "-w", "88"],
            check=True,
        )
        for domain in code_domains():
            print(f"{domain}: {update_code_catalogue(language, domain)}")
        for domain in PACKAGE_DOMAINS:
            print(f"{domain}: {compile_package_catalogue(language, domain=domain)}")
        print(f"quizzes: {len(write_quizzes(language))} written")
        print(f"playground: {write_playground(language)}")
    notebooks(languages)


def write_playground(language: str, locales: Path | None = None) -> str:
    """Write ``language``'s block of the playground's ``strings.js`` from the catalogue
    ``playground`` (``tools/playground_messages.py``); what happened, in words."""
    import playground_messages  # tools/, beside this file

    po = (locales or LOCALES) / language / "LC_MESSAGES" / "playground.po"
    return "written" if playground_messages.write(_read(po), language, PLAYGROUND) else "unchanged"


def write_quizzes(language: str, locales: Path | None = None) -> list[Path]:
    """Write ``notebooks/quizzes/<language>/*.json`` from the English quizzes and the
    catalogue ``quizzes`` (``tools/quiz_messages.py``); the paths that changed."""
    import quiz_messages  # tools/, beside this file

    po = (locales or LOCALES) / language / "LC_MESSAGES" / "quizzes.po"
    return quiz_messages.write(_read(po), language, QUIZZES)


def code_messages(domain: str, folder: Path | None = None):
    """The English messages of ``domain`` (one of :func:`code_domains`) in the ``*.py`` of
    ``folder`` (default: the domain's), as a Babel template catalogue: every text given to
    ``_``, ``ngettext`` or ``N_``, with its file and any ``# Translators:`` comment above it."""
    from babel.messages.catalog import Catalog
    from babel.messages.extract import extract_from_file

    if domain == "figures":
        import figure_messages  # tools/, beside this file

        return figure_messages.template(folder or code_domains()[domain])
    if domain == "glue":
        import glue_messages  # tools/, beside this file

        return glue_messages.template(folder or code_domains()[domain])
    if domain == "quizzes":
        import quiz_messages  # tools/, beside this file

        return quiz_messages.template(folder or code_domains()[domain])
    if domain == "playground":
        import playground_messages  # tools/, beside this file

        return playground_messages.template(folder or code_domains()[domain])
    if domain == "lab":
        import lab_messages  # tools/, beside this file

        return lab_messages.template(folder or code_domains()[domain])
    template = Catalog(domain=domain, project=book_title(), fuzzy=False)
    if domain == "extensions" and TITLE.exists():  # the title, which Sphinx does not translate
        template.add(
            book_title(TITLE),
            locations=[("_config.yml", 1)],
            auto_comments=["The book's title: the edition's, on every page and in the PDF."],
        )
    for path in sorted((folder or code_domains()[domain]).glob("*.py")):
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else Path(path.name)
        found = extract_from_file("python", path, comment_tags=("Translators:",))
        for line, message, comments, context in found:
            template.add(
                message,
                locations=[(where.as_posix(), line)],
                auto_comments=comments,
                context=context,
            )
    return template


def update_code_catalogue(
    language: str, domain: str, folder: Path | None = None, locales: Path | None = None
) -> Path:
    """Bring ``locales/<language>/LC_MESSAGES/<domain>.po`` in step with the code in
    ``folder`` (default: the domain's; ``locales``: :data:`LOCALES`) as ``sphinx-intl update``
    does a page's (Babel's ``Catalog.update``): a new English text becomes an untranslated
    entry, a changed one keeps its old translation as a fuzzy suggestion; the file is written
    only when its English texts changed. Returns the catalogue's path."""
    from babel.messages.pofile import write_po

    po = (locales or LOCALES) / language / "LC_MESSAGES" / f"{domain}.po"
    template = code_messages(domain, folder)
    if po.exists():
        catalog = _read(po)
        before = {m.id for m in catalog if m.id}
        catalog.update(template)
        if before == {m.id for m in catalog if m.id}:
            return po
    else:
        catalog = template
        catalog.locale = language
    po.parent.mkdir(parents=True, exist_ok=True)
    with po.open("wb") as f:  # no line numbers: an edit elsewhere in a file changes nothing
        write_po(f, catalog, width=88, include_lineno=False)
    return po


def _compiled(language: str, locales: Path | None = None, domain: str = PACKAGE_DOMAIN) -> bytes:
    """The package's catalogue ``domain`` for ``language`` compiled from its ``.po``: its
    translated entries, fuzzy ones left out (they show the English)."""
    from io import BytesIO

    from babel.messages.mofile import write_mo

    po = (locales or LOCALES) / language / "LC_MESSAGES" / f"{domain}.po"
    out = BytesIO()
    write_mo(out, _read(po), use_fuzzy=False)
    return out.getvalue()


def compile_package_catalogue(
    language: str, locales: Path | None = None, domain: str = PACKAGE_DOMAIN
) -> Path:
    """Write ``companion/locale/<language>/LC_MESSAGES/<domain>.mo`` (``domain`` one of
    :data:`PACKAGE_DOMAINS`) from the ``.po`` (the package ships it: a notebook reads it with
    Python's gettext, on Colab too) when it differs. Returns its path."""
    mo = PACKAGE_LOCALE / language / "LC_MESSAGES" / f"{domain}.mo"
    compiled = _compiled(language, locales, domain)
    if not mo.exists() or mo.read_bytes() != compiled:
        mo.parent.mkdir(parents=True, exist_ok=True)
        mo.write_bytes(compiled)
    return mo


def package_catalogue_differences(language: str, domain: str = PACKAGE_DOMAIN) -> list[str]:
    """What the package's compiled catalogue ``domain`` (``companion/locale``) holds that its
    ``.po`` does not say, or lacks: one line each."""
    from io import BytesIO

    from babel.messages.mofile import read_mo

    mo = PACKAGE_LOCALE / language / "LC_MESSAGES" / f"{domain}.mo"
    name = mo.relative_to(ROOT) if mo.is_relative_to(ROOT) else mo
    if not mo.exists():
        return [f"{name}: missing (run catalogues)"]

    def entries(catalog) -> dict:  # a plural's id and forms come as lists
        return {
            tuple(m.id) if isinstance(m.id, list) else m.id: (
                tuple(m.string) if isinstance(m.string, list) else m.string
            )
            for m in catalog
            if m.id
        }

    with mo.open("rb") as f:
        shipped = entries(read_mo(f))
    wanted = entries(read_mo(BytesIO(_compiled(language, domain=domain))))
    return [
        f"{name}: not as its .po says (run catalogues): {str(text)[:70]!r}"
        for text in sorted(set(shipped) | set(wanted), key=str)
        if shipped.get(text) != wanted.get(text)
    ]


def notebooks(languages=tuple(LANGUAGES)) -> None:
    """Write ``notebooks/<language>/*.ipynb`` from the English notebooks and the catalogues
    (``tools/translate_notebooks.py``): translated and fuzzy-free entries as the HTML edition
    shows them, the rest in English."""
    import translate_notebooks  # tools/, beside this file

    for language in languages:
        try:
            written = translate_notebooks.write(language)
        except translate_notebooks.TranslationError as exc:
            raise SystemExit(f"notebooks/{language}: {exc}") from None
        print(f"notebooks/{language}: {len(written)} notebooks written")


def build(language: str) -> Path:
    """The ``language`` edition, warnings as errors, into ``_build/html/<language>``."""
    if not (CACHE / "global.db").exists():
        raise SystemExit("build the English edition first: its execution cache is reused")
    out = ROOT / "_build" / language
    _jupyter_book(edition_config(language, "cache"), out, "--warningiserror", "--keep-going")
    target = ROOT / "_build" / "html" / language
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(out / "_build" / "html", target)
    return target


def _read(path: Path):
    from babel.messages.pofile import read_po

    with path.open("rb") as f:
        return read_po(f)


_ROLE = re.compile(r"\{([a-z:-]+)\}`([^`]*)`")
_CODE = re.compile(r"(?<![`{}])`([^`]+)`")
_MATH = re.compile(r"\$\$?[^$]+\$\$?")
_LINK = re.compile(r"\]\(([^)]+)\)")
_TEXT = re.compile(r"\\text\{[^{}]*\}")


def markup(text: str) -> dict[str, Counter]:
    """What a translation must carry over from its English message: the roles (a cross
    reference or a term by its target, which the translation may label in its own words; a
    glued figure by name), the inline code, the maths (spaces aside, and the words of a
    ``\\text{...}``, which are prose) and the link targets."""
    found_roles = Counter()
    for name, body in _ROLE.findall(text):
        if name in ("term", "ref", "doc", "download", "numref"):
            body = body.rsplit("<", 1)[1].rstrip("> ") if "<" in body else body.strip()
        found_roles[(name, body.strip())] += 1
    rest = _ROLE.sub(" ", text)
    maths = (_TEXT.sub(r"\\text{}", m).replace(" ", "") for m in _MATH.findall(rest))
    return {
        "roles": found_roles,
        "code": Counter(_CODE.findall(_MATH.sub(" ", rest))),
        "maths": Counter(maths),
        "links": Counter(_LINK.findall(rest)),
    }


def markup_differences(english: str, translated: str) -> list[str]:
    """What markup of ``english`` (see :func:`markup`) ``translated`` loses, one line per
    kind; empty when it keeps all. A translation may add inline code, a formula or a link to
    say the same thing more clearly, but not a role: a glued figure or a reference the
    English does not have."""
    ours, theirs = markup(english), markup(translated)
    lines = []
    for kind in ours:
        lost, added = ours[kind] - theirs[kind], theirs[kind] - ours[kind]
        if kind != "roles":
            added = Counter()
        if lost or added:
            lines.append(f"{kind}: lost {sorted(lost)} added {sorted(added)}")
    return lines


def problems(language: str, pot: Path | None = None) -> list[str]:
    """What keeps ``language``'s catalogues from being complete, one line each.

    Every entry must be translated and not fuzzy; the catalogues of the code
    (:func:`code_domains`) must hold exactly the English texts of their ``*.py`` (extracted
    afresh: cheap) and each translation their placeholders (:func:`placeholder_differences`),
    and the package's compiled catalogue must be its ``.po``'s; with ``pot`` (a folder of
    freshly extracted ``.pot`` files), every page's catalogue must hold exactly its English
    messages.
    """
    found = []
    folder = LOCALES / language / "LC_MESSAGES"
    code = {f"{domain}.po" for domain in code_domains()}
    for po in sorted(folder.rglob("*.po")):
        name = po.relative_to(folder)
        for message in _read(po):
            if not message.id:
                continue
            text = message.id if isinstance(message.id, str) else message.id[0]
            forms = (message.string,) if isinstance(message.string, str) else message.string
            if message.fuzzy:
                found.append(f"{name}: fuzzy (English changed, review it): {text[:70]!r}")
            elif not all(forms):
                found.append(f"{name}: untranslated: {text[:70]!r}")
            elif str(name) in code and str(name) not in ("quizzes.po", "lab.po"):  # formats
                found += [f"{name}: {p}: {text[:70]!r}" for p in placeholder_differences(message)]
            elif re.match(r"\d+\. ", text) and re.match(r"\d+\. ", message.string):
                # a title re-parsed as Markdown: "1. ..." would be a list, the title English
                found.append(f"{name}: write the title's number as '1\\. ': {text[:70]!r}")
            else:
                translated = message.string if isinstance(message.string, str) else ""
                for line in markup_differences(text, translated):
                    found.append(f"{name}: markup differs from the English ({line}): {text[:70]!r}")
    for domain in code_domains():
        english = {m.id for m in code_messages(domain) if m.id}
        po = folder / f"{domain}.po"
        have = {m.id for m in _read(po) if m.id} if po.exists() else set()
        found += _out_of_step(Path(po.name), english, have)
    for domain in PACKAGE_DOMAINS:
        if (folder / f"{domain}.po").exists():
            found += package_catalogue_differences(language, domain)
    if pot is not None:
        for template in sorted(pot.rglob("*.pot")):
            name = template.relative_to(pot).with_suffix(".po")
            english = {m.id for m in _read(template) if m.id}
            po = folder / name
            have = {m.id for m in _read(po) if m.id} if po.exists() else set()
            found += _out_of_step(name, english, have)
    return found


def _out_of_step(name: Path, english: set, have: set) -> list[str]:
    """One line for each English message missing from a catalogue, and each it holds that the
    English no longer has (``english``, ``have``: msgids; a plural's is a pair)."""

    def first(text):
        return text if isinstance(text, str) else text[0]

    found = []
    for text in sorted(english - have, key=first):
        found.append(f"{name}: not in the catalogue (run catalogues): {first(text)[:70]!r}")
    for text in sorted(have - english, key=first):
        found.append(f"{name}: no longer in the English source: {first(text)[:70]!r}")
    return found


def _fields(text: str) -> list[str]:
    """The named placeholders of a format string, e.g. ``["date", "jax"]``."""
    return sorted(name for _, name, _, _ in string.Formatter().parse(text) if name is not None)


def placeholder_differences(message) -> list[str]:
    """What keeps a translation of an extension's format string (``message``, a Babel
    message) from filling in as its English does: each form must have exactly the English's
    named placeholders (``{date}``, ``{cores}``, ...) and parse as a format string."""
    english = [message.id] if isinstance(message.id, str) else list(message.id)
    forms = [message.string] if isinstance(message.string, str) else list(message.string)
    found = []
    try:
        wanted = _fields(english[-1])
    except ValueError as exc:
        return [f"the English is not a format string ({exc})"]
    for form in forms:
        try:
            fields = _fields(form)
        except ValueError as exc:
            found.append(f"the translation is not a format string ({exc})")
            continue
        if fields != wanted:
            found.append(f"placeholders {fields} in the translation, {wanted} in the English")
    return found


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("catalogues")
    sub.add_parser("notebooks")
    sub.add_parser("build").add_argument("language", choices=sorted(LANGUAGES))
    sub.add_parser("check")
    args = parser.parse_args(argv)
    if args.command == "catalogues":
        catalogues()
    elif args.command == "notebooks":
        notebooks()
    elif args.command == "build":
        print(build(args.language))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            pot = extract(Path(tmp))
            found = [f"{lang}: {p}" for lang in LANGUAGES for p in problems(lang, pot)]
        print("\n".join(found) or "every catalogue entry translated and in step")
        raise SystemExit(1 if found else 0)


if __name__ == "__main__":
    main()
