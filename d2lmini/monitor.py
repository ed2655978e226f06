"""A live training monitor: a callback for :func:`d2lmini.train` that records the loss
and the attention of a fixed probe input, redraws them while training runs (Jupyter
and Colab), and afterwards returns an animation that plays and scrubs in static HTML
(drawn in the page from the recorded numbers: no kernel, no external file).
"""
from __future__ import annotations

import time

import matplotlib
import matplotlib.ticker
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from . import webfig
from .maps import as_attention_maps, collect_attention
from .plot import figure_png, in_kernel
from .selection import PanelTable, attention_view, rounded
from .utils import check_positive_int


def window(n: int) -> int:
    """Steps the smoothed loss averages over: ~1/25 of a curve of n steps."""
    return max(1, n // 25)


def smooth(x) -> np.ndarray:
    """The smoothed loss curve: a centred moving mean over ``window(len(x))`` steps, its
    window shrinking symmetrically near the ends.  Centred, it does not lag behind the
    raw curve (an exponential average of k steps trails it by about k steps)."""
    x = np.asarray(x, dtype=float)
    n, r = len(x), window(len(x)) // 2
    c = np.concatenate([[0.0], np.cumsum(x)])
    i = np.arange(n)
    q = np.minimum(r, np.minimum(i, n - 1 - i))
    return (c[i + q + 1] - c[i - q]) / (2 * q + 1)


def recent_loss(x) -> float:
    """The mean of the last ``window(len(x))`` losses (the loss a title quotes)."""
    x = np.asarray(x, dtype=float)
    return float(x[-window(len(x)):].mean())


class _MonitorFigure:
    """Loss curves (raw and smoothed, log scale) next to the probe's attention
    heatmap(s).

    A plain Figure (not pyplot's: the inline backend never shows it twice) whose
    artists are updated in place, so redraws are cheap and frames keep one size.
    """

    def __init__(self, n_maps: int, Tq: int, Tk: int, xlabels, ylabels, mask,
                 title: str, figsize, dpi: float, head_titles=None):
        self.fig = Figure(figsize=figsize, dpi=dpi)
        FigureCanvasAgg(self.fig)
        # n_maps=0: loss only
        ratios = [1.0] + [1.4 / n_maps] * n_maps if n_maps else [1.0]
        gs = self.fig.add_gridspec(1, 1 + n_maps, width_ratios=ratios, left=0.1,
                                   right=0.9 if n_maps else 0.97, bottom=0.2, top=0.82,
                                   wspace=0.25 if n_maps > 1 else 0.35)
        self.ax = self.fig.add_subplot(gs[0])
        self.raw, = self.ax.plot([], [], color="C0", alpha=0.3, lw=0.8,
                                 label="each step")
        self.smooth, = self.ax.plot([], [], color="C0", lw=1.6, label="centred mean")
        self.ax.set(yscale="log", xlabel="step", ylabel="loss", title="training loss")
        self.ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
        self.ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%.2g"))
        self.ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        self.ax.tick_params(which="both", labelsize=9)
        self.ax.grid(True, alpha=0.3)
        cmap = matplotlib.colormaps["Reds"].with_extremes(bad="lightgrey")
        self.mask, self.images = mask, []
        for i in range(n_maps):
            ax = self.fig.add_subplot(gs[1 + i])
            im = ax.imshow(np.zeros((Tq, Tk)), cmap=cmap, vmin=0, vmax=1, aspect="auto",
                           interpolation="nearest")
            cell = min(0.48 * figsize[0] / (n_maps * Tk),
                       0.62 * figsize[1] / Tq) * 72  # pt
            font = min(9.0, 0.9 * cell)
            if xlabels is not None and font >= 6:
                ax.set_xticks(range(Tk), xlabels, rotation=90, fontsize=font)
            else:
                ax.set_xticks([])
            if i == 0 and ylabels is not None and font >= 6:
                ax.set_yticks(range(Tq), ylabels, fontsize=font)
            else:
                ax.set_yticks([])
            if head_titles is not None:
                ax.set_title(head_titles[i], fontsize=9, pad=2)
            self.images.append(im)
        if n_maps:
            heat = [ax.get_position() for ax in self.fig.axes[1:]]
            self.fig.text((heat[0].x0 + heat[-1].x1) / 2, 0.93, title, ha="center",
                          fontsize=10)
            cb = self.fig.colorbar(self.images[0], ax=self.fig.axes[1:], fraction=0.05,
                                   pad=0.03)
            cb.ax.tick_params(labelsize=9)

    def set(self, step: int, losses, attention, xlim=None, ylim=None) -> None:
        """losses: per-step losses so far; attention: (n_maps, T_q, T_k) or None."""
        y = np.asarray(losses, dtype=float)
        x = np.arange(1, len(y) + 1)
        self.raw.set_data(x, y)
        self.smooth.set_data(x, smooth(y))
        if len(y):
            k = window(len(y))
            self.smooth.set_label(f"centred mean of {2 * (k // 2) + 1}")
            self.ax.legend(loc="upper right", fontsize=9, frameon=False)
            last = f" (last {k})" if k > 1 else ""
            self.ax.set_title(f"step {step}: loss {recent_loss(y):.3g}{last}",
                              fontsize=10)
            self.ax.set_xlim(xlim or (0, max(len(y), 2)))
            pos = y[y > 0]
            if ylim is not None:
                self.ax.set_ylim(ylim)
            elif len(pos):
                self.ax.set_ylim(pos.min() / 1.2, pos.max() * 1.2)
        if attention is not None:
            for im, a in zip(self.images, attention):
                im.set_data(a if self.mask is None
                            else np.ma.masked_array(a, ~self.mask))


class _Recorder:
    """What a training monitor records: every step's loss, across ``train()`` calls,
    and at each snapshot the attention of a fixed probe input, as
    :func:`d2lmini.selection.attention_view` selects it (``select``: kind, layer, head,
    example; ``tokens``: (src, tgt) labels)."""

    def __init__(self, probe, select: dict, tokens):
        if probe is not None and not (callable(probe)
                                      or isinstance(probe, (tuple, list))):
            raise TypeError(f"probe must be (src, tgt), a function net -> attention "
                            f"or None, got {type(probe).__name__}")
        self.probe, self.select, self.tokens = probe, select, tokens
        # {"step", "loss", "attention" (n, T_q, T_k) | None}
        self.snapshots: list[dict] = []
        self._losses: list[float] = []    # every step's loss, across train() calls
        self._history, self._seen, self._step0 = None, 0, 0
        self._mask = self._labels = None
        self._title = ""

    def record(self, net, history) -> dict:
        """Take a snapshot now (the callback does this every ``every`` steps)."""
        self._sync_losses(history)
        snap = {"step": self._step0 + history.steps,
                "loss": self.losses[-1] if self.losses else float("nan"),
                "attention": self._attention(net)}
        self.snapshots.append(snap)
        return snap

    @property
    def losses(self) -> list[float]:
        """Every step's loss so far, across train() calls."""
        if self._history is not None:
            self._sync_losses(self._history)
        return self._losses

    def _sync_losses(self, history) -> None:
        # reading history.step_loss makes the CPU wait for a GPU: only at snapshots
        if history is not self._history:  # a new train() call continues the curve
            if self._history is not None:
                self._losses.extend(self._history.step_loss[self._seen:])
            self._history, self._seen, self._step0 = history, 0, len(self._losses)
        self._losses.extend(history.step_loss[self._seen:])
        self._seen = len(history.step_loss)

    def _attention(self, net):
        if self.probe is None:
            return None
        out = (self.probe(net) if callable(self.probe)
               else collect_attention(net, *self.probe))
        maps = as_attention_maps(out)
        sel = dict(self.select)
        if sel["kind"] is None:
            sel["kind"] = "cross" if "cross" in maps else next(iter(maps))
        src, tgt = self.tokens
        v = attention_view(maps, **sel, src_tokens=src, tgt_tokens=tgt)
        if self._labels is None:  # first snapshot: fix the masks, labels, title
            self._mask = None if v["mask"] is None else v["mask"].any(0)
            self._labels = (v["xlabels"], v["ylabels"])
            self._title = (f"probe: {v['kind']} attention, layer {v['layer']}, "
                           f"{v['heads']}")
        return v["values"].copy()                      # (n, T_q, T_k), n = h or 1

    def frames(self, max_frames: int) -> list[dict]:
        """At most ``max_frames`` snapshots, evenly spaced, first and last included."""
        n = len(self.snapshots)
        idx = np.unique(np.linspace(0, n - 1,
                                    min(n, max_frames)).round().astype(int))
        return [self.snapshots[i] for i in idx]


class _Drawn(_Recorder):
    """A recorder's snapshots drawn: the matplotlib figure of one snapshot (live in
    a kernel: one display updated in place) and the page's animation of them all.
    Needs ``figsize``, ``dpi`` and ``max_frames`` (set by :class:`TrainingMonitor`)."""

    def frames(self) -> list[dict]:
        """At most ``max_frames`` snapshots, evenly spaced, first and last included."""
        return super().frames(self.max_frames)

    def _new_figure(self) -> _MonitorFigure:
        att = next((s["attention"] for s in self.snapshots
                    if s["attention"] is not None), None)
        n, Tq, Tk = (0, 1, 1) if att is None else att.shape
        xl, yl = self._labels or (None, None)
        heads = ([f"head {i}" for i in range(n)] if self.select["head"] == "all"
                 else None)
        figsize = self.figsize if n else (self.figsize[0] * 0.5, self.figsize[1])
        return _MonitorFigure(n, Tq, Tk, xl, yl, self._mask, self._title, figsize,
                              self.dpi, heads)

    def figure(self, index: int = -1) -> Figure:
        """The monitor figure of one snapshot (default: the last) -> Figure."""
        if not self.snapshots:
            raise ValueError("no snapshot yet: pass the monitor to "
                             "train(..., callbacks=[monitor])")
        s = self.snapshots[index]
        f = self._new_figure()
        f.set(s["step"], self.losses[: s["step"]], s["attention"])
        return f.fig

    def render(self) -> bytes:
        """Draw the last snapshot into the (reused) live figure -> PNG bytes."""
        if self._live_fig is None:
            self._live_fig = self._new_figure()
        s = self.snapshots[-1]
        self._live_fig.set(s["step"], self.losses[: s["step"]], s["attention"])
        return figure_png(self._live_fig.fig, dpi=2 * self.dpi,
                          tight=False)  # 2x: sharp

    def _show(self, png: bytes) -> None:
        """One display that updates in place (Jupyter and Colab); nothing when
        headless."""
        if not in_kernel():
            return
        from IPython.display import Image, display
        image = Image(data=png, retina=True)  # stored at 2x, shown at 1x: sharp
        if self._handle is None:
            self._handle = display(image, display_id=True)
        else:
            self._handle.update(image)

    def animation_html(self, fps: float = 4) -> str:
        """The snapshots as an animation that plays and scrubs -> HTML string.

        Works without a kernel (static HTML, Jupyter, Colab): the losses and each
        frame's attention are embedded as numbers (a few KB) and drawn by a few lines
        of JavaScript as SVG, sharp on any screen, with the exact weight on hover.
        """
        frames = self.frames()
        if not frames:
            raise ValueError("no snapshot yet: pass the monitor to "
                             "train(..., callbacks=[monitor])")
        return webfig.html("monitor", animation_data(
            self.losses[: frames[-1]["step"]], frames, self._labels, self._mask,
            self._title, self.select["head"] == "all", fps))

    def animation(self, fps: float = 4):
        """:meth:`animation_html` as an ``IPython.display.HTML`` (shows in a
        notebook)."""
        from IPython.display import HTML
        return HTML(self.animation_html(fps))



class TrainingMonitor(_Drawn):
    """Callback for :func:`d2lmini.train`: every ``every`` steps (and after step 1) it
    records a snapshot (step, loss so far, attention of a fixed probe input) and, in
    Jupyter/Colab, redraws the loss curve and the probe's attention in one display
    that updates in place, below train()'s progress bar.

    probe: ``(src, tgt)`` token ids (B, S), (B, T) for a Transformer (see
        :func:`collect_attention`), a function ``net -> attention`` (a tensor or a dict
        kind -> weights), or None (loss only).
    kind / layer / head / example: which attention to show; head an int, "mean" or
        "all" (one small heatmap per head).  kind defaults to "cross" when there is one.
    live: None = redraw only inside a kernel; True = render a frame at every snapshot
        (displayed when a kernel is there); False = record only.
    max_overhead: redraws are skipped while the monitor's own time exceeds this fraction
        of the wall time since training began (None: redraw at every snapshot).
    After training: ``animation()`` (HTML that plays and scrubs, at most ``max_frames``
    frames), ``animation_html()`` (the same, as a string), ``figure()`` (last snapshot).
    """

    def __init__(self, probe=None, every: int = 20, *, kind: str | None = None,
                 layer: int = -1, head: int | str = "mean", example: int = 0,
                 src_tokens=None, tgt_tokens=None, live: bool | None = None,
                 max_frames: int = 30, max_overhead: float | None = 0.05,
                 figsize=(8.0, 3.0), dpi: float = 72):
        (check_positive_int(every, "every"),
         check_positive_int(max_frames, "max_frames", 2))
        super().__init__(probe, {"kind": kind, "layer": layer, "head": head,
                                 "example": example}, (src_tokens, tgt_tokens))
        self.every, self.max_frames, self.live = every, max_frames, live
        self.max_overhead, self.figsize, self.dpi = max_overhead, figsize, dpi
        self.seconds = 0.0                # time spent inside the monitor
        self.redraws = 0
        self._start = self._live_fig = self._handle = None

    def __call__(self, net, history) -> None:
        if history is not self._history:
            self._sync_losses(history)
        if history.steps != 1 and history.steps % self.every:   # no snapshot: no read
            return
        t0 = time.perf_counter()
        self._start = self._start or t0
        self.record(net, history)
        live = in_kernel() if self.live is None else self.live
        spent, elapsed = self.seconds + time.perf_counter() - t0, t0 - self._start
        if live and (self.max_overhead is None or not self.redraws
                     or spent <= self.max_overhead * elapsed):
            self._show(self.render())
            self.redraws += 1
        self.seconds += time.perf_counter() - t0

    @property
    def overhead(self) -> float:
        """Fraction of the wall time since the first snapshot spent in the monitor."""
        if self._start is None:
            return 0.0
        return self.seconds / max(time.perf_counter() - self._start, 1e-9)

def animation_data(losses, frames: list[dict], labels, mask, title: str,
                   head_titles: bool, fps: float) -> dict:
    """The numbers the page's monitor animation draws (``static/webfig.js``)."""
    y = np.asarray(losses, dtype=float)
    pos = y[y > 0]
    ylim = ([float(pos.min() / 1.2), float(pos.max() * 1.2)] if len(pos)
            else [0.1, 10.0])
    table = PanelTable()
    xl, yl = labels or (None, None)
    first = frames[0]["attention"]
    data = {
        "fps": fps, "losses": rounded(y),
        "xlim": [0, max(frames[-1]["step"], 2)], "ylim": ylim,
        "frames": [{"step": s["step"], "panels": [] if s["attention"] is None else
                    [table.panel(a) for a in s["attention"]]} for s in frames],
        "title": title, "xlabels": xl, "ylabels": yl, "axis": ["query", "key"],
        "mask": None if mask is None else table.masks[table.mask(mask)],
        "head_titles": ([f"head {i}" for i in range(len(first))]
                        if head_titles and first is not None else None),
        "lut": webfig.lut("Reds", 128)}
    data["panels"] = table.panels
    return data
