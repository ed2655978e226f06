"""Block diagrams of the book's architectures, drawn by matplotlib from a few boxes and
arrows: ``diagram(name)`` -> Figure.  No image files, no external service.

The drawing units are inches (the axes fill the figure, one unit = one inch), so a
font size in points means the same thing in every diagram: each figure is at most
5.2 inches wide and its smallest text is 10 pt, which stays >= 9 CSS px when a phone
shows the figure 360 px wide.  Colours follow the Transformer paper's figure:
attention orange, add & norm yellow, feed-forward blue, embeddings pink.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

FS = 10.5          # box text, points
SMALL = 10         # shapes and side notes, points (the smallest text in any diagram)
COLORS = {"attn": "#fcdcb4", "norm": "#f3f3b0", "ffn": "#c2e8f7", "embed": "#fcd5d5",
          "linear": "#dcdcf5", "softmax": "#cdeccd", "io": "#ffffff", "head": "#e8e8e8",
          "frame": "#f4f4f4"}
EDGE, NOTE = "#333333", "#555555"


class _Canvas:
    """A figure whose axes fill it, in inch units, with boxes and arrows."""

    def __init__(self, width: float, height: float):
        self.fig = plt.figure(figsize=(width, height))
        self.ax = ax = self.fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(0, width)
        ax.set_ylim(0, height)
        ax.set_axis_off()

    def box(self, cx, cy, w, h, text="", kind="io", fs=FS, bold=False, dashed=False,
            z=2, color=None):
        """A rounded box centred at (cx, cy); -> its (left, bottom, right, top)."""
        self.ax.add_patch(FancyBboxPatch(
            (cx - w / 2, cy - h / 2), w, h, boxstyle="round,pad=0,rounding_size=0.06",
            fc=color or COLORS[kind], ec=EDGE, lw=1.0, ls="--" if dashed else "-",
            zorder=z))
        if text:
            self.text(cx, cy, text, fs=fs, bold=bold, z=z + 1)
        return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2

    def text(self, x, y, s, fs=FS, ha="center", va="center", color=EDGE, bold=False,
             z=5, rotation=0, family=None):
        self.ax.text(x, y, s, fontsize=fs, ha=ha, va=va, color=color, zorder=z,
                     fontweight="bold" if bold else "normal", rotation=rotation,
                     family=family, linespacing=1.15)

    def note(self, x, y, s, ha="left", **kw):
        """A side note (shapes, "× N"): small, grey, monospace for shapes."""
        self.text(x, y, s, fs=SMALL, ha=ha, color=NOTE, **kw)

    def arrow(self, *points, head=True, color=EDGE, lw=1.2, z=1):
        """A polyline through ``points`` with an arrow head at the last one."""
        xs, ys = zip(*points)
        if len(points) > 2:
            self.ax.plot(xs[:-1], ys[:-1], color=color, lw=lw, zorder=z,
                         solid_capstyle="butt")
        self.ax.annotate("", xy=points[-1], xytext=points[-2], zorder=z,
                         arrowprops=dict(arrowstyle="-|>" if head else "-", color=color,
                                         lw=lw, shrinkA=0, shrinkB=0,
                                         mutation_scale=11))

    def dot(self, x, y):
        self.ax.plot([x], [y], "o", color=EDGE, ms=3.5, zorder=3)

    def add(self, x, y, r=0.1):
        """A ⊕ (residual sum) centred at (x, y)."""
        self.ax.add_patch(plt.Circle((x, y), r, fc="white", ec=EDGE, lw=1.0, zorder=3))
        self.ax.plot([x - r * 0.6, x + r * 0.6], [y, y], color=EDGE, lw=1.0, zorder=4)
        self.ax.plot([x, x], [y - r * 0.6, y + r * 0.6], color=EDGE, lw=1.0, zorder=4)


def _encoder_items():
    return [("Multi-head\nself-attention", "attn"), ("Add & LayerNorm", "norm", 0),
            ("Position-wise FFN", "ffn"), ("Add & LayerNorm", "norm", 2)]


def _decoder_items():
    return [("Masked multi-head\nself-attention", "attn"),
            ("Add & LayerNorm", "norm", 0),
            ("Multi-head\ncross-attention", "attn"), ("Add & LayerNorm", "norm", 2),
            ("Position-wise FFN", "ffn"), ("Add & LayerNorm", "norm", 4)]


def _tall(items, h=0.38, h2=0.5, gap=0.28):
    """Height of a stack: two-line boxes are taller."""
    return sum((h2 if "\n" in it[0] else h) + gap for it in items)


def _stack2(c, cx, y, w, items, residual_side=-1.0, gap=0.28):
    """Boxes stacked bottom to top from ``y``, arrows between them; two-line boxes are
    taller.  ``items``: (text, kind) or (text, kind, residual_from): the input of item
    residual_from is added back into this box, around ``residual_side`` of the stack.
    -> list of (left, bottom, right, top), and the top y of the last box."""
    boxes, y_in = [], y
    for i, item in enumerate(items):
        text, kind = item[0], item[1]
        h = 0.5 if "\n" in text else 0.38
        bottom = y_in + gap
        boxes.append(c.box(cx, bottom + h / 2, w, h, text, kind))
        c.arrow((cx, y_in), (cx, bottom))
        if len(item) > 2 and item[2] is not None:
            src = item[2]
            yb = (boxes[src][1] + (boxes[src - 1][3] if src > 0 else y)) / 2
            side = cx + residual_side * (w / 2 + 0.2)
            edge = cx + residual_side * w / 2
            c.dot(cx, yb)
            c.arrow((cx, yb), (side, yb), (side, bottom + h / 2),
                    (edge, bottom + h / 2))
        y_in = bottom + h
    return boxes, y_in


def _block(name: str):
    items = _encoder_items() if name == "encoder_block" else _decoder_items()
    H = _tall(items) + 1.6
    c = _Canvas(4.6, H)
    cx, w = 2.0, 2.3
    c.box(cx, 0.28, 1.6, 0.36, "input X", "io")
    c.note(cx + 0.9, 0.28, "(B, T, d_model)", family="monospace")
    frame_bottom = 0.62
    boxes, top = _stack2(c, cx, 0.46, w, items)
    c.box(cx, (frame_bottom + top + 0.12) / 2, w + 0.9, top + 0.12 - frame_bottom,
          kind="frame", z=0)
    c.note(cx + w / 2 + 0.5, top - 0.1, "× N", ha="left", va="top")
    c.arrow((cx, top), (cx, top + 0.42))
    c.box(cx, top + 0.62, 1.6, 0.36, "output", "io")
    c.note(cx + 0.9, top + 0.62, "(B, T, d_model)", family="monospace")
    if name == "decoder_block":
        cross = boxes[2]
        y = (cross[1] + cross[3]) / 2
        x0 = cross[2]
        c.arrow((4.55, y), (x0, y))
        c.text(4.5, y + 0.32, "encoder\noutput\n(K, V)", fs=SMALL, ha="right",
               color=NOTE)
    return c.fig


def _transformer():
    enc = [("Multi-head\nself-attention", "attn"), ("Add & Norm", "norm", 0),
           ("FFN", "ffn"), ("Add & Norm", "norm", 2)]
    dec = [("Masked\nself-attention", "attn"), ("Add & Norm", "norm", 0),
           ("Cross-\nattention", "attn"), ("Add & Norm", "norm", 2),
           ("FFN", "ffn"), ("Add & Norm", "norm", 4)]
    c = _Canvas(5.2, _tall(dec) + 3.0)
    ex, dx, w = 1.25, 3.85, 1.55
    for cx, label, side in ((ex, "source tokens", "Encoder"),
                            (dx, "target tokens\n(shifted right)", "Decoder")):
        c.box(cx, 0.3, w, 0.42 if "\n" in label else 0.34, label, "io", fs=SMALL)
        c.arrow((cx, 0.52), (cx, 0.72))
        c.box(cx, 0.93, w, 0.42, "Embedding\n+ positions", "embed", fs=SMALL)
    enc_boxes, etop = _stack2(c, ex, 1.14, w, enc, gap=0.24)
    dec_boxes, dtop = _stack2(c, dx, 1.14, w, dec, residual_side=1.0, gap=0.24)
    for cx, top, name, side in ((ex, etop, "Encoder", -1), (dx, dtop, "Decoder", 1)):
        c.box(cx, (1.26 + top + 0.1) / 2, w + 0.62, top + 0.1 - 1.26, kind="frame", z=0)
        # "× N" in the corner away from the residual paths, the name beside the exit
        c.text(cx - side * (w / 2 + 0.26), 1.26 + 0.13, "× N", fs=SMALL,
               ha="right" if side < 0 else "left", color=NOTE)
        c.text(cx + side * 0.1, top + 0.26, name, fs=FS, bold=True,
               ha="left" if side > 0 else "right")
    # encoder output -> every decoder block's cross-attention (K, V)
    cross = dec_boxes[2]
    ycross = (cross[1] + cross[3]) / 2
    xmid = (ex + dx) / 2 + 0.02
    c.arrow((ex, etop), (ex, etop + 0.45), (xmid, etop + 0.45), (xmid, ycross),
            (cross[0], ycross))
    c.text(xmid - 0.06, etop + 0.62, "memory (K, V)", fs=SMALL, ha="center", color=NOTE)
    y = dtop + 0.4
    c.arrow((dx, dtop), (dx, y))
    c.box(dx, y + 0.19, w, 0.36, "Linear", "linear")
    c.arrow((dx, y + 0.37), (dx, y + 0.55))
    c.box(dx, y + 0.74, w, 0.36, "Softmax", "softmax")
    c.arrow((dx, y + 0.92), (dx, y + 1.08))
    c.text(dx, y + 1.3, "next-token\nprobabilities", fs=SMALL, color=NOTE)
    top = y + 1.5
    c.fig.set_size_inches(5.2, top)
    c.ax.set_ylim(0, top)
    return c.fig


def _multihead():
    c = _Canvas(5.2, 5.6)
    xs, w = (0.9, 2.1, 3.3), 0.95
    for x, name in zip(xs, "QKV"):
        c.box(x, 0.3, w, 0.36, name, "io", bold=True)
        c.arrow((x, 0.48), (x, 0.72))
        c.box(x, 0.92, w, 0.4, f"Linear W_{name}", "linear", fs=SMALL)
        c.arrow((x, 1.12), (x, 1.5))
    c.note(3.87, 0.3, "(B, T, d_model)", family="monospace")
    c.box(2.1, 1.7, 3.35, 0.4, "split into h heads", "head")
    c.note(3.87, 1.22, "(B, h, T, d_k)\nd_k = d_model/h", family="monospace")
    # h stacked attention boxes (a deck of cards: head 1 in front)
    for k, off in enumerate((0.24, 0.12, 0.0)):
        c.box(2.1 + off, 2.72 + off, 3.0, 0.62, "" if k < 2 else
              "scaled dot-product attention\nsoftmax(Q Kᵀ / √d_k) V", "attn",
              fs=SMALL, z=2 + 2 * k)
    c.text(0.42, 2.72, "head 1 … h", fs=SMALL, ha="left", color=NOTE, rotation=90)
    c.arrow((2.1, 1.9), (2.1, 2.41))
    c.arrow((2.1, 3.03), (2.1, 3.48))
    c.note(3.87, 3.4, "(B, h, T, d_k)", family="monospace")
    c.box(2.1, 3.68, 3.35, 0.4, "concatenate heads", "head")
    c.note(3.87, 4.14, "(B, T, h·d_k)", family="monospace")
    c.arrow((2.1, 3.88), (2.1, 4.3))
    c.box(2.1, 4.5, 1.7, 0.4, "Linear W_O", "linear")
    c.arrow((2.1, 4.7), (2.1, 5.06))
    c.box(2.1, 5.25, 1.7, 0.36, "output", "io")
    c.note(3.87, 5.25, "(B, T, d_model)", family="monospace")
    return c.fig


def _norm_placement():
    c = _Canvas(5.2, 4.4)
    for cx, title, pre in ((1.3, "post-norm (2017 paper)", False),
                           (3.9, "pre-norm (GPT-2 on)", True)):
        c.text(cx, 4.18, title, fs=FS, bold=True)
        c.box(cx, 0.3, 1.2, 0.36, "x", "io")
        yb = 0.72
        c.dot(cx, yb)
        if pre:
            c.arrow((cx, 0.48), (cx, 0.95))
            c.box(cx, 1.15, 1.5, 0.4, "LayerNorm", "norm")
            c.arrow((cx, 1.35), (cx, 1.75))
            c.box(cx, 2.0, 1.5, 0.5, "sublayer\n(attention / FFN)", "attn", fs=SMALL)
            c.arrow((cx, 2.25), (cx, 2.7))
            c.add(cx, 2.8)
            c.arrow((cx, 2.9), (cx, 3.55))
            c.box(cx, 3.73, 1.2, 0.36, "x + f(LN(x))", "io", fs=SMALL)
            side = cx - 1.0
            c.arrow((cx, yb), (side, yb), (side, 2.8), (cx - 0.1, 2.8))
            c.text(side - 0.08, 1.75, "identity path", fs=SMALL, color=NOTE,
                   rotation=90, ha="right")
        else:
            c.arrow((cx, 0.48), (cx, 1.1))
            c.box(cx, 1.35, 1.5, 0.5, "sublayer\n(attention / FFN)", "attn", fs=SMALL)
            c.arrow((cx, 1.6), (cx, 2.05))
            c.add(cx, 2.15)
            c.arrow((cx, 2.25), (cx, 2.7))
            c.box(cx, 2.9, 1.5, 0.4, "LayerNorm", "norm")
            c.arrow((cx, 3.1), (cx, 3.55))
            c.box(cx, 3.73, 1.2, 0.36, "LN(x + f(x))", "io", fs=SMALL)
            side = cx - 1.0
            c.arrow((cx, yb), (side, yb), (side, 2.15), (cx - 0.1, 2.15))
            c.text(side - 0.08, 1.4, "residual", fs=SMALL, color=NOTE, rotation=90,
                   ha="right")
    c.ax.plot([2.6, 2.6], [0.1, 4.3], color="#bbbbbb", lw=0.8, ls=":")
    return c.fig


def _decoder_only():
    items = [("LayerNorm", "norm"), ("Masked multi-head\nself-attention", "attn"),
             ("LayerNorm", "norm"), ("MLP (FFN)", "ffn")]
    c = _Canvas(4.8, 6.6)
    cx, w = 2.0, 2.2
    c.box(cx, 0.3, 2.4, 0.36, "token ids", "io")
    c.arrow((cx, 0.48), (cx, 0.72))
    c.box(cx, 0.95, 2.4, 0.46, "token embedding\n+ position embedding", "embed",
          fs=SMALL)
    y, gap = 1.18, 0.26
    y0 = add_y = y   # add_y: the first residual add, set at i == 1, read at i == 3
    boxes = []
    for i, (text, kind) in enumerate(items):
        h = 0.5 if "\n" in text else 0.38
        bottom = y + gap
        boxes.append(c.box(cx, bottom + h / 2, w, h, text, kind))
        c.arrow((cx, y), (cx, bottom))
        y = bottom + h
        if i in (1, 3):  # residual add after attention and after the MLP
            c.arrow((cx, y), (cx, y + 0.18))
            c.add(cx, y + 0.28)
            start = (boxes[i - 1][1] + (y0 if i == 1 else add_y + 0.1)) / 2
            side = cx - w / 2 - 0.22
            c.dot(cx, start)
            c.arrow((cx, start), (side, start), (side, y + 0.28), (cx - 0.1, y + 0.28))
            add_y = y + 0.28
            y = y + 0.38
    frame_top, frame_bottom = y + 0.08, 1.23
    c.box(cx, (frame_bottom + frame_top) / 2, w + 0.9, frame_top - frame_bottom,
          kind="frame", z=0)
    c.note(cx + w / 2 + 0.4, frame_bottom + 0.14, "× N", ha="right")
    c.text(cx + w / 2 + 0.5, frame_top - 0.2, "decoder\nblock", fs=SMALL, ha="left",
           color=NOTE)
    c.arrow((cx, y), (cx, y + 0.3))
    c.box(cx, y + 0.49, w, 0.38, "final LayerNorm", "norm")
    c.arrow((cx, y + 0.68), (cx, y + 0.92))
    c.box(cx, y + 1.11, w, 0.38, "Linear (LM head)", "linear")
    c.arrow((cx, y + 1.3), (cx, y + 1.5))
    c.text(cx, y + 1.72, "logits for the next token", fs=SMALL, color=NOTE)
    c.note(cx + w / 2 + 0.12, y + 1.11, "(B, T, vocab)", family="monospace")
    c.note(cx + 1.32, 0.3, "(B, T)", family="monospace")
    c.fig.set_size_inches(4.8, y + 1.95)
    c.ax.set_ylim(0, y + 1.95)
    return c.fig


def _bert():
    toks = ["[CLS]", "my", "dog", "[MASK]", "cute", "[SEP]"]
    c = _Canvas(5.2, 5.0)
    x0, dxs, wt = 0.45, 0.8, 0.72
    xs = [x0 + i * dxs for i in range(len(toks))]
    mid = (xs[0] + xs[-1]) / 2
    span = xs[-1] - xs[0] + wt
    for x, t in zip(xs, toks):
        c.box(x, 0.3, wt, 0.36, t, "io", fs=SMALL, bold=t.startswith("["))
        c.arrow((x, 0.48), (x, 0.74))
    c.box(mid, 0.98, span, 0.46, "token + position + segment embeddings", "embed",
          fs=SMALL)
    for x in xs:
        c.arrow((x, 1.21), (x, 1.5))
    c.box(mid, 2.1, span, 1.2, "", "frame")
    c.box(mid, 2.1, span - 0.3, 0.46,
          "encoder blocks × N\n(self-attention sees every token: no mask)",
          "attn", fs=SMALL)
    for x in xs:
        c.arrow((x, 2.7), (x, 3.0))
        c.box(x, 3.18, wt * 0.8, 0.34, "", "head")
    c.note(xs[-1] + wt / 2 + 0.05, 3.18, "h_t", ha="left", family="monospace")
    # MLM head on the [MASK] position, classifier on [CLS]
    for x, what, out in ((xs[3], "MLM head\n(Linear→vocab)", "“is”"),
                         (xs[0], "classifier\non [CLS]", "label")):
        c.arrow((x, 3.35), (x, 3.7))
        c.box(x, 3.96, 1.35 if x == xs[3] else 1.0, 0.5, what, "linear", fs=SMALL)
        c.arrow((x, 4.21), (x, 4.45))
        c.text(x, 4.66, out, fs=FS, bold=True)
    c.fig.set_size_inches(5.2, 4.85)
    c.ax.set_ylim(0, 4.85)
    return c.fig


DIAGRAMS = {"transformer": _transformer,
            "encoder_block": lambda: _block("encoder_block"),
            "decoder_block": lambda: _block("decoder_block"), "multihead": _multihead,
            "norm_placement": _norm_placement, "decoder_only": _decoder_only,
            "bert": _bert}


def diagram(name: str):
    """A block diagram of one architecture -> matplotlib Figure.

    ``name``: "transformer" (encoder–decoder overall), "encoder_block",
    "decoder_block", "multihead" (split into heads, attention per head, concatenate,
    W_O, with shapes), "norm_placement" (post-norm vs pre-norm), "decoder_only" (GPT)
    or "bert" (encoder-only, with the masked-language-model head and [CLS]).
    """
    if name not in DIAGRAMS:
        raise ValueError(f"unknown diagram {name!r}; "
                         f"expected one of {sorted(DIAGRAMS)}")
    return DIAGRAMS[name]()
