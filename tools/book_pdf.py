"""The whole book as one PDF per edition, printed from the built site by headless Chromium.

Usage: python tools/book_pdf.py [_build/html] [--languages en ja] [--check]

Reads the site ``make book`` built (``_build/html``, its Japanese edition in
``_build/html/ja``); executes no notebook. Each page of ``_toc.yml``, in the order of the
table of contents, is loaded in one headless Chromium (``tools/measure_pages.py``'s driver)
after its fonts, images and MathJax are ready, and printed on A4 with Chromium's
``Page.printToPDF`` under a print stylesheet (:data:`PRINT_CSS`): the navigation bars, the
page's contents, the search, the language switch, the launch buttons and the animations'
controls are left out, a code line longer than the page wraps at its edge, a table or a
formula wider than the page is shrunk to fit, a fold that holds a figure and a dropdown
note of prose are opened, and the other folded cells (folded code, an exercise's solution)
stay out, as they are folded on the page. pypdf merges the pages into one
file with an outline: a bookmark per part of the table of contents, under it one per page,
under that the page's headings (Chromium's document outline). A link to another page of the
book goes to its target's place in the PDF; a link to a file of the site that is not a printed page
(a notebook's download, its source) is removed, since the PDF leaves the site.

Written to ``<site>/_downloads/deep-rl-in-jax.pdf`` and, for Japanese,
``<site>/ja/_downloads/deep-rl-in-jax.pdf`` (the landing page of each edition links to its
own). Chromium has no Japanese font on a bare Debian: the Japanese edition is printed with
IPAexGothic from the ``matplotlib-fontja`` package (``requirements.txt``), given to Chromium
through a fontconfig file of its own.

``--check`` (also run after writing) reads each PDF back and fails when it has fewer pages
than the table of contents, an empty page (no text, no image, and no more than a few shapes:
a box's background cut across pages; a diagram printed as vector shapes has many), or a page
of the book whose figures (PNG and JPEG images in its article, an animation's frame) are
missing from its pages of the PDF: each page must hold at least as many images as the built
page shows. A link to a PDF on the edition's landing page must lead to the PDF written. It
prints the page count and the size. Exit status: 0 when every check passes, 1 when one
fails, 2 when the site or Chromium is missing.
"""

from __future__ import annotations

import argparse
import base64
import html
import importlib.util
import io
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import measure_pages  # noqa: E402  (the Chromium driver)

#: Where each edition's PDF is written, relative to that edition's site folder.
PDF_NAME = Path("_downloads") / "deep-rl-in-jax.pdf"

#: The part of the built site each edition lives in.
EDITIONS = {"en": "", "ja": "ja"}

#: A4 in inches, and the margins (top, right, bottom, left) in inches.
PAPER = (8.27, 11.69)
MARGINS = (0.6, 0.55, 0.65, 0.55)

#: The print stylesheet added to each page before it is printed.
PRINT_CSS = """
@media print {
  .bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-header-article,
  nav.edition-switch, .prev-next-footer, .prev-next-area, .bd-footer, .bd-footer-content,
  .bd-footer-article, #pst-back-to-top, a.headerlink, .anim-controls, .pst-js-only,
  .search-button, details.hide:not([open]), .skip-link, #jb-print-toc, .toggle-button
  { display: none !important; }
  html { font-size: 14px; }
  .bd-page-width, .bd-main .bd-content .bd-article-container, .bd-container__inner,
  .bd-main, .bd-content, .bd-article-container, .bd-article { max-width: 100% !important;
    width: 100% !important; padding: 0 !important; margin: 0 !important; }
  /* Code wraps at the page's edge, and a code box breaks across pages line by line (the
     phone's hanging indent, an inline-block per line, would not break). */
  div.highlight pre { white-space: pre-wrap !important; overflow-wrap: anywhere;
    overflow: visible !important; font-size: 11px; line-height: 1.4; }
  div.highlight pre .cl { display: inline !important; padding: 0 !important;
    text-indent: 0 !important; }
  .cell_output pre { white-space: pre-wrap !important; overflow-wrap: anywhere; }
  img, svg, .figure-panel, .animation, table, mjx-container { break-inside: avoid; }
  h1, h2, h3, h4 { break-after: avoid; }
  mjx-container[display="true"] { overflow: visible !important; mask-image: none !important; }
  .pst-scrollable-table-container { overflow: visible !important; mask-image: none !important; }
}
"""

