"""What building the book costs: a full `jupyter-book build`, cold and with the
execution cache warm; and what the built book weighs.

    python benchmarks/book_cost.py
    python benchmarks/book_cost.py --sizes [_build/html]     # no build: measure one

`--sizes` prints the whole book's bytes and, per page, the bytes a reader's browser
fetches on a cold visit (headless Chromium, offline) and, on a page with a live model
(`d2l.live`), the bytes once the model has answered (its weights load on first use),
with the time that took; and the figures' smallest text on a 390 px phone (shown
340 px wide), as the page alone would show them and with the book's phone layout.

The book's own _config.yml forces execution (every build re-runs every chapter, as CI
must).  Here the same config is copied with `execute_notebooks: cache` into a temporary
folder so the second build finds the executed notebooks in jupyter-cache.  Per-chapter
execution seconds: `python benchmarks/chapter_times.py`.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(src: str) -> float:
    start = time.perf_counter()
    subprocess.run(["jupyter-book", "build", src, "-q"], check=True, capture_output=True)
    return time.perf_counter() - start


def figure_census(html: str, phone_px: float = 340.0) -> None:
    """Inline figures whose smallest text a phone would show under 9 CSS px: as the
    page alone would, and with the phone layout (_ext/d2lbook.py)."""
    import re
    tags = re.compile(r'<span class="d2l-zoom" style="--d2l-phone-w: (\d+)px">|<img\b[^>]*>')
    num = lambda tag, k: (float(m.group(1)) if (m := re.search(rf'{k}="([0-9.]+)"', tag))
                          else None)
    rows, measured, before, after = [], 0, [], []
    for root, _, files in os.walk(html):
        for f in sorted(files):
            if not f.endswith(".html"):
                continue
            text, zoom = open(os.path.join(root, f), encoding="utf-8").read(), None
            for m in tags.finditer(text):
                if m.group(1):                  # the next figure is shown this wide
                    zoom = float(m.group(1))
                    continue
                tag = m.group(0)
                t, w = num(tag, "data-d2l-text"), num(tag, "data-d2l-w")
                if t is None:
                    continue
                measured += 1
                px = t * min(1.0, phone_px / w)
                pt, pw = num(tag, "data-d2l-phone-text"), num(tag, "data-d2l-phone-w")
                now = pt * min(1.0, phone_px / pw) if pt else px
                if zoom:
                    now, zoom = (pt or t) * zoom / (pw or w), None
                before.append(px)
                after.append(now)
                if px < 9:
                    rows.append((os.path.relpath(os.path.join(root, f), html), px, now))
    print(f"figures measured: {measured}; under 9 px on a phone: {sum(b < 9 for b in before)}"
          f" as the page alone shows them (smallest {min(before, default=0):.1f} px), "
          f"{sum(a < 8.95 for a in after)} with the phone layout "
          f"(smallest {min(after, default=0):.1f} px)")


def sizes(html: str) -> None:
    """The built book's weight: in all, and per page as a browser fetches it."""
    import functools
    import http.server
    import threading
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(html) for f in fs)
    print(f"whole book: {total:,} bytes ({html})")
    figure_census(html)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("(playwright is not installed: no per-page numbers)")
        return
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    pages = sorted(os.path.relpath(os.path.join(r, f), html) for r, _, fs in os.walk(html)
                   for f in fs if f.endswith(".html") and not r.endswith("_static"))
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    handler = functools.partial(Quiet, directory=html)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    print("| page | bytes on load | with its live model | model ready |\n|---|---:|---:|---:|")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        for path in pages:
            ctx = b.new_context(viewport={"width": 390, "height": 844})
            page, got = ctx.new_page(), {}

            def response(r, got=got):
                try:
                    got[r.url] = len(r.body())
                except Exception:
                    pass
            page.on("response", response)
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(base)
                       else r.abort())
            page.goto(f"{base}/{path}", wait_until="networkidle")
            load = sum(got.values())
            names = page.evaluate("Object.keys(window.d2lModels || {})")
            ms = page.evaluate("""async (names) => { const t = performance.now();
                for (const n of names) await window.d2lModels[n].ready();
                return performance.now() - t; }""", names) if names else None
            page.wait_for_load_state("networkidle")
            live = f"{sum(got.values()):,} ({', '.join(names)})" if names else ""
            print(f"| {path} | {load:,} | {live} | {f'{ms:.0f} ms' if names else ''} |")
            ctx.close()
        b.close()
    server.shutdown()


def main() -> None:
    if "--sizes" in sys.argv:
        rest = [a for a in sys.argv[1:] if a != "--sizes"]
        return sizes(rest[0] if rest else os.path.join(ROOT, "_build", "html"))
    with tempfile.TemporaryDirectory() as tmp:
        book = os.path.join(tmp, "book")
        shutil.copytree(ROOT, book, ignore=shutil.ignore_patterns("_build", ".git", "*.egg-info"))
        cfg_path = os.path.join(book, "_config.yml")
        cfg = yaml.safe_load(open(cfg_path))
        cfg["execute"]["execute_notebooks"] = "cache"
        yaml.safe_dump(cfg, open(cfg_path, "w"))
        cold = build(book)
        warm = build(book)
    from d2lmini.checkpoints import machine
    print(f"machine: {machine()}")
    print("| jupyter-book build | seconds |\n|---|---:|")
    print(f"| cold (executes every chapter) | {cold:.0f} |\n| warm execution cache | {warm:.0f} |")


if __name__ == "__main__":
    main()
