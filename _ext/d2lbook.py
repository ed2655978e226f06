"""Sphinx extension that makes the built d2lmini book work offline, light and on a phone.

Not part of the ``d2lmini`` package (readers never need Sphinx): Jupyter Book loads it
from this folder (``_config.yml``: ``sphinx.local_extensions``).  It

* serves MathJax from the book itself: installed once from the npm registry at build
  time, and only the files pages load are shipped (loader, core, TeX input, CHTML
  output without the context menu, woff fonts, the TeX extensions it may autoload).  Without ``npm`` the build still works and
  MathJax comes from a CDN (an info message says so);
* loads no widget manager: the book's explorers and animations are plain HTML outputs
  that need none (``d2lmini.webfig``), and a progress bar saved as a widget is shown
  as the text it ended with;
* drops what no page needs (Font Awesome's 1.5 MB script, whose icons the theme's CSS
  already draws; source maps; duplicate scripts), subsets the icon fonts to the icons
  the pages show and stores figures as faithful 256-colour PNGs;
* adds ``_static/d2lbook.css`` / ``d2lbook.js``: working sidebar toggles at every width
  (sphinx-book-theme 1.3 with pydata-sphinx-theme >= 0.16 renders a second, hidden set
  of toggles in an extra header bar and binds those), no extra header bar, figures that
  keep their aspect ratio at every width (myst-nb writes a fixed height on each image),
  source listings and printouts that scroll sideways on a phone rather than wrap and
  break Python's indentation, tables that keep words whole;
* loads the explorers' and attention views' script and CSS (``d2lmini/static``, package
  data) once per page, as files, on the pages that show one: each notebook output
  carries its own copy (it must stand alone in Jupyter and Colab), the page drops them;
  a live model's weights (``d2l.live``, ``data-d2l-lazy``) become a file in
  ``_static/d2lmini/`` that the page loads only when the reader first asks the model
  something (and leave the downloadable notebooks);
* gives a phone its own layout of every figure whose text would be under 9 CSS px
  there: each inline figure's PNG says where its panels are and how small its text is
  (``d2lmini.figure_layout``); the panels of a wide figure are stacked one under the
  other for a phone (``<picture>``), and a figure that is still too small is shown at
  a readable width in a box that scrolls sideways; the numbers go on each ``<img>``;
* keeps raw TeX out of search snippets (``d2lbook.js``) and loads the search index on
  the search page only (``_config.yml`` numbers figures and drops the empty index).
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
from importlib import resources

from docutils import nodes
from sphinx.util import logging

log = logging.getLogger(__name__)
HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGES = ("mathjax@3.2.2",)
# MathJax files the pages load: its loader, core, TeX input and CHTML output (the
# tex-chtml bundle minus its 430 KB context menu), the fonts they ask for, and the TeX
# extensions the autoloader may fetch (\boldsymbol, \cancel, ...).
MATHJAX_FILES = ("startup.js", "core.js", "input/tex.js", "output/chtml.js",
                 "output/chtml/fonts/tex.js", "output/chtml/fonts/woff-v2", "input/tex/extensions")
MATHJAX_LOAD = ["core", "input/tex", "output/chtml"]


def _vendor(cache: str) -> str | None:
    """npm-install PACKAGES into ``cache`` once; return the folder to serve as static."""
    static = os.path.join(cache, "static")
    stamp = os.path.join(static, "vendor", ".packages")
    if os.path.exists(stamp) and open(stamp).read() == " ".join(PACKAGES + MATHJAX_FILES):
        return static
    src, out = os.path.join(cache, "node_modules", "mathjax"), os.path.join(static, "vendor")
    try:  # already installed (an earlier build)?
        have = json.load(open(os.path.join(src, "package.json")))["version"]
    except (OSError, ValueError, KeyError):
        have = None
    if "mathjax@" + str(have) not in PACKAGES:
        if shutil.which("npm") is None:
            return None
        os.makedirs(cache, exist_ok=True)
        cmd = ["npm", "install", "--no-save", "--no-audit", "--no-fund", "--ignore-scripts",
               "--prefix", cache, *PACKAGES]
        if subprocess.run(cmd, capture_output=True).returncode != 0:
            return None
    shutil.rmtree(out, ignore_errors=True)
    for rel in MATHJAX_FILES:
        a, b = os.path.join(src, "es5", rel), os.path.join(out, "mathjax", rel)
        os.makedirs(os.path.dirname(b), exist_ok=True)
        (shutil.copytree if os.path.isdir(a) else shutil.copy)(a, b)
    shutil.copy(os.path.join(src, "LICENSE"), os.path.join(out, "mathjax-LICENSE"))
    with open(stamp, "w") as f:
        f.write(" ".join(PACKAGES + MATHJAX_FILES))
    return static


def _package_static(cache: str) -> str | None:
    """d2lmini's static files (the explorers' JS/CSS) copied to ``cache``/d2lmini, so
    that they are served as ``_static/d2lmini/<name>``; -> the folder to serve."""
    try:
        src = resources.files("d2lmini").joinpath("static")
        names = [f.name for f in src.iterdir() if f.name.endswith((".js", ".css"))]
    except (ModuleNotFoundError, OSError):
        return None
    out = os.path.join(cache, "package-static")
    os.makedirs(os.path.join(out, "d2lmini"), exist_ok=True)
    for name in names:
        with open(os.path.join(out, "d2lmini", name), "w", encoding="utf-8") as f:
            f.write(src.joinpath(name).read_text(encoding="utf-8"))
    return out


def _config_inited(app, config) -> None:
    config.html_static_path = list(config.html_static_path) + [os.path.join(HERE, "_static")]
    package = _package_static(os.path.join(app.srcdir, "_build", ".vendor"))
    if package:
        config.html_static_path = list(config.html_static_path) + [package]
    config.nb_ipywidgets_js = {}  # no widget manager (and no CDN fallback for one)
    static = _vendor(os.path.join(app.srcdir, "_build", ".vendor"))
    if static is None:
        log.info("[d2lbook] npm not available: MathJax loads from a CDN")
        return
    config.html_static_path = list(config.html_static_path) + [static]
    config.mathjax_path = "vendor/mathjax/startup.js"
    mj = dict(config.mathjax3_config or {})
    mj["loader"] = {**mj.get("loader", {}), "load": MATHJAX_LOAD}
    config.mathjax3_config = mj


WIDGET_VIEW = re.compile(r'<script type="application/vnd\.jupyter\.widget-view\+json">(.*?)</script>',
                         re.S)
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
DROP_SCRIPTS = ("scripts/fontawesome.js", "require.js", "embed-amd.js")
# d2lmini outputs carry their script and CSS, each marked with the package file it is
ASSET = re.compile(r'<(script|style) data-d2l-asset="([\w.-]+)">.*?</\1>\n?', re.S)
# ... and files their script loads only when asked (a live model's weights)
LAZY = re.compile(r'<script data-d2l-lazy="([\w.-]+)">(.*?)</script>\n?', re.S)


def _text(value: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", value or "")).replace("\xa0", " ")


def _widget_as_text(model_id: str, state: dict) -> str:
    """A saved widget view as static HTML: a tqdm progress bar (HBox of HTML,
    FloatProgress, HTML) as the line it ended with; anything else as a note."""
    model = state.get(model_id, {})
    kids = [state.get(str(c).removeprefix("IPY_MODEL_"), {})
            for c in model.get("state", {}).get("children", [])]
    names = [k.get("model_name") for k in kids]
    if names == ["HTMLModel", "FloatProgressModel", "HTMLModel"]:
        left, bar, right = (k.get("state", {}) for k in kids)
        frac = bar.get("value", 0) / (bar.get("max") or 1)
        n = int(round(10 * max(0.0, min(1.0, frac))))
        line = f"{_text(left.get('value'))}|{'█' * n}{' ' * (10 - n)}|{_text(right.get('value'))}"
        return f'<pre class="d2l-progress">{html.escape(line)}</pre>'
    return ('<p class="d2l-widget-note">(an interactive widget: open the notebook in '
            'Jupyter or Colab to use it)</p>')


def _page_context(app, pagename, templatename, context, doctree) -> None:
    """Per page: drop repeated and unneeded scripts; widget views -> static text."""
    # pydata-sphinx-theme leaves the light/dark mode empty under sphinx-book-theme
    # ("Got invalid theme mode" on every first visit): follow the reader's system
    context["default_mode"] = context.get("default_mode") or "auto"
    scripts = context.get("script_files", [])
    seen, kept, state = set(), [], {}
    for js in scripts:
        attrs = getattr(js, "attributes", {}) or {}
        name = getattr(js, "filename", js) or ""
        if attrs.get("type") == WIDGET_STATE:
            try:
                state = json.loads(attrs.get("body", "{}")).get("state", {})
            except ValueError:
                state = {}
            continue
        if any(str(name).split("?")[0].endswith(d) for d in DROP_SCRIPTS):
            continue
        # sphinx-thebe's config is added twice by Jupyter Book 1: a `const` declared
        # twice, a JavaScript error on every page
        key = repr((name, sorted(attrs.items())))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    scripts[:] = kept  # in place: Sphinx holds this very list
    body = context.get("body")
    if body and "data-d2l-lazy" in body:
        # a live model's weights: a file next to the package's scripts, loaded by the
        # page on the reader's first question, not with the page
        folder = os.path.join(app.outdir, "_static", "d2lmini")
        os.makedirs(folder, exist_ok=True)
        for m in LAZY.finditer(body):
            with open(os.path.join(folder, m.group(1)), "w", encoding="utf-8") as f:
                f.write(m.group(2).replace("<\\/", "</"))
        context["body"] = body = LAZY.sub("", body)
    if body and "data-d2l-asset" in body:
        # each d2lmini output carries the script and CSS that draw it (it must stand
        # alone in Jupyter and Colab); the page loads each file once instead
        assets = []
        for m in ASSET.finditer(body):
            if m.group(2) not in assets:
                assets.append(m.group(2))
        context["body"] = body = ASSET.sub("", body)
        for name in assets:
            if name.endswith(".css"):
                app.add_css_file(f"d2lmini/{name}")
            else:
                app.add_js_file(f"d2lmini/{name}", loading_method="defer")
    body = context.get("body")
    if body and "widget-view+json" in body:
        def repl(m):
            try:
                model_id = json.loads(html.unescape(m.group(1)))["model_id"]
            except (ValueError, KeyError):
                return ""
            return _widget_as_text(model_id, state)
        context["body"] = WIDGET_VIEW.sub(repl, body)


MAX_ERROR = 12  # of 255: a palette PNG that drifts further than this is not used


def _palette_png(data: bytes) -> bytes | None:
    """A figure as a 256-colour PNG: plots have few colours, the picture looks the same
    (no pixel moves by more than MAX_ERROR; white stays white) and weighs about a third.
    -> the smaller PNG, or None where it would not be smaller or that faithful."""
    import io
    from PIL import Image, ImageChops
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        info = {k: v for k, v in im.info.items() if k == "dpi"}
        rgba = im.convert("RGBA")
    rgb = Image.alpha_composite(Image.new("RGBA", rgba.size, "white"), rgba).convert("RGB")
    q = rgb.quantize(256, method=Image.Quantize.MAXCOVERAGE, dither=Image.Dither.NONE)
    diff = ImageChops.difference(q.convert("RGB"), rgb).getextrema()
    if max(hi for _, hi in diff) > MAX_ERROR:
        return None
    out = io.BytesIO()
    q.save(out, format="PNG", optimize=True, **info)
    return out.getvalue() if out.tell() < len(data) else None


def _shrink_pngs(folder: str) -> None:
    """The page's figures as palette PNGs (:func:`_palette_png`); needs Pillow."""
    try:
        import PIL  # noqa: F401
    except ImportError:
        return
    for f in os.listdir(folder) if os.path.isdir(folder) else []:
        if not f.endswith(".png"):
            continue
        path = os.path.join(folder, f)
        try:
            with open(path, "rb") as fh:
                small = _palette_png(fh.read())
            if small is not None:
                with open(path, "wb") as fh:
                    fh.write(small)
        except Exception as e:  # a figure we cannot read stays as it is
            log.info(f"[d2lbook] {f}: kept as is ({e})")