#: Run in each page once it is ready: opens every fold that holds a figure and every
#: dropdown note, adds the print stylesheet, loads lazy images, shrinks a table or formula
#: wider than the page, makes Chromium mark where each element with an id is, removes links
#: to site files that are not printed pages (``printed``: the absolute URLs of the printed
#: pages), and returns the page's title.
PREPARE = """
(async function (printed, css) {
  document.querySelectorAll('details').forEach(function (d) {
    if (d.querySelector(':scope > :not(summary) img, .animation, video')) d.open = true;
  });
  // A dropdown of prose (a note the reader may open) is printed open: a PDF cannot open it.
  document.querySelectorAll('.dropdown.toggle-hidden').forEach(function (d) {
    d.classList.remove('toggle-hidden');
  });
  var style = document.createElement('style');
  style.textContent = css;
  document.head.appendChild(style);
  var images = Array.from(document.images);
  images.forEach(function (img) { img.loading = 'eager'; });
  await Promise.all(images.map(function (img) {
    return img.decode ? img.decode().catch(function () {}) : null;
  }));
  // A table or formula wider than the page is shrunk to fit it (a page does not scroll).
  var article = document.querySelector('.bd-article') || document.body;
  var right = article.getBoundingClientRect().right;
  var wide = article.querySelectorAll('table, mjx-container[display="true"]');
  wide.forEach(function (e) {
    var r = e.getBoundingClientRect(), w = Math.max(r.width, e.scrollWidth);
    if (r.left + w > right + 1) e.style.zoom = ((right - r.left) / w).toFixed(3);
  });
  // Chromium writes a named destination for each element a link of the page points to: a
  // link to every element with an id, in a box of no size, gives each its place in the PDF.
  var holder = document.createElement('div');
  holder.style.cssText = 'position:absolute;left:0;top:0;width:0;height:0;overflow:hidden';
  document.querySelectorAll('article [id]').forEach(function (e) {
    var a = document.createElement('a');
    a.href = '#' + encodeURIComponent(e.id);
    holder.appendChild(a);
  });
  document.body.appendChild(holder);
  document.querySelectorAll('a[href]').forEach(function (a) {
    var url = new URL(a.getAttribute('href'), document.baseURI);
    if (url.protocol !== 'file:') return;
    var page = url.href.split('#')[0];
    if (printed.indexOf(page) < 0) a.removeAttribute('href');
  });
  var h1 = document.querySelector('article h1') || document.querySelector('h1');
  var title = h1 ? h1.textContent : document.title;
  return title.replace(/[#\\u00b6]/g, '').replace(/\\s+/g, ' ').trim();
})
"""


@dataclass(frozen=True)
class Entry:
    """A page of the table of contents: its source path without suffix (``notebooks/07_dqn``),
    its depth (0 for the root and the chapters, 1 for a chapter's sections) and its part's
    caption (``""`` for the root)."""

    file: str
    depth: int
    part: str


def toc_entries(toc: Path) -> list[Entry]:
    """The pages of a Jupyter Book ``_toc.yml`` (format ``jb-book``) in reading order: the
    root, then each part's chapters, each followed by its sections."""
    if not toc.is_file():
        raise FileNotFoundError(f"toc: {toc} is not a file")
    data = yaml.safe_load(toc.read_text())
    if not isinstance(data, dict) or "root" not in data:
        raise ValueError(f"toc: {toc} has no 'root' (not a jb-book table of contents)")
    entries = [Entry(str(data["root"]), 0, "")]

    def walk(items, depth, part):
        for item in items or []:
            if "file" in item:
                entries.append(Entry(str(item["file"]), depth, part))
            walk(item.get("sections"), depth + 1, part)

    for part in data.get("parts", []):
        walk(part.get("chapters"), 0, str(part.get("caption", "")))
    walk(data.get("chapters"), 0, "")
    return entries


