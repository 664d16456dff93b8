"""The book's title: the one in ``_config.yml``, and each edition's from the catalogue
``extensions``, where ``tools/editions.py catalogues`` puts it beside the extensions' words."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "_config.yml"


def book_title(config: Path | None = None) -> str:
    """The English title, the ``title`` of ``config`` (default :data:`CONFIG`, ``_config.yml``)."""
    return yaml.safe_load((config or CONFIG).read_text(encoding="utf-8"))["title"]


def edition_title(language: str, locales: Path | None = None) -> str:
    """The title of ``language``'s edition: its translation in
    ``locales/<language>/LC_MESSAGES/extensions.po``.

    Raises:
        SystemExit: naming the catalogue, when the title has no translation there or only a
            fuzzy one (the English title changed since).
    """
    from babel.messages.pofile import read_po

    po = (locales or ROOT / "locales") / language / "LC_MESSAGES" / "extensions.po"
    title = book_title()
    with po.open("rb") as f:
        message = read_po(f).get(title)
    if message is None or not message.string or message.fuzzy:
        raise SystemExit(
            f"{po}: the book's title {title!r} has no translation (or a fuzzy one); run "
            "tools/editions.py catalogues and translate it there"
        )
    return message.string
