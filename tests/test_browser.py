"""The built book seen the way a reader sees it: headless Chromium, offline.

Runs after `jupyter-book build` (``.ci/run`` does both): serves ``_build/html`` on
localhost, blocks every request that leaves localhost (a classroom without internet),
opens every chapter page and checks what a reader would notice.  Screenshots go to
``_build/screenshots/``.  Skipped when there is no built book or no Chromium, unless
``D2LMINI_BROWSER_TEST=1`` (set by CI) turns a skip into a failure.
"""
from __future__ import annotations

import functools
import http.server
import os
import pathlib
import shutil
import threading

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
TOC = [c["file"] for c in yaml.safe_load((ROOT / "_toc.yml").read_text())["chapters"]]
NOTEBOOKS = [f for f in TOC if (ROOT / f).with_suffix(".ipynb").exists()]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REQUIRED = os.environ.get("D2LMINI_BROWSER_TEST") == "1"


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


def open_offline(browser, path):
    """Open a page with every non-localhost request aborted; return (page, errors, blocked)."""
    b, base = browser
    page = b.new_page(viewport={"width": 1280, "height": 900})
    errors, blocked = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if r.request.url.startswith(base):
            return r.continue_()
        blocked.append(r.request.url)
        return r.abort()
    page.route("**/*", route)
    page.goto(f"{base}/{path}", wait_until="networkidle")
    return page, errors, blocked


@pytest.mark.parametrize("chapter", NOTEBOOKS)
def test_chapter_page_offline(browser, chapter):
    page, errors, blocked = open_offline(browser, chapter + ".html")
    name = chapter.split("/")[-1]
    # math: MathJax (served by the book) typeset every formula, no raw $$ left
    page.wait_for_function("() => !window.MathJax || !MathJax.startup || MathJax.startup.promise",
                           timeout=30_000)
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    n_math = page.locator("div.math, span.math").count()
    assert page.locator("mjx-container").count() >= n_math > 0, "math was not typeset"
    body = page.locator("article").inner_text()
    assert "$$" not in body, "raw $$ left on the page"
    # widgets: every embedded widget view is rendered as a control
    views = page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count()
    if views:
        page.wait_for_selector(".jupyter-widgets, .widget-vbox", timeout=30_000)
        rendered = page.locator(".cell_output .widget-vbox, .cell_output .widget-hbox").count()
        assert rendered >= views, f"{views} widget views, {rendered} rendered"
    # animations: every one has its player (buttons and a frame slider)
    for anim in page.locator(".animation").all():
        assert anim.locator("button").count() >= 5 and anim.locator("input[type=range]").count() == 1
    # no traceback in any cell output
    outputs = " ".join(page.locator(".cell_output").all_inner_texts())
    assert "Traceback (most recent call last)" not in outputs
    # the Colab button opens this page's own notebook
    colab = [a.get_attribute("href") for a in page.locator("a[href*='colab.research.google.com']").all()]
    assert any(h.endswith(f"/blob/main/{chapter}.ipynb") for h in colab), colab
    # the left navigation lists the chapters in order
    nav = [a.get_attribute("href") for a in page.locator("nav.bd-links a.reference.internal").all()]
    order = [t.split("/")[-1] for t in TOC]
    listed = [name if h == "#" else next((o for o in order if o + ".html" in h), None)
              for h in nav]
    assert [o for o in listed if o] == order, f"navigation order {listed}"
    assert not errors, f"JavaScript errors: {errors}"
    assert not [u for u in blocked if u.endswith(".js")], f"scripts from the internet: {blocked}"
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)
    for what, sel in (("widget", ".cell_output .widget-vbox"), ("animation", ".animation")):
        if page.locator(sel).count():
            page.locator(sel).first.screenshot(path=str(SHOTS / f"{name}-{what}.png"))
    page.close()


@pytest.mark.parametrize("path", ["intro.html"] + [f + ".html" for f in TOC if f not in NOTEBOOKS])
def test_other_pages_offline(browser, path):
    """The landing page and the appendices: no JavaScript error, math typeset, full navigation."""
    page, errors, blocked = open_offline(browser, path)
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    if page.locator("span.math, div.math").count():
        assert page.locator("mjx-container").count() > 0, "math was not typeset"
    nav = page.locator("nav.bd-links a.reference.internal").count()
    assert nav >= len(TOC) - 1, f"navigation lists {nav} links for {len(TOC)} pages"
    assert not errors, f"JavaScript errors: {errors}"
    assert not [u for u in blocked if u.endswith(".js")], f"scripts from the internet: {blocked}"
    page.screenshot(path=str(SHOTS / path.replace("/", "_").replace(".html", ".png")))
    page.close()
