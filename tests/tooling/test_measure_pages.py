"""The page-measuring tool (``tools/measure_pages.py``) and the book's stylesheet for phones
(``book/_static/book.css``, ``book/_ext/code_lines.py``), on a small generated site.

The site holds a page built like a chapter (the theme's stylesheets and the book's, code
lines as ``code_lines`` draws them, a long inline name, a wide table, a wide figure, a long
address) and pages with one planted fault each. On the first, at 390 px nothing is wider than
the screen and no code box scrolls sideways, at 1280 px no code box is narrower than its
text, and no control is lost in either colour scheme; the tool names each planted fault.
"""

from __future__ import annotations

import base64
import html as html_lib
import re
import shutil
import struct
import sys
import zlib
from pathlib import Path

import pytest
from pygments import highlight
from pygments.lexers import PythonLexer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import measure_pages  # noqa: E402
from code_lines import LineFormatter, indent_of  # noqa: E402
from figure_widths import (  # noqa: E402
    diagram_width,
    figure_width,
    panel_style,
    size_animations,
)

BROWSER = measure_pages.browser_path()

#: Sets the theme's colour scheme from the system's, as the theme's script does in "auto".
SCHEME = (
    "<script>document.documentElement.dataset.theme = matchMedia("
    "'(prefers-color-scheme: dark)').matches ? 'dark' : 'light';</script>"
)
#: A line of 92 characters, the notebooks' width, and one indented below it.
CODE = (
    "result = some_function_with_a_long_name(first_argument, second_argument, third_one=3)  # x\n"
    "for step in range(10):\n"
    "        value = another_function(step, keyword_argument=step * 2, other_keyword=step + 1)\n"
)


def _png(path: Path, width: int, height: int) -> None:
    """A grey PNG of ``width`` x ``height`` pixels."""
    row = b"\0" + b"\x80" * width
    data = zlib.compress(row * height)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )


