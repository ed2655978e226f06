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


def _sdpa():
    """Scaled dot-product attention, bottom to top, with the shape after each step."""
    c = _Canvas(5.2, 5.0)
    cx, w, h = 1.3, 2.1, 0.42
    for x, name, shape in ((0.65, "Q", "(B, T_q, d_k)"), (1.95, "K", "(B, T_k, d_k)"),
                           (4.5, "V", "(B, T_k, d_v)")):
        c.box(x, 0.36, 1.22, 0.56, "", "io")
        c.text(x, 0.5, name, bold=True)
        c.text(x, 0.24, shape, fs=SMALL, family="monospace")
    steps = [("MatMul: Q Kᵀ", "attn", "scores (B, T_q, T_k)"),
             ("Scale: ÷ √d_k", "norm", "variance d_k → 1"),
             ("Mask (optional)", "head", "masked: score ≈ −∞"),
             ("SoftMax over keys", "softmax", "weights, rows sum to 1"),
             ("MatMul: weights · V", "attn", None)]
    y = 0.64
    for x in (0.65, 1.95):
        c.arrow((x, y), (x, 0.98))
    for i, (text, kind, note) in enumerate(steps):
        yc = 1.2 + 0.68 * i
        if i:
            c.arrow((cx, yc - 0.68 + h / 2), (cx, yc - h / 2))
        c.box(cx, yc, w, h, text, kind, dashed=text.startswith("Mask"))
        if note:
            c.note(cx + w / 2 + 0.12, yc, note)
    y_last = 1.2 + 0.68 * 4
    c.arrow((4.5, 0.64), (4.5, y_last), (cx + w / 2, y_last))
    c.arrow((cx, y_last + h / 2), (cx, y_last + 0.5))
    c.box(cx, y_last + 0.68, 1.4, 0.36, "output", "io")
    c.note(cx + 0.82, y_last + 0.68, "(B, T_q, d_v)", family="monospace")
    return c.fig


def _seq2seq():
    """An RNN encoder-decoder with attention: the context vector of one step."""
    c = _Canvas(5.2, 3.9)
    xs, wb = (0.45, 1.25, 2.05, 2.85), 0.64
    for i, x in enumerate(xs, 1):
        c.box(x, 0.3, wb, 0.36, f"x({i})", "embed", fs=SMALL)
        c.arrow((x, 0.48), (x, 0.82))
        c.box(x, 1.0, wb, 0.36, f"h({i})", "linear", fs=SMALL)
        if i > 1:
            c.arrow((x - 0.8 + wb / 2, 1.0), (x - wb / 2, 1.0))
    sx, sy = 1.9, 2.25
    c.ax.add_patch(plt.Circle((sx, sy), 0.17, fc="white", ec=EDGE, lw=1.0, zorder=3))
    c.text(sx, sy, "Σ", fs=FS)
    for x in xs:
        c.arrow((x, 1.18), (sx + (x - sx) * 0.12, sy - 0.16))
    c.text(0.08, 2.3, "weights α(t, t′)\n(softmax of scores)", fs=SMALL, ha="left",
           color=NOTE)
    c.arrow((sx, sy + 0.17), (sx, 2.78))
    c.box(sx, 2.96, 1.3, 0.36, "context c(t)", "attn", fs=SMALL)
    dx = 4.35
    c.box(dx, 1.0, 1.0, 0.36, "s(t−1)", "norm", fs=SMALL)
    c.box(dx, 2.96, 1.0, 0.36, "s(t)", "norm", fs=SMALL)
    c.arrow((dx, 1.18), (dx, 2.78))
    c.arrow((sx + 0.65, 2.96), (dx - 0.5, 2.96))
    c.arrow((dx - 0.5, 1.12), (sx + 0.15, sy + 0.05), color=NOTE)
    c.text(3.2, 1.98, "query s(t−1):\nscores s·h(t′)", fs=SMALL, color=NOTE)
    c.text(dx, 0.5, "decoder state\n(RNN)", fs=SMALL, color=NOTE)
    c.arrow((dx, 3.14), (dx, 3.45))
    c.text(dx, 3.64, "output y(t)", fs=SMALL)
    c.text(0.08, 3.55, "encoder RNN (bottom left),\ndecoder RNN (right)", fs=SMALL,
           ha="left", color=NOTE)
    return c.fig