PHONE_PX = 340     # CSS px a figure gets on a 390 px phone (the article's width)
MIN_TEXT_PX = 9.0  # the smallest text a phone may show
LAYOUT_KEY = b"d2l-layout"
IMG = re.compile(r'<img\b([^>]*?)\bsrc="([^"]*?_images/)([^"/]+?)\.png"([^>]*?)/?>')


def _read_layout(png: bytes) -> dict | None:
    """The layout an inline figure carries (``d2lmini.figure_layout``): a PNG tEXt chunk
    with its smallest text (CSS px at its own size), its width and its panels."""
    i = 8
    while i + 8 <= len(png):
        n, kind = struct.unpack(">I4s", png[i:i + 8])
        if kind == b"tEXt":
            key, _, text = png[i + 8:i + 8 + n].partition(b"\0")
            if key == LAYOUT_KEY:
                try:
                    return json.loads(text.decode("latin-1"))
                except ValueError:
                    return None
        if kind == b"IEND":
            break
        i += 12 + n
    return None


def _stack(path: str, panels: list):
    """The figure's panels one under the other (a phone's layout) -> PIL image."""
    from PIL import Image
    with Image.open(path) as im:
        im.load()
        rgba = im.convert("RGBA")
    page = Image.alpha_composite(Image.new("RGBA", rgba.size, "white"), rgba).convert("RGB")
    pad, gap = 6, 24
    crops = [page.crop((max(0, x0 - pad), max(0, y0 - pad), min(page.width, x1 + pad),
                        min(page.height, y1 + pad))) for x0, y0, x1, y1 in panels]
    width = max(c.width for c in crops)
    stacked = Image.new("RGB", (width, sum(c.height for c in crops) + gap * (len(crops) - 1)),
                        "white")
    y = 0
    for c in crops:
        stacked.paste(c, ((width - c.width) // 2, y))
        y += c.height + gap
    return stacked


def _phone_figures(outdir: str) -> None:
    """A phone layout for every inline figure whose text would be under 9 CSS px on a
    phone: its panels stacked (``<picture>`` with a phone source) and, where that is
    not enough, shown at the width that makes its text 9 px in a box that scrolls
    sideways.  Each figure's numbers are written on its ``<img>`` (``data-d2l-text``:
    smallest text in CSS px at its own width ``data-d2l-w``; ``data-d2l-phone-*`` the
    same for the phone's picture), so a browser test can measure what a reader sees."""
    folder = os.path.join(outdir, "_images")
    if not os.path.isdir(folder):
        return
    try:
        import PIL  # noqa: F401
    except ImportError:
        return
    plans = {}
    for f in sorted(os.listdir(folder)):
        if not f.endswith(".png") or f.endswith(".phone.png"):
            continue
        path = os.path.join(folder, f)
        with open(path, "rb") as fh:
            lay = _read_layout(fh.read())
        if not lay or not lay.get("text_px") or not lay.get("width"):
            continue
        text, width = float(lay["text_px"]), float(lay["width"])
        attrs = {"data-d2l-text": text, "data-d2l-w": width}
        shown, phone, zoom = text * min(1.0, PHONE_PX / width), None, None
        panels = lay.get("panels") or []
        if shown < MIN_TEXT_PX and len(panels) >= 2:
            try:
                from PIL import Image
                stacked = _stack(path, panels)
                with open(path, "rb") as fh:
                    w_px = struct.unpack(">I", fh.read()[16:20])[0]
                w = stacked.width * width / w_px                      # CSS px
                if text * min(1.0, PHONE_PX / w) > shown + 0.5:
                    # stored at twice the width a phone shows it (sharp, no heavier)
                    keep = min(w, max(PHONE_PX, w * MIN_TEXT_PX / text))
                    if keep < w:
                        stacked = stacked.resize((round(2 * keep), round(
                            stacked.height * 2 * keep / stacked.width)), Image.LANCZOS)
                    phone = f[:-4] + ".phone.png"
                    stacked.save(os.path.join(folder, phone), format="PNG", optimize=True)
                    t = round(text * keep / w, 2)
                    width, text, shown = round(keep, 1), t, t * min(1.0, PHONE_PX / keep)
                    attrs.update({"data-d2l-phone-text": t, "data-d2l-phone-w": width})
            except Exception as e:  # a figure we cannot cut stays whole
                log.info(f"[d2lbook] {f}: no phone layout ({e})")
        if shown < MIN_TEXT_PX - 1e-9:
            zoom = int(-(-width * MIN_TEXT_PX // text))
        plans[f[:-4]] = (attrs, phone, zoom)
    if not plans:
        return

    def repl(m):
        plan = plans.get(m.group(3))
        if plan is None:
            return m.group(0)
        attrs, phone, zoom = plan
        extra = "".join(f' {k}="{v}"' for k, v in attrs.items())
        tag = f'<img{m.group(1)}src="{m.group(2)}{m.group(3)}.png"{m.group(4)}{extra} />'
        if phone:
            tag = (f'<picture class="d2l-phone"><source media="(max-width: 600px)" '
                   f'srcset="{m.group(2)}{phone} 2x">{tag}</picture>')
        if zoom:
            tag = (f'<span class="d2l-zoom" style="--d2l-phone-w: {zoom}px">'
                   f'{tag}</span>')
        return tag

    for root, _, files in os.walk(outdir):
        for f in files:
            if f.endswith(".html"):
                p = os.path.join(root, f)
                with open(p, encoding="utf-8") as fh:
                    html_text = fh.read()
                new = IMG.sub(repl, html_text)
                if new != html_text:
                    with open(p, "w", encoding="utf-8") as fh:
                        fh.write(new)


def _shrink_notebooks(folder: str) -> None:
    """The notebooks readers download (``_sources``): their figures as palette PNGs too
    (the same pictures as the pages'; about two thirds of the book's weight otherwise)."""
    try:
        import base64
        import PIL  # noqa: F401
    except ImportError:
        return
    for root, _, files in os.walk(folder):
        for f in files:
            if not f.endswith(".ipynb"):
                continue
            path = os.path.join(root, f)
            try:
                with open(path, encoding="utf-8") as fh:
                    nb = json.load(fh)
                changed = False
                for cell in nb.get("cells", []):
                    for out in cell.get("outputs", []):
                        page = out.get("data", {}).get("text/html")
                        text = "".join(page) if isinstance(page, list) else page
                        if isinstance(text, str) and "data-d2l-lazy" in text:
                            # a live model's weights: the cell brings them back when
                            # it runs; the download stays light
                            out["data"]["text/html"] = LAZY.sub("", text)
                            changed = True
                        png = out.get("data", {}).get("image/png")
                        if not isinstance(png, str):
                            continue
                        small = _palette_png(base64.b64decode(png))
                        if small is not None:
                            out["data"]["image/png"] = base64.b64encode(small).decode("ascii")
                            changed = True
                if changed:
                    with open(path, "w", encoding="utf-8") as fh:
                        json.dump(nb, fh, ensure_ascii=False, indent=1)
                        fh.write("\n")
            except Exception as e:  # a notebook we cannot read stays as it is
                log.info(f"[d2lbook] {f}: kept as is ({e})")


FA_FONTS = (("fa-solid-900", "Font Awesome 6 Free", 900), ("fa-brands-400", "Font Awesome 6 Brands", 400))


def _subset_icon_fonts(outdir: str) -> None:
    """The theme's Font Awesome fonts hold ~2,000 icons (275 KB per page); the book shows
    about twenty.  Subset them to the icons the pages use (woff, fontTools comes with
    matplotlib) and declare the subsets last in d2lbook.css, so browsers fetch those."""
    try:
        from fontTools import subset
    except ImportError:
        return
    static = os.path.join(outdir, "_static")
    fonts = os.path.join(static, "vendor", "fontawesome", "webfonts")
    css_path = os.path.join(static, "styles", "pydata-sphinx-theme.css")
    if not (os.path.isdir(fonts) and os.path.exists(css_path)):
        return
    css = open(css_path, encoding="utf-8").read()
    used = set()
    for root, _, files in os.walk(outdir):
        for f in files:
            if f.endswith(".html"):
                text = open(os.path.join(root, f), encoding="utf-8").read()
                used |= set(re.findall(r"\bfa-([a-z0-9-]+)", text))
    codes = set()
    for rule in re.finditer(r"((?:\.fa-[a-z0-9-]+:before,?)+)\{content:\"\\([0-9a-f]+)\"\}", css):
        names = re.findall(r"\.fa-([a-z0-9-]+):before", rule.group(1))
        if used & set(names):
            codes.add(int(rule.group(2), 16))
    if not codes:
        return
    faces = []
    for name, family, weight in FA_FONTS:
        ttf = os.path.join(fonts, name + ".ttf")
        if not os.path.exists(ttf):
            continue
        opts = subset.Options()
        opts.flavor, opts.layout_features = "woff", ["*"]
        font = subset.load_font(ttf, opts)
        sub = subset.Subsetter(opts)
        sub.populate(unicodes=codes)
        sub.subset(font)
        subset.save_font(font, os.path.join(static, f"d2l-{name}.woff"), opts)
        faces.append(f'@font-face{{font-display:block;font-family:"{family}";font-style:normal;'
                     f'font-weight:{weight};src:url(d2l-{name}.woff) format("woff")}}')
    with open(os.path.join(static, "d2lbook.css"), "a", encoding="utf-8") as f:
        f.write("\n/* Font Awesome, subset to the icons the book uses (_ext/d2lbook.py) */\n"
                + "\n".join(faces) + "\n")


def _build_finished(app, exc) -> None:
    """Lighten the output: palette PNGs, subset icon fonts; delete what no page loads
    (source maps, the Font Awesome script, TrueType copies of the icon fonts)."""
    if exc is not None or app.builder.format != "html":
        return
    _phone_figures(app.outdir)  # reads the layouts _shrink_pngs drops
    _shrink_pngs(os.path.join(app.outdir, "_images"))
    _shrink_notebooks(os.path.join(app.outdir, "_sources"))
    _subset_icon_fonts(app.outdir)  # reads the .ttf files deleted below
    static = os.path.join(app.outdir, "_static")
    for root, _, files in os.walk(static):
        for f in files:
            path = os.path.join(root, f)
            rel = os.path.relpath(path, static).replace(os.sep, "/")
            if (f.endswith(".map") or rel == "scripts/fontawesome.js"
                    or (rel.startswith("vendor/fontawesome/") and f.endswith(".ttf"))):
                os.remove(path)
    # the theme's templates hard-code the Font Awesome script (and a preload of it), and
    # the search index on every page (107 KB; only the search page searches: the
    # search box sends the reader there)
    tag = re.compile(r'<(?:script|link)[^>]*scripts/fontawesome\.js[^>]*>(?:</script>)?\n?')
    index = re.compile(r'[ \t]*<script src="(?:\.\./)*searchindex\.js"></script>\n?')
    for root, _, files in os.walk(app.outdir):
        for f in files:
            if f.endswith(".html"):
                path = os.path.join(root, f)
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                new = tag.sub("", text)
                if os.path.relpath(path, app.outdir) != "search.html":
                    new = index.sub("", new)
                if new != text:
                    with open(path, "w", encoding="utf-8") as fh:
                        fh.write(new)


def _drop_test_tags(app, doctree) -> None:
    """myst-nb turns every cell tag into a CSS class (``tag_<name>``); the tags that tell
    the tests which outputs to compare are no business of the reader's page."""
    for node in doctree.findall(nodes.Element):
        classes = node.get("classes", [])
        if any(c.startswith("tag_nbval") for c in classes):
            node["classes"] = [c for c in classes if not c.startswith("tag_nbval")]


def setup(app):
    app.connect("config-inited", _config_inited, priority=400)
    app.connect("doctree-read", _drop_test_tags)
    app.connect("html-page-context", _page_context, priority=900)
    app.connect("build-finished", _build_finished)
    app.add_css_file("d2lbook.css")
    app.add_js_file("d2lbook.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
