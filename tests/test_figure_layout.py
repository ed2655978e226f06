"""Figures a phone can read: each inline PNG says how small its text is and where its
panels are (d2lmini.figure_layout), and the book's extension gives a phone a layout of
its own (panels stacked, or a readable width that scrolls) where the text would be
under 9 CSS px (_ext/d2lbook.py)."""
from __future__ import annotations

import importlib.util
import io
import pathlib

import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch
from PIL import Image

import d2lmini as d2l
from d2lmini.figure_layout import (layout, read_layout, record_inline_layout,
                                   text_sizes, with_layout)

ROOT = pathlib.Path(__file__).resolve().parents[1]


def ext():
    spec = importlib.util.spec_from_file_location("d2lbook", ROOT / "_ext" / "d2lbook.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def retina(fig) -> tuple[bytes, list]:
    """As the inline backend stores a figure: tight, at twice its dpi."""
    sizes, buf = [], io.BytesIO()
    with text_sizes(sizes):
        fig.savefig(buf, format="png", dpi=2 * fig.dpi, bbox_inches="tight")
    return buf.getvalue(), sizes


def test_layout_of_a_row_of_panels():
    fig, axes = plt.subplots(1, 3, figsize=(9, 2.5), layout="constrained")
    for i, ax in enumerate(axes):
        ax.plot(range(5)), ax.set_title(f"panel {i}", fontsize=12)
        ax.tick_params(labelsize=7)
    png, sizes = retina(fig)
    info = layout(fig, png, sizes)
    w, h = Image.open(io.BytesIO(png)).size
    assert info["text_px"] == pytest.approx(7 * fig.dpi / 72, abs=0.01)
    assert info["width"] == pytest.approx(w / 2, abs=0.6)
    assert len(info["panels"]) == 3
    xs = [p[0] for p in info["panels"]]
    assert xs == sorted(xs)                                   # left to right
    for x0, y0, x1, y1 in info["panels"]:
        assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
    plt.close(fig)


def test_grid_with_colour_bar_reads_row_by_row_bar_last():
    w = torch.rand(8, 10, 10)
    fig = d2l.show_heatmaps(w, titles=[f"h{i}" for i in range(8)], ncols=4)
    png, sizes = retina(fig)
    panels = layout(fig, png, sizes)["panels"]
    assert len(panels) == 9
    tops = [p[1] for p in panels[:8]]
    assert tops[:4] == sorted(tops[:4]) and max(tops[:4]) < min(tops[4:8])
    bar = panels[-1]
    assert bar[2] - bar[0] < 0.3 * (bar[3] - bar[1])          # the colour bar, last
    plt.close(fig)


def test_chunk_round_trip_keeps_a_valid_png():
    fig = plt.figure(figsize=(2, 1))
    png, sizes = retina(fig)
    out = with_layout(png, {"text_px": 9.5, "width": 100, "panels": []})
    assert read_layout(out) == {"text_px": 9.5, "width": 100, "panels": []}
    assert read_layout(png) is None
    im = Image.open(io.BytesIO(out))
    im.load()
    assert im.size == Image.open(io.BytesIO(png)).size
    plt.close(fig)


def test_inline_formatter_is_wrapped():
    from IPython.core.formatters import PNGFormatter
    from matplotlib.figure import Figure

    class Shell:
        class display_formatter:
            formatters = {"image/png": PNGFormatter()}
    fmt = Shell.display_formatter.formatters["image/png"]
    fmt.for_type(Figure, lambda fig: (retina(fig)[0], {"width": 1}))
    assert record_inline_layout(Shell) and record_inline_layout(Shell)   # once
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_xlabel("x", fontsize=8)
    data, meta = fmt(fig)
    info = read_layout(data)
    assert meta == {"width": 1} and info["text_px"] > 0 and len(info["panels"]) == 1
    plt.close(fig)


def _figure_png(tmp, name, panels_across: int, font: float):
    fig, axes = plt.subplots(1, panels_across, figsize=(3.2 * panels_across, 2.6),
                             layout="constrained", squeeze=False)
    for ax in axes[0]:
        ax.plot(range(4)), ax.tick_params(labelsize=font)
    png, sizes = retina(fig)
    (tmp / "_images" / f"{name}.png").write_bytes(with_layout(png, layout(fig, png, sizes)))
    plt.close(fig)


def test_book_gives_a_phone_its_own_layout(tmp_path):
    b = ext()
    (tmp_path / "_images").mkdir()
    _figure_png(tmp_path, "wide", 4, 10)          # 4 panels: stacked for a phone
    _figure_png(tmp_path, "one", 1, 10)           # fits a phone as it is
    _figure_png(tmp_path, "tiny", 1, 3)           # one panel, 3 pt: a wider box
    page = "".join(f'<img alt="a figure" src="../_images/{n}.png" style="width: 10px;" />'
                   for n in ("wide", "one", "tiny"))
    (tmp_path / "p.html").write_text(page)
    b._phone_figures(str(tmp_path))
    html = (tmp_path / "p.html").read_text()
    assert html.count('<picture class="d2l-phone">') == 1
    assert 'srcset="../_images/wide.phone.png 2x"' in html
    assert html.count("data-d2l-text=") == 3
    assert html.count('<span class="d2l-zoom"') == 1 and "tiny.png" in html.split(
        '<span class="d2l-zoom"')[1]
    wide = Image.open(tmp_path / "_images" / "wide.png").size
    phone = Image.open(tmp_path / "_images" / "wide.phone.png").size
    assert phone[0] < wide[0] / 3 and phone[1] > 3 * wide[1]
    assert not (tmp_path / "_images" / "one.phone.png").exists()


def test_monitor_frames_carry_their_layout():
    """The training monitor's live picture (a PNG the book shows) says its layout too."""
    mon = d2l.TrainingMonitor(lambda net: torch.softmax(torch.randn(1, 2, 5, 5), -1),
                              every=1, live=False)

    class History:
        steps, step_loss = 1, [1.0]
    mon.record(None, History())
    info = read_layout(mon.render())
    assert info["text_px"] > 0 and len(info["panels"]) >= 2
    assert info["width"] == pytest.approx(mon.figsize[0] * mon.dpi, abs=1)
