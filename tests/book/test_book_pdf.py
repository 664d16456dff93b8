"""The whole-book PDF's tool (``tools/book_pdf.py``), its parts that need no Chromium: the page
order from a table of contents, the merge with its outline and links, and the check (too few
pages, an empty page, a chapter's figures missing) on small PDFs made here."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    FloatObject,
    NameObject,
    NumberObject,
    TextStringObject,
)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import book_pdf  # noqa: E402

TOC = """\
format: jb-book
root: book/intro
parts:
  - caption: First
    chapters:
      - file: notebooks/01_a
        sections:
          - file: notebooks/01_b
  - caption: Second
    chapters:
      - file: book/c
"""


def _toc(tmp_path: Path) -> Path:
    toc = tmp_path / "_toc.yml"
    toc.write_text(TOC)
    return toc


def _xobjects(name: str, ref) -> DictionaryObject:
    return DictionaryObject({NameObject("/XObject"): DictionaryObject({NameObject(name): ref})})


def _page_pdf(texts: list[str], link: str | None = None, anchor: str | None = None) -> bytes:
    """A PDF with one page per text (an empty text: a blank page; ``"shapes:N"``: N filled
    rectangles and no text; ``"image"``: an image drawn in a form, and no text), the first
    page's text linking to ``link`` (a URI) when given, and ``anchor`` the name of a place on
    the last page."""
    writer = PdfWriter()
    for text in texts:
        page = writer.add_blank_page(595, 842)
        if text.startswith("shapes:"):
            stream = DecodedStreamObject()
            rects = [f"{10 + 5 * i} 10 4 4 re f" for i in range(int(text[7:]))]
            stream.set_data(" ".join(["0 0 1 rg", *rects]).encode())
            page[NameObject("/Contents")] = writer._add_object(stream)
            continue
        if text == "image":  # a 1-pixel grey image, drawn in a form, and no text
            image = DecodedStreamObject()
            image.set_data(b"\x80")
            image.update(
                {
                    NameObject("/Type"): NameObject("/XObject"),
                    NameObject("/Subtype"): NameObject("/Image"),
                    NameObject("/Width"): NumberObject(1),
                    NameObject("/Height"): NumberObject(1),
                    NameObject("/ColorSpace"): NameObject("/DeviceGray"),
                    NameObject("/BitsPerComponent"): NumberObject(8),
                }
            )
            form = DecodedStreamObject()
            form.set_data(b"q 100 0 0 100 0 0 cm /Im0 Do Q")
            form.update(
                {
                    NameObject("/Type"): NameObject("/XObject"),
                    NameObject("/Subtype"): NameObject("/Form"),
                    NameObject("/BBox"): ArrayObject([NumberObject(v) for v in (0, 0, 595, 842)]),
                    NameObject("/Resources"): _xobjects("/Im0", writer._add_object(image)),
                }
            )
            page[NameObject("/Resources")] = _xobjects("/Fm0", writer._add_object(form))
            stream = DecodedStreamObject()
            stream.set_data(b"/Fm0 Do")
            page[NameObject("/Contents")] = writer._add_object(stream)
            continue
        if not text:
            continue
        font = DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
        )
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode())
        page[NameObject("/Contents")] = writer._add_object(stream)
    if link:
        annot = DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Annot"),
                NameObject("/Subtype"): NameObject("/Link"),
                NameObject("/Rect"): ArrayObject([FloatObject(v) for v in (72, 710, 200, 730)]),
                NameObject("/A"): DictionaryObject(
                    {
                        NameObject("/S"): NameObject("/URI"),
                        NameObject("/URI"): TextStringObject(link),
                    }
                ),
            }
        )
        writer.pages[0][NameObject("/Annots")] = ArrayObject([writer._add_object(annot)])
    if anchor:  # a named destination on the last page, as Chromium writes for an id
        writer.add_named_destination(anchor, len(writer.pages) - 1)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _site(tmp_path: Path, figures: int = 0) -> Path:
    """A built site for :data:`TOC`: a page per entry with its title as ``h1``; the landing
    page links to the PDF, the first chapter shows ``figures`` PNG figures and an SVG icon,
    which is no figure."""
    site = tmp_path / "html"
    for entry in book_pdf.toc_entries(_toc(tmp_path)):
        page = book_pdf.page_path(site, entry)
        page.parent.mkdir(parents=True, exist_ok=True)
        images = ""
        if entry.file == "book/intro":
            images = '<a href="../_downloads/deep-rl-in-jax.pdf">the book as a PDF</a>'
        if entry.file == "notebooks/01_a":
            images = '<img src="../_images/f.png">' * figures + '<img src="../_static/i.svg">'
        title = entry.file.rsplit("/", 1)[-1]
        page.write_text(
            f'<html><body><h1>Print title</h1><article class="bd-article"><h1>{title}'
            f'<a class="headerlink" href="#t">#</a></h1>{images}</article></body></html>'
        )
    (site / "index.html").write_text("<html></html>")
    return site


def test_the_pages_follow_the_table_of_contents(tmp_path):
    entries = book_pdf.toc_entries(_toc(tmp_path))
    assert [(e.file, e.depth, e.part) for e in entries] == [
        ("book/intro", 0, ""),
        ("notebooks/01_a", 0, "First"),
        ("notebooks/01_b", 1, "First"),
        ("book/c", 0, "Second"),
    ]
    assert book_pdf.page_path(Path("s"), entries[1]) == Path("s/notebooks/01_a.html")
    assert book_pdf.page_path(Path("s"), book_pdf.Entry("book/x.md", 0, "")) == Path(
        "s/book/x.html"
    )


def test_the_book_table_of_contents_names_its_sources():
    entries = book_pdf.toc_entries(ROOT / "_toc.yml")
    assert entries[0].file == "book/intro"
    for entry in entries:
        name = entry.file.rsplit("/", 1)[-1]
        assert any((ROOT / (entry.file + suffix)).is_file() for suffix in (".md", ".ipynb")), name


def test_a_bad_table_of_contents_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="toc"):
        book_pdf.toc_entries(tmp_path / "missing.yml")
    bad = tmp_path / "bad.yml"
    bad.write_text("format: jb-book\nparts: []\n")
    with pytest.raises(ValueError, match="toc.*root"):
        book_pdf.toc_entries(bad)
    with pytest.raises(ValueError, match="language"):
        book_pdf.build(tmp_path, "fr", _toc(tmp_path))


def test_an_empty_page_is_found():
    reader = PdfReader(io.BytesIO(_page_pdf(["Hello", ""])))
    assert [book_pdf.page_is_empty(p) for p in reader.pages] == [False, True]
    # a box's background cut across pages shows nothing; a diagram of vector shapes does
    reader = PdfReader(io.BytesIO(_page_pdf(["shapes:2", "shapes:40"])))
    assert [book_pdf.page_is_empty(p) for p in reader.pages] == [True, False]
    reader = PdfReader(io.BytesIO(_page_pdf(["image", "Hello"])))
    assert [book_pdf.page_is_empty(p) for p in reader.pages] == [False, False]
    assert [book_pdf.page_images(p) for p in reader.pages] == [1, 0]


def test_a_doubled_heading_is_given_once():
    assert book_pdf.heading_title("3. The rollout3. The rollout") == "3. The rollout"
    assert book_pdf.heading_title(" Quiz\n ") == "Quiz"
    assert book_pdf.heading_title("abab cd") == "abab cd"


def test_figures_are_counted_in_the_article(tmp_path):
    page = tmp_path / "p.html"
    page.write_text(
        '<img src="logo.png"><article><img src="a.png"><img src="data:image/png;base64,xx">'
        '<img id="_anim_img1" class="cell-figure"><img src="badge.svg"></article>'
    )
    assert book_pdf.html_figures(page) == 3


def _merged(tmp_path: Path, site: Path, blank: bool = False, images: bool = False) -> Path:
    entries = book_pdf.toc_entries(tmp_path / "_toc.yml")
    urls = [book_pdf.page_path(site, e).resolve().as_uri() for e in entries]
    parts = []
    for i, (entry, url) in enumerate(zip(entries, urls)):
        texts = [entry.file, "more"] + ([""] if blank and i == 1 else [])
        texts += ["image", "image"] if images and i == 1 else []
        link = urls[3] + "#section" if i == 0 else None
        title = entry.file.rsplit("/", 1)[-1]
        anchor = "section" if i == 3 else None
        parts.append((entry, url, title, _page_pdf(texts, link, anchor)))
    writer = book_pdf.merge(parts, "Book")
    out = site / book_pdf.PDF_NAME
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as f:
        writer.write(f)
    return out


def test_merged_pages_have_an_outline_and_links_inside_the_pdf(tmp_path):
    site = _site(tmp_path)
    pdf = _merged(tmp_path, site)
    reader = PdfReader(pdf)
    assert len(reader.pages) == 8
    outline = reader.outline
    titles = [item.title for item in outline if not isinstance(item, list)]
    assert titles == ["intro", "First", "Second"]
    first = outline[2]  # the part "First": its chapter, then the chapter's section
    assert first[0].title == "01_a" and first[1][0].title == "01_b"
    assert reader.get_destination_page_number(first[1][0]) == 4
    annot = reader.pages[0]["/Annots"][0].get_object()
    assert "/A" not in annot  # the file:// address is gone ...
    dest = annot["/Dest"]  # ... replaced by the place of book/c#section: its second page
    assert reader.get_page_number(dest[0].get_object()) == 7 and dest[1] == "/XYZ"
    problems, summary = book_pdf.check(pdf, site, tmp_path / "_toc.yml")
    assert problems == [] and summary["pages"] == 8 and summary["linked"]
    # the landing page's link must lead to the PDF written
    intro = site / "book" / "intro.html"
    intro.write_text(intro.read_text().replace("deep-rl-in-jax.pdf", "other.pdf"))
    problems, _ = book_pdf.check(pdf, site, tmp_path / "_toc.yml")
    assert problems == [f"{intro}: its link ../_downloads/other.pdf is not the PDF {pdf}"]


def test_the_check_finds_an_empty_page_missing_figures_and_too_few_pages(tmp_path):
    site = _site(tmp_path, figures=2)
    pdf = _merged(tmp_path, site, blank=True)
    problems, _ = book_pdf.check(pdf, site, tmp_path / "_toc.yml")
    assert any("empty pages" in p and "[5]" in p for p in problems), problems
    assert any(p.startswith("notebooks/01_a: 0 images") for p in problems), problems
    pdf = _merged(tmp_path, site, images=True)  # its two figures printed
    assert book_pdf.check(pdf, site, tmp_path / "_toc.yml")[0] == []
    short = tmp_path / "short.pdf"
    short.write_bytes(_page_pdf(["one"]))
    problems, _ = book_pdf.check(short, site, tmp_path / "_toc.yml")
    assert any("fewer than the 4 of the toc" in p for p in problems), problems
    problems, _ = book_pdf.check(tmp_path / "none.pdf", site, tmp_path / "_toc.yml")
    assert problems and "not written" in problems[0]


def test_part_captions_come_from_the_editions_navigation_bar(tmp_path):
    entries = book_pdf.toc_entries(_toc(tmp_path))
    page = tmp_path / "intro.html"
    page.write_text(
        '<nav><p class="caption"><span class="caption-text">最初</span></p>'
        '<p class="caption"><span class="caption-text">二番目 &amp; 次</span></p></nav>'
    )
    assert book_pdf.part_captions(page, entries) == {"First": "最初", "Second": "二番目 & 次"}
    page.write_text('<span class="caption-text">only one</span>')
    assert book_pdf.part_captions(page, entries) == {"First": "First", "Second": "Second"}


def test_a_missing_site_is_named(tmp_path, capsys):
    assert book_pdf.main([str(tmp_path / "nowhere")]) == 2
    assert "site:" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        book_pdf.main([str(tmp_path), "--languages", "fr"])
    assert "--languages" in capsys.readouterr().err
