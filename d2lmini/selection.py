"""What a setting of an attention view shows: the one home of that decision.

Every front-end draws what these functions return and decides nothing itself: the
matplotlib figure and the attention explorer (``widgets``), the head and model views
of the page (``views`` with ``static/views.js``), the training monitor (``monitor``),
and the live models (``live`` with ``static/live.js``, whose page twin of
:func:`view_data` is ``d2lviews.data`` in ``static/views.js``).  Data only: numbers
and labels in, numbers and labels out; it imports no drawing code.

* :func:`select`: one kind / layer / head / example of attention maps -> the weights
  and masks of its panels;
* :func:`labels`: the tick labels of one example (padding labelled ``<pad>``);
* :func:`attention_view`: everything one setting shows (title, panels, masks, grid,
  labels);
* :func:`view_data`: every (kind, layer, example) of the maps as the page's views
  draw them, its numbers in a :class:`PanelTable` (deduplicated, rounded for a page).
"""
from __future__ import annotations

import json

import numpy as np
import torch

from .maps import AttentionMaps, as_attention_maps

__all__ = ["PAD", "as_array", "labels", "grid", "select", "head_label",
           "attention_view", "view_data", "view_state", "PanelTable", "rounded",
           "MAX_VALUES"]

PAD = "<pad>"             # the label of a padding position
MAX_VALUES = 2_000_000    # weights one page view may embed (about 8 MB of page)


def as_array(x) -> np.ndarray:
    """A tensor (any device, any float dtype), array or list -> numpy array."""
    if isinstance(x, torch.Tensor):
        return x.detach().float().cpu().numpy()
    return np.asarray(x)


def rounded(values, digits: int = 4) -> list:
    """Floats for JSON: 4 significant digits, NaN -> None."""
    a = as_array(values).astype(float).ravel()
    return [None if not np.isfinite(v) else float(f"{v:.{digits}g}") for v in a]


class PanelTable:
    """Deduplicated heatmap panels, masks and label lists, as a page view embeds them
    (many settings show the same matrix)."""

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
        v = as_array(values).astype(float)
        mi = self.mask(mask)
        if mask is not None:
            v = np.where(np.asarray(mask, bool), v, 0.0)
        finite = v[np.isfinite(v)]
        if finite.size and finite.min() >= 0 and finite.max() <= 1:
            vals = [None if not np.isfinite(x) else int(round(x * 1000))
                    for x in v.ravel()]
            scale = 1000
        else:
            vals, scale = rounded(v), 1
        key = (v.shape, json.dumps(vals), mi)
        return self._put(self.panels, self._p, key,
                         {"values": vals, "scale": scale, "rows": int(v.shape[0]),
                          "cols": int(v.shape[1]), "mask": mi})

    def label(self, labels) -> int | None:
        if labels is None:
            return None
        labels = [str(s) for s in labels]
        return self._put(self.labels, self._l, json.dumps(labels), labels)


def labels(tokens, example: int, n: int, what: str) -> list[str] | None:
    """Tick labels for one example: ``tokens`` is one sequence shared by every example
    (a list of str, or a str = its characters) or one sequence per example (a list of
    lists/tuples).  Positions past a shorter sequence are padding: labelled PAD."""
    if tokens is None:
        return None
    if isinstance(tokens, str) or all(isinstance(t, str) for t in tokens):
        seq = list(tokens)
    else:
        if not 0 <= example < len(tokens):
            raise ValueError(f"{what}: got tokens for {len(tokens)} examples, "
                             f"but example {example} was asked for")
        seq = [str(t) for t in tokens[example]]
    if len(seq) > n:
        raise ValueError(f"got {len(seq)} {what} for {n} positions")
    return seq + [PAD] * (n - len(seq))


def grid(h: int) -> tuple[int, int]:
    """Rows and columns for h small heatmaps, as square as h's divisors allow."""
    cols = next(c for c in range(1, h + 1) if h % c == 0 and c * c >= h)
    return h // cols, cols


def _check_kind_layer_example(maps: AttentionMaps, kind, layer, example):
    if kind is None:
        kind = next(iter(maps))
    if kind not in maps:
        raise ValueError(f"kind must be one of {list(maps)}, got {kind!r}")
    L, B = maps[kind].shape[:2]
    if not isinstance(layer, (int, np.integer)) or not -L <= layer < L:
        raise ValueError(f"layer must be an int in [0, {L - 1}] (or negative), "
                         f"got {layer!r}")
    if not isinstance(example, (int, np.integer)) or not 0 <= example < B:
        raise ValueError(f"example must be an int in [0, {B - 1}], got {example!r}")
    return kind, int(layer) % L


def select(maps: AttentionMaps, kind, layer, head, example):
    """Validate the selection; -> (weights (h|1, T_q, T_k), mask of the same shape or
    None, kind, layer index).  ``head``: an int, "all" or "mean"."""
    kind, layer = _check_kind_layer_example(maps, kind, layer, example)
    h = maps[kind].shape[2]
    if not (head in ("all", "mean") or (isinstance(head, (int, np.integer))
                                         and not isinstance(head, bool)
                                         and 0 <= head < h)):
        raise ValueError(f"head must be 'all', 'mean' or an int in [0, {h - 1}], "
                         f"got {head!r}")
    w = maps[kind][layer, example]                                  # (h, T_q, T_k)
    m = maps.masks.get(kind)
    m = None if m is None else m[example]                           # (h, T_q, T_k)
    if head == "mean":
        w, m = w.mean(0, keepdims=True), None if m is None else m.any(0, keepdims=True)
    elif head != "all":
        w, m = w[head: head + 1], None if m is None else m[head: head + 1]
    return w, m, kind, layer