def page_path(site: Path, entry: Entry) -> Path:
    """The built HTML file of ``entry`` in ``site``."""
    return site / (re.sub(r"\.(md|ipynb|rst)$", "", entry.file) + ".html")


def part_captions(page: Path, entries: list[Entry]) -> dict[str, str]:
    """The parts' captions as the edition's navigation bar on ``page`` writes them (a
    translated edition translates them), by the caption of ``_toc.yml``; the toc's own
    where the bar does not list every part."""
    parts = list(dict.fromkeys(e.part for e in entries if e.part))
    text = page.read_text(errors="replace")
    shown = [html.unescape(c).strip() for c in re.findall(r'caption-text">([^<]*)<', text)]
    if len(shown) != len(parts):
        return {part: part for part in parts}
    return dict(zip(parts, shown))


def japanese_font() -> Path | None:
    """The IPAexGothic font file that ``matplotlib-fontja`` ships, ``None`` if it is not
    installed."""
    spec = importlib.util.find_spec("matplotlib_fontja")
    if spec is None or spec.origin is None:
        return None
    font = Path(spec.origin).parent / "fonts" / "ipaexg.ttf"
    return font if font.is_file() else None


def fontconfig_file(font_dir: Path, folder: Path) -> Path:
    """A fontconfig file in ``folder`` that adds ``font_dir`` to the system's fonts."""
    conf = folder / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n'
        f'  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>\n'
        f"  <dir>{font_dir}</dir>\n  <cachedir>{folder / 'cache'}</cachedir>\n"
        "</fontconfig>\n"
    )
    return conf


def print_page(browser, session: str, url: str, printed: list[str]) -> tuple[bytes, str]:
    """One page printed to PDF: its bytes and its title."""
    # Laid out as printed: the print stylesheets, at the width of the page's text.
    width = round((PAPER[0] - MARGINS[1] - MARGINS[3]) * 96)
    browser.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    browser.send("Emulation.setEmulatedMedia", {"media": "print"}, session=session)
    browser.send("Page.navigate", {"url": url}, session=session)
    if not browser.wait_event("Page.loadEventFired", session, timeout=120):
        raise TimeoutError(f"{url}: did not load in 120 s")
    measure_pages.evaluate(browser, session, measure_pages.READY % 300, timeout=120)
    title = measure_pages.evaluate(
        browser, session, f"({PREPARE})({printed!r}, {PRINT_CSS!r})", timeout=120
    )
    top, right, bottom, left = MARGINS
    result = browser.send(
        "Page.printToPDF",
        {
            "paperWidth": PAPER[0],
            "paperHeight": PAPER[1],
            "marginTop": top,
            "marginRight": right,
            "marginBottom": bottom,
            "marginLeft": left,
            "printBackground": True,
            "generateDocumentOutline": True,
        },
        session=session,
        timeout=300,
    )
    return base64.b64decode(result["data"]), title


