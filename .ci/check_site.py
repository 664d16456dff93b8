"""Check the built HTML book: every chapter page has its card, outputs, quiz (drawn by headless
Chromium where it is installed) and a Colab launch link; no page weighs over 1.5 MB; in
Chromium (tools/measure_pages.py, light and dark colour schemes), at 1280 px no code box is
narrower than its text and no chapter is taller than 18,500 px (18,000 is the goal, reported), at 390 px no page is wider than
the screen or taller than 33,000 px (the tallest reported), no figure, image or animation is
wider than its column and none shows type under 10 px (in both editions), and no control is
lost against its background; the maze playground page (English and Japanese) has its scripts
and, in Chromium, passes its self-test in its language: the planning agent walks a shortest
path on 100 random mazes of each of 10 x 10, 20 x 20 and 9 x 24, the value map draws, and
switching agent, size and speed works.
No chapter page folds a figure away with its code (tools/folded_figures.py). Each edition's
search page, in Chromium, finds every page that holds its test words (the Japanese compounds
「強化学習」, 「価値反復」, 「経験再生バッファ」: tools/site_search.py), and it and the index have
the language switch. Every chapter's Colab links open the reader's notebook of its edition
(notebooks/ja for a Japanese page) on the branch of the reader's notebooks, and the site holds
those notebooks (_notebooks/, tools/reader_notebooks.py), none with a raw {glue:md} role. Every page names itself in both editions (link rel="alternate" hreflang) and
has OpenGraph tags.

Run after `make book`: python .ci/check_site.py [_build/html]
"""

import html as html_lib
import json
import re
import sys
from pathlib import Path

import yaml

root = Path(__file__).resolve().parents[1]
site = Path(sys.argv[1]) if len(sys.argv) > 1 else root / "_build" / "html"
config = yaml.safe_load((root / "_config.yml").read_text())
url = config["repository"]["url"].removeprefix("https://github.com/")

sys.path.insert(0, str(root / "tools"))
sys.path.insert(0, str(root / "book" / "_ext"))
import measure_pages  # noqa: E402  (tools/measure_pages.py: the Chromium driver)
from edition_notebooks import COLAB_BRANCH as branch  # noqa: E402  (Colab's links open it)

BROWSER = measure_pages.browser_path()


def rendered_questions(page: Path) -> int:
    """How many quiz questions headless Chromium draws on ``page`` (jupyterquiz's JavaScript
    makes one ``div.Quiz`` per question)."""
    dom = measure_pages.dump_dom(page, budget_ms=10000, timeout=120)
    return len(re.findall(r'class="Quiz"', dom))


def playground_selftest(page: Path) -> str:
    """The DOM Chromium leaves after the playground's self-test (``?selftest=1``: random mazes
    of three sizes solved step by step, the value map's backups watched, the agent switched,
    a maze drawn by clicks and run by each agent at two speeds)."""
    return measure_pages.dump_dom(page, "?selftest=1", budget_ms=30000, timeout=180)