def _page(title: str, body: str, stylesheets: list[str], height: int = 0) -> str:
    links = "".join(f'<link rel="stylesheet" href="../_static/{s}">' for s in stylesheets)
    filler = f'<div style="height: {height}px"></div>' if height else ""
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">{SCHEME}{links}'
        "<style>span.pre { white-space: nowrap; }</style>"  # as Sphinx's basic.css
        f"<title>{title}</title></head><body><div class='bd-main'><div class='bd-content'>"
        "<div class='bd-article-container'>"
        f"<article class='bd-article'>{body}{filler}</article></div></div></div></body></html>"
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    import pydata_sphinx_theme
    import sphinx_book_theme

    root = tmp_path_factory.mktemp("site")
    static = root / "_static"
    static.mkdir()
    for package, name in (
        (pydata_sphinx_theme, "pydata-sphinx-theme.css"),
        (sphinx_book_theme, "sphinx-book-theme.css"),
    ):
        (css,) = Path(package.__file__).parent.glob(f"theme/*/static/styles/{name}")
        shutil.copy(css, static / name)
    shutil.copy(ROOT / "book" / "_static" / "book.css", static / "book.css")
    _png(static / "figure.png", 1400, 300)
    _png(static / "small.png", 300, 300)
    _png(static / "panel.png", 440, 280)
    (static / "diagram.svg").write_text(
        "<svg xmlns='http://www.w3.org/2000/svg' width='499' height='200' viewBox='0 0 499 200'>"
        "<rect width='499' height='200' fill='#d6e6f5'/></svg>"
    )
    theme = ["pydata-sphinx-theme.css", "sphinx-book-theme.css", "book.css"]
    code = highlight(CODE, PythonLexer(), LineFormatter())
    cells = "".join(str(i) for i in range(12))
    table = (
        "<div class='pst-scrollable-table-container'><table class='table'><thead><tr>"
        + "".join(f"<th>column {c} of the table</th>" for c in cells)
        + "</tr></thead><tbody><tr>"
        + "".join(f"<td>{c},{c}00 of 33</td>" for c in cells)
        + "</tr></tbody></table></div>"
    )
    good = (
        "<h1>A chapter</h1><p>Check it with <code class='docutils literal notranslate'>"
        "<span class='pre'>check_per_example_grad_norms(per_example_grad_norms)</span></code>"
        " and read https://example.org/a/very/long/address/without/any/place/to/break/it.</p>"
        "<div class='cell docutils container'><div class='cell_input docutils container'>"
        f"{code}</div><div class='cell_output docutils container'>"
        # a figure of two panels, 440 px each, its smallest type 12.5 px (9 points at 100 dpi)
        "<div class='figure-panels'><div class='figure-row'>"
        + "".join(
            f"<div class='figure-panel' style='{panel_style(440, 12.5)}' data-width='440' "
            f"data-font-px='12.5'><img alt='a panel' src='../_static/panel.png'></div>"
            for _ in range(2)
        )
        + "</div></div>"
        "<div class='figure-panels'><div class='figure-row'><div class='figure-panel' "
        f"style='{panel_style(1400, 40)}' data-font-px='40'><img alt='a wide one' "
        "src='../_static/figure.png'></div></div></div>"
        f"<div class='figure-panels'><div class='figure-row'><div class='figure-panel' "
        f"style='{panel_style(300, 12.5)}' data-font-px='12.5'><img alt='a small one' "
        "src='../_static/small.png'></div></div></div></div></div>"
        "<div class='cell docutils container'><div class='cell_output docutils container'>"
        "<img class='cell-figure' alt='a diagram' src='../_static/diagram.svg' "
        f"style='width: {diagram_width(499)};'></div></div>"
        f"{table}<details class='hide above-input'><summary>Show code cell source</summary>"
        "<p>folded</p></details>"
    )
    faults = {
        "wide_code": "<pre style='white-space: pre; overflow: auto; width: 300px'>"
        + "x = 1  " * 60
        + "</pre>",
        "wide_box": "<div style='width: 600px; height: 10px'>wide</div>",
        "cut_table": "<div style='overflow: hidden; width: 200px'><table><tr>"
        + "<td>a long cell of text</td>" * 8
        + "</tr></table></div>",
        "hidden_button": "<button style='color: #777; background: #777; border: 0'>Run</button>",
        # a diagram kept at its width: wider than a phone's column
        "cut_diagram": "<div class='cell_output'><img alt='a diagram' "
        "src='../_static/diagram.svg' style='width: 499px; max-width: none'></div>",
        # a panel whose 8-px type is drawn as it is: too small even where it fits
        "small_type": "<div class='cell_output'><div class='figure-panel' data-font-px='8' "
        f"style='{panel_style(300, 8)}'><img alt='a panel' src='../_static/small.png'></div>"
        "</div>",
        # a PNG output that records no type size
        "unknown_type": "<div class='cell_output'><img alt='a plot' "
        f"src='../_static/small.png' style='width: {figure_width(300)};'></div>",
        # a const declared by two scripts (sphinx-thebe's doubled configuration), and an error
        "script_error": "<script>const URL_A = 1;</script><script>const URL_A = 2;</script>"
        "<script>console.error('broken'); console.log('quiet');</script>",
    }
    (root / "notebooks").mkdir()
    (root / "book").mkdir()
    (root / "notebooks" / "01_good.html").write_text(_page("good", good, theme, height=1500))
    for name, body in faults.items():
        (root / "book" / f"{name}.html").write_text(_page(name, body, []))
    return root


@pytest.fixture(scope="module")
def report(site) -> dict:
    return measure_pages.summarise(
        measure_pages.run(site, widths=(1280, 390), modes=("light", "dark")),
        max_height=1000,
        max_overflow=0,
        max_clipped=0,
    )