def merge(
    parts: list[tuple[Entry, str, str, bytes]], title: str, captions: dict[str, str] | None = None
):
    """One ``pypdf.PdfWriter`` from the printed pages ``(entry, url, title, pdf)`` in order,
    with a bookmark per part (its caption from ``captions`` when given), per page and (from
    Chromium's outline) per heading; a link to another printed page goes to the place of
    its target there (Chromium's named destination of that page), or to its first page."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import ArrayObject, FloatObject, NameObject, NullObject

    writer = PdfWriter()
    writer.add_metadata({"/Title": title})
    starts: dict[str, int] = {}
    anchors: dict[tuple[str, str], tuple[int, float | None]] = {}
    parts_marked: dict[str, object] = {}
    chapter = None
    for entry, url, page_title, data in parts:
        reader = PdfReader(io.BytesIO(data))
        first = starts[url] = len(writer.pages)
        writer.append(reader, import_outline=False)
        for name, dest in reader.named_destinations.items():
            page = reader.get_destination_page_number(dest)
            if page is not None:
                anchors[(url, unquote(name.lstrip("/")))] = (first + page, dest.top)
        parent = None
        if entry.part:
            if entry.part not in parts_marked:
                caption = (captions or {}).get(entry.part, entry.part)
                parts_marked[entry.part] = writer.add_outline_item(title=caption, page_number=first)
            parent = parts_marked[entry.part]
        if entry.depth > 0 and chapter is not None:
            parent = chapter
        mark = writer.add_outline_item(title=page_title, page_number=first, parent=parent)
        if entry.depth == 0:
            chapter = mark
        _headings(reader, writer, mark, first)
    for page in writer.pages:
        for annot in page.get("/Annots", []) or []:
            annot = annot.get_object()
            action = annot.get("/A")
            if annot.get("/Subtype") != "/Link" or action is None:
                continue
            uri = str(action.get_object().get("/URI", ""))
            if not uri.startswith("file:"):
                continue
            base, _, fragment = uri.partition("#")
            del annot[NameObject("/A")]
            if base not in starts:
                continue
            page, top = anchors.get((base, unquote(fragment)), (starts[base], None))
            ref = writer.pages[page].indirect_reference
            if top is None:
                annot[NameObject("/Dest")] = ArrayObject([ref, NameObject("/Fit")])
            else:
                where = [NameObject("/XYZ"), NullObject(), FloatObject(top), NullObject()]
                annot[NameObject("/Dest")] = ArrayObject([ref, *where])
    return writer


def heading_title(text: str) -> str:
    """A heading's text as Chromium's outline gives it, cleaned: spaces collapsed, and a
    title Chromium doubled (a heading with a label before it: ``"A. TitleA. Title"``)
    given once."""
    text = re.sub(r"\s+", " ", text).strip()
    half = len(text) // 2
    if len(text) % 2 == 0 and half and text[:half] == text[half:]:
        return text[:half]
    return text


def _headings(reader, writer, parent, offset: int) -> None:
    """``reader``'s outline (Chromium's, from the page's headings) under ``parent``, its
    pages moved by ``offset``; the page's title (the top heading, ``parent`` itself) is
    not repeated."""

    def add(items, under):
        previous = under
        for item in items:
            if isinstance(item, list):
                add(item, previous)
                continue
            page = reader.get_destination_page_number(item)
            title = heading_title(item.title)
            previous = writer.add_outline_item(
                title=title, page_number=offset + (page or 0), parent=under
            )

    outline = reader.outline
    if outline and not isinstance(outline[0], list):
        add(outline[1] if len(outline) > 1 and isinstance(outline[1], list) else [], parent)
        add(outline[2:], parent)


def build(site: Path, language: str, toc: Path = ROOT / "_toc.yml") -> tuple[Path, float]:
    """Prints ``language``'s edition of ``site`` to its PDF; returns the path and seconds."""
    if language not in EDITIONS:
        raise ValueError(f"language: {language!r} is not one of {sorted(EDITIONS)}")
    edition = site / EDITIONS[language]
    entries = toc_entries(toc)
    paths = [page_path(edition, e) for e in entries]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"site: pages of the table of contents not built: {missing}")
    executable = measure_pages.browser_path()
    if executable is None:
        raise FileNotFoundError("no Chromium on PATH (chromium, chromium-browser, google-chrome)")
    start = time.monotonic()
    urls = [p.resolve().as_uri() for p in paths]
    with tempfile.TemporaryDirectory() as folder:
        previous = os.environ.get("FONTCONFIG_FILE")
        font = japanese_font()
        if font is None and language == "ja":
            raise FileNotFoundError(
                "no Japanese font: install matplotlib-fontja (requirements.txt)"
            )
        if font is not None:  # Japanese words in an English page print too
            os.environ["FONTCONFIG_FILE"] = str(fontconfig_file(font.parent, Path(folder)))
        browser = measure_pages.Browser(executable)
        try:
            session = measure_pages.open_tab(browser)
            parts = []
            for entry, url in zip(entries, urls):
                data, title = print_page(browser, session, url, urls)
                parts.append((entry, url, title, data))
        finally:
            browser.close()
            if previous is None:
                os.environ.pop("FONTCONFIG_FILE", None)
            else:
                os.environ["FONTCONFIG_FILE"] = previous
    writer = merge(parts, parts[0][2], part_captions(paths[0], entries))
    out = edition / PDF_NAME
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as f:
        writer.write(f)
    return out, time.monotonic() - start


