"""Sphinx extension for building the book (readers of d2lmini never need it).

It makes the built HTML work offline: MathJax, RequireJS and the Jupyter widget
manager (which renders the widget state embedded in the pages) are installed from the
npm registry at build time and served from the book's own ``_static/vendor/`` instead
of a CDN.  Enabled in ``_config.yml`` (``sphinx.extra_extensions``).  Without ``npm``
the build still works and falls back to the CDN (an info message says so).
"""
from __future__ import annotations

import os
import shutil
import subprocess

from sphinx.util import logging

log = logging.getLogger(__name__)
PACKAGES = ("mathjax@3.2.2", "@jupyter-widgets/html-manager@1.0.15", "requirejs@2.3.8")


def _vendor(cache: str) -> str | None:
    """npm-install PACKAGES into ``cache`` once; return the folder to serve as static."""
    static = os.path.join(cache, "static")
    stamp = os.path.join(static, "vendor", ".packages")
    if os.path.exists(stamp) and open(stamp).read() == " ".join(PACKAGES):
        return static
    if shutil.which("npm") is None:
        return None
    os.makedirs(cache, exist_ok=True)
    cmd = ["npm", "install", "--no-save", "--no-audit", "--no-fund", "--ignore-scripts",
           "--prefix", cache, *PACKAGES]
    if subprocess.run(cmd, capture_output=True).returncode != 0:
        return None
    mods, out = os.path.join(cache, "node_modules"), os.path.join(static, "vendor")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(os.path.join(mods, "mathjax", "es5"), os.path.join(out, "mathjax"))
    shutil.copytree(os.path.join(mods, "@jupyter-widgets", "html-manager", "dist"),
                    os.path.join(out, "html-manager"))
    shutil.copy(os.path.join(mods, "requirejs", "require.js"), out)
    for pkg in ("mathjax", "@jupyter-widgets/html-manager", "requirejs"):  # keep the licences
        lic = os.path.join(mods, pkg, "LICENSE")
        if os.path.exists(lic):
            shutil.copy(lic, os.path.join(out, pkg.split("/")[-1] + "-LICENSE"))
    with open(stamp, "w") as f:
        f.write(" ".join(PACKAGES))
    return static


def _config_inited(app, config) -> None:
    static = _vendor(os.path.join(app.srcdir, "_build", ".vendor"))
    if static is None:
        log.info("[d2lmini.book] npm not available: MathJax and widgets load from a CDN")
        return
    config.html_static_path = list(config.html_static_path) + [static]
    config.mathjax_path = "vendor/mathjax/tex-chtml.js"
    config.nb_ipywidgets_js = {"vendor/require.js": {},
                               "vendor/html-manager/embed-amd.js": {}}


# ipywidgets' widget manager typesets labels with the MathJax 2 API (MathJax.Hub.Queue);
# the book loads MathJax 3, which has no Hub.  Give it one that forwards to MathJax 3,
# before MathJax loads (config object) and after (startup.ready replaces the global).
MATHJAX2_SHIM = """window.MathJax = window.MathJax || {};
(function () {
  var hub = {Queue: function (job) {
    if (window.MathJax.typesetPromise) { MathJax.typesetPromise([job[2]]).catch(function () {}); }
  }};
  var startup = window.MathJax.startup = window.MathJax.startup || {};
  window.MathJax.Hub = hub;
  startup.ready = function () { MathJax.startup.defaultReady(); MathJax.Hub = hub; };
})();"""


def _dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    """Drop repeated identical <script>s (sphinx-thebe's config is added twice by
    Jupyter Book 1, a `const` declared twice: a JavaScript error on every page)."""
    seen, kept = set(), []
    for js in context.get("script_files", []):
        key = (getattr(js, "filename", js) or "", sorted(getattr(js, "attributes", {}).items()))
        key = repr(key)
        if key not in seen:
            seen.add(key)
            kept.append(js)
    context["script_files"][:] = kept  # in place: Sphinx holds this very list


def setup(app):
    app.connect("config-inited", _config_inited, priority=400)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.add_js_file(None, body=MATHJAX2_SHIM, priority=501)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
