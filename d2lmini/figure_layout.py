"""What an inline figure tells the book about itself: the size of its smallest text
and where its panels are, so that the built book can give a phone a layout of its own.

Inside a kernel (Jupyter, Colab, the book's build), d2lmini's PNG formatter for
matplotlib figures (:func:`record_inline_layout`, installed on import next to the
"retina" PNGs) stores in each PNG a text chunk ``d2l-layout``: JSON
``{"text_px": the smallest text drawn, in CSS px at the figure's own size,
"width": its own width in CSS px, "panels": [[x0, y0, x1, y1], ...]}`` with the
panels' boxes in the PNG's pixels (an axes with its ticks, labels and title; the
figure's own titles and legends; axes that overlap make one panel).  The book's
extension (``_ext/d2lbook.py``) reads it: a figure whose text would be smaller than
9 CSS px on a phone is stacked there, one panel under the other, or shown at a
readable width in a box that scrolls sideways.  Nothing changes in the picture.
"""
from __future__ import annotations

import contextlib
import json
import struct
import zlib

__all__ = ["KEY", "layout", "with_layout", "read_layout", "record_inline_layout",
           "text_sizes"]

KEY = "d2l-layout"


@contextlib.contextmanager
def text_sizes(sizes: list):
    """Within the block, the size in points of every text Agg draws is appended to
    ``sizes`` (what the picture shows, not the artists that exist)."""
    from matplotlib.backends.backend_agg import RendererAgg
    original = RendererAgg.draw_text

    def draw_text(self, gc, x, y, s, prop, angle, *args, **kwargs):
        if str(s).strip():
            sizes.append(float(prop.get_size_in_points()))
        return original(self, gc, x, y, s, prop, angle, *args, **kwargs)

    RendererAgg.draw_text = draw_text
    try:
        yield sizes
    finally:
        RendererAgg.draw_text = original


def _png_size(png: bytes) -> tuple[int, int]:
    return struct.unpack(">II", png[16:24])


def _boxes(fig, renderer) -> list:
    """Display boxes (pixels at fig.dpi, origin bottom left) of every axes with its
    labels, and of the figure's own titles, texts and legends."""
    out = []
    for ax in fig.axes:
        shown = ax.axison or ax.get_images() or ax.collections or ax.lines
        if ax.get_visible() and shown:
            out.append(ax.get_tightbbox(renderer))
    extra = list(fig.texts) + list(fig.legends)
    for name in ("_suptitle", "_supxlabel", "_supylabel"):
        t = getattr(fig, name, None)
        if t is not None and t.get_text():
            extra.append(t)
    for a in extra:
        if a.get_visible():
            out.append(a.get_window_extent(renderer))
    return [b for b in out if b is not None and b.width > 0 and b.height > 0]


def _overlap(a, b) -> bool:
    """Do two boxes share more than a sliver (a label that pokes into the next
    panel by a few pixels does not tie the two together)?"""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 1 or h <= 1:
        return False
    return (w > 0.08 * min(a[2] - a[0], b[2] - b[0])
            and h > 0.08 * min(a[3] - a[1], b[3] - b[1]))