def head_label(head) -> str:
    """How a title names a head setting: "all heads", "mean over heads", "head 2"."""
    return {"all": "all heads", "mean": "mean over heads"}.get(head, f"head {head}")


def _token_sides(kind: str, src_tokens, tgt_tokens):
    """(query tokens, key tokens) of a kind: encoder self (src, src), decoder self
    (tgt, tgt), cross (tgt, src), anything else (src, src)."""
    q_tok = tgt_tokens if kind in ("decoder self", "cross") else src_tokens
    k_tok = tgt_tokens if kind == "decoder self" else src_tokens
    return q_tok, k_tok


def attention_view(attn, kind: str | None = None, layer: int = 0,
                   head: int | str = "all", example: int = 0, *, src_tokens=None,
                   tgt_tokens=None, masks=None) -> dict:
    """What one setting of an attention view shows: the one function that decides
    it, for the matplotlib figure, the page's views and the training monitor alike.

    -> {"title", "values" (n, T_q, T_k), "mask" (n, T_q, T_k) bool or None,
    "titles" (one per panel, or None), "grid" (rows, cols), "xlabels" (keys),
    "ylabels" (queries), "kind", "layer", "heads" (how the title names them)};
    n = h for head="all", else 1.
    """
    maps = as_attention_maps(attn, masks)
    w, m, kind, layer = select(maps, kind, layer, head, example)
    n, Tq, Tk = w.shape
    q_tok, k_tok = _token_sides(kind, src_tokens, tgt_tokens)
    ylabels = labels(q_tok, example, Tq, "query labels")       # queries first
    xlabels = labels(k_tok, example, Tk, "key labels")
    return {"title": f"{kind} attention, layer {layer}, {head_label(head)}, "
                     f"example {example}",
            "values": w, "mask": m, "kind": kind, "layer": layer,
            "heads": head_label(head),
            "titles": [f"head {i}" for i in range(n)] if head == "all" else None,
            "grid": grid(n) if head == "all" else (1, 1),
            "xlabels": xlabels, "ylabels": ylabels}


def view_data(attn, src_tokens=None, tgt_tokens=None, *, masks=None,
              table=None) -> dict:
    """Every (kind, layer, example) of ``attn`` as the page's head and model views draw
    it: for each, the query and key labels and one panel (T_q, T_k) per head, masked
    cells flagged.  What each setting shows is :func:`attention_view`'s (all heads).
    ``table``: the :class:`PanelTable` to fill (a new one by default).

    -> {"kinds": {kind: {"L", "B", "h"}}, "views": {"kind|layer|example": {"title",
    "q", "k", "heads"}}, "panels", "masks", "labels"}."""
    table = PanelTable() if table is None else table
    maps = as_attention_maps(attn, masks)
    total = sum(int(np.prod(w.shape)) for w in maps.values())
    if total > MAX_VALUES:
        raise ValueError(f"{total:,} attention weights are too many for one page "
                         f"(at most {MAX_VALUES:,}); select fewer examples or layers, "
                         f"e.g. collect_attention(model, src[:4])")
    views, kinds = {}, {}
    for kind, w in maps.items():
        L, B, h = w.shape[:3]
        kinds[kind] = {"L": int(L), "B": int(B), "h": int(h)}
        for layer in range(L):
            for example in range(B):
                v = attention_view(maps, kind, layer, "all", example,
                                   src_tokens=src_tokens, tgt_tokens=tgt_tokens)
                n, Tq, Tk = v["values"].shape
                m = v["mask"]
                views[f"{kind}|{layer}|{example}"] = {
                    "title": f"{kind} attention, layer {layer}, example {example}",
                    "q": table.label(v["ylabels"] or [str(i) for i in range(Tq)]),
                    "k": table.label(v["xlabels"] or [str(i) for i in range(Tk)]),
                    "heads": [table.panel(v["values"][i], None if m is None else m[i])
                              for i in range(n)]}
    return {"kinds": kinds, "views": views, "panels": table.panels,
            "masks": table.masks, "labels": table.labels}


def view_state(data: dict, kind, layer, example) -> dict:
    """A view's starting setting, checked against :func:`view_data`'s kinds ->
    {"kind", "layer", "example"}."""
    kinds = data["kinds"]
    kind = next(iter(kinds)) if kind is None else kind
    if kind not in kinds:
        raise ValueError(f"kind must be one of {list(kinds)}, got {kind!r}")
    L, B = kinds[kind]["L"], kinds[kind]["B"]
    if not isinstance(layer, (int, np.integer)) or not -L <= layer < L:
        raise ValueError(f"layer must be an int in [0, {L - 1}] (or negative), "
                         f"got {layer!r}")
    if not isinstance(example, (int, np.integer)) or not 0 <= example < B:
        raise ValueError(f"example must be an int in [0, {B - 1}], got {example!r}")
    return {"kind": kind, "layer": int(layer) % L, "example": int(example)}