def _grid(c, x0, y_top, allowed, cell, dashed=False):
    """Cells of a boolean mask, row 0 at the top: orange where attention is allowed,
    grey where it is masked."""
    for i, row in enumerate(allowed):
        for j, ok in enumerate(row):
            c.ax.add_patch(plt.Rectangle(
                (x0 + j * cell, y_top - (i + 1) * cell), cell, cell,
                fc=COLORS["attn"] if ok else "#d9d9d9",
                ec="#999999" if dashed else "white", lw=1.0, ls="--" if dashed else "-",
                zorder=2))


def _mask_broadcast():
    """A decoder's masks as shapes: padding (B, 1, 1, T) broadcast over the queries,
    causal (1, 1, T, T) broadcast over the batch, their & (B, 1, T, T); three
    sentences: right-padded, unpadded, left-padded (its first row is empty)."""
    T, cell = 4, 0.22
    side = T * cell
    rows = (("sentence 0: right-padded", [1, 1, 1, 0]), ("sentence 1: no padding",
            [1, 1, 1, 1]), ("sentence 2: left-padded", [0, 1, 1, 1]))
    c = _Canvas(5.2, 5.05)
    cols = (0.15, 1.45, 2.8, 4.1)       # left edges: padding, broadcast, causal, both
    heads = ("padding\n(B, 1, 1, T)", "broadcast\n(B, 1, T, T)",
             "causal\n(1, 1, T, T)", "padding & causal\n(B, 1, T, T)")
    for x, head in zip(cols, heads):
        c.text(x + side / 2, 4.76, head, fs=SMALL)
    causal = [[j <= i for j in range(T)] for i in range(T)]
    for b, (label, real) in enumerate(rows):
        top = 4.2 - b * 1.32
        mid = top - side / 2
        real = [bool(r) for r in real]
        c.text(cols[0] - 0.02, top + 0.05, label, fs=SMALL, ha="left", va="bottom",
               color=NOTE)
        _grid(c, cols[0], mid + cell / 2, [real], cell)
        c.arrow((cols[0] + side + 0.08, mid), (cols[1] - 0.08, mid))
        _grid(c, cols[1], top, [real] * T, cell)
        c.text((cols[1] + side + cols[2]) / 2, mid, "&", fs=FS + 2, bold=True)
        _grid(c, cols[2], top, causal, cell, dashed=b > 0)
        c.text((cols[2] + side + cols[3]) / 2, mid, "=", fs=FS + 2, bold=True)
        _grid(c, cols[3], top, [[a and r for a, r in zip(row, real)]
                                for row in causal], cell)
        if not real[0]:
            c.note(cols[3] + side / 2, top - side - 0.14, "row 0: empty", ha="center")
    c.note(cols[2] + side / 2, 4.2 - 2.64 - side - 0.14, "the same tensor", ha="center")
    c.note(0.15, 0.22, "rows: queries, columns: keys; orange = allowed, grey = "
           "masked;\neach 1 broadcasts against the scores (B, h, T, T), heads too",
           ha="left")
    return c.fig


DIAGRAMS = {"transformer": _transformer,
            "encoder_block": lambda: _block("encoder_block"),
            "decoder_block": lambda: _block("decoder_block"), "multihead": _multihead,
            "norm_placement": _norm_placement, "decoder_only": _decoder_only,
            "bert": _bert, "sdpa": _sdpa, "seq2seq": _seq2seq,
            "mask_broadcast": _mask_broadcast}


