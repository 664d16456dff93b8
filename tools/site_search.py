"""Search a built book as a reader does: its search page in headless Chromium.

Usage: python tools/site_search.py [--site _build/html] [--edition ja] [--screenshots DIR]
       [--widths 1280 390] [QUERY...]

The site is served over HTTP on 127.0.0.1 (as a reader's browser fetches it: the search page
loads each result's page for its summary), ``search.html?q=QUERY`` is opened in one Chromium
(``tools/measure_pages.py``'s, driven through its DevTools protocol) and read once the page
says the search finished. :func:`search_problems` is the site check's part
(``.ci/check_site.py``): in the Japanese edition 「強化学習」, 「価値反復」 and
「経験再生バッファ」 each find every page whose text holds them (Sphinx indexes Japanese
split into words, and the search page must split a query alike:
``book/_ext/search_language.py``), and in the English edition "value iteration" and "replay
buffer" do the same.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import html
import http.server
import re
import sys
import threading
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure_pages  # noqa: E402  (tools/measure_pages.py: the Chromium driver)

ROOT = Path(__file__).resolve().parents[1]

#: Per edition (its folder under the site, "" for English), the words a reader searches for:
#: in Japanese, compounds that Sphinx's index holds as two or three words.
TERMS = {
    "ja": ("強化学習", "価値反復", "経験再生バッファ"),
    "": ("value iteration", "replay buffer"),
}

#: Resolves to the search page's results once it finished (Sphinx's searchtools.js titles the
#: results "Search Results", in the page's language, after the last one), or null after 30 s.
RESULTS = """
new Promise(function (resolve) {
  var start = Date.now();
  (function poll() {
    var title = document.querySelector("#search-results h2");
    if (title && title.textContent === Documentation.gettext("Search Results")) {
      var links = document.querySelectorAll("#search-results ul.search li > a");
      var summary = document.querySelector("#search-results .search-summary");
      resolve({summary: summary ? summary.textContent.trim() : "",
               links: Array.from(links, function (a) { return a.getAttribute("href"); })});
    } else if (Date.now() - start > 30000) {
      resolve(null);
    } else {
      setTimeout(poll, 50);
    }
  })();
})
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(site: Path):
    """``site`` over HTTP on a free port of 127.0.0.1; yields its address."""
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


browser_path = measure_pages.browser_path