def test_a_figure_keeps_its_width_where_it_fits_and_shrinks_to_the_column(tmp_path):
    assert figure_width(1190) == diagram_width(1190) == "min(100%, 1190px)"
    # a panel 440 px wide with 12.5-px type may shrink to 352 px, where its type is 10 px
    assert panel_style(440, 12.5) == (
        "flex: 440 440 352.0px; min-width: min(100%, 352.0px); max-width: 440px;"
    )
    assert "flex: 300 300 300.0px" in panel_style(300, 8)  # too small already: never shrinks
    # A matplotlib animation (to_jshtml): its image gets the width of its first frame.
    _png(tmp_path / "frame.png", 896, 264)
    frame = base64.b64encode((tmp_path / "frame.png").read_bytes()).decode()
    page = (
        '<div class="animation"><img id="_anim_imgab12" data-font-px="12.2"></div><script>'
        f'var frames = new Array(2);\n  frames[0] = "data:image/png;base64,{frame}";</script>'
    )
    assert (
        '<img id="_anim_imgab12" data-font-px="12.2" class="cell-figure" '
        'style="width: min(100%, 896px);">'
    ) in size_animations(page)
    assert size_animations('<img id="_anim_imgab12">') == '<img id="_anim_imgab12">'


def test_line_formatter_wraps_each_line_and_keeps_the_text():
    html = highlight(CODE, PythonLexer(), LineFormatter())
    assert html.count('<span class="cl"') == 3
    assert html.count('style="--i:8"') == 1  # the indented line, and only it
    assert indent_of('<span class="w">    </span><span class="n">x</span>') == 4
    text = html_lib.unescape(re.sub(r"<[^>]*>", "", html))
    assert text.strip("\n") == CODE.strip("\n")  # the spans add no text: copying is unchanged
    plain = highlight(CODE, PythonLexer(), LineFormatter(nowrap=True))
    assert 'class="cl"' not in plain  # nowrap: no wrapping at all, as pygments does


@pytest.mark.browser
@pytest.mark.skipif(BROWSER is None, reason="no Chromium on this machine: the pages were not run")
def test_a_chapter_fits_a_phone_and_a_desktop_in_both_schemes(report):
    for mode in ("light", "dark"):
        desktop = report["pages"]["notebooks/01_good.html"][mode]["1280"]
        phone = report["pages"]["notebooks/01_good.html"][mode]["390"]
        assert desktop["theme"] == phone["theme"] == mode
        assert desktop["code_blocks"] == phone["code_blocks"] == 1
        assert desktop["code_wide"] == 0, desktop["code_wide_lines"]
        assert phone["overflow"] == 0, phone["wide"]
        assert phone["code_wide"] == 0, phone["code_wide_lines"]  # wraps on a phone
        assert phone["tables_cut"] == []
        left, right, wide, small, diagram = phone["figure_scales"]
        # the two panels wrap, one below the other, each shrunk to the column
        assert left == right and 0.78 < left < 0.85, phone["figure_scales"]
        assert wide < 0.3  # a figure whose type allows it shrinks to the column
        assert small == 1  # a figure that fits keeps its own width
        assert diagram < 0.8 and phone["figures_wide"] == []  # everything fits the column
        assert phone["font_px"] >= 10 and phone["fonts_small"] == phone["fonts_unknown"] == []
        assert desktop["figure_scales"][:2] == [1, 1]  # side by side at their own width
        assert desktop["figure_scale"] < 1  # the wide one shrinks to the article's width
        assert desktop["controls"] >= 1 and desktop["low_contrast"] == []
    failures = [f for f in report["failures"] if f.startswith("notebooks/01_good.html")]
    assert len(failures) == 1 and "px tall at 1280 px, over the 1,000" in failures[0], failures