def diagram(name: str):
    """A block diagram of one architecture -> matplotlib Figure.

    ``name``: "transformer" (encoder–decoder overall), "encoder_block",
    "decoder_block", "multihead" (split into heads, attention per head, concatenate,
    W_O, with shapes), "norm_placement" (post-norm vs pre-norm), "decoder_only" (GPT)
    or "bert" (encoder-only, with the masked-language-model head and [CLS]);
    "sdpa" (scaled dot-product attention step by step, with shapes), "seq2seq" (an RNN
    encoder-decoder with attention: one step's context vector), "mask_broadcast"
    (padding, causal and both as shapes that broadcast, with left padding).
    """
    if name not in DIAGRAMS:
        raise ValueError(f"unknown diagram {name!r}; "
                         f"expected one of {sorted(DIAGRAMS)}")
    return DIAGRAMS[name]()


# ------------------------------------------------------------------ chapters 13 and 14
def _gpt2_names():
    """Hugging Face's GPT-2 parameter names -> d2l.GPT's, with what the copy does."""
    rows = [("wte.weight  (V, d)", "embedding.weight", "copy"),
            ("wpe.weight  (1024, d)", "pos_encoding.weight", "copy"),
            ("ln_1", "norm1", "copy"),
            ("attn.c_attn  (d, 3d)", "W_q, W_k, W_v", "split, .T"),
            ("attn.c_proj  (d, d)", "self_attn.W_o", ".T"),
            ("ln_2", "norm2", "copy"),
            ("mlp.c_fc  (d, 4d)", "ffn.linear1", ".T"),
            ("mlp.c_proj  (4d, d)", "ffn.linear2", ".T"),
            ("ln_f", "norm", "copy"),
            ("lm_head.weight", "lm_head.weight", "tied")]
    top, dy = 0.62, 0.42
    H = top + dy * len(rows) + 0.7
    c = _Canvas(5.2, H)
    xl, xr, wl, wr = 1.2, 4.05, 2.2, 2.1
    c.text(xl, H - 0.25, "Hugging Face GPT-2", fs=FS, bold=True)
    c.text(xr, H - 0.25, "d2l.GPT", fs=FS, bold=True)
    y_of = [H - top - 0.12 - i * dy - (0.18 if 2 <= i else 0) - (0.18 if i >= 8 else 0)
            for i in range(len(rows))]
    yb0, yb1 = y_of[7] - 0.24, y_of[2] + 0.42
    for cx, w, label in ((xl, wl, "h[i]"), (xr, wr, "blocks[i]")):
        c.box(cx, (yb0 + yb1) / 2, w + 0.14, yb1 - yb0, kind="frame", z=0)
        c.note(cx - w / 2, yb1 - 0.1, label, family="monospace", va="top")
    for i, (theirs, ours, how) in enumerate(rows):
        y = y_of[i]
        kind = ("embed" if i < 2 or i == 9 else "norm" if "ln" in theirs
                else "attn" if "attn" in theirs else "ffn")
        c.box(xl, y, wl, 0.32, theirs, kind, fs=SMALL)
        c.box(xr, y, wr, 0.32, ours, kind, fs=SMALL)
        c.arrow((xl + wl / 2 + 0.02, y), (xr - wr / 2 - 0.02, y))
        c.text((xl + wl / 2 + xr - wr / 2) / 2, y + 0.13, how, fs=SMALL, color=NOTE)
    c.note(0.1, 0.22, "Conv1D keeps W as (in, out), nn.Linear as (out, in): .T")
    return c.fig