def search(
    site: Path,
    queries: list[str],
    edition: str = "",
    screenshots: Path | None = None,
    widths: tuple[int, ...] = (1280,),
) -> dict[str, dict]:
    """Each of ``queries`` typed into the ``edition``'s search page (``edition``: its folder
    under ``site``, "" for English): ``{query: {"pages": [...], "summary": ..., "errors":
    [...]}}``, the pages found in the page's order (addresses relative to the edition, each
    once, anchors removed), the page's closing sentence and its script errors. With
    ``screenshots``, the first screen of each search at each of ``widths`` is saved there."""
    executable = browser_path()
    if executable is None:
        raise FileNotFoundError("no Chromium on PATH (chromium, chromium-browser, google-chrome)")
    found = {}
    with serve(site) as address:
        browser = measure_pages.Browser(executable)
        try:
            session = measure_pages.open_tab(browser)
            for query in queries:
                for width in widths:
                    browser.send(
                        "Emulation.setDeviceMetricsOverride",
                        {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                        session=session,
                    )
                    browser.take_events(session, measure_pages.ERROR_EVENTS)
                    folder = f"{edition}/" if edition else ""
                    url = f"{address}{folder}search.html?q={urllib.parse.quote(query)}"
                    browser.send("Page.navigate", {"url": url}, session=session)
                    if not browser.wait_event("Page.loadEventFired", session, timeout=90):
                        raise TimeoutError(f"{url}: did not load in 90 s")
                    result = measure_pages.evaluate(browser, session, RESULTS, timeout=60)
                    if result is None:
                        raise TimeoutError(f"{url}: the search did not finish in 30 s")
                    errors = browser.take_events(session, measure_pages.ERROR_EVENTS)
                    pages = [link.split("#")[0] for link in result["links"]]
                    found[query] = {
                        "pages": list(dict.fromkeys(pages)),
                        "summary": result["summary"],
                        "errors": [e for e in map(measure_pages._error_text, errors) if e],
                    }
                    if screenshots is not None:
                        screenshots.mkdir(parents=True, exist_ok=True)
                        shot = browser.send(
                            "Page.captureScreenshot", {"format": "png"}, session=session
                        )
                        name = f"search_{edition or 'en'}_{len(found)}_{width}.png"
                        (screenshots / name).write_bytes(base64.b64decode(shot["data"]))
        finally:
            browser.close()
    return found


_ARTICLE = re.compile(r'<article class="bd-article">(.*?)</article>', re.S)
_HIDDEN = re.compile(r"<(script|style)\b.*?</\1>", re.S | re.I)


def page_text(page_html: str) -> str:
    """The text of a built page's article (what Sphinx indexed; navigation left out)."""
    body = "".join(_ARTICLE.findall(page_html))
    return html.unescape(re.sub(r"<[^>]+>", "", _HIDDEN.sub(" ", body)))


def pages_with(site: Path, edition: str, term: str) -> list[str]:
    """The pages of the ``edition`` whose article holds ``term`` (case aside), relative to the
    edition's folder; the search and index pages and the theme's files left out."""
    root = site / edition if edition else site
    found = []
    for page in sorted(root.rglob("*.html")):
        rel = page.relative_to(root).as_posix()
        if rel.startswith("_") or rel in ("search.html", "genindex.html"):
            continue
        if not edition and rel.split("/")[0] in TERMS:  # another edition's folder
            continue
        if term.lower() in page_text(page.read_text(errors="replace")).lower():
            found.append(rel)
    return found


def search_problems(site: Path) -> list[str]:
    """What the site check reports: a search term of :data:`TERMS` that misses a page whose
    text holds it, or finds nothing, or a search page that throws."""
    problems = []
    for edition, terms in TERMS.items():
        if not (site / edition / "search.html").exists():
            problems.append(f"{edition or 'the English edition'}: no search.html")
            continue
        try:
            results = search(site, list(terms), edition)
        except (TimeoutError, RuntimeError) as error:  # a page that did not load or finish
            problems.append(f"{edition or 'the English edition'}: search failed: {error}")
            continue
        for term in terms:
            found = results[term]
            expected = pages_with(site, edition, term)
            missed = [p for p in expected if p not in found["pages"]]
            where = f"{edition}/search.html" if edition else "search.html"
            if not expected:
                problems.append(f"{where}: no page holds {term!r} (the check's terms are stale)")
            if not found["pages"] or missed:
                problems.append(
                    f"{where}?q={term}: found {len(found['pages'])} pages, missed {missed} "
                    f"that hold it ({found['summary']!r})"
                )
            problems += [f"{where}?q={term}: a script failed: {e}" for e in found["errors"]]
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("queries", nargs="*", help="default: the site check's terms")
    parser.add_argument("--site", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--edition", default="ja", help='its folder in the site; "" for English')
    parser.add_argument("--screenshots", help="save each search's first screen here")
    parser.add_argument("--widths", type=int, nargs="+", default=[1280, 390])
    args = parser.parse_args(argv)
    site = Path(args.site)
    if not (site / args.edition / "search.html").exists():
        print(f"{site / args.edition}: no search.html (make book)", file=sys.stderr)
        return 2
    queries = args.queries or list(TERMS[args.edition])
    shots = Path(args.screenshots) if args.screenshots else None
    results = search(site, queries, args.edition, shots, tuple(args.widths))
    for query, result in results.items():
        print(f"{query}: {len(result['pages'])} pages: {', '.join(result['pages'])}")
        print(f"  {result['summary']}")
        for error in result["errors"]:
            print(f"  script error: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
