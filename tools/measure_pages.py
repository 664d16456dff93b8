"""Measure every page of a built book in headless Chromium, as a reader on a desktop and on a
phone sees it, in the light and the dark colour scheme.

Usage: python tools/measure_pages.py [_build/html] [--out report.json] [--widths 1280 390]
       [--modes light dark] [--pages 'notebooks/*.html' ...] [--max-height 18000]
       [--max-phone-height 33000] [--max-overflow 0] [--max-clipped 0] [--min-contrast 3]
       [--min-font 10] [--screenshots DIR]

One Chromium runs every page (driven through its DevTools protocol on a pipe, so nothing but
Chromium is needed), with scrollbars hidden, at each width (a desktop viewport, ``mobile``
off, so 390 px is the layout width of a 390-px phone screen). Each page is measured after its
load event, its web fonts and MathJax's typesetting. Per page and per width it reports:

- ``height``: the document's height in px (``documentElement.scrollHeight``), folds closed;
  the tallest page at the last width (a phone) is ``tallest_at_390`` in the summary, and
  ``--max-phone-height`` fails any page taller there;
- ``overflow``: how many px the page is wider than the screen: the largest right edge of
  any element not inside a box that scrolls or clips sideways, and the document's
  ``scrollWidth``, less the viewport's width (0 when the page fits), with the widest
  elements named in ``wide``; measured with every fold (``details``) open too, and the worse
  of the two kept;
- ``code_blocks``: the visible ``pre`` boxes (code cells, their outputs, literal blocks),
  counted with every fold open, since a reader may open one;
- ``code_wide``: those whose text is wider than their box (``scrollWidth > clientWidth``):
  the reader scrolls the box sideways to read a line, or loses its end. At 1280 px this is
  "clipped" (none may be), at 390 px "scrolls sideways"; ``code_wide_lines`` shows the
  longest line of the first few;
- ``tables_cut``: tables wider than their box where that box does not scroll sideways (a
  column is cut off);
- ``figure_scale``: the smallest ratio of an image's drawn width to its natural width (a
  matplotlib PNG's text shrinks by this factor; the text itself is not measured), and
  ``figure_scales`` every image's, in page order (images under 200 px wide left out);
- ``figures_wide``: figures (images, matplotlib's animations, canvases, videos) drawn wider
  than the column they stand in (their output box, or the article), so cut off or scrolled
  sideways: at 390 px each fails the check, since every figure is drawn to fit a phone;
- ``font_px``: the smallest type of the figures, in px as drawn: a figure's smallest type at
  its natural width (``data-font-px``, recorded by ``companion.figures`` and
  ``companion.viz``) times its drawn width over its natural width; ``fonts_small``, the
  figures whose type is under ``--min-font`` (10 px, ``companion.figures.MIN_FONT_PX``), and
  ``fonts_unknown``, PNG outputs that record no type size: at 390 px each fails the check;
- ``console_errors``: the page's uncaught script exceptions and ``console.error`` calls
  (each fails the check);
- ``controls`` and ``low_contrast``: the visible controls (buttons, menus, inputs, fold
  toggles, quiz choices, cards, links styled as buttons) and those whose text or icon
  colour has a contrast ratio under ``--min-contrast`` against the background drawn behind
  it (its own or its nearest ancestor's, composited): invisible or nearly so.

The JSON report holds ``pages`` (per page, per mode, per width), ``summary`` (the worst of
each measure over the pages) and ``failures``: each threshold given that a page breaks. The
exit status is 1 if there is a failure, 2 if Chromium is missing or a page did not load.
"""

import argparse
import fcntl
import fnmatch
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from companion.figures import MIN_FONT_PX

ROOT = Path(__file__).resolve().parents[1]
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser_path() -> str | None:
    """The first Chromium of :data:`BROWSERS` on ``PATH``, ``None`` if there is none (the one
    finder of the site check, the browser tests and the tools)."""
    return next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