def _bert_input():
    """BERT's input: token + segment + position embeddings, summed (d2l fig. 15.8.2)."""
    toks = ["[CLS]", "my", "dog", "barks", "[SEP]", "it", "is", "loud", "[SEP]"]
    segs = ["A"] * 5 + ["B"] * 4
    c = _Canvas(5.2, 2.75)
    x0, dx, w = 1.14, 0.46, 0.43
    xs = [x0 + i * dx for i in range(len(toks))]
    rows = [(2.3, "token", toks, "embed"),
            (1.7, "segment", segs, None),
            (1.1, "position", [str(i) for i in range(len(toks))], "ffn")]
    for k, (y, label, items, kind) in enumerate(rows):
        c.text(0.08, y, ("" if k == 0 else "+ ") + label, fs=SMALL, ha="left",
               color=NOTE)
        for x, t, s in zip(xs, items, segs):
            c.box(x, y, w, 0.36, t, kind or ("norm" if s == "A" else "linear"),
                  fs=SMALL, bold=t.startswith("["))
    c.arrow((xs[4], 0.9), (xs[4], 0.62))
    c.text(xs[4], 0.4, "sum → LayerNorm → encoder blocks", fs=SMALL, color=NOTE)
    c.text(xs[2], 2.62, "sentence A", fs=SMALL, color=NOTE)
    c.text(xs[6] + dx / 2, 2.62, "sentence B", fs=SMALL, color=NOTE)
    return c.fig


def _bert_tasks():
    """d2l §16.6's four ways to fine-tune BERT, one panel each, top to bottom."""
    panels = [("single text: classify", ["[CLS]", "w₁", "w₂", "w₃", "[SEP]"],
               {0: "label"}),
              ("text pair: classify (NSP, entailment)",
               ["[CLS]", "a₁", "a₂", "[SEP]", "b₁", "b₂", "[SEP]"], {0: "label"}),
              ("tagging: one label per token", ["[CLS]", "w₁", "w₂", "w₃", "[SEP]"],
               {1: "tag", 2: "tag", 3: "tag"}),
              ("span QA: start and end in the passage",
               ["[CLS]", "q₁", "q₂", "[SEP]", "p₁", "p₂", "p₃", "[SEP]"],
               {4: "start", 6: "end"})]
    ph = 1.45
    c = _Canvas(5.2, ph * len(panels) + 0.1)
    dx, w = 0.6, 0.54
    for k, (title, toks, outs) in enumerate(panels):
        y0 = (len(panels) - 1 - k) * ph + 0.1
        x0 = 2.6 - dx * (len(toks) - 1) / 2
        xs = [x0 + i * dx for i in range(len(toks))]
        c.text(0.05, y0 + ph - 0.17, f"({'abcd'[k]}) {title}", fs=FS, ha="left",
               bold=True)
        for x, t in zip(xs, toks):
            c.box(x, y0 + 0.2, w, 0.3, t, "io", fs=SMALL, bold=t.startswith("["))
        c.box(2.6, y0 + 0.63, xs[-1] - xs[0] + w, 0.3, "BERT", "attn", fs=SMALL)
        for i, what in outs.items():
            c.arrow((xs[i], y0 + 0.78), (xs[i], y0 + 0.96))
            c.text(xs[i], y0 + 1.06, what, fs=SMALL, bold=True)
    return c.fig


def merge_tree(tok, token_id: int, ax=None):
    """Draw how BPE built ``token_id``: its bytes at the bottom, each merge a node above
    its two parts, labelled with the piece it makes and its id (ids are learned in
    order, so a smaller id is an earlier merge).  ``tok``: a :class:`d2lmini.BPE`.
    -> the matplotlib Figure."""
    parts = {new: pair for pair, new in tok.merges.items()}
    if not isinstance(token_id, int) or token_id not in tok.vocab:
        raise ValueError(f"token_id must be an id of the tokenizer "
                         f"(0..{len(tok) - 1}), got {token_id!r}")
    pos, edges, count = {}, [], [0]

    def walk(i, key):                           # leaves left to right, parents above
        if i not in parts:
            pos[key] = (count[0], 0)
            count[0] += 1
            return pos[key]
        a, b = parts[i]
        (xa, da), (xb, db) = walk(a, key + ("a", a)), walk(b, key + ("b", b))
        pos[key] = ((xa + xb) / 2, max(da, db) + 1)
        edges.extend([(key, key + ("a", a)), (key, key + ("b", b))])
        return pos[key]

    def label(i):
        s = tok.vocab[i].decode("utf-8", errors="replace").replace(" ", "␣")
        return s if i not in parts else f"{s}\n{i}"

    n_leaf = len(tok.vocab[token_id])
    depth = walk(token_id, (token_id,))[1]
    width = min(5.2, 0.62 * n_leaf + 0.4)
    fig = ax.figure if ax is not None else plt.figure(
        figsize=(width, 0.62 * depth + 0.75))
    if ax is None:
        ax = fig.add_axes((0, 0, 1, 1))
    for a, b in edges:
        (xa, ya), (xb, yb) = pos[a], pos[b]
        ax.plot([xa, xb], [ya, yb], color=NOTE, lw=1.0, zorder=1)
    for key, (x, y) in pos.items():
        i = key[-1]
        leaf = i not in parts
        ax.text(x, y, label(i), ha="center", va="center", fontsize=SMALL,
                zorder=3, linespacing=1.0,
                bbox=dict(boxstyle="round,pad=0.25", lw=0.8, ec=EDGE,
                          fc=COLORS["io"] if leaf else COLORS["ffn"]))
    ax.set_xlim(-0.6, n_leaf - 0.4)
    ax.set_ylim(-0.5, depth + 0.5)
    ax.set_axis_off()
    return fig


