"""Token-level attention views, in the manner of bertviz, that work without a kernel.

* :func:`head_view`: the tokens twice, queries on the left and keys on the right, one
  line from each query to each key whose opacity is the weight, one colour per head.
  Hover (or tap) a token to keep only its lines; hover a line for its exact weight;
  switch heads on and off, change layer, example and kind of attention.
* :func:`model_view`: every layer (rows) and head (columns) at a glance, one small
  heatmap each; click one to open it large, with the exact weight under the pointer.

What a setting shows is decided by :mod:`d2lmini.selection` (:func:`view_data`, built
on :func:`attention_view`, the function behind the attention explorer's heatmaps too):
weights, masks and token labels.  The data come from :func:`d2lmini.collect_attention`
(``AttentionMaps``).  Displayed, a view is one HTML output: its numbers, and the
drawing code ``static/views.js`` and ``static/views.css`` (package data, defined once
per page).  The same output works live
in Jupyter and Colab and in the static HTML book, where the book loads the two files
once per page instead of repeating them (``_ext/d2lbook.py``).
"""
from __future__ import annotations

import matplotlib
import numpy as np

from .selection import MAX_VALUES, view_data, view_state  # noqa: F401 (re-exported)
from .webfig import asset, lut, page_html  # noqa: F401 (asset: re-exported)


def head_colors(h: int) -> list[str]:
    """One colour per head (matplotlib's tab10, repeated past ten heads)."""
    cycle = matplotlib.colormaps["tab10"].colors
    return [matplotlib.colors.to_hex(cycle[i % len(cycle)]) for i in range(h)]


class View:
    """A view as a display object: the last line of a cell shows it (Jupyter, Colab and
    the book alike); ``html()`` is its HTML, ``data`` the numbers it draws."""

    kind = ""

    def __init__(self, data: dict, state: dict):
        self.data, self.state = data, state

    def html(self) -> str:
        return page_html("views", "d2lviews", self.kind,
                         {**self.data, "state": self.state}, "d2l-view")

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        k = self.data["kinds"]
        shape = ", ".join(f"{n}: {v['L']} layers x {v['h']} heads x {v['B']} examples"
                          for n, v in k.items())
        return f"{type(self).__name__}({shape})"


class HeadView(View):
    kind = "head"


class ModelView(View):
    kind = "model"


def head_view(attn, src_tokens=None, tgt_tokens=None, *, masks=None,
              kind: str | None = None, layer: int = 0, example: int = 0,
              heads=None) -> HeadView:
    """Queries on the left, keys on the right, a line per (query, key, head) whose
    opacity is the weight; one colour per head.  In the page: hover or tap a token to
    keep only its lines (tap again to let go), hover a line for its exact weight,
    toggle heads, switch layer, example and kind.
    ``attn``/``src_tokens``/``tgt_tokens``/``masks`` as in
    :func:`d2lmini.attention_explorer`; ``heads``: the heads shown first (all)."""
    data = view_data(attn, src_tokens, tgt_tokens, masks=masks)
    state = view_state(data, kind, layer, example)
    h = data["kinds"][state["kind"]]["h"]
    given = heads
    ints = isinstance(heads, (list, tuple, range)) and all(
        isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in heads)
    heads = (list(range(h)) if heads is None
             else [int(x) for x in heads] if ints else None)
    if heads is None or not heads or any(not 0 <= x < h for x in heads):
        raise ValueError(f"heads must be a non-empty list of ints in [0, {h - 1}], "
                         f"got {given!r}")
    data["colors"] = head_colors(max(v["h"] for v in data["kinds"].values()))
    return HeadView(data, {**state, "heads": heads})


def model_view(attn, src_tokens=None, tgt_tokens=None, *, masks=None,
               kind: str | None = None, example: int = 0,
               open: tuple[int, int] | None = None,
               cmap: str = "Reds") -> ModelView:
    """Every layer (rows) and head (columns) as a small heatmap of one example; click
    (or tap) one to open it large, where the pointer reads the exact weight.
    ``open=(layer, head)`` opens one from the start."""
    data = view_data(attn, src_tokens, tgt_tokens, masks=masks)
    state = view_state(data, kind, 0, example)
    del state["layer"]
    if open is not None:
        k = data["kinds"][state["kind"]]
        if (not isinstance(open, (tuple, list)) or len(open) != 2
                or not 0 <= open[0] < k["L"] or not 0 <= open[1] < k["h"]):
            raise ValueError(f"open must be (layer, head) with layer in "
                             f"[0, {k['L'] - 1}] and head in [0, {k['h'] - 1}], "
                             f"got {open!r}")
        open = [int(open[0]), int(open[1])]
    data["lut"] = lut(cmap, 128)
    return ModelView(data, {**state, "open": open})