problems = []
playground_report = {}
for notebook in sorted((root / "notebooks").glob("*.ipynb")):
    page = site / "notebooks" / f"{notebook.stem}.html"
    if not page.exists():
        problems.append(f"{page}: missing")
        continue
    html = page.read_text()
    colab = (
        f"https://colab.research.google.com/github/{url}/blob/{branch}/notebooks/{notebook.name}"
    )
    if colab not in html:
        problems.append(f"{page.name}: no Colab launch link {colab}")
    for folder in ("notebooks", "notebooks/ja"):
        reader = site / "_notebooks" / folder / notebook.name
        if not reader.is_file():
            problems.append(f"{reader}: missing (tools/reader_notebooks.py)")
        elif "{glue:" in reader.read_text():
            problems.append(f"{reader}: a raw glue role")
    if "chapter-card" not in html or "to execute the notebook" not in html:
        problems.append(f"{page.name}: no chapter card with the execution time")
    if "cell_output" not in html:
        problems.append(f"{page.name}: no cell outputs")
    if "Traceback (most recent call last)" in html or 'class="output traceback' in html:
        problems.append(f"{page.name}: shows an error")
    if "```{" in html or ":::{" in html:
        problems.append(f"{page.name}: a MyST directive is shown as raw text")
    if "application/vnd.jupyter.widget-view+json" in html and "static fallback" not in html:
        problems.append(f"{page.name}: a widget without a static fallback")
    if "application/vnd.jupyter.widget-state+json" in html:
        problems.append(
            f"{page.name}: embeds widget state (and loads the widget manager from "
            "a CDN), which no reader of the page uses"
        )
    quiz = root / "notebooks" / "quizzes" / f"{notebook.stem}.json"
    if BROWSER is not None and quiz.exists():
        # the page holds the quiz in each language (the page's own shows): both are drawn
        quizzes = [quiz, *sorted((quiz.parent).glob(f"*/{quiz.name}"))]
        expected = sum(len(json.loads(q.read_text())) for q in quizzes)
        drawn = rendered_questions(page)
        if drawn != expected:
            problems.append(f"{page.name}: Chromium draws {drawn} quiz questions, not {expected}")
    # After the quiz come only "What you learned" and the exercises: the quiz's section holds
    # its heading, one sentence and the quiz, and "What you learned" follows it.
    quiz_at = html.find('<section id="quiz">')
    if quiz_at >= 0:
        learned_at = html.find('<section id="what-you-learned">', quiz_at)
        between = html[quiz_at:learned_at]
        if learned_at < 0 or between.count("<h2>") != 1 or between.count("<p>") != 1:
            after = re.findall(r"<h2>(.*?)<a", html[quiz_at:])[1:2]
            problems.append(
                f"{page.name}: more than the quiz between the quiz and What you "
                f"learned (next heading: {after})"
            )
    for img in re.findall(r'<img[^>]+src="([^"]+)"', html):
        if img.startswith(("data:", "http://", "https://")):
            continue
        if not (page.parent / img).resolve().exists():
            problems.append(f"{page.name}: image {img} is missing")

# As a reader sees the pages (tools/measure_pages.py, in Chromium, light and dark): at 1280 px
# no code box is narrower than its text and no chapter is taller than HEIGHT_LIMIT; at 390 px
# (a phone) no page is wider than the screen, no table is cut off, no figure (image,
# animation) is wider than its column and none draws its smallest type under 10 px
# (companion.figures.MIN_FONT_PX); no control's text or icon is lost against its background in
# either colour scheme; no page throws or logs a script error.
HEIGHT_GOAL = 18_000  # px at 1280 px: the length a chapter aims at (reported)
HEIGHT_LIMIT = 18_500  # px at 1280 px: no chapter page grows past this (the tallest is 17,876)
# px at 390 px: no page of either edition grows past this on a phone. Measured in Chromium
# (light scheme; the dark one within 120 px) once a table taller than 60% of the screen
# scrolls inside its own box (book/_static/book.css): the tallest pages are chapter 7 at
# 31,306 px, chapter 11 at 31,055 and chapter 10 at 30,031 (before the tables scrolled in a
# box: 31,318, 32,735 and 31,460), the teacher's guide 9,259 (16,173), the tallest Japanese
# page 27,195. A chapter's height at 390 px is 1.42 to 1.79 times its height at 1280 px
# (chapter 11 the most); the limit is HEIGHT_LIMIT times that largest ratio, rounded down, so
# a chapter within HEIGHT_LIMIT fails here only if its code and tables wrap on a phone more
# than any chapter's now do (chapter 11's tables did, at 1.89, before they scrolled in a
# box). It leaves about 5% above the tallest page.
PHONE_HEIGHT_LIMIT = 33_000
measured = {}
if BROWSER is not None:
    sys.path.insert(0, str(root / "tools"))
    import measure_pages

    measured = measure_pages.summarise(
        measure_pages.run(
            site, widths=(1280, 390), modes=("light", "dark"), patterns=("notebooks/*", "book/*")
        ),
        max_height=HEIGHT_LIMIT,
        max_overflow=0,
        max_clipped=0,
        max_phone_height=PHONE_HEIGHT_LIMIT,
    )
    problems += measured["failures"]
    # The Japanese pages share the English pages' stylesheets and code; their text wraps
    # differently, so they are measured where wrapping matters: on the phone.
    measured_ja = measure_pages.summarise(
        measure_pages.run(
            site, widths=(390,), modes=("light",), patterns=("ja/notebooks/*", "ja/book/*")
        ),
        max_overflow=0,
        max_phone_height=PHONE_HEIGHT_LIMIT,
    )
    problems += measured_ja["failures"]

# The Japanese edition: the same pages under ja/, in Japanese, each with a link back.
edition = site / "ja"
english_pages = sorted(
    p.relative_to(site)
    for folder in ("notebooks", "book")
    for p in (site / folder).glob("*.html")
    if ".probe" not in p.name
)
if not edition.is_dir():
    problems.append(f"{edition}: no Japanese edition (tools/editions.py build ja)")