# chapters 13-14: "gpt2_names" (Hugging Face's GPT-2 parameter names -> d2l.GPT's),
# "bert_input" (token + segment + position embeddings), "bert_tasks" (the four
# fine-tuning setups of d2l §16.6); merge_tree above draws how BPE built one token
DIAGRAMS.update(gpt2_names=_gpt2_names, bert_input=_bert_input, bert_tasks=_bert_tasks)


# ------------------------------------------------------------------ chapters 6 and 8
_TOKEN_COLORS = {"a": ("#cfe0f5", "#8fb3e3"), "b": ("#fbe0c2", "#f2b47a"),
                 "c": ("#d3eed3", "#93d293")}


def _cells(c, x0, y, labels, w=0.4, h=0.34, d_k=2):
    """A row of memory cells labelled token+feature ("a0"); features of head 0 light,
    of head 1 dark."""
    for i, lab in enumerate(labels):
        light, dark = _TOKEN_COLORS[lab[0]]
        c.box(x0 + (i + 0.5) * w, y, w, h, lab, color=dark if int(lab[1]) >= d_k
              else light, fs=SMALL, z=2)


def _view_layout():
    """Chapter 6: the flat memory of Q cut into heads two ways."""
    c = _Canvas(5.2, 3.7)
    flat = [f"{t}{f}" for t in "abc" for f in range(4)]
    c.text(2.6, 3.47, "Q of one sentence in memory: tokens a, b, c; d_model = 4",
           fs=SMALL, color=NOTE)
    _cells(c, 0.2, 3.05, flat)
    c.note(0.2, 2.7, "h = 2 heads of d_k = 2: light = features 0-1 (head 0), "
           "dark = 2-3")
    for cx, title, rows, verdict in (
            (1.3, "view(T, h, d_k)\n.transpose(0, 1)",
             [["a0", "a1", "a2", "a3"], ["b0", "b1", "b2", "b3"],
              ["c0", "c1", "c2", "c3"]], "right: a row = one token"),
            (3.9, "view(h, T, d_k)", [["a0", "a1", "b2", "b3"],
                                      ["a2", "a3", "c0", "c1"],
                                      ["b0", "b1", "c2", "c3"]],
             "wrong: rows mix tokens")):
        c.text(cx, 2.22, title, fs=FS, family="monospace")
        c.text(cx - 0.55, 1.72, "head 0", fs=SMALL, color=NOTE)
        c.text(cx + 0.55, 1.72, "head 1", fs=SMALL, color=NOTE)
        for r, row in enumerate(rows):
            y = 1.42 - 0.36 * r
            _cells(c, cx - 0.95, y, row[:2])
            _cells(c, cx + 0.15, y, row[2:])
        c.text(cx, 0.2, verdict, fs=SMALL, bold=True)
    c.ax.plot([2.6, 2.6], [0.05, 2.45], color="#bbbbbb", lw=0.8, ls=":")
    return c.fig


