"""What building the book costs: a full `jupyter-book build`, cold and with the
execution cache warm; and what the built book weighs.

    python benchmarks/book_cost.py
    python benchmarks/book_cost.py --sizes [_build/html]     # no build: measure one

`--sizes` prints the whole book's bytes and, per page, the bytes a reader's browser
fetches on a cold visit (headless Chromium, offline) and, on a page with a live model
(`d2l.live`), the bytes once the model has answered (its weights load on first use),
with the time that took.

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


def sizes(html: str) -> None:
    """The built book's weight: in all, and per page as a browser fetches it."""
    import functools
    import http.server
    import threading
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(html) for f in fs)
    print(f"whole book: {total:,} bytes ({html})")
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