@pytest.mark.browser
@pytest.mark.skipif(BROWSER is None, reason="no Chromium on this machine: the pages were not run")
def test_each_planted_fault_is_found(report):
    pages = report["pages"]
    assert pages["book/wide_code.html"]["light"]["1280"]["code_wide"] == 1
    assert pages["book/wide_box.html"]["light"]["390"]["overflow"] >= 600 - 390
    assert pages["book/wide_box.html"]["light"]["1280"]["overflow"] == 0
    assert pages["book/cut_table.html"]["light"]["390"]["tables_cut"]
    hidden = pages["book/hidden_button.html"]["dark"]["390"]["low_contrast"]
    assert len(hidden) == 1 and hidden[0][0] == 1.0, hidden
    assert pages["book/cut_diagram.html"]["light"]["390"]["figures_wide"]
    assert pages["book/cut_diagram.html"]["light"]["1280"]["figures_wide"] == []
    assert pages["book/small_type.html"]["light"]["390"]["fonts_small"] == [[8, "small.png"]]
    assert pages["book/unknown_type.html"]["light"]["390"]["fonts_unknown"] == ["small.png"]
    errors = pages["book/script_error.html"]["light"]["1280"]["console_errors"]
    assert errors == ["SyntaxError: Identifier 'URL_A' has already been declared", "broken"]
    assert pages["notebooks/01_good.html"]["dark"]["390"]["console_errors"] == []
    found = "\n".join(report["failures"])
    faults = ("wide_code", "wide_box", "cut_table", "hidden_button", "script_error")
    for page in (*faults, "cut_diagram", "small_type", "unknown_type"):
        assert f"book/{page}.html" in found, found


@pytest.mark.browser
@pytest.mark.skipif(BROWSER is None, reason="no Chromium on this machine: the pages were not run")
def test_the_browser_starts_in_a_process_that_has_imported_jax():
    """JAX registers a fork handler that warns (forking a threaded process can deadlock); the
    browser must start without running Python between fork and exec, so no warning is raised
    (warnings are errors in the tests) and the DevTools pipe still answers."""
    import jax.numpy as jnp

    assert float(jnp.ones(3).sum()) == 3.0  # JAX's backend and its threads are up
    browser = measure_pages.Browser(BROWSER)
    try:
        assert browser.send("Browser.getVersion", timeout=60)["product"].startswith(
            ("HeadlessChrome", "Chrome")
        )
    finally:
        browser.close()


def test_output_images_shrink_to_the_column_and_panels_go_in_rows(tmp_path):
    """SVG diagrams and PNGs without a panel record get ``min(100%, W)``; the panels of
    ``companion.figures`` go in a ``div.figure-panels``, one ``div.figure-row`` a row."""
    from types import SimpleNamespace

    import matplotlib.pyplot as plt
    from docutils import nodes
    from figure_widths import _size_output_images, figure_panels

    from companion.figures import panel_pngs

    outputs = tmp_path / "_build" / "jupyter_execute"
    outputs.mkdir(parents=True)
    _png(outputs / "plot.png", 1100, 300)
    (outputs / "diagram.svg").write_text(
        "<svg xmlns='http://www.w3.org/2000/svg' width='499' height='200'></svg>"
    )
    fig, _ = plt.subplots(2, 2, figsize=(8, 5), dpi=100)
    fig.tight_layout()
    for i, png in enumerate(panel_pngs(fig)):
        (outputs / f"panel{i}.png").write_bytes(png)
    plt.close(fig)
    doctree = nodes.document(None, None)
    plot = nodes.image(uri="_build/jupyter_execute/plot.png")
    diagram = nodes.image(uri="_build/jupyter_execute/diagram.svg")
    output = nodes.container(classes=["cell_output"])
    output += [nodes.image(uri=f"_build/jupyter_execute/panel{i}.png") for i in range(4)]
    doctree += [plot, diagram, output]
    app = SimpleNamespace(srcdir=str(tmp_path), builder=SimpleNamespace(format="html"))
    _size_output_images(app, doctree, "page")
    assert plot["width"] == figure_width(1100) == "min(100%, 1100px)"
    assert diagram["width"] == diagram_width(499) == "min(100%, 499px)"
    assert "cell-figure" in plot["classes"] and "cell-figure" in diagram["classes"]
    (box,) = output.children
    assert isinstance(box, figure_panels) and box["classes"] == ["figure-panels"]
    assert [len(row) for row in box] == [2, 2]
    panel = box[0][0]
    assert panel["data"]["font-px"] == 13.89 and panel["style"].startswith("flex: ")
    assert isinstance(panel[0], nodes.image) and "width" not in panel[0]