else:
    for relative in english_pages:
        page = edition / relative
        if not page.exists():
            problems.append(f"ja/{relative}: missing")
            continue
        text = page.read_text()
        if '<html lang="ja"' not in text:
            problems.append(f"ja/{relative}: not marked as Japanese")
        if relative.parts[0] in ("notebooks", "book") and 'class="edition-switch"' not in text:
            problems.append(f"ja/{relative}: no link to the English page")
        if relative.parts[0] == "notebooks":  # the launch menu and the card open notebooks/ja
            colab = (
                f"https://colab.research.google.com/github/{url}/blob/{branch}/"
                f"notebooks/ja/{relative.stem}.ipynb"
            )
            links = set(re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', text))
            if links != {colab}:
                problems.append(f"ja/{relative}: Colab links {sorted(links)}, not only {colab}")
# The search page and the index, which Sphinx writes from templates, have the switch too.
for edition_root in (site, edition):
    for name in ("search.html", "genindex.html"):
        page = edition_root / name
        if page.exists() and 'class="edition-switch"' not in page.read_text():
            problems.append(f"{page.relative_to(site)}: no language switch")

# Every page's head names the page in each edition, relative to the page while the book has
# no html_baseurl (book/_ext/page_head.py), and has the OpenGraph tags of a link's preview.
sys.path.insert(0, str(root / "book" / "_ext"))
from language_switch import edition_href  # noqa: E402

BASE = config.get("sphinx", {}).get("config", {}).get("html_baseurl", "")
OPENGRAPH = ("og:title", "og:type", "og:description", "og:locale")
for language, edition_root in (("en", site), ("ja", edition)):
    pages = [edition_root / p for p in english_pages] + [
        edition_root / n for n in ("search.html", "genindex.html")
    ]
    for page in pages:
        if not page.exists():
            continue  # a missing page is reported above
        head = page.read_text().split("</head>", 1)[0]
        pagename = page.relative_to(edition_root).with_suffix("").as_posix()
        for other in ("en", "ja"):
            href = edition_href(pagename, language, other, BASE)
            if f'<link rel="alternate" hreflang="{other}" href="{href}"' not in head:
                problems.append(
                    f"{page.relative_to(site)}: no link rel=alternate hreflang={other} to {href}"
                )
        missing = [p for p in OPENGRAPH if f'<meta property="{p}" content="' not in head]
        if missing:
            problems.append(f"{page.relative_to(site)}: no {', '.join(missing)} in its head")

# A figure the prose discusses is never folded away as code (hide-cell, hide-output).
sys.path.insert(0, str(root / "tools"))
import folded_figures  # noqa: E402

problems += folded_figures.site_problems(site)

# Search as a reader does, in Chromium: in Japanese a compound is split into the words the
# index holds (book/_ext/search_language.py), so 「価値反復」 finds the pages about it.
if BROWSER is not None:
    import site_search  # noqa: E402

    problems += site_search.search_problems(site)

# Formulas render offline: MathJax comes from the site, and Chromium (with no network) draws
# the formulas of the foundations chapter.
foundations = site / "notebooks" / "05_rl_foundations.html"
if foundations.exists():
    if "_static/mathjax/tex-chtml.js" not in foundations.read_text():
        problems.append(
            f"{foundations.name}: MathJax is not loaded from the site's _static/mathjax"
        )
    if BROWSER is not None:
        dom = measure_pages.dump_dom(foundations, budget_ms=10000, timeout=120)
        if dom.count("<mjx-container") < 20:
            problems.append(
                f"{foundations.name}: Chromium drew {dom.count('<mjx-container')} formulas offline"
            )

# Pages stay light: a reader on a slow connection loads every page in full.
PAGE_LIMIT = 1_500_000  # bytes
for page in sorted(site.rglob("*.html")):
    if "_static" not in page.parts and page.stat().st_size > PAGE_LIMIT:
        problems.append(
            f"{page.relative_to(site)}: {page.stat().st_size:,} bytes, over the "
            f"{PAGE_LIMIT:,} a page may weigh"
        )

# The playground in each edition: its scripts are there, and its self-test passes in the
# page's language (the report's values are the same in both; its text is the page's).
PLAYGROUND_FILES = (
    "weights.js",
    "agent.js",
    "strings.js",
    "selftest.js",
    "playground.js",
    "playground.css",
)
for edition_root, lang, title in (
    (site, "en", "Maze playground"),
    (site / "ja", "ja", "迷路プレイグラウンド"),
):
    if not edition_root.is_dir():
        continue  # a missing edition is reported above
    playground = edition_root / "book" / "playground.html"
    name = playground.relative_to(site)
    if not playground.exists():
        problems.append(f"{playground}: missing")
        continue
    html = playground.read_text()
    own = [edition_root / "_static" / "playground" / file for file in PLAYGROUND_FILES]
    for script, f in zip(PLAYGROUND_FILES, own):
        if f"_static/playground/{script}" not in html:
            problems.append(f"{name}: does not load {script}")
        elif not f.exists():
            problems.append(f"{name}: {f.relative_to(site)} is not in the site")
    if "<noscript>" not in html:
        problems.append(f"{name}: no <noscript> message")
    elif not all(f'<p class="edition-text" lang="{lang}">' in html for lang in ("en", "ja")):
        problems.append(f"{name}: the <noscript> message is not in both languages")
    # The page with its own scripts and weights stays light, and needs no network.
    weight = playground.stat().st_size + sum(f.stat().st_size for f in own if f.exists())
    if weight > 500_000:
        problems.append(f"{name}: {weight:,} bytes with its scripts, over 500,000")
    for f in own:
        if f.exists() and re.search(r"https?://|fetch\(|XMLHttpRequest", f.read_text()):
            problems.append(f"{name}: {f.name} reaches for the network")
    if BROWSER is not None:
        dom = playground_selftest(playground)
        report = {}
        if 'data-selftest="passed"' not in dom:
            found = re.findall(r'data-selftest="[^"]*"', dom) or ["no self-test result"]
            problems.append(f"{name}: the self-test failed: {html_lib.unescape(found[0])}")
        else:
            found = re.findall(r'data-selftest-report="([^"]*)"', dom)
            report = json.loads(html_lib.unescape(found[0])) if found else {}
            for size in ("10x10", "20x20", "9x24"):
                if report.get(size) != "100/100":
                    problems.append(
                        f"{name}: {size} mazes along a shortest path: "
                        f"{report.get(size)}, not 100/100"
                    )
            if report.get("language") != lang:
                problems.append(
                    f"{name}: the playground spoke {report.get('language')}, not {lang}"
                )
        texts = (title, "training distribution") if lang == "en" else (title,)
        if any(text not in dom for text in texts):
            problems.append(f"{name}: the page's text is gone after its script ran")
        if lang == "en":
            playground_report = report

if problems:
    print("\n".join(problems))
    sys.exit(1)
if BROWSER is None:
    print(
        "site check: no Chromium on this machine, so the quizzes were not drawn and counted, "
        "the playground was not run and the search pages were not searched"
    )
print(
    f"site check: {len(list((root / 'notebooks').glob('*.ipynb')))} chapter pages and the "
    "playground OK"
)
if BROWSER is not None:
    print(f"playground self-test: {json.dumps(playground_report)}")
    print(
        "search: in each edition its test words find every page that holds them "
        f"({', '.join(t for terms in site_search.TERMS.values() for t in terms)})"
    )
    tallest = measured["summary"].get("tallest_at_1280", {})
    print(
        f"pages in Chromium: the tallest chapter {tallest.get('page')} is "
        f"{tallest.get('height', 0):,} px at 1280 px (limit {HEIGHT_LIMIT:,}); at 390 px no "
        "page is wider than the screen and no figure wider than its column; no control is "
        "lost in the dark or light scheme"
    )
    for name, report in (("English", measured), ("Japanese", measured_ja)):
        phone = report["summary"].get("tallest_at_390", {})
        print(
            f"tallest page at 390 px, {name}: {phone.get('page')} "
            f"{phone.get('height', 0):,} px (limit {PHONE_HEIGHT_LIMIT:,})"
        )
    for name, report in (("English", measured), ("Japanese", measured_ja)):
        font = report["summary"].get("390", {}).get("smallest_font_px")
        if font:
            print(f"smallest figure type at 390 px, {name}: {font[0]} px ({font[1]})")
    over = {
        page: modes["light"]["1280"]["height"]
        for page, modes in measured.get("pages", {}).items()
        if page.startswith("notebooks/") and modes["light"]["1280"]["height"] > HEIGHT_GOAL
    }
    print(
        f"chapters over the {HEIGHT_GOAL:,} px a chapter aims at: "
        + (", ".join(f"{p} {h:,} px" for p, h in over.items()) or "none")
    )
