"""Figures that stay interactive without a kernel: an HTML output with the numbers
embedded and a few lines of JavaScript that draw them as SVG.

The same output works in Jupyter, Colab, VS Code and the static HTML book (no
server, no external file, no request).  Python decides *what* a setting shows (the
explorers enumerate every setting through the same function their matplotlib figure
uses); the JavaScript only draws those numbers: heatmaps (exact value on hover or
tap), curves, a colour bar, and the controls that switch between settings.
SVG text is vector: sharp on any screen, and laid out for the width it gets.
"""
from __future__ import annotations

import json
import uuid
from importlib import resources

import matplotlib
import numpy as np

from .plot import _np


def asset(name: str) -> str:
    """The text of one of the package's static files (``d2lmini/static/<name>``): the
    JavaScript and CSS that draw the figures in the page."""
    return resources.files("d2lmini").joinpath("static", name).read_text(
        encoding="utf-8")


def page_html(script: str, call: str, kind: str, data: dict, cls: str) -> str:
    """One self-contained HTML output: a container, the CSS and script (each defined
    once per page; ``data-d2l-asset`` names the package file, so the book can load that
    file once instead, see _ext/d2lbook.py), the numbers and the call that draws them,
    deferred until the script is defined.  ``call``: the drawing function's
    global."""
    fid = cls + "-" + uuid.uuid4().hex[:12]
    payload = json.dumps(data, separators=(",", ":"),
                         allow_nan=False).replace("</", "<\\/")
    return (f'<div class="{cls}" id="{fid}" '
            f'data-{cls.replace("-", "")}="{kind}"></div>\n'
            f'<style data-d2l-asset="{script}.css">{asset(script + ".css")}</style>\n'
            f'<script data-d2l-asset="{script}.js">{asset(script + ".js")}</script>\n'
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


def _round(values, digits: int = 4) -> list:
    """Floats for JSON: 4 significant digits, NaN -> None."""
    a = _np(values).astype(float).ravel()
    return [None if not np.isfinite(v) else float(f"{v:.{digits}g}") for v in a]


class PanelTable:
    """Deduplicated heatmap panels and masks (many settings show the same matrix)."""

    def __init__(self):
        self.panels, self.masks, self.labels = [], [], []
        self._p, self._m, self._l = {}, {}, {}

    def _put(self, store, index, key, value):
        if key not in index:
            index[key] = len(store)
            store.append(value)
        return index[key]

    def mask(self, m) -> int | None:
        if m is None:
            return None
        s = "".join("1" if x else "0" for x in np.asarray(m, bool).ravel())
        return self._put(self.masks, self._m, s, s)

    def panel(self, values, mask=None) -> int:
        """A (rows, cols) matrix -> its index.  Values in [0, 1] (attention weights) are
        kept as integers in thousandths ("scale": 1000), others to 4 significant digits;
        cells the mask hides are stored as 0 (the page greys them)."""
        v = _np(values).astype(float)
        mi = self.mask(mask)
        if mask is not None:
            v = np.where(np.asarray(mask, bool), v, 0.0)
        finite = v[np.isfinite(v)]
        if finite.size and finite.min() >= 0 and finite.max() <= 1:
            vals = [None if not np.isfinite(x) else int(round(x * 1000))
                    for x in v.ravel()]
            scale = 1000
        else:
            vals, scale = _round(v), 1
        key = (v.shape, json.dumps(vals), mi)
        return self._put(self.panels, self._p, key,
                         {"values": vals, "scale": scale, "rows": int(v.shape[0]),
                          "cols": int(v.shape[1]), "mask": mi})

    def label(self, labels) -> int | None:
        if labels is None:
            return None
        labels = [str(s) for s in labels]
        return self._put(self.labels, self._l, json.dumps(labels), labels)


def html(kind: str, data: dict) -> str:
    """A self-contained HTML output that draws one figure (``static/webfig.js``):
    ``kind`` "attention", "pe" or "monitor"."""
    return page_html("webfig", "d2lfig", kind, data, "d2l-fig")