def _dropout_placement():
    """Chapter 8: where dropout acts in an encoder layer (post-norm)."""
    c = _Canvas(5.2, 6.1)
    cx, w = 1.9, 2.6
    drop = lambda y, text, paper: c.box(cx, y, w, 0.34, text, "head", fs=SMALL,
                                        dashed=not paper)
    c.box(cx, 0.25, 1.4, 0.34, "tokens", "io")
    c.arrow((cx, 0.42), (cx, 0.6))
    c.box(cx, 0.8, w, 0.4, "Embedding × √d  +  PE", "embed")
    c.arrow((cx, 1.0), (cx, 1.2))
    drop(1.37, "① Dropout", True)
    c.arrow((cx, 1.54), (cx, 1.8))
    c.box(cx, 2.12, w, 0.6, "Multi-head attention\nsoftmax → ③ Dropout → · V", "attn",
          fs=SMALL)
    c.arrow((cx, 2.42), (cx, 2.62))
    drop(2.79, "② Dropout", True)
    c.arrow((cx, 2.96), (cx, 3.16))
    c.box(cx, 3.35, w, 0.38, "Add & LayerNorm", "norm")
    c.arrow((cx, 3.54), (cx, 3.76))
    c.box(cx, 4.08, w, 0.6, "FFN: Linear → ReLU\n→ ④ Dropout → Linear", "ffn",
          fs=SMALL)
    c.arrow((cx, 4.38), (cx, 4.58))
    drop(4.75, "② Dropout", True)
    c.arrow((cx, 4.92), (cx, 5.12))
    c.box(cx, 5.31, w, 0.38, "Add & LayerNorm", "norm")
    c.arrow((cx, 5.5), (cx, 5.72))
    c.box(cx, 5.88, 1.4, 0.3, "next layer", "io", fs=SMALL)
    for y0, y1 in ((1.68, 3.35), (3.65, 5.31)):          # residual paths
        side = cx - w / 2 - 0.22
        c.dot(cx, y0)
        c.arrow((cx, y0), (side, y0), (side, y1), (cx - w / 2, y1))
    x = cx + w / 2 + 0.15
    c.note(x, 1.37, "on the sum of\nembedding and PE", va="center")
    c.note(x, 2.79, "on each sub-layer's\noutput, before\nthe residual add",
           va="center")
    c.note(x, 4.08,
           "③ ④ Annotated\nTransformer and\ntorch.nn, not in\nthe paper's text",
           va="center")
    c.note(x, 5.31, "① ② the paper:\nP_drop = 0.1", va="center")
    return c.fig


# chapter 6: "view_layout" (the flat memory of Q cut into heads, right and wrong);
# chapter 8: "dropout_placement" (where dropout acts in a Transformer layer)
DIAGRAMS.update(view_layout=_view_layout, dropout_placement=_dropout_placement)


# ------------------------------------------------------------------ chapters 11 and 12
_PATH = "#d9480f"                 # the path from the first input to the last output


