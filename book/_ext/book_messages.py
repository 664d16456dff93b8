"""The words the book's Sphinx extensions write on a page, translated with gettext.

The extensions (``book/_ext/*.py``) write their words in English: ``_("...")`` for a text,
``ngettext(singular, plural, n)`` for one that counts, ``N_("...")`` for a constant that is
translated later with ``_``. Those English texts are the msgids of one message catalogue, the
domain :data:`DOMAIN`: ``locales/<language>/LC_MESSAGES/extensions.po``. A text with
measurements keeps them as named placeholders (``"Measured {date} with {cpu}, ..."``), filled
after translation, so the catalogue does not change with every measurement.
``tools/editions.py catalogues`` extracts the msgids with Babel and updates the catalogue (a
changed English text turns its translation fuzzy, as on the pages), and
``tools/editions.py check`` and ``tests/book/test_editions.py`` refuse an entry that is untranslated,
fuzzy, out of step with the extensions or without its English placeholders.

An extension registers its catalogue in its ``setup`` (``app.add_message_catalog``), and
Sphinx compiles the ``.po`` files of ``locale_dirs`` only later, when the build starts, so
:func:`setup` compiles this one itself, into the build's own folder
(``<build>/locale/<language>/LC_MESSAGES/extensions.mo``, beside the doctrees; nothing
compiled is committed), and registers that. Each edition is a Sphinx run of its own with
its ``language``, and ``_`` translates when it is called: call it while a page is read or
written, never at import time (``N_`` marks a constant for the extraction). ``_`` returns a
plain ``str``, not Sphinx's lazy proxy.

An extension that uses these words calls ``app.setup_extension("book_messages")``.
"""

from __future__ import annotations

import hashlib
from gettext import NullTranslations
from pathlib import Path

from sphinx import locale
from sphinx.application import Sphinx

#: The repository's catalogues, where the extensions' own catalogue lives.
LOCALES = Path(__file__).resolve().parents[2] / "locales"

#: The gettext domain of the extensions' words: ``locales/<language>/LC_MESSAGES/extensions.po``.
DOMAIN = "extensions"

_translate = locale.get_translation(DOMAIN)


def _(message: str) -> str:
    """``message`` (its English) in the language of the build; the English where the
    catalogue has no translation or only a fuzzy one."""
    return str(_translate(message))


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form of ``singular``/``plural`` for ``n`` things in the language of the build."""
    if not locale.is_translator_registered(DOMAIN):  # not in a build: English
        return NullTranslations().ngettext(singular, plural, n)
    return locale.get_translator(DOMAIN).ngettext(singular, plural, n)


def N_(message: str) -> str:  # noqa: N802 (gettext's name for a marked, untranslated text)
    """``message`` unchanged: marks a constant for the extraction, to be translated with ``_``."""
    return message


def catalogue(language: str, locale_dirs) -> Path | None:
    """``<dir>/<language>/LC_MESSAGES/extensions.po`` in the first of ``locale_dirs`` that
    has it, as Sphinx looks for a page's catalogue; None if none has."""
    for folder in locale_dirs:
        po = Path(folder, language, "LC_MESSAGES", f"{DOMAIN}.po")
        if po.is_file():
            return po
    return None


def compile_catalogue(language: str, locale_dirs, out: Path) -> str:
    """Compile ``language``'s catalogue (:func:`catalogue`) into
    ``out/<language>/LC_MESSAGES/extensions.mo``, its fuzzy entries left out (they show the
    English), and return a digest of the catalogue ("" if there is none)."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    po = catalogue(language, locale_dirs)
    if po is None:
        return ""
    mo = Path(out, language, "LC_MESSAGES", f"{DOMAIN}.mo")
    mo.parent.mkdir(parents=True, exist_ok=True)
    with po.open("rb") as f:
        messages = read_po(f, locale=language)
    with mo.open("wb") as f:
        write_mo(f, messages, use_fuzzy=False)
    return hashlib.sha256(po.read_bytes()).hexdigest()


def _read_again_when_changed(digest: str, app: Sphinx, env, added, changed, removed):
    """Every page again when the catalogue changed since the saved environment was built:
    the tables' words were translated when their page was read, and a page written again
    only when it changed would keep its old card and labels."""
    if getattr(env, "book_messages_digest", None) == digest:
        return []
    env.book_messages_digest = digest
    return sorted(env.found_docs)


def setup(app: Sphinx) -> dict:
    out = Path(app.doctreedir).parent / "locale"
    # The project's catalogues first, then the repository's own: the words belong to these
    # extensions, which a project outside the repository (a test's small site) may load too.
    dirs = [Path(app.srcdir, d) for d in app.config.locale_dirs] + [LOCALES]
    digest = compile_catalogue(app.config.language, dirs, out)
    app.add_message_catalog(DOMAIN, str(out))
    app.connect("env-get-outdated", lambda *args: _read_again_when_changed(digest, *args))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