# --- the check -------------------------------------------------------------------------

_FIGURE = re.compile(r"<img\b[^>]*>", re.IGNORECASE)


def html_figures(page: Path) -> int:
    """How many figures a built page shows in its article: raster images (PNG, JPEG, GIF,
    a file or a ``data:`` URL) and animations' frames; an icon or badge (SVG) is none. The
    print opens every fold that holds one."""
    text = page.read_text(errors="replace")
    start = text.find("<article")
    end = text.find("</article>", start)
    article = text[start:end] if start >= 0 else text
    count = 0
    for tag in _FIGURE.findall(article):
        src = re.search(r'\bsrc="([^"]*)"', tag)
        src = src.group(1) if src else ""
        if "_anim_img" in tag or re.search(r"\.(png|jpe?g|gif)$|^data:image/(png|jpe?g)", src):
            count += 1
    return count


#: Painting operators of a PDF content stream: fills, strokes, shadings, XObjects, inline
#: images.
PAINTING = {b"f", b"F", b"f*", b"S", b"s", b"B", b"B*", b"b", b"b*", b"sh", b"Do", b"BI"}

#: A page with no text and no image that paints at most this many shapes is empty: what is
#: left is a box's background or border cut across pages. A diagram (an SVG, printed as
#: vector shapes) paints dozens.
MAX_SHAPES = 8


def page_is_empty(page) -> bool:
    """Whether a ``pypdf`` page shows nothing: no text, no image, and at most
    :data:`MAX_SHAPES` painted shapes."""
    from pypdf.generic import ContentStream

    if page.extract_text().strip() or page_images(page):
        return False
    contents = page.get_contents()
    if contents is None:
        return True
    operations = ContentStream(contents, page.pdf).operations
    return sum(operator in PAINTING for _, operator in operations) <= MAX_SHAPES


def page_images(page) -> int:
    """How many images a ``pypdf`` page draws: the image XObjects of its resources and of
    the forms it draws (Chromium lists only what a page uses)."""

    def count(resources, depth=0) -> int:
        resources = resources.get_object() if resources is not None else None
        xobjects = resources.get("/XObject") if resources is not None else None
        found = 0
        for ref in (xobjects.get_object() if xobjects is not None else {}).values():
            xobject = ref.get_object()
            if xobject.get("/Subtype") == "/Image":
                found += 1
            elif xobject.get("/Subtype") == "/Form" and depth < 8:
                found += count(xobject.get("/Resources"), depth + 1)
        return found

    return count(page.get("/Resources"))