def _dependency_graphs():
    """Chapter 11: which inputs each output reads, for T = 8, in a GRU, a causal
    convolution (k = 3) and one self-attention layer, with the path from x0 to the
    last output drawn in orange (d2l fig. 11.6.1)."""
    T, dx, x0 = 8, 0.56, 0.75
    c = _Canvas(5.2, 6.3)
    xs = [x0 + dx * t for t in range(T)]
    node = lambda x, y, on=False: c.ax.add_patch(plt.Circle(
        (x, y), 0.085, fc=_PATH if on else "white", ec=EDGE, lw=1.0, zorder=3))
    line = lambda a, b, on=False: c.ax.plot(
        [a[0], b[0]], [a[1], b[1]], color=_PATH if on else "#b0b0b0",
        lw=2.2 if on else 0.7, zorder=4 if on else 1)

    def row_labels(y, name):
        c.text(0.08, y, name, fs=SMALL, ha="left", color=NOTE)

    # self-attention: one layer, every output reads every input
    yb, yt = 0.35, 1.35
    c.text(2.6, 1.72, "self-attention: 1 layer, path length 1", fs=FS, bold=True)
    for i in range(T):
        for j in range(T):
            line((xs[j], yb), (xs[i], yt), on=(j == 0 and i == T - 1))
    for t in range(T):
        node(xs[t], yb, on=t == 0), node(xs[t], yt, on=t == T - 1)
    row_labels(yb, "x"), row_labels(yt, "y")
    # causal convolution, k = 3: ceil((T - 1) / 2) = 4 layers
    base, gap, L = 2.2, 0.5, 4
    path = {0: 0, 1: 2, 2: 4, 3: 6, 4: 7}               # layer -> position on the path
    c.text(2.6, base + gap * L + 0.38,
           "causal convolution, k = 3: 4 layers, path length 4", fs=FS, bold=True)
    for l in range(1, L + 1):
        for t in range(T):
            for j in (t - 2, t - 1, t):
                if j >= 0:
                    line((xs[j], base + gap * (l - 1)), (xs[t], base + gap * l),
                         on=(path[l] == t and path[l - 1] == j))
    for l in range(L + 1):
        for t in range(T):
            node(xs[t], base + gap * l, on=path[l] == t)
    row_labels(base, "x"), row_labels(base + gap * L, "y")
    # GRU: a chain of states
    yb, yt = 5.0, 5.6
    c.text(2.6, 6.05, "GRU: 1 layer, but a chain: path length 7 steps", fs=FS,
           bold=True)
    for t in range(T):
        line((xs[t], yb), (xs[t], yt), on=t == 0)
        if t:
            line((xs[t - 1], yt), (xs[t], yt), on=True)
    for t in range(T):
        node(xs[t], yb, on=t == 0), node(xs[t], yt, on=True)
    row_labels(yb, "x"), row_labels(yt, "h")
    return c.fig


def _kv_cache():
    """Chapter 12: what one generation step computes with a KV cache (step t = 5):
    the new token's q, k, v; the keys and values of positions 0..4 come from the
    cache."""
    c = _Canvas(5.2, 3.4)
    cell, n, dk, top = 0.25, 6, 4, 2.85
    new, old = "#f2b47a", "#e3e3e3"

    def matrix(x, name, rows, first=0):
        c.text(x + dk * cell / 2, top + 0.25, name, fs=FS, bold=True)
        for r in range(first, rows):
            for k in range(dk):
                c.box(x + (k + 0.5) * cell, top - (r + 0.5) * cell, cell, cell,
                      color=new if r == rows - 1 else old, z=2)
    for r, t in enumerate("ROMEO:"):                     # the tokens, one per row
        c.text(0.4, top - (r + 0.5) * cell, f"{r} {t}", fs=SMALL, family="monospace",
               bold=r == n - 1)
    c.text(0.4, top + 0.25, "token", fs=SMALL, color=NOTE)
    matrix(0.95, "q", n, first=n - 1)
    matrix(2.25, "K", n)
    matrix(3.55, "V", n)
    y = top - n * cell - 0.35
    c.box(0.55, y, 0.25, 0.22, color=old), c.note(0.75, y, "from the cache")
    c.box(2.75, y, 0.25, 0.22, color=new), c.note(2.95, y, "computed at step 5")
    c.note(0.15, 0.55, "Step 5 runs the model on token 5 only: its q, k and v\n"
           "are new, the keys and values of tokens 0-4 are read\nfrom the cache; "
           "attention: q · Kᵀ → softmax → · V", ha="left")
    return c.fig


# chapter 11: "dependency_graphs" (which inputs each output reads, the longest path);
# chapter 12: "kv_cache" (what a generation step computes and what it reuses)
DIAGRAMS.update(dependency_graphs=_dependency_graphs, kv_cache=_kv_cache)
