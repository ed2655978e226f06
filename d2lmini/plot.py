"""Plotting helpers: curves and grids of heatmaps.  Every function returns a Figure."""
from __future__ import annotations

import io
import sys
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch


def in_kernel() -> bool:
    """True inside a Jupyter or Colab kernel (a frontend may render widgets and
    display updates); False in plain Python, terminal IPython and test runs."""
    # a kernel has imported it; don't import it here
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def figure_png(fig, dpi: float | None = None, tight: bool = True) -> bytes:
    """Render a figure to PNG bytes; a small ``dpi`` keeps embedded outputs small.
    ``tight=False`` keeps the figure's own size (faster; equal-size animation
    frames).  The PNG carries its layout (``d2lmini.figure_layout``), so the book can
    give a phone a layout of its own."""
    from .figure_layout import layout, text_sizes, with_layout
    buf, sizes = io.BytesIO(), []
    with text_sizes(sizes):
        fig.savefig(buf, format="png", dpi=dpi or fig.dpi,
                    bbox_inches="tight" if tight else None)
    png = buf.getvalue()
    try:
        return with_layout(png, layout(fig, png, sizes, tight=tight))
    except Exception:  # a picture we cannot measure is kept as it is
        return png


def sharp_inline_figures() -> bool:
    """Inside a Jupyter/Colab kernel, store inline figures at 2x their displayed size
    ("retina" PNGs): sharp on high-DPI screens and in the HTML book.  Called when
    d2lmini is imported; does nothing (-> False) outside a kernel."""
    if not in_kernel():
        return False
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
        set_matplotlib_formats("retina")
    except Exception:  # no inline backend: nothing to sharpen
        return False
    # each PNG says where its panels are and how small its text is: the book gives a
    # phone a layout of its own where that text would be too small (figure_layout)
    from .figure_layout import record_inline_layout
    record_inline_layout()
    return True


sharp_inline_figures()


# A phone shows a figure about 360 CSS px wide; a figure w inches wide is drawn at
# 100 px per inch (matplotlib's dpi) and shrunk to fit, so text of s points comes out
# at about s * 360 / (72 * w) px there.  Text at >= PHONE_PT_PER_INCH * w points stays
# >= 9 px.
PHONE_PT_PER_INCH = 1.85
# inches: wider grids of heatmaps wrap into more rows (see show_heatmaps)
MAX_WIDTH = 8.6


def readable_size(width_in: float, lo: float = 9.0, hi: float = 14.0) -> float:
    """Font size (points) that stays >= 9 CSS px when a phone shrinks a figure of
    ``width_in`` inches to its width, within [lo, hi]."""
    return float(min(hi, max(lo, PHONE_PT_PER_INCH * width_in)))