def dump_dom(page: Path, query: str = "", budget_ms: int = 5000, timeout: float = 180) -> str:
    """The DOM headless Chromium (:func:`browser_path`) leaves after running the local file
    ``page`` (with the URL ``query``, e.g. ``"?selftest=1"``) for ``budget_ms`` of virtual
    time: what the page's scripts drew, for a check to count. ``""`` if Chromium printed none.

    Raises:
        FileNotFoundError: when there is no Chromium on ``PATH``.
    """
    browser = browser_path()
    if browser is None:
        raise FileNotFoundError("no Chromium on PATH (chromium, chromium-browser, google-chrome)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    return subprocess.run(
        [browser, *flags, f"--virtual-time-budget={budget_ms}", "--dump-dom"]
        + [page.resolve().as_uri() + query],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    ).stdout


#: Run in each page once it is ready: ``(openFolds, maxList, minContrast, minFont) ->
#: measures``.
PROBE = (Path(__file__).with_name("measure_pages.js")).read_text()

#: Resolves once the page has drawn what its scripts draw: fonts loaded, MathJax typeset.
READY = """
new Promise(function (resolve) {
  var fonts = document.fonts ? document.fonts.ready : Promise.resolve();
  fonts.then(function () {
    var mj = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
    return mj || null;
  }).then(function () { setTimeout(function () { resolve(true); }, %d); });
})
"""