def check(pdf: Path, site: Path, toc: Path = ROOT / "_toc.yml") -> tuple[list[str], dict]:
    """The problems of ``pdf`` printed from the edition in ``site`` (empty list when none)
    and a summary: pages, bytes, images, the figures of the site."""
    from pypdf import PdfReader

    if not pdf.is_file():
        return [f"{pdf}: not written (run make pdf)"], {}
    reader = PdfReader(pdf)
    entries = toc_entries(toc)
    pages = len(reader.pages)
    problems = []
    if pages < len(entries):
        problems.append(f"{pdf}: {pages} pages, fewer than the {len(entries)} of the toc")
    empty = [i + 1 for i, page in enumerate(reader.pages) if page_is_empty(page)]
    if empty:
        problems.append(f"{pdf}: empty pages (no text, no image, a few shapes at most): {empty}")
    images = [page_images(page) for page in reader.pages]
    try:
        starts = page_starts(reader, entries, site)
    except ValueError as error:
        return problems + [f"{pdf}: {error}"], {"pages": pages}
    for (entry, first), following in zip(starts, starts[1:] + [(None, pages)]):
        want = html_figures(page_path(site, entry))
        have = sum(images[first : following[1]])
        if have < want:
            problems.append(
                f"{entry.file}: {have} images on its PDF pages {first + 1}-{following[1]}, "
                f"fewer than the {want} figures of its built page"
            )
    landing = page_path(site, entries[0])
    links = landing_links(landing)
    for href in links:
        if (landing.parent / unquote(href)).resolve() != pdf.resolve():
            problems.append(f"{landing}: its link {href} is not the PDF {pdf}")
    summary = {
        "linked": bool(links),
        "pages": pages,
        "bytes": pdf.stat().st_size,
        "images": sum(images),
        "figures": sum(html_figures(page_path(site, e)) for e in entries),
    }
    return problems, summary


def landing_links(page: Path) -> list[str]:
    """The addresses of the PDFs that a built page (the landing page) links to."""
    return re.findall(r'href="([^"#?]*\.pdf)"', page.read_text(errors="replace"))


def page_starts(reader, entries: list[Entry], site: Path) -> list[tuple[Entry, int]]:
    """Each toc page's first page in the PDF, from the outline's page bookmarks in order."""
    found = []

    def walk(items):
        for item in items:
            if isinstance(item, list):
                walk(item)
            else:
                found.append(item)

    walk(reader.outline)
    starts = []
    position = 0
    for entry in entries:
        page = page_path(site, entry)
        title = _html_title(page)
        while position < len(found) and found[position].title != title:
            position += 1
        if position == len(found):
            raise ValueError(f"{entry.file}: no bookmark {title!r} in the PDF's outline")
        starts.append((entry, reader.get_destination_page_number(found[position])))
        position += 1
    return starts


def _html_title(page: Path) -> str:
    text = page.read_text(errors="replace")
    start = text.find("<article")
    match = re.search(r"<h1[^>]*>(.*?)</h1>", text[max(start, 0) :], re.DOTALL)
    if match is None:
        return ""
    words = re.sub(r"<[^>]+>", "", match.group(1))
    return re.sub(r"\s+", " ", html.unescape(words).replace("#", "").replace("¶", "")).strip()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--languages", nargs="+", default=["en", "ja"], choices=list(EDITIONS))
    parser.add_argument("--check", action="store_true", help="only check the PDFs written")
    args = parser.parse_args(argv)
    site = Path(args.site)
    if not (site / "index.html").is_file():
        print(f"site: {site} holds no built book (run make book)", file=sys.stderr)
        return 2
    failed = False
    for language in args.languages:
        edition = site / EDITIONS[language]
        if not args.check:
            try:
                out, seconds = build(site, language)
            except (FileNotFoundError, TimeoutError, RuntimeError) as error:
                print(f"book_pdf: {error}", file=sys.stderr)
                return 2
            print(f"{out}: printed in {seconds:.0f} s")
        problems, summary = check(edition / PDF_NAME, edition)
        for problem in problems:
            print(problem, file=sys.stderr)
        failed = failed or bool(problems)
        if summary:
            print(
                f"{language}: {summary['pages']} pages, {summary['bytes'] / 1e6:.1f} MB, "
                f"{summary['images']} images for the site's {summary['figures']} figures"
                + ("; the landing page links to it" if summary.get("linked") else "")
                + (": OK" if not problems else "")
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
