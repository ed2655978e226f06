"""Figures that stay interactive without a kernel: an HTML output with the numbers
embedded and a few lines of JavaScript that draw them as SVG.

The same output works in Jupyter, Colab, VS Code and the static HTML book (no
server, no external file, no request).  Python decides *what* a setting shows
(:mod:`d2lmini.selection`: the explorers enumerate every setting through the same
function their matplotlib figure uses); the JavaScript only draws those numbers:
heatmaps (exact value on hover or tap), curves, a colour bar, and the controls that
switch between settings.
SVG text is vector: sharp on any screen, and laid out for the width it gets.
"""
from __future__ import annotations

import json
import uuid
from importlib import resources

import matplotlib
import numpy as np

from .selection import PanelTable, rounded  # noqa: F401 (the numbers views draw)

_round = rounded  # the name the page helpers used


def asset(name: str) -> str:
    """The text of one of the package's static files (``d2lmini/static/<name>``): the
    JavaScript and CSS that draw the figures in the page."""
    return resources.files("d2lmini").joinpath("static", name).read_text(
        encoding="utf-8")


def _has(name: str) -> bool:
    return resources.files("d2lmini").joinpath("static", name).is_file()


def page_html(script: str, call: str, kind: str, data: dict, cls: str, *,
              needs: tuple[str, ...] = (), lazy: dict | None = None) -> str:
    """One self-contained HTML output: a container, the CSS and script (each defined
    once per page; ``data-d2l-asset`` names the package file, so the book can load that
    file once instead, see _ext/d2lbook.py), the numbers and the call that draws them,
    deferred until the script is defined.  ``call``: the drawing function's
    global.  ``needs``: other static files' base names (their .css and .js, where
    there is one) loaded first.  ``lazy``: {file name: text} of files the script loads
    only when asked (a model's weights): carried here so that the output stands alone
    in Jupyter and Colab; the book writes each as a file next to the others and drops
    it from the page (``data-d2l-lazy``)."""
    fid = cls + "-" + uuid.uuid4().hex[:12]
    payload = json.dumps(data, separators=(",", ":"),
                         allow_nan=False).replace("</", "<\\/")
    files = []
    for name in (*needs, script):
        for ext, tag in ((".css", "style"), (".js", "script")):
            if name == script or _has(name + ext):
                files.append(f'<{tag} data-d2l-asset="{name}{ext}">'
                             f'{asset(name + ext)}</{tag}>\n')
    for name, text in (lazy or {}).items():
        safe = text.replace("</", "<\\/")
        files.append(f'<script data-d2l-lazy="{name}">{safe}</script>\n')
    return (f'<div class="{cls}" id="{fid}" '
            f'data-{cls.replace("-", "")}="{kind}"></div>\n'
            + "".join(files) +
            f"<script>(function(){{var go=function(){{"
            f"var r=document.getElementById('{fid}');"
            f"if(r&&!r.firstChild)window.{call}.{kind}(r,{payload});}};"
            f"if(window.{call})go();"
            f"else document.addEventListener('DOMContentLoaded',go);}})();"
            f"</script>")


def lut(cmap: str, n: int = 256) -> list[list[int]]:
    """A matplotlib colour map as n RGB triples (what the page colours cells with)."""
    rgba = matplotlib.colormaps[cmap](np.linspace(0, 1, n))
    return (rgba[:, :3] * 255).round().astype(int).tolist()


def html(kind: str, data: dict) -> str:
    """A self-contained HTML output that draws one figure (``static/webfig.js``):
    ``kind`` "attention", "pe" or "monitor"."""
    return page_html("webfig", "d2lfig", kind, data, "d2l-fig")
