"""The built book seen the way a reader sees it: headless Chromium, offline, on a
desktop (1280x800) and on a phone (390x844).

Runs after `jupyter-book build` (``.ci/run`` does both): serves ``_build/html`` on
localhost, blocks every request that leaves localhost (a classroom without internet),
opens every page at both widths and checks what a reader would notice: every control
shown changes its figure (none that cannot), the chapter list is one tap away on a
phone and the sidebar toggle works on a desktop, nothing scrolls sideways, no input
cell or output line hides behind a scroll bar on a desktop, figures keep their aspect
ratio, are sharp, their text readable and their alt text meaningful, the attention
views answer hover and click, the explorers' script is loaded once, no request leaves
the book (the search index only on the search page), no console error, no 404, and
each page stays light.  On a phone no figure's text is under 9 CSS px (PNG figures
carry their smallest text, d2lmini.figure_layout; the book gives wide ones a phone
layout).  The live models (``d2l.live``): a box answers typed dates, prompts and
masked sentences as PyTorch does on the shipped weights (``window.d2lModels``, to
1e-9 in float64), over HTTP and from file://, its weights loaded only when asked
(the page stays within its budget until then, within 5 MB after).  Book-wide: at least five numbered, captioned block diagrams;
search snippets without raw TeX; no empty index page.  Screenshots go to
``_build/screenshots/``.  Skipped when there is no built book or no Chromium, unless
``D2LMINI_BROWSER_TEST=1`` (set by CI) turns a skip into a failure.
Run with ``-s`` to see each page's numbers (bytes fetched, controls that change a figure).
"""
from __future__ import annotations

import functools
import http.server
import os
import pathlib
import re
import shutil
import threading
import time

import pytest
import yaml

import live_checks

ROOT = pathlib.Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
TOC = [c["file"] for c in yaml.safe_load((ROOT / "_toc.yml").read_text())["chapters"]]
NOTEBOOKS = [f for f in TOC if (ROOT / f).with_suffix(".ipynb").exists()]
PAGES = ["intro"] + TOC
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REQUIRED = os.environ.get("D2LMINI_BROWSER_TEST") == "1"
DESKTOP, PHONE = {"width": 1280, "height": 800}, {"width": 390, "height": 844}
PAGE_BUDGET = 3_000_000      # bytes fetched by one page, cold cache
LIVE_BUDGET = 5_000_000      # ... with its live model loaded
BOOK_BUDGET = 30_000_000     # bytes of the whole built book (16 chapters, their
                             # downloadable notebooks, 16 Solutions pages)
MIN_TEXT_PX = 9              # figure text as displayed
ASPECT_TOLERANCE = 0.02      # an image's shown aspect ratio vs its own
MIN_DIAGRAMS = 5             # numbered block diagrams (d2l.diagram) in the book
VIEW_PAGES = ["chapters/08_transformer", "chapters/12_gpt"]  # head and model views


def _live_models(path: str) -> list[str]:
    """The live models a page's notebook shows (``d2l.live("name")`` in a code cell)."""
    import json
    nb = (ROOT / path).with_suffix(".ipynb")
    if not nb.exists():
        return []
    cells = json.loads(nb.read_text())["cells"]
    src = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return sorted(set(re.findall(r"\bd2l\.live\(\s*[\"']([a-z]+)[\"']", src)))


LIVE_PAGES = {p: _live_models(p) for p in NOTEBOOKS if _live_models(p)}


def _need(ok: bool, why: str) -> None:
    if not ok:
        (pytest.fail if REQUIRED else pytest.skip)(why)