def _row(page: str, height: int, **measures) -> dict:
    """One page's measures at one width as the probe reports them, nothing wrong but what
    ``measures`` sets."""
    return {
        "height": height,
        "theme": "",
        "overflow": 0,
        "code_blocks": 0,
        "code_wide": 0,
        "tables_cut": [],
        "figure_scale": None,
        "low_contrast": [],
        **measures,
    }


def test_a_page_too_tall_for_a_phone_is_reported_and_the_tallest_named():
    heights = {"notebooks/a.html": (17_000, 31_000), "book/b.html": (9_000, 33_000)}
    report = {
        "pages": {
            page: {
                mode: {"1280": _row(page, desk), "390": _row(page, phone + extra)}
                for mode, extra in (("light", 0), ("dark", 90))
            }
            for page, (desk, phone) in heights.items()
        }
    }
    summary = measure_pages.summarise(report, max_height=18_500, max_phone_height=32_500)
    assert summary["failures"] == [
        "book/b.html: 33,090 px tall at 390 px, over the 32,500 a page may take on a phone"
    ]
    assert summary["summary"]["tallest_at_390"] == {"page": "book/b.html", "height": 33_090}
    assert summary["summary"]["tallest_at_1280"] == {"page": "notebooks/a.html", "height": 17_000}
    assert list(summary["summary"]["heights_at_390"]) == ["book/b.html", "notebooks/a.html"]
    assert measure_pages.summarise(report, max_phone_height=34_000)["failures"] == []
    only = measure_pages.summarise(report, max_phone_height=30_000, phone_height_pages="note*")
    assert [f.split(":")[0] for f in only["failures"]] == ["notebooks/a.html"]


#: Per table, the height of its box and of the table, and after the tall box is scrolled down
#: by 300 px, where its head row stands (px below the box's top) and the head's background.
TABLE_BOXES = """(() => {
  const boxes = [...document.querySelectorAll('.pst-scrollable-table-container')];
  const sizes = boxes.map(b => [b.getBoundingClientRect().height,
                                b.querySelector('table').getBoundingClientRect().height]);
  const tall = boxes[1];
  tall.scrollTop = 300;
  const th = tall.querySelector('th');
  return {sizes: sizes, head: th.getBoundingClientRect().top - tall.getBoundingClientRect().top,
          background: getComputedStyle(th).backgroundColor, screen: innerHeight};
})()"""


@pytest.mark.browser
@pytest.mark.skipif(BROWSER is None, reason="no Chromium on this machine: the pages were not run")
def test_a_tall_table_scrolls_in_its_own_box_on_a_phone_only(site, tmp_path):
    """On a phone a table taller than 60% of the screen scrolls inside a box that tall, its
    head row kept in view on an opaque background, in both schemes; a short one, a desktop
    and print show the whole table."""
    shutil.copytree(site / "_static", tmp_path / "_static")
    theme = ["pydata-sphinx-theme.css", "sphinx-book-theme.css", "book.css"]

    def table(rows: int) -> str:
        body = "".join(
            f"<tr><td>run {i}</td><td>{'a cell of several words ' * 3}</td></tr>"
            for i in range(rows)
        )
        return (
            "<div class='pst-scrollable-table-container'><table class='table'><thead><tr>"
            f"<th>run</th><th>what it measured</th></tr></thead><tbody>{body}</tbody></table>"
            "</div>"
        )

    (tmp_path / "book").mkdir()
    page = tmp_path / "book" / "tables.html"
    page.write_text(_page("tables", table(2) + table(40), theme))
    browser = measure_pages.Browser(BROWSER)
    found = {}
    try:
        session = measure_pages.open_tab(browser)
        for width, mode, media in (
            (390, "light", ""),
            (390, "dark", ""),
            (1280, "light", ""),
            (390, "light", "print"),
        ):
            browser.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
            features = [{"name": "prefers-color-scheme", "value": mode}]
            browser.send(
                "Emulation.setEmulatedMedia",
                {"media": media, "features": features},
                session=session,
            )
            browser.send("Page.navigate", {"url": page.as_uri()}, session=session)
            assert browser.wait_event("Page.loadEventFired", session, timeout=30)
            found[width, mode, media] = measure_pages.evaluate(browser, session, TABLE_BOXES)
    finally:
        browser.close()
    for mode in ("light", "dark"):
        phone = found[390, mode, ""]
        (short_box, short), (tall_box, tall) = phone["sizes"]
        # the box holds the table and its margin (1 rem)
        assert short <= short_box <= short + 17 and short < 0.6 * phone["screen"]
        assert tall_box == pytest.approx(0.6 * phone["screen"], abs=1) and tall > 2 * tall_box
        assert phone["head"] == pytest.approx(0, abs=1)  # the head row stays at the top
        assert not phone["background"].endswith(", 0)")  # and hides the rows below it
    for whole in (found[1280, "light", ""], found[390, "light", "print"]):
        (short_box, short), (tall_box, tall) = whole["sizes"]
        assert tall <= tall_box <= tall + 17, whole