def _merge(boxes: list[list[float]]) -> list[list[float]]:
    """Boxes that overlap become one (their union), until none overlap; -> in
    reading order (rows from the top, left to right; colour bars last)."""
    boxes = [list(b) for b in boxes]
    merged = True
    while merged:
        merged = False
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                a, b = boxes[i], boxes[j]
                if _overlap(a, b):
                    boxes[i] = [min(a[0], b[0]), min(a[1], b[1]),
                                max(a[2], b[2]), max(a[3], b[3])]
                    del boxes[j]
                    merged = True
                    break
            if merged:
                break
    widths = sorted(b[2] - b[0] for b in boxes)
    bar = lambda b: (b[2] - b[0] < 0.25 * (b[3] - b[1])
                     and b[2] - b[0] < 0.4 * widths[len(widths) // 2])
    rows, out = [], []
    for b in sorted((b for b in boxes if not bar(b)), key=lambda b: (b[1], b[0])):
        if rows and b[1] < rows[-1][0][3] - 2:         # starts above the row's bottom
            rows[-1].append(b)
        else:
            rows.append([b])
    for row in rows:
        out += sorted(row, key=lambda b: b[0])
    return out + sorted((b for b in boxes if bar(b)), key=lambda b: (b[0], b[1]))


def layout(fig, png: bytes, sizes: list[float], pad_inches: float | None = None,
           tight: bool = True) -> dict:
    """The layout of ``png``, a picture of ``fig`` (``bbox_inches="tight"``, or the
    whole figure with ``tight=False``) whose drawn texts had ``sizes`` (points)
    -> {"text_px", "width", "panels"}."""
    import matplotlib
    from matplotlib.transforms import Bbox
    w_px, h_px = _png_size(png)
    out = {"text_px": round(min(sizes) * fig.dpi / 72, 2) if sizes else None}
    renderer = fig.canvas.get_renderer()
    pad = (matplotlib.rcParams["savefig.pad_inches"] if pad_inches is None
           else pad_inches)
    if tight and not isinstance(pad, (int, float)):
        return out
    box = (fig.get_tightbbox(renderer).padded(pad) if tight                # inches
           else Bbox([[0, 0], [fig.get_figwidth(), fig.get_figheight()]]))
    dpi = w_px / box.width                                            # the PNG's
    out["width"] = round(w_px * fig.dpi / dpi, 1)                     # CSS px
    if abs(box.height * dpi - h_px) > max(3, 0.01 * h_px):            # not this picture
        return out
    panels = []
    for b in _boxes(fig, renderer):
        x0, x1 = (b.x0 / fig.dpi - box.x0) * dpi, (b.x1 / fig.dpi - box.x0) * dpi
        y0, y1 = (box.y1 - b.y1 / fig.dpi) * dpi, (box.y1 - b.y0 / fig.dpi) * dpi
        panels.append([max(0, x0), max(0, y0), min(w_px, x1), min(h_px, y1)])
    out["panels"] = [[int(round(v)) for v in b] for b in _merge(panels)]
    return out


def with_layout(png: bytes, info: dict) -> bytes:
    """``png`` with a tEXt chunk ``d2l-layout`` holding ``info`` (JSON)."""
    text = json.dumps(info, separators=(",", ":"))
    data = KEY.encode("latin-1") + b"\0" + text.encode("latin-1")
    chunk = (struct.pack(">I", len(data)) + b"tEXt" + data
             + struct.pack(">I", zlib.crc32(b"tEXt" + data) & 0xFFFFFFFF))
    end = png.rindex(b"IEND") - 4                                     # its length field
    return png[:end] + chunk + png[end:]


def read_layout(png: bytes) -> dict | None:
    """The ``d2l-layout`` of a PNG, or None."""
    i = 8
    while i + 8 <= len(png):
        n, kind = struct.unpack(">I4s", png[i:i + 8])
        if kind == b"tEXt":
            key, _, text = png[i + 8:i + 8 + n].partition(b"\0")
            if key == KEY.encode():
                return json.loads(text.decode("latin-1"))
        if kind == b"IEND":
            break
        i += 12 + n
    return None


def record_inline_layout(shell=None) -> bool:
    """Wrap the kernel's PNG formatter for matplotlib figures so that each inline PNG
    carries its layout (:func:`with_layout`).  -> False where there is nothing to
    wrap (no kernel, no formatter)."""
    import base64
    from matplotlib.figure import Figure
    try:
        if shell is None:
            from IPython import get_ipython
            shell = get_ipython()
        fmt = shell.display_formatter.formatters["image/png"]
        base = fmt.lookup_by_type(Figure)
    except Exception:
        return False
    if getattr(base, "d2l_layout", False):
        return True

    def png(fig):
        sizes: list[float] = []
        with text_sizes(sizes):
            out = base(fig)
        if out is None:
            return out
        data, meta = out if isinstance(out, tuple) else (out, None)
        try:
            raw = data if isinstance(data, bytes) else base64.b64decode(data)
            raw = with_layout(raw, layout(fig, raw, sizes))
        except Exception:       # a picture we cannot measure is shown as it is
            return out
        if not isinstance(data, bytes):
            data = base64.b64encode(raw).decode("ascii")
        else:
            data = raw
        return (data, meta) if isinstance(out, tuple) else data

    png.d2l_layout = True
    fmt.for_type(Figure, png)
    return True
