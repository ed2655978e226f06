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


def setup(app):
    app.connect("config-inited", _config_inited, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