def _np(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().float().cpu().numpy()
    return np.asarray(x)


def _is_many(v) -> bool:
    """True for a list/tuple of sequences (several curves), False for one curve."""
    return isinstance(v, (list, tuple)) and len(v) > 0 and np.ndim(_np(v[0])) >= 1


def _curves(v, name: str) -> list[np.ndarray]:
    """One curve (1-D tensor/array/list of numbers) or several -> list of 1-D arrays."""
    curves = [_np(c) for c in v] if _is_many(v) else [_np(v)]
    for c in curves:
        if c.ndim != 1:
            raise ValueError(f"{name} must hold 1-D curves, got one of shape {c.shape}")
    return curves


def plot(X, Y=None, xlabel: str | None = None, ylabel: str | None = None,
         legend: Sequence[str] | None = None, xlim=None, ylim=None,
         xscale: str = "linear", yscale: str = "linear",
         fmts: Sequence[str] = ("-", "m--", "g-.", "r:", "c-", "b--", "y-."),
         title: str | None = None, figsize=(4.5, 3), ax=None):
    """Plot one or several curves, d2l style.

    ``plot(y)`` draws y against its index; ``plot(x, [y1, y2])`` draws several
    curves over the same x; ``plot([x1, x2], [y1, y2])`` pairs them up.  A curve is
    a 1-D tensor, array or list of numbers (n,); x and its y must have the same n.
    The legend goes below the axes, where it hides no data.
    Returns the Figure (one ``Line2D`` per curve on its axes).
    """
    if Y is None:
        X, Y = None, X
    Ys = _curves(Y, "Y")
    if X is None:
        Xs = [np.arange(len(y)) for y in Ys]
    else:
        Xs = _curves(X, "X")
        Xs = Xs * len(Ys) if len(Xs) == 1 else Xs  # one x shared by every curve
    if len(Xs) != len(Ys):
        raise ValueError(f"got {len(Xs)} x sequences for {len(Ys)} y curves")
    if isinstance(fmts, str) or not fmts:
        raise ValueError(f"fmts must be a non-empty list of line formats such as "
                         f"['-', 'm--'], got {fmts!r}")
    if legend and len(legend) != len(Ys):  # a label would name the wrong curve
        raise ValueError(f"got {len(legend)} legend entries for {len(Ys)} curves")
    for i, (x, y) in enumerate(zip(Xs, Ys)):
        if len(x) != len(y):
            raise ValueError(f"curve {i}: x has {len(x)} points but y has {len(y)}")
    fig = ax.figure if ax is not None else plt.figure(figsize=figsize)
    ax = ax if ax is not None else fig.add_subplot()
    for i, (x, y) in enumerate(zip(Xs, Ys)):
        ax.plot(x, y, fmts[i % len(fmts)])
    ax.set_xscale(xscale), ax.set_yscale(yscale)
    if xlim is not None:
        ax.set_xlim(xlim)
    if ylim is not None:
        ax.set_ylim(ylim)
    size = readable_size(fig.get_figwidth(), lo=10.0, hi=16.0)  # >= 9 px on a phone
    ax.tick_params(labelsize=size)
    if xlabel:
        ax.set_xlabel(xlabel, fontsize=size)
    if ylabel:
        ax.set_ylabel(ylabel, fontsize=size)
    if title:
        ax.set_title(title, fontsize=size)
    # below the axes (under the tick labels and the x label), never over the curves
    if legend:
        height_pt = ax.get_position().height * fig.get_figheight() * 72
        below = (3.6 if xlabel else 2.0) * size / max(height_pt, 1.0)
        ax.legend(legend, loc="upper center", bbox_to_anchor=(0.5, -below),
                  ncol=min(len(legend), 2), frameon=False, fontsize=size)
    ax.grid(True, alpha=0.3)
    return fig


def show_heatmaps(matrices, xlabels: Sequence[str] | None = None,
                  ylabels: Sequence[str] | None = None,
                  titles: Sequence[str] | None = None, mask=None,
                  xlabel: str = "keys", ylabel: str = "queries", cmap: str = "Reds",
                  vmin: float | None = 0.0, vmax: float | None = None,
                  cell_size: float = 0.35, figsize=None, annotate: bool = False,
                  ncols: int | None = None):
    """A grid of heatmaps with token labels on both axes and one shared colour bar.

    matrices: (T_q, T_k), (n, T_q, T_k) or (rows, cols, T_q, T_k), e.g. attention
    weights (h, T_q, T_k); ``ncols`` wraps n matrices into rows of ``ncols``.
    xlabels / ylabels: the T_k key tokens and the T_q query tokens.  ``titles``: one
    per matrix (or one per column).  ``mask`` (bool, True = allowed, broadcastable to
    the grid) greys out positions where it is False, so masked keys are visibly masked.
    ``annotate=True`` writes each value in its cell.  Returns the Figure; its first
    ``rows * cols`` axes are the heatmaps (row by row), the last is the colour bar.
    """
    try:
        M = _np(matrices).astype(float)
    except (TypeError, ValueError):
        raise TypeError(f"matrices must hold numbers (a tensor or array), got "
                        f"{type(matrices).__name__} {str(matrices)[:40]!r}") from None
    if M.ndim not in (2, 3, 4):
        raise ValueError(f"matrices must be 2-D, 3-D or 4-D, got shape {M.shape}")
    if M.size == 0:
        raise ValueError(f"matrices must not be empty, got shape {M.shape}")
    n_used = M.shape[0] if M.ndim == 3 else None
    if M.ndim == 3 and ncols is None and figsize is None:
        # a row too wide for a phone wraps into rows of a divisor of n (no empty cells)
        n, Tk = M.shape[0], M.shape[2]
        fits = [c for c in range(1, n + 1) if n % c == 0
                and max(1.6, cell_size * Tk + 0.6) * c + 1.0 <= MAX_WIDTH]
        if fits and fits[-1] < n:
            ncols = fits[-1]
        elif not fits:
            ncols = 1
    if M.ndim == 3 and ncols is not None:
        if (isinstance(ncols, bool) or not isinstance(ncols, (int, np.integer))
                or ncols < 1):
            raise ValueError(f"ncols must be a positive int, got {ncols!r}")
        rows = -(-M.shape[0] // ncols)
        pad = np.full((rows * ncols - M.shape[0],) + M.shape[1:], np.nan)
        M = np.concatenate([M, pad]).reshape(rows, ncols, *M.shape[1:])
    M = M.reshape((1,) * (4 - M.ndim) + M.shape)  # -> (rows, cols, T_q, T_k)
    rows, cols, Tq, Tk = M.shape
    n_used = rows * cols if n_used is None else n_used
    if xlabels is not None and len(xlabels) != Tk:
        raise ValueError(f"expected {Tk} xlabels (one per key), got {len(xlabels)}")
    if ylabels is not None and len(ylabels) != Tq:
        raise ValueError(f"expected {Tq} ylabels (one per query), got {len(ylabels)}")
    if titles is not None and len(titles) not in (n_used, cols):
        raise ValueError(f"expected {n_used} titles (one per matrix) or {cols} "
                         f"(one per column), got {len(titles)}")
    allowed = np.isfinite(M)
    if mask is not None:
        m = _np(mask).astype(bool)
        # (n, T_q|1, T_k): wrap too
        if m.ndim == 3 and ncols is not None and m.shape[0] > 1:
            m = np.concatenate([m, np.ones((rows * cols - m.shape[0],) + m.shape[1:],
                                           bool)])
            m = m.reshape(rows, cols, *m.shape[1:])
        m = m.reshape((1,) * max(0, 4 - m.ndim) + m.shape)
        try:
            allowed = allowed & np.broadcast_to(m, M.shape)
        except ValueError:
            raise ValueError(f"mask of shape {tuple(_np(mask).shape)} does not "
                             f"broadcast to the matrices of shape {M.shape}") from None
    M = np.ma.masked_array(M, mask=~allowed)
    if vmax is None:
        vmax = float(M.max()) if M.count() else 1.0
    if vmin is None:
        vmin = float(M.min()) if M.count() else 0.0
    if figsize is None:
        w = max(1.6, cell_size * Tk + 0.6) * cols + 1.0
        h = max(1.4, cell_size * Tq + 0.6) * rows + 0.3
        figsize = (min(w, 16), min(h, 16))
    # text readable on a phone: tick labels as large as their cells allow
    size = readable_size(figsize[0], hi=16.0)
    cell_in = min(cell_size, (figsize[0] - 1.0 - 0.6 * cols) / (cols * Tk))  # as drawn
    ticks = min(size, max(7.0, cell_in * 72 * 0.9))
    fig, axes = plt.subplots(rows, cols, figsize=figsize, squeeze=False,
                             sharex=True, sharey=True, layout="constrained")
    cm = plt.get_cmap(cmap).with_extremes(bad="lightgrey")  # masked cells: grey
    for i in range(rows):
        for j in range(cols):
            ax, m = axes[i, j], M[i, j]
            if i * cols + j >= n_used:  # padding cell of a wrapped grid
                ax.set_axis_off()
                continue
            im = ax.imshow(m, cmap=cm, vmin=vmin, vmax=vmax, aspect="auto",
                           interpolation="nearest")
            ax.set_xticks(range(Tk), xlabels if xlabels is not None else range(Tk),
                          rotation=90 if xlabels is not None else 0, fontsize=ticks)
            ax.set_yticks(range(Tq), ylabels if ylabels is not None else range(Tq),
                          fontsize=ticks)
            if annotate:
                for (r, c), v in np.ndenumerate(np.ma.filled(m, np.nan)):
                    if not np.isnan(v):
                        dark = (v - vmin) > 0.6 * (vmax - vmin)
                        ax.text(c, r, f"{v:.2f}", ha="center", va="center",
                                fontsize=min(size, cell_size * 72 * 0.45),
                                color="white" if dark else "black")
            if titles is not None:
                ax.set_title(titles[i * cols + j] if len(titles) == n_used
                             else titles[j], fontsize=size)
            if i == rows - 1 or (i + 1) * cols + j >= n_used:
                ax.set_xlabel(xlabel, fontsize=size)
                ax.tick_params(axis="x", labelbottom=True)
            if j == 0:
                ax.set_ylabel(ylabel, fontsize=size)
    bar = fig.colorbar(im, ax=axes, shrink=0.8)
    bar.ax.tick_params(labelsize=size)
    return fig