@pytest.fixture(scope="module")
def browser():
    _need((HTML / "index.html").exists(), "no built book: run jupyter-book build first")
    _need(CHROMIUM is not None, "no chromium on PATH")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _need(False, "playwright is not installed")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    handler = functools.partial(Quiet, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b, f"http://127.0.0.1:{server.server_address[1]}"
        b.close()
    server.shutdown()


class Visit:
    """One page opened offline in a fresh context (cold cache): what it fetched, what
    was blocked, what failed, what the console said."""

    def __init__(self, browser, path: str, viewport: dict):
        b, base = browser
        self.context = b.new_context(viewport=viewport, device_scale_factor=2,
                                     is_mobile=viewport["width"] < 500,
                                     has_touch=viewport["width"] < 500)
        self.page = page = self.context.new_page()
        self.errors, self.blocked, self.failed, self.bytes = [], [], [], {}
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("requestfailed", lambda r: r.url.startswith(base) and self.failed.append(r.url))

        def response(r):
            if r.status >= 400:
                self.failed.append(f"{r.status} {r.url}")
            else:
                try:
                    self.bytes[r.url] = len(r.body())
                except Exception:  # redirects, aborted bodies
                    pass
        page.on("response", response)

        def route(r):
            if r.request.url.startswith(base) or r.request.url.startswith("data:"):
                return r.continue_()
            self.blocked.append(r.request.url)
            return r.abort()
        page.route("**/*", route)
        page.goto(f"{base}/{path}", wait_until="load")   # deferred scripts have run
        page.wait_for_load_state("networkidle")
        if page.evaluate("() => document.querySelector('.math, mjx-container') !== null"):
            # a busy machine may not have started MathJax yet: wait for it, then for it
            # to typeset
            page.wait_for_function("() => window.MathJax && MathJax.startup && "
                                   "MathJax.startup.promise", timeout=30000)
            page.evaluate("() => MathJax.startup.promise")
        page.wait_for_load_state("networkidle")

    def close(self):
        self.context.close()

    def check_clean(self):
        assert not self.blocked, f"requests off the book's host: {self.blocked}"
        assert not self.failed, f"failed requests (404s): {self.failed}"
        assert not self.errors, f"console errors: {self.errors}"
        total = sum(self.bytes.values())
        assert total <= PAGE_BUDGET, f"{total:,} bytes fetched (budget {PAGE_BUDGET:,})"
        return total


def _figure_markup(fig) -> str:
    return fig.evaluate("e => e.querySelector('.d2l-plot').innerHTML")


FIGURES = ".d2l-fig, .d2l-view"


def exercise_controls(page, shots_prefix=None) -> tuple[int, int, list[str], int]:
    """Move every shown control of every in-page figure and attention view; -> (controls
    that changed the figure, controls moved, descriptions of those that did not, shown
    controls that are disabled: a control that cannot change anything is not shown)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    changed, total, dead, disabled = 0, 0, [], []
    for n, fig in enumerate(page.locator(FIGURES).all()):
        fig.scroll_into_view_if_needed()
        controls = [c for c in fig.locator("button, input[type=range], select").all()
                    if c.is_visible()]
        pressed = [c for c in controls if c.get_attribute("aria-pressed") == "true"]
        for c in controls + pressed:  # the current kind's button is tried again at the end
            if c.is_disabled():
                disabled.append(c.evaluate("e => e.getAttribute('aria-label') || e.textContent"))
                continue
            what = c.evaluate("e => e.tagName + ' ' + (e.getAttribute('aria-label') || e.textContent)")
            tag = c.evaluate("e => e.tagName")
            before = _figure_markup(fig)
            if tag == "BUTTON":
                if c.get_attribute("aria-pressed") == "true":
                    continue  # the current kind: pressed again at the end, once it is not
                c.click()
                try:  # a play button shows the next frames: wait for the first change
                    page.wait_for_function("([e, b]) => e.querySelector('.d2l-plot').innerHTML !== b",
                                           arg=[fig.element_handle(), before], timeout=1500)
                except PlaywrightTimeout:
                    pass  # counted as a control that changes nothing, below
            elif tag == "SELECT":
                options = c.evaluate("e => Array.from(e.options).map(o => o.value)")
                chosen = c.evaluate("e => Array.from(e.selectedOptions).map(o => o.value)")
                other = [o for o in options if o not in chosen]
                if not other:
                    continue
                c.select_option(other[-1] if c.evaluate("e => e.multiple") else other[0])
            else:
                lo, hi = float(c.get_attribute("min")), float(c.get_attribute("max"))
                v = float(c.input_value())
                target = hi if v != hi else lo
                c.evaluate("(e, t) => { e.value = t; e.dispatchEvent(new Event('input', {bubbles: true})); }",
                           str(int(target) if target == int(target) else target))
            total += 1
            if _figure_markup(fig) != before:
                changed += 1
            else:
                dead.append(what)
            if tag == "BUTTON" and "pause" in c.inner_text():
                c.click()  # stop a playing animation before the next control
        heat = fig.locator("svg image")
        if heat.count() and fig.evaluate("e => e.matches('.d2l-fig')"):  # exact value on hover
            readout = fig.locator(".d2l-readout")
            before = readout.inner_text()
            heat.first.hover()
            got = readout.inner_text()
            assert got != before and re.search(r": (-?[0-9.e+-]+|masked|-)$", got), got
        if shots_prefix:
            shot(page, fig, SHOTS / f"{shots_prefix}-figure{n}.png")
    return changed, total, dead, disabled


def shot(page, element, path) -> None:
    """A picture of one element; of one taller than the window, its top, as much as the
    window shows (Chromium never finds such an element "stable" for an element
    screenshot, and a full-page picture of a long chapter is slow on a loaded machine)."""
    box = element.bounding_box()
    height = page.viewport_size["height"]
    if box["height"] <= height:
        return element.screenshot(path=str(path))
    element.evaluate("e => e.scrollIntoView({block: 'start'})")
    box = element.bounding_box()                    # now relative to the window's top
    top = max(0.0, box["y"])
    page.screenshot(path=str(path), clip={"x": box["x"], "y": top, "width": box["width"],
                                          "height": height - top})


def check_figures_sharp_and_readable(page) -> None:
    """PNGs stored at >= 2x their displayed width; in-page SVG text >= 9 px displayed
    (and on a phone the text of PNG figures too, see figure_text_on_phone)."""
    # a phone's picture is a "2x" source: its naturalWidth is half its pixels
    soft = page.evaluate("""() => Array.from(document.querySelectorAll('.cell_output img'))
        .filter(i => i.complete && i.clientWidth > 40 &&
                     i.naturalWidth * (i.currentSrc.includes('.phone.') ? 2 : 1) < 1.9 * i.clientWidth)
        .map(i => i.src.split('/').pop() + ' ' + i.naturalWidth + 'px shown at ' + i.clientWidth)""")
    assert not soft, f"figures stored at less than 2x their displayed width: {soft}"
    small = page.evaluate("""(m) => Array.from(document.querySelectorAll(
        '.d2l-fig svg, .d2l-view svg, .d2l-live svg')).flatMap(s => {
        const vb = s.viewBox.baseVal, k = vb && vb.width ? s.getBoundingClientRect().width / vb.width : 1;
        return Array.from(s.querySelectorAll('text')).filter(t => t.textContent.trim())
          .map(t => parseFloat(t.getAttribute('font-size') || getComputedStyle(t).fontSize || 11) * k)
          .filter(px => px < m);
      })""", MIN_TEXT_PX - 0.05)
    assert not small, f"{len(small)} figure labels below {MIN_TEXT_PX} px, smallest {min(small):.1f} px"
    if page.viewport_size["width"] < 500:
        tiny = figure_text_on_phone(page)
        assert not tiny, f"{len(tiny)} figures show text below {MIN_TEXT_PX} px on a phone: {tiny[:4]}"


def figure_text_on_phone(page) -> list[str]:
    """PNG figures whose smallest text, as displayed, is below 9 CSS px: each inline
    figure says its smallest text at its own width (data-d2l-text, data-d2l-w; the
    phone's picture: data-d2l-phone-*), the page says how wide it is shown."""
    return page.evaluate("""(m) => Array.from(document.querySelectorAll('article img[data-d2l-text]'))
        .filter(i => i.complete && i.clientWidth > 0).map(i => {
          const ph = i.dataset.d2lPhoneText !== undefined && i.currentSrc.includes('.phone.');
          const t = +(ph ? i.dataset.d2lPhoneText : i.dataset.d2lText), w = +(ph ? i.dataset.d2lPhoneW : i.dataset.d2lW);
          return [i.src.split('/').pop().slice(0, 12), t * i.clientWidth / w, i.clientWidth];
        }).filter(x => x[1] < m).map(x => x[0] + ' ' + x[1].toFixed(1) + ' px text at ' + x[2] + ' px')""",
                         MIN_TEXT_PX - 0.05)


def check_images_keep_aspect(page) -> None:
    """Every image is shown at its own aspect ratio (within 2 %), whatever the width."""
    bad = page.evaluate("""(tol) => Array.from(document.querySelectorAll('article img'))
        .filter(i => i.complete && i.naturalWidth > 0 && i.clientWidth > 20 && i.clientHeight > 0)
        .map(i => [i.src.split('/').pop().slice(0, 16), i.clientWidth, i.clientHeight,
                   (i.clientWidth / i.clientHeight) / (i.naturalWidth / i.naturalHeight)])
        .filter(x => Math.abs(x[3] - 1) > tol)
        .map(x => x[0] + ' ' + x[1] + 'x' + x[2] + ' (' + x[3].toFixed(2) + 'x its ratio)')""",
                        ASPECT_TOLERANCE)
    assert not bad, f"{len(bad)} figures stretched: {bad[:4]}"


def check_alt_text(page) -> None:
    """Every figure says what it shows: alt text, not a file name; SVG figures labelled."""
    bad = page.evaluate("""() => Array.from(document.querySelectorAll('article .cell_output img, article figure img'))
        .map(i => i.getAttribute('alt') || '')
        .filter(a => a.trim().length <= 15 || /\\.(png|jpe?g|svg)$|^[\\w/.-]+$/.test(a.trim()))""")
    assert not bad, f"{len(bad)} figures without meaningful alt text: {bad[:3]}"
    unlabelled = page.locator(".d2l-fig svg[role=img]:not([aria-label]), "
                              ".d2l-view svg[role=img]:not([aria-label])").count()
    assert unlabelled == 0, f"{unlabelled} in-page figures without a label"


def check_no_scrolling_code(page) -> None:
    """On a desktop every input cell and every output (printouts, listings of d2lmini's
    source, progress lines) shows whole (the chapters and the package keep lines within
    88 columns): nothing hides behind a sideways scroll."""
    wide = page.evaluate("""() => Array.from(document.querySelectorAll('.cell_input pre, .cell_output pre'))
        .filter(e => e.scrollWidth > e.clientWidth + 1)
        .map(e => e.textContent.split('\\n').filter(l => l.length > 88)[0] || e.textContent.slice(0, 60))""")
    assert not wide, f"{len(wide)} code or output boxes scroll sideways, e.g. {wide[:3]}"


def check_assets_once(page) -> None:
    """The explorers' and views' script and CSS: loaded once per page, as files."""
    inline = page.locator("script[data-d2l-asset], style[data-d2l-asset]").count()
    assert inline == 0, f"{inline} inline copies of the explorers' script/CSS"
    srcs = page.evaluate("""() => Array.from(document.querySelectorAll(
        'script[src*="d2lmini/"], link[href*="d2lmini/"]')).map(e => (e.src || e.href).split('?')[0])""")
    assert len(srcs) == len(set(srcs)), f"loaded twice: {srcs}"
    if page.locator(".d2l-fig").count():
        assert any(s.endswith("/webfig.js") for s in srcs), srcs
    if page.locator(".d2l-view").count():
        assert any(s.endswith("/views.js") for s in srcs), srcs


def check_views_respond(page, required: bool) -> int:
    """Head views: hovering (or tapping) a token keeps only its lines and reads their
    weights; model views: clicking a thumbnail opens it, the pointer reads a weight."""
    heads = page.locator(".d2l-view[data-d2lview=head]").all()
    models = page.locator(".d2l-view[data-d2lview=model]").all()
    if required:
        assert heads and models, f"{len(heads)} head views and {len(models)} model views"
    for v in heads:
        v.scroll_into_view_if_needed()
        lines = v.locator(".d2l-lines line").count()
        assert lines > 0, "a head view without lines"
        tok = v.locator(".d2l-token[data-side=q]").nth(0)
        if page.viewport_size["width"] < 500:
            tok.tap()
        else:
            tok.hover()
        page.wait_for_timeout(100)
        state = v.get_attribute("data-state")
        assert '"focus":["q",0]' in state, state
        assert v.locator(".d2l-lines line").count() <= lines
        assert re.search(r"attends to .*head \d+: '.*' [01](\.\d+)?",
                         v.locator(".d2l-readout").inner_text())
        if page.viewport_size["width"] < 500:
            tok.tap()  # let go
    for v in models:
        v.scroll_into_view_if_needed()
        thumbs = v.locator(".d2l-thumb")
        assert thumbs.count() >= 1
        thumbs.last.click()
        page.wait_for_timeout(100)
        big = v.locator(".d2l-scroll image")
        assert big.count() == 1, "clicking a head does not open it"
        big.hover()
        assert re.search(r"layer \d+, head \d+: query .*: ([01](\.\d+)?|masked)$",
                         v.locator(".d2l-readout").inner_text())
    return len(heads) + len(models)


def check_no_hidden_output(page) -> None:
    """At desktop width no printed line hides behind a sideways scroll.  Source listings
    (d2l.show_source, an HTML output) scroll as code does; what a cell prints fits."""
    hidden = page.evaluate("""() => Array.from(document.querySelectorAll(
            '.cell_output .output.stream, .cell_output .output.stream pre, .cell_output .output.text_plain pre'))
        .filter(e => e.scrollWidth > e.clientWidth + 2).map(e => e.textContent.slice(0, 60))""")
    assert not hidden, f"output lines behind a sideways scroll: {hidden[:3]}"


def check_no_raw_tex(page) -> None:
    text = page.evaluate("""() => { const a = document.querySelector('article').cloneNode(true);
        a.querySelectorAll('pre, code, .cell_input, mjx-container, script, style').forEach(e => e.remove());
        return a.innerText; }""")
    assert "$$" not in text, "raw $$ on the page"
    for cmd in ("\\mathbf", "\\frac", "\\sqrt", "\\sum", "\\dots", "\\top", "\\mathrm", "\\text{"):
        assert cmd not in text, f"raw TeX {cmd!r} on the page"


def check_math(page) -> None:
    n_math = page.locator("div.math, span.math").count()
    if n_math:
        assert page.locator("mjx-container").count() >= n_math, "math was not typeset"


def check_navigation_order(page, chapter: str) -> None:
    from urllib.parse import urljoin
    nav = [a.get_attribute("href") for a in page.locator("nav.bd-links a.reference.internal").all()]
    here = page.url.split("#")[0]
    # each link resolved against this page, matched to a top-level entry of _toc.yml by
    # its whole path (a Solutions page shares its chapter's file name)
    resolved = [here if h == "#" else urljoin(here, h).split("#")[0] for h in nav]
    listed = [next((t for t in TOC if r.endswith("/" + t + ".html")), None) for r in resolved]
    order = [o for o in listed if o]
    assert order == TOC, f"navigation order {listed}"


def sidebar_toggle_works_on_desktop(page) -> None:
    side = page.locator("#pst-primary-sidebar")
    assert side.is_visible(), "the chapter list is not shown on a desktop"
    toggle = page.locator(".primary-toggle:visible").first
    toggle.click()
    page.wait_for_timeout(300)
    assert not side.is_visible(), "the sidebar toggle does not hide the chapter list"
    toggle.click()
    page.wait_for_timeout(300)
    assert side.is_visible(), "the sidebar toggle does not bring the chapter list back"


def chapter_list_one_tap_away(page, shot: str) -> int:
    page.evaluate("() => window.scrollTo(0, 0)")
    links = page.locator("#pst-primary-sidebar nav.bd-links a.reference.internal")
    assert not links.first.is_visible() or not _in_view(page, links.first), \
        "a phone should see the page, not the chapter list, first"
    toggles = page.locator(".primary-toggle:visible")
    assert toggles.count() >= 1, "no visible ☰ on a phone"
    toggles.first.tap()
    page.wait_for_timeout(400)
    listed = [a for a in links.all() if a.is_visible()]
    shown = [a for a in listed if _in_view(page, a)]
    # the drawer lists every page; a phone's screen shows the first dozen, the rest scroll
    assert len(listed) >= len(TOC) - 1, f"the drawer lists {len(listed)} pages of {len(TOC)}"
    assert len(shown) >= min(12, len(TOC) - 1), f"one tap shows {len(shown)} chapter links"
    page.screenshot(path=shot)
    page.keyboard.press("Escape")
    page.wait_for_timeout(300)
    assert not _in_view(page, links.first), "the chapter list does not close"
    # the contents (on this page) button opens too, where there is one
    toc = page.locator(".secondary-toggle:visible")
    if toc.count() and page.locator("#pst-secondary-sidebar nav a").count():
        toc.first.tap()
        page.wait_for_timeout(400)
        assert _in_view(page, page.locator("#pst-secondary-sidebar nav a").first), \
            "the contents button does not show this page's sections"
        page.keyboard.press("Escape")
    return len(shown)


def _in_view(page, loc) -> bool:
    box = loc.bounding_box()
    vw = page.viewport_size
    return box is not None and box["width"] > 0 and 0 <= box["x"] < vw["width"] and \
        box["x"] + box["width"] <= vw["width"] + 1 and 0 <= box["y"] < vw["height"]


def no_sideways_scroll(page) -> None:
    """Nothing wider than the phone: on a mobile browser an element that overflows widens
    the layout viewport itself (innerWidth grows), so compare with the device width."""
    width = page.viewport_size["width"]
    wide = page.evaluate("() => Math.max(document.documentElement.scrollWidth, window.innerWidth)")
    culprits = page.evaluate("""(w) => Array.from(document.querySelectorAll('body *')).filter(e => {
        const r = e.getBoundingClientRect(), cs = getComputedStyle(e);
        return r.right > w + 1 && r.width > 0 && cs.visibility !== 'hidden' && !e.closest('pre, mjx-container');
      }).slice(0, 4).map(e => e.tagName + '.' + String(e.className.baseVal ?? e.className).slice(0, 40) + ' right=' +
        Math.round(e.getBoundingClientRect().right))""", width) if wide > width + 1 else []
    assert wide <= width + 1, f"the page is {wide} px wide on a {width} px phone: {culprits}"


@pytest.mark.parametrize("path", PAGES)
def test_page_on_desktop(browser, path):
    v = Visit(browser, path + ".html", DESKTOP)
    page, name = v.page, path.split("/")[-1]
    try:
        total = v.check_clean()
        check_math(page)
        check_no_raw_tex(page)
        outputs = " ".join(page.locator(".cell_output").all_inner_texts())
        assert "Traceback (most recent call last)" not in outputs
        assert "nbval" not in page.locator("article").inner_text().lower()
        check_no_hidden_output(page)
        check_no_scrolling_code(page)
        check_figures_sharp_and_readable(page)
        check_images_keep_aspect(page)
        check_alt_text(page)
        check_assets_once(page)
        assert not any(u.split("?")[0].endswith("/searchindex.js") for u in v.bytes), \
            "the search index loads on a page that does not search"
        assert page.locator("a[href$='genindex.html']").count() == 0, "a link to an empty index"
        nav = page.locator("nav.bd-links a.reference.internal").count()
        assert nav >= len(TOC) - 1, f"navigation lists {nav} links for {len(TOC)} pages"
        if path in NOTEBOOKS:
            check_navigation_order(page, path)
            colab = [a.get_attribute("href") for a in
                     page.locator("a[href*='colab.research.google.com']").all()]
            assert any(h.endswith(f"/blob/main/{path}.ipynb") for h in colab), colab
        page.screenshot(path=str(SHOTS / f"{name}-desktop.png"))
        changed, controls, dead, off = exercise_controls(page, f"{name}-desktop")
        assert not dead, f"controls that do not change their figure: {dead}"
        assert not off, f"controls shown that cannot be moved: {off}"
        views = check_views_respond(page, path in VIEW_PAGES)
        assert not v.errors, f"console errors after moving the controls: {v.errors}"
        live = check_live_models(v, path, every_input=True)
        sidebar_toggle_works_on_desktop(page)
        print(f"\n{path} desktop: {total:,} bytes fetched, {changed}/{controls} controls change a "
              f"figure, {views} attention views answer{live}")
    finally:
        v.close()


@pytest.mark.parametrize("path", PAGES)
def test_page_on_phone(browser, path):
    v = Visit(browser, path + ".html", PHONE)
    page, name = v.page, path.split("/")[-1]
    try:
        total = v.check_clean()
        no_sideways_scroll(page)
        check_figures_sharp_and_readable(page)
        check_images_keep_aspect(page)
        page.screenshot(path=str(SHOTS / f"{name}-phone.png"))
        shown = chapter_list_one_tap_away(page, str(SHOTS / f"{name}-phone-nav.png"))
        changed, controls, dead, off = exercise_controls(page, f"{name}-phone")
        assert not dead, f"controls that do not change their figure: {dead}"
        assert not off, f"controls shown that cannot be moved: {off}"
        check_views_respond(page, path in VIEW_PAGES)
        live = check_live_models(v, path, every_input=False)
        no_sideways_scroll(page)
        check_figures_sharp_and_readable(page)   # the live boxes' views too
        assert not v.errors, f"console errors after moving the controls: {v.errors}"
        print(f"\n{path} phone: {total:,} bytes fetched, {changed}/{controls} controls change a "
              f"figure, one tap shows {shown} chapter links{live}")
    finally:
        v.close()


_REFS: dict = {}


def _reference(name: str, text: str) -> dict:
    if (name, text) not in _REFS:
        _REFS[name, text] = live_checks.reference(name, text)
    return _REFS[name, text]


def check_live_models(v: "Visit", path: str, every_input: bool) -> str:
    """Every live box of the page: present where the notebook shows one, the weights
    not fetched with the page, window.d2lModels answering as PyTorch (1e-9), the box
    answering typed input with its attention drawn, the page within LIVE_BUDGET after.
    -> a note for the printout."""
    page, want = v.page, LIVE_PAGES.get(path, [])
    names = sorted(set(page.evaluate(
        "() => Array.from(document.querySelectorAll('.d2l-live')).map(e => e.dataset.d2llive)")))
    assert names == want, f"live boxes {names}, the notebook shows {want}"
    if not names:
        return ""
    assert not [u for u in v.bytes if "/weights-" in u], "weights fetched with the page"
    assert sorted(page.evaluate("Object.keys(window.d2lModels || {})")) == names
    worst, t0 = 0.0, time.perf_counter()
    for name in names:
        texts = live_checks.INPUTS[name] if every_input else live_checks.INPUTS[name][:1]
        for text in texts:
            worst = max(worst, live_checks.compare(page, name, text, _reference(name, text)))
        live_checks.use_box(page, name, texts[0], _reference(name, texts[0]))
    assert worst <= 1e-9, f"max |page - torch float64| = {worst:.2e}"
    total = sum(v.bytes.values())
    assert total <= LIVE_BUDGET, f"{total:,} bytes with the live model (budget {LIVE_BUDGET:,})"
    assert not v.errors, f"console errors from the live models: {v.errors}"
    return (f"; live {', '.join(names)}: {total:,} bytes with the weights, max |page - torch| "
            f"{worst:.1e}, {time.perf_counter() - t0:.1f} s of checks")


@pytest.mark.parametrize("path", sorted(LIVE_PAGES))
def test_live_models_from_file(browser, path):
    """The live boxes work from file:// too (a book opened from disk): the weights load
    as a classic script, nothing else is asked for, no console error."""
    b, _ = browser
    ctx = b.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
    page, errors, asked = ctx.new_page(), [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("request", lambda r: asked.append(r.url))
    try:
        page.goto((HTML / path).with_suffix(".html").as_uri(), wait_until="load")
        for name in LIVE_PAGES[path]:
            text = live_checks.INPUTS[name][-1]
            worst = live_checks.compare(page, name, text, _reference(name, text))
            assert worst <= 1e-9, f"max |page - torch float64| = {worst:.2e}"
            live_checks.use_box(page, name, text, _reference(name, text))
        outside = [u for u in asked if not u.startswith(("file:", "data:", "blob:"))]
        assert not outside, f"requests off the book: {outside}"
        assert not errors, errors
    finally:
        ctx.close()


def test_whole_book_is_light():
    _need((HTML / "index.html").exists(), "no built book: run jupyter-book build first")
    files = [p for p in HTML.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    assert total <= BOOK_BUDGET, f"the built book is {total:,} bytes (budget {BOOK_BUDGET:,})"
    maps = [str(p.relative_to(HTML)) for p in files if p.suffix == ".map"]
    assert not maps, f"source maps shipped: {maps[:5]}"


def _diagram_figures() -> list[tuple[str, str]]:
    """(page, figure name) of every notebook cell that draws a d2l.diagram."""
    import json
    found = []
    for path in NOTEBOOKS:
        nb = json.loads((ROOT / path).with_suffix(".ipynb").read_text())
        for cell in nb["cells"]:
            src = "".join(cell.get("source", ""))
            fig = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
            if cell["cell_type"] == "code" and "d2l.diagram(" in src and fig.get("name"):
                found.append((path, fig["name"]))
    return found


def test_numbered_diagrams_with_captions():
    """At least five block diagrams (d2l.diagram), each a numbered figure with a caption
    in the built page, and referred to from the prose."""
    _need((HTML / "index.html").exists(), "no built book: run jupyter-book build first")
    shown = []
    for path, name in _diagram_figures():
        page = (HTML / path).with_suffix(".html").read_text(encoding="utf-8")
        m = re.search(r'<figure[^>]*id="' + re.escape(name) + r'".*?</figure>', page, re.S)
        assert m, f"{path}: figure {name} is not a numbered figure in the page"
        fig = m.group(0)
        number = re.search(r'<span class="caption-number">Fig\. (\d+)', fig)
        caption = re.sub(r"<[^>]+>", "", fig.split("<figcaption>")[-1]).strip()
        assert number and len(caption) > len(number.group(0)) + 10, f"{name}: no number or caption"
        assert f'href="#{name}"' in page or f"#{name}\"" in page, f"{name}: never referred to"
        shown.append(name)
    assert len(shown) >= MIN_DIAGRAMS, f"{len(shown)} numbered diagrams: {shown}"


def test_search_snippets_and_index(browser):
    """Search works offline, its snippets show formulas as text rather than TeX source,
    and the book ships no empty general index."""
    assert not (HTML / "genindex.html").exists(), "an empty genindex.html is shipped"
    v = Visit(browser, "search.html?q=softmax", DESKTOP)
    try:
        page = v.page
        page.wait_for_selector("#search-results li", timeout=15000)
        page.wait_for_timeout(1500)  # snippets are filled in as the pages load
        hits = page.locator("#search-results li").count()
        snippets = page.locator("#search-results p.context").all_inner_texts()
        assert hits >= 3 and snippets, f"{hits} hits, {len(snippets)} snippets"
        raw = [t for t in snippets if re.search(r"\\[()\[\]]|\\(sqrt|frac|mathbf|top)\b|\$\$", t)]
        assert not raw, f"raw TeX in search snippets: {raw[:2]}"
        # (the search page fetches each hit's page for its snippet: no page budget here)
        assert not v.blocked and not v.failed and not v.errors, (v.blocked, v.failed, v.errors)
    finally:
        v.close()