#: The first figure's box and its panels as drawn: the box's width and background, each
#: panel image's left and right edge and its padding.
PANELS = """(() => {
  const box = document.querySelector('.figure-panels');
  return {width: box.getBoundingClientRect().width,
          background: getComputedStyle(box).backgroundColor,
          panels: [...box.querySelectorAll('.figure-panel img')].map(i => {
            const r = i.getBoundingClientRect();
            return [r.left, r.right, getComputedStyle(i).paddingLeft];
          })};
})()"""


@pytest.mark.browser
@pytest.mark.skipif(BROWSER is None, reason="no Chromium on this machine: the pages were not run")
def test_a_figures_panels_join_without_seams_in_the_dark_scheme(site):
    """The theme frames each output image in the dark scheme (padding on a light background);
    a figure's panels go without it, edge to edge on one box as wide as the panels, and lie
    where they lie in the light scheme."""
    browser = measure_pages.Browser(BROWSER)
    found = {}
    try:
        session = measure_pages.open_tab(browser)
        for mode in ("light", "dark"):
            browser.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
            features = [{"name": "prefers-color-scheme", "value": mode}]
            browser.send("Emulation.setEmulatedMedia", {"features": features}, session=session)
            url = (site / "notebooks" / "01_good.html").as_uri()
            browser.send("Page.navigate", {"url": url}, session=session)
            assert browser.wait_event("Page.loadEventFired", session, timeout=30)
            found[mode] = measure_pages.evaluate(browser, session, PANELS)
    finally:
        browser.close()
    dark, light = found["dark"], found["light"]
    (left, right, padding), (next_left, next_right, _) = dark["panels"]
    assert padding == "0px" and right == pytest.approx(next_left)  # no frame, no gap
    assert dark["width"] == pytest.approx(next_right - left)  # the box is the panels' width
    assert not dark["background"].endswith(", 0)")  # and drawn behind them
    assert [p[:2] for p in dark["panels"]] == [p[:2] for p in light["panels"]]


@pytest.mark.browser
@pytest.mark.skipif(BROWSER is None, reason="no Chromium on this machine: the pages were not run")
def test_dump_dom_returns_what_the_pages_script_drew_after_the_virtual_time(tmp_path):
    """The one Chromium --dump-dom of the site check and the playground tests: the DOM holds
    what the script added, with the query it was given, and only once its timer ran."""
    page = tmp_path / "page.html"
    page.write_text(
        "<html><body><script>setTimeout(function () {"
        " var p = document.createElement('p'); p.id = 'drawn';"
        " p.textContent = 'query ' + location.search; document.body.appendChild(p);"
        " }, 2000);</script></body></html>"
    )
    dom = measure_pages.dump_dom(page, "?x=1", budget_ms=5000, timeout=60)
    assert '<p id="drawn">query ?x=1</p>' in dom
    assert 'id="drawn"' not in measure_pages.dump_dom(page, budget_ms=500, timeout=60)


def test_dump_dom_says_when_there_is_no_chromium(tmp_path, monkeypatch):
    monkeypatch.setattr(measure_pages, "browser_path", lambda: None)
    with pytest.raises(FileNotFoundError, match="no Chromium on PATH"):
        measure_pages.dump_dom(tmp_path / "page.html")