def _above_9(fd: int) -> int:
    """``fd`` moved to the lowest free number above 9 (the descriptor is inherited)."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


class Browser:
    """Headless Chromium driven through the DevTools protocol on a pipe (fds 3 and 4)."""

    def __init__(self, executable: str):
        self.profile = tempfile.TemporaryDirectory()
        to_browser_r, self._w = os.pipe()
        self._r, from_browser_w = os.pipe()
        # The child's ends move above fd 4 first, so that putting one on fd 3 or 4 cannot
        # overwrite the other.
        to_browser_r, from_browser_w = _above_9(to_browser_r), _above_9(from_browser_w)
        args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--disable-background-networking",
            "--disable-extensions",
            "--no-first-run",
            "--remote-debugging-pipe",
            f"--user-data-dir={self.profile.name}",
            "about:blank",
        ]

        # A shell puts the child's ends on fds 3 and 4 and closes the originals: a Python
        # function run between fork and exec would also run the parent's fork handlers
        # (JAX, once imported, warns from its handler that forking a threaded process is unsafe).
        wiring = 'r=$1 w=$2; shift 2; exec 3<&"$r" 4>&"$w" {r}<&- {w}>&- "$@"'
        self.proc = subprocess.Popen(
            ["bash", "-c", wiring, "browser", str(to_browser_r), str(from_browser_w)]
            + [executable, *args],
            pass_fds=(to_browser_r, from_browser_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._events = []
        self._id = 0

    def _read(self, timeout: float) -> dict | None:
        end = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                return None
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(
        self,
        method: str,
        params: dict | None = None,
        session: str | None = None,
        timeout: float = 60,
    ) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._w, json.dumps(message).encode() + b"\0")
        end = time.monotonic() + timeout
        while True:
            reply = self._read(max(0.0, end - time.monotonic()))
            if reply is None:
                raise TimeoutError(f"{method}: no answer in {timeout} s")
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._events.append(reply)

    def wait_event(self, method: str, session: str, timeout: float = 60) -> bool:
        end = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == method and event.get("sessionId") == session:
                    del self._events[i]
                    return True
            reply = self._read(max(0.0, end - time.monotonic()))
            if reply is None:
                return False
            self._events.append(reply)

    def take_events(self, session: str, methods: tuple[str, ...]) -> list[dict]:
        """The events of ``session`` named in ``methods`` received so far (those not yet read
        are read first), removed from the queue."""
        while (reply := self._read(0.05)) is not None:  # what has arrived, not waited for
            self._events.append(reply)
        taken = [
            e for e in self._events if e.get("method") in methods and e.get("sessionId") == session
        ]
        self._events = [e for e in self._events if not any(e is t for t in taken)]
        return taken

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._r)
        os.close(self._w)
        self.profile.cleanup()


#: DevTools events that mean a script on the page failed: an uncaught exception, or
#: ``console.error``.
ERROR_EVENTS = ("Runtime.exceptionThrown", "Runtime.consoleAPICalled")


def _error_text(event: dict) -> str | None:
    """A script error's message from its DevTools event, or None for a console call that is
    not ``console.error``."""
    params = event.get("params", {})
    if event.get("method") == "Runtime.exceptionThrown":
        details = params.get("exceptionDetails", {})
        described = details.get("exception", {}).get("description", "")
        return (described or details.get("text", "")).splitlines()[0][:200]
    if params.get("type") != "error":
        return None
    args = params.get("args", [])
    return " ".join(str(a.get("value", a.get("description", ""))) for a in args)[:200]


def open_tab(browser: Browser) -> str:
    """A new tab, attached; returns its session id."""
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})
    session = session["sessionId"]
    browser.send("Page.enable", session=session)
    browser.send("Runtime.enable", session=session)
    return session


def evaluate(browser: Browser, session: str, expression: str, timeout: float = 60):
    result = browser.send(
        "Runtime.evaluate",
        {"expression": expression, "returnByValue": True, "awaitPromise": True},
        session=session,
        timeout=timeout,
    )
    if "exceptionDetails" in result:
        raise RuntimeError(f"the probe failed: {result['exceptionDetails']}")
    return result["result"].get("value")


def measure(
    browser: Browser,
    session: str,
    url: str,
    width: int,
    mode: str,
    settle_ms: int,
    max_list: int,
    min_contrast: float,
    screenshot: Path | None = None,
    screenshot_height: int = 0,
    min_font: float = MIN_FONT_PX,
) -> dict:
    """One page at one width in one colour scheme: the measures of ``PROBE``, folds closed
    (``height``, ``overflow``) and open (the rest; ``overflow`` keeps the worse)."""
    browser.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    browser.send(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": mode}]},
        session=session,
    )
    browser.take_events(session, ERROR_EVENTS)  # the previous page's, if any
    browser.send("Page.navigate", {"url": url}, session=session)
    if not browser.wait_event("Page.loadEventFired", session, timeout=90):
        raise TimeoutError(f"{url}: did not load in 90 s")
    evaluate(browser, session, READY % settle_ms, timeout=90)
    errors = [_error_text(e) for e in browser.take_events(session, ERROR_EVENTS)]
    args = f"{max_list}, {min_contrast}, {min_font}"
    closed = evaluate(browser, session, f"({PROBE})(false, {args})")
    if screenshot is not None:
        height = min(closed["height"], screenshot_height or closed["height"])
        shot = browser.send(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            },
            session=session,
            timeout=120,
        )
        import base64

        screenshot.write_bytes(base64.b64decode(shot["data"]))
    opened = evaluate(browser, session, f"({PROBE})(true, {args})")
    opened["height"] = closed["height"]
    if closed["overflow"] >= opened["overflow"]:
        opened["overflow"], opened["wide"] = closed["overflow"], closed["wide"]
    for key in ("controls", "low_contrast", "low_contrast_count"):
        opened[key] = closed[key]
    opened["console_errors"] = [e for e in errors if e is not None]
    return opened


def pages_of(site: Path, patterns: list[str]) -> list[Path]:
    """The book's pages under ``site``: every HTML file but the theme's, search, the index
    and redirects, filtered by ``patterns`` (globs relative to ``site``) when given."""
    found = []
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        if rel.startswith("_") or "/_" in rel or page.name in ("search.html", "genindex.html"):
            continue
        if 'http-equiv="Refresh"' in page.read_text(errors="replace")[:2000]:
            continue
        if patterns and not any(fnmatch.fnmatch(rel, p) for p in patterns):
            continue
        found.append(page)
    return found


def run(
    site: Path,
    widths=(1280, 390),
    modes=("light", "dark"),
    patterns=(),
    settle_ms=300,
    max_list=5,
    screenshots: Path | None = None,
    screenshot_height=0,
    min_contrast=3.0,
    min_font=MIN_FONT_PX,
) -> dict:
    """Measure every page of ``site``; returns ``{"pages": {page: {mode: {width: ...}}}}``."""
    executable = browser_path()
    if executable is None:
        raise FileNotFoundError("no Chromium on PATH (chromium, chromium-browser, google-chrome)")
    browser = Browser(executable)
    report = {"site": str(site), "widths": list(widths), "modes": list(modes), "pages": {}}
    try:
        session = open_tab(browser)
        for page in pages_of(site, list(patterns)):
            rel = page.relative_to(site).as_posix()
            report["pages"][rel] = {}
            for mode in modes:
                report["pages"][rel][mode] = {}
                for width in widths:
                    shot = None
                    if screenshots is not None:
                        screenshots.mkdir(parents=True, exist_ok=True)
                        shot = screenshots / f"{rel.replace('/', '_')[:-5]}_{width}_{mode}.png"
                    m = measure(
                        browser,
                        session,
                        page.resolve().as_uri(),
                        width,
                        mode,
                        settle_ms,
                        max_list,
                        min_contrast,
                        shot,
                        screenshot_height,
                        min_font,
                    )
                    report["pages"][rel][mode][str(width)] = m
    finally:
        browser.close()
    return report


def summarise(
    report: dict,
    max_height=None,
    height_pages="notebooks/*",
    max_overflow=None,
    max_clipped=None,
    clip_width=1280,
    narrow_width=390,
    max_phone_height=None,
    phone_height_pages="*",
) -> dict:
    """Adds ``summary`` (the worst page for each measure) and ``failures`` to ``report``.

    ``max_height`` is the most a page of ``height_pages`` may take at ``clip_width``,
    ``max_phone_height`` the most a page of ``phone_height_pages`` may take at
    ``narrow_width``; each page's height is the taller of its colour schemes."""
    failures = []
    summary = {"pages": len(report["pages"])}
    rows = [
        (page, mode, int(width), m)
        for page, modes in report["pages"].items()
        for mode, widths in modes.items()
        for width, m in widths.items()
    ]
    tallest = max(
        (
            (m["height"], page)
            for page, _, w, m in rows
            if w == clip_width and fnmatch.fnmatch(page, height_pages)
        ),
        default=None,
    )
    if tallest is not None:
        summary[f"tallest_at_{clip_width}"] = {"page": tallest[1], "height": tallest[0]}
    phone = {}
    for page, _, width, m in rows:
        if width == narrow_width and fnmatch.fnmatch(page, phone_height_pages):
            phone[page] = max(phone.get(page, 0), m["height"])
    if phone:
        page = max(phone, key=phone.get)
        summary[f"tallest_at_{narrow_width}"] = {"page": page, "height": phone[page]}
        summary[f"heights_at_{narrow_width}"] = dict(sorted(phone.items(), key=lambda i: -i[1]))
    for width in sorted({w for _, _, w, _ in rows}, reverse=True):
        at = [(page, mode, m) for page, mode, w, m in rows if w == width]
        summary[str(width)] = {
            "pages_wider_than_screen": sorted({p for p, _, m in at if m["overflow"] > 0}),
            "widest_overflow": max((m["overflow"] for _, _, m in at), default=0),
            "code_blocks": sum(m["code_blocks"] for _, mode, m in at if mode == at[0][1]),
            "code_wide": sum(m["code_wide"] for _, mode, m in at if mode == at[0][1]),
            "tables_cut": sum(len(m["tables_cut"]) for _, mode, m in at if mode == at[0][1]),
            "smallest_figure_scale": min(
                (m["figure_scale"] for _, _, m in at if m["figure_scale"] is not None), default=None
            ),
            "smallest_font_px": min(
                ((m["font_px"], p) for p, _, m in at if m.get("font_px") is not None),
                default=None,
            ),
            "pages_with_script_errors": sorted({p for p, _, m in at if m.get("console_errors")}),
            "low_contrast_controls": {
                f"{p} ({mode})": m["low_contrast"] for p, mode, m in at if m["low_contrast"]
            },
        }
    # A page's height, once: the taller of its colour schemes (they differ by a few px).
    heights = {}
    for page, _, width, m in rows:
        if width == clip_width and fnmatch.fnmatch(page, height_pages):
            heights[page] = max(heights.get(page, 0), m["height"])
    for page, height in heights.items():
        if max_height is not None and height > max_height:
            failures.append(
                f"{page}: {height:,} px tall at {clip_width} px, over the {max_height:,} a "
                "chapter may take"
            )
    for page, height in phone.items():
        if max_phone_height is not None and height > max_phone_height:
            failures.append(
                f"{page}: {height:,} px tall at {narrow_width} px, over the "
                f"{max_phone_height:,} a page may take on a phone"
            )
    for page, mode, width, m in rows:
        if m["theme"] and m["theme"] != mode:
            failures.append(f"{page} ({mode}, {width} px): the theme drew {m['theme']!r}")
        if max_overflow is not None and width == narrow_width and m["overflow"] > max_overflow:
            failures.append(
                f"{page} ({mode}): {m['overflow']} px wider than the screen at "
                f"{width} px: {m['wide'][:3]}"
            )
        if max_clipped is not None and width == clip_width and m["code_wide"] > max_clipped:
            failures.append(
                f"{page} ({mode}): {m['code_wide']} code boxes narrower than their "
                f"text at {width} px: {m['code_wide_lines'][:3]}"
            )
        if width == narrow_width and m.get("figures_wide"):
            failures.append(
                f"{page} ({mode}): figures wider than their column at {width} px: "
                f"{m['figures_wide'][:3]}"
            )
        if width == narrow_width and m.get("fonts_small"):
            failures.append(
                f"{page} ({mode}): figures whose type is under the legible size at {width} px "
                f"(px as drawn): {m['fonts_small'][:3]}"
            )
        if width == narrow_width and m.get("fonts_unknown"):
            failures.append(
                f"{page} ({mode}): PNG figures that record no type size (show them with "
                f"companion.figures.show_panels): {m['fonts_unknown'][:3]}"
            )
        if width == narrow_width and m["tables_cut"]:
            failures.append(f"{page} ({mode}): tables cut off at {width} px: {m['tables_cut']}")
        for error in m.get("console_errors", []):
            failures.append(f"{page} ({width} px): a script failed: {error}")
        for ratio, control in m["low_contrast"]:
            failures.append(
                f"{page} ({mode}, {width} px): control with contrast {ratio}: {control}"
            )
    # The same page at the same width in two modes reports the same failure twice: keep one.
    report["summary"] = summary
    report["failures"] = list(dict.fromkeys(failures))
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--out", help="write the JSON report here (default: standard output)")
    add = parser.add_argument
    add("--widths", type=int, nargs="+", default=[1280, 390], help="desktop first, phone last")
    add("--modes", nargs="+", default=["light", "dark"], choices=["light", "dark"])
    add("--pages", nargs="*", default=[], help="globs in the site, e.g. 'notebooks/07*.html'")
    add("--max-height", type=int, help="px a chapter may take at the first width")
    add("--height-pages", default="notebooks/*", help="the pages --max-height applies to")
    add("--max-phone-height", type=int, help="px any page may take at the last width")
    add("--max-overflow", type=int, help="px a page may be wider than the last width")
    add("--max-clipped", type=int, help="code boxes narrower than their text, at the first width")
    add("--min-contrast", type=float, default=3.0, help="below it a control fails")
    add("--min-font", type=float, default=MIN_FONT_PX, help="px: smaller figure type fails")
    add("--settle-ms", type=int, default=300, help="wait after MathJax and the fonts")
    add("--screenshots", help="save a screenshot per page, width and mode in this folder")
    add("--screenshot-height", type=int, default=0, help="px of each page to capture (0: all)")
    args = parser.parse_args(argv)
    site = Path(args.site)
    if not site.is_dir():
        print(f"{site}: no built site", file=sys.stderr)
        return 2
    try:
        report = run(
            site,
            args.widths,
            args.modes,
            args.pages,
            args.settle_ms,
            screenshots=Path(args.screenshots) if args.screenshots else None,
            screenshot_height=args.screenshot_height,
            min_contrast=args.min_contrast,
            min_font=args.min_font,
        )
    except (FileNotFoundError, TimeoutError, RuntimeError) as error:
        print(f"measure_pages: {error}", file=sys.stderr)
        return 2
    summarise(
        report,
        args.max_height,
        args.height_pages,
        args.max_overflow,
        args.max_clipped,
        clip_width=args.widths[0],
        narrow_width=args.widths[-1],
        max_phone_height=args.max_phone_height,
    )
    text = json.dumps(report, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    else:
        print(text)
    for failure in report["failures"]:
        print(failure, file=sys.stderr)
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
