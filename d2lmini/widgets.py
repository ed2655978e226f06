"""Interactive figures: an attention explorer and a positional-encoding explorer.

Every figure is first a plain function that returns a matplotlib Figure
(:func:`attention_figure`, :func:`pe_figure`): headless, testable, usable anywhere.
What a setting of the attention explorer shows is decided once, by
:func:`d2lmini.selection.attention_view`.  Displayed, an explorer is one HTML output
(see :mod:`d2lmini.webfig`) holding every setting's numbers and a few lines of
JavaScript: its controls work in Jupyter, Colab and the static HTML book, where no
kernel runs.
``explorer.widget`` is the ipywidgets version (controls above an ``Output`` with the
matplotlib picture), built on first use; only APIs present in both ipywidgets 7.7
(Colab) and 8.x are used.  Without ipywidgets nothing fails or warns.
"""
from __future__ import annotations

import base64
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np

from .maps import AttentionMaps, as_attention_maps  # noqa: F401 (re-exported)
from .plot import figure_png, in_kernel, show_heatmaps  # noqa: F401 (re-exported)
from .selection import PAD, attention_view, grid, labels, select
from .transformer import PositionalEncoding
from . import webfig

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# the names these helpers had here before they moved to d2lmini.selection
_labels, _grid, _select = labels, grid, select


def ipywidgets_or_none():
    """The ipywidgets module (optional; Colab ships 7.7), or None when it is missing
    or broken: the explorers then show static figures.  Imported on first use only."""
    try:
        import ipywidgets
    except Exception:
        return None
    return ipywidgets


def _b64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")


# ------------------------------------------------------------------ attention figure
def attention_figure(attn, kind: str | None = None, layer: int = 0,
                     head: int | str = "all", example: int = 0, *, src_tokens=None,
                     tgt_tokens=None, masks=None,
                     cmap: str = "Reds", vmax: float | None = None, width: float = 8.0,
                     height: float = 5.0):
    """Heatmap(s) of one kind/layer/example of attention; ``head`` an int, "all" (a grid
    of small heatmaps, one per head) or "mean" (average over heads).  -> Figure.

    ``attn``: anything :func:`as_attention_maps` accepts.  Query/key tick labels come
    from ``src_tokens``/``tgt_tokens`` by kind: encoder self (src, src), decoder self
    (tgt, tgt), cross (queries tgt, keys src), "self" (src, src).  Masked cells
    (pad keys, future positions, pad queries) are grey.  ``width``/``height`` cap the
    figure's size (inches).  What is shown is :func:`attention_view`'s.
    """
    v = attention_view(attn, kind, layer, head, example, src_tokens=src_tokens,
                       tgt_tokens=tgt_tokens, masks=masks)
    w, m = v["values"], v["mask"]
    n, Tq, Tk = w.shape
    rows, cols = v["grid"]
    cell = max(0.13, min(0.35, (width - 0.8 - 0.9 * cols) / (cols * Tk),
                         (height - 0.7 * rows) / (rows * Tq)))
    fig = show_heatmaps(w.reshape(rows, cols, Tq, Tk), v["xlabels"], v["ylabels"],
                        v["titles"],
                        mask=None if m is None else m.reshape(rows, cols, Tq, Tk),
                        cmap=cmap, vmax=vmax, cell_size=cell)
    font = max(7.0, min(9.0, cell * 72 * 0.8))
    for ax in fig.axes[:-1]:  # the last axes is the colour bar
        ax.tick_params(labelsize=font)
    fig.suptitle(v["title"], fontsize=10)
    return fig


def attention_html(attn, src_tokens=None, tgt_tokens=None, *, masks=None, state=None,
                   vmax: float | None = None, cmap: str = "Reds") -> str:
    """The attention explorer as one HTML output that needs no kernel: every setting
    (kind x layer x head x example) is enumerated with :func:`attention_view`, its
    numbers embedded once, and a few lines of JavaScript switch and draw them."""
    maps = as_attention_maps(attn, masks)
    table, views, kinds = webfig.PanelTable(), {}, {}
    for kind, w in maps.items():
        L, B, h = w.shape[:3]
        kinds[kind] = {"L": L, "B": B, "h": h}
        for layer in range(L):
            for example in range(B):
                for head in ["all", "mean", *range(h)]:
                    v = attention_view(maps, kind, layer, head, example,
                                       src_tokens=src_tokens, tgt_tokens=tgt_tokens)
                    m = v["mask"]
                    views[f"{kind}|{layer}|{head}|{example}"] = {
                        "title": v["title"], "grid": list(v["grid"]),
                        "titles": v["titles"],
                        "panels": [table.panel(v["values"][i],
                                               None if m is None else m[i])
                                   for i in range(len(v["values"]))],
                        "xlabels": table.label(v["xlabels"]),
                        "ylabels": table.label(v["ylabels"])}
    state = dict(state or {"kind": next(iter(maps)), "layer": 0, "head": "all",
                           "example": 0})
    state["layer"] = int(state["layer"]) % kinds[state["kind"]]["L"]
    return webfig.html("attention", {
        "state": state, "kinds": kinds, "views": views, "panels": table.panels,
        "masks": table.masks, "labels": table.labels, "vmax": vmax,
        "lut": webfig.lut(cmap, 128)})


# ------------------------------------------------------------------ positional encoding
def pe_figure(d_model: int = 32, num_positions: int = 50,
              dims: Sequence[int] = (4, 5, 6, 7), figsize=(9, 2.8)):
    """Sinusoidal positional encoding in three panels -> Figure:
    the encoding (positions x dims), the chosen dims as curves over position, and the
    dot products PE(i) . PE(j), which depend only on the distance i - j."""
    for name, v, lo in (("d_model", d_model, 2), ("num_positions", num_positions, 1)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
            raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    if isinstance(dims, (str, bytes)) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dims):
        raise ValueError(f"dims must be a list of ints in [0, {d_model - 1}], "
                         f"got {dims!r}")
    dims = [int(d) for d in dims]
    bad = [d for d in dims if not 0 <= d < d_model]
    if bad:
        raise ValueError(f"dims must lie in [0, {d_model - 1}] for d_model={d_model}, "
                         f"got {bad}")
    P = PositionalEncoding(int(d_model),
                           max_len=int(num_positions)).pe[0].numpy()  # (n, d)
    fig, (ax0, ax1, ax2) = plt.subplots(1, 3, figsize=figsize, layout="constrained")
    im = ax0.imshow(P, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto",
                    interpolation="nearest")
    ax0.set(xlabel="dimension", ylabel="position", title="PE(pos, dim)")
    fig.colorbar(im, ax=ax0, shrink=0.8)
    for d in dims:
        ax1.plot(np.arange(num_positions), P[:, d], label=f"dim {d}")
    ax1.set(xlabel="position", ylabel="value", title="chosen dimensions",
            ylim=(-1.1, 1.1))
    if dims:  # below the curves, never over them
        ax1.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.28),
                   ncol=min(4, len(dims)), frameon=False)
    ax1.grid(True, alpha=0.3)
    im = ax2.imshow(P @ P.T, cmap="viridis", aspect="auto", interpolation="nearest")
    ax2.set(xlabel="position j", ylabel="position i", title="PE(i) · PE(j)")
    fig.colorbar(im, ax=ax2, shrink=0.8)
    return fig


# ------------------------------------------------------------------ explorers
class Explorer:
    """Shared machinery of the explorers.

    Displayed (last line of a cell), an explorer is one HTML output with every setting's
    numbers embedded and a few lines of JavaScript: its controls work in Jupyter, Colab
    and the static HTML book alike, with or without a kernel.  ``update(**state)``
    changes the state from code; ``figure`` is the matplotlib Figure of that state and
    ``png`` its picture.  ``widget`` is the ipywidgets version (built on first use:
    controls above an ``Output`` holding the PNG), for code that reacts to a setting in
    Python; ``controls`` are its named controls.  Subclasses define
    ``_make_controls()``, ``_control_values()``, ``_draw()`` and ``html()``.
    """

    def __init__(self, dpi: float):
        self.dpi, self.figure, self.png = dpi, None, b""
        self.state: dict = {}
        self._controls: dict = {}
        self._out = self._widget = None
        self._built = self._syncing = False

    def _merged(self, state: dict) -> dict:
        """The state with the settings in ``state`` changed; unknown ones refused."""
        unknown = set(state) - set(self.state)
        if unknown:
            raise ValueError(f"unknown setting(s) {sorted(unknown)}; "
                             f"expected {list(self.state)}")
        return {**self.state, **state}

    # the ipywidgets version, built on first use (no comm is opened before)
    @property
    def widget(self):
        self._build_widget()
        return self._widget

    @property
    def controls(self) -> dict:
        self._build_widget()
        return self._controls

    @property
    def out(self):
        self._build_widget()
        return self._out

    def _build_widget(self) -> None:
        if self._built:
            return
        self._built = True
        widgets = ipywidgets_or_none()
        if widgets is None:
            return
        try:  # no comm (e.g. ipywidgets 7 outside a kernel): static figure only
            controls = self._make_controls(widgets)
            out = widgets.Output()
            wide = [c for c in controls.values()
                    if isinstance(c, widgets.ToggleButtons)]
            small = [c for c in controls.values() if c not in wide]
            box = widgets.VBox(wide + [widgets.HBox(small), out])
        except Exception:
            return
        self._controls, self._out, self._widget = controls, out, box
        self._sync(**self._control_values())
        self._show_png()
        for c in controls.values():
            c.observe(self._on_change, names="value")

    def _on_change(self, change) -> None:
        if not self._syncing:
            name = next(n for n, c in self._controls.items() if c is change["owner"])
            self.update(**{name: change["new"]})

    def _sync(self, **attrs) -> None:
        """Set control attributes (options, max, value) without triggering redraws."""
        self._syncing = True
        try:
            for name, values in attrs.items():
                if name in self._controls:
                    for attr, v in values.items():
                        setattr(self._controls[name], attr, v)
                        # a control that cannot move is not shown
                        if attr == "disabled":
                            self._controls[name].layout.display = "none" if v else ""
        finally:
            self._syncing = False

    def _show_png(self) -> None:
        if self._out is not None:  # the picture lives in the widget state
            width = int.from_bytes(self.png[16:20], "big") // 2  # stored at 2x: sharp
            self._out.outputs = ({"output_type": "display_data",
                                  "metadata": {"image/png": {"width": width}},
                                  "data": {"image/png": _b64(self.png),
                                           "text/plain": repr(self)}},)

    def _redraw(self, fig=None) -> None:
        fig = self._draw() if fig is None else fig
        self.png = figure_png(fig, 2 * self.dpi)
        plt.close(fig)  # not shown again by the inline backend; still usable
        self.figure = fig
        self._sync(**self._control_values())
        self._show_png()

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = {"text/plain": repr(self), "text/html": self.html()}
        if not in_kernel():  # plain Python, terminal IPython: the picture too
            bundle["image/png"] = _b64(self.png)
        return bundle

    def __repr__(self) -> str:
        state = ", ".join(f"{k}={v!r}" for k, v in self.state.items())
        return f"{type(self).__name__}({state})"


class AttentionExplorer(Explorer):
    """Attention heatmaps with controls for kind, layer, head ("all", "mean" or one) and
    example.  ``attn``/``src_tokens``/``tgt_tokens``/``masks`` as in
    :func:`attention_figure`.

        ex = AttentionExplorer(d2l.collect_attention(model, src, tgt), src_tokens,
                               tgt_tokens)
        ex                   # last line of a cell: the widget (or the static figure)
        ex.update(head=1)    # from code; ex.figure is the current Figure
    """

    def __init__(self, attn, src_tokens=None, tgt_tokens=None, *, masks=None,
                 kind: str | None = None, layer: int = 0, head: int | str = "all",
                 example: int = 0, dpi: float = 80, width: float = 8.0,
                 vmax: float | None = None, cmap: str = "Reds"):
        super().__init__(dpi)
        self.maps = as_attention_maps(attn, masks)
        self.tokens, self.width = (src_tokens, tgt_tokens), width
        self.vmax, self.cmap = vmax, cmap  # vmax=1.0: one colour scale for every view
        self.state = {"kind": kind or next(iter(self.maps)), "layer": layer,
                      "head": head, "example": example}
        select(self.maps, **self.state)  # fail early on a bad initial state
        self.update()

    def _make_controls(self, widgets) -> dict:
        s = {"description_width": "initial"}
        kind = widgets.ToggleButtons(options=list(self.maps), value=self.state["kind"],
                                     description="attention")
        return {"kind": kind,
                "layer": widgets.IntSlider(description="layer", continuous_update=False,
                                           style=s,
                                           layout=widgets.Layout(width="200px")),
                "head": widgets.Dropdown(description="head", style=s,
                                         layout=widgets.Layout(width="160px")),
                "example": widgets.IntSlider(description="example",
                                             continuous_update=False, style=s,
                                             layout=widgets.Layout(width="220px"))}

    def update(self, **state):
        """Change any of kind, layer, head, example; redraw; -> the new Figure."""
        new = self._merged(state)
        L, B, h = (self.maps[new["kind"]].shape[:3] if new["kind"] in self.maps
                   else (1, 1, 1))
        # clamp to the new kind
        if "kind" in state and state["kind"] != self.state["kind"]:
            new["layer"] = min(new["layer"], L - 1)
            new["example"] = min(new["example"], B - 1)
            if new["head"] not in ("all", "mean") and new["head"] >= h:
                new["head"] = "all"
        _, _, new["kind"], new["layer"] = select(self.maps, **new)
        self.state = new
        self._redraw()
        return self.figure

    def _control_values(self) -> dict:
        s = self.state
        L, B, h = self.maps[s["kind"]].shape[:3]
        return {"layer": {"max": max(L - 1, 0), "value": s["layer"],
                          "disabled": L == 1},
                "example": {"max": max(B - 1, 0), "value": s["example"],
                            "disabled": B == 1},
                "head": {"options": [("all heads", "all"), ("mean", "mean")]
                                    + [(str(i), i) for i in range(h)],
                         "value": s["head"],
                         "disabled": h == 1},                 # one head: all = mean = 0
                "kind": {"value": s["kind"], "disabled": len(self.maps) == 1}}

    def html(self) -> str:
        """Every setting, switchable without a kernel (see :func:`attention_html`)."""
        src, tgt = self.tokens
        return attention_html(self.maps, src, tgt, state=self.state, vmax=self.vmax,
                              cmap=self.cmap)

    def _draw(self):
        src, tgt = self.tokens
        return attention_figure(self.maps, **self.state, src_tokens=src, tgt_tokens=tgt,
                                width=self.width, vmax=self.vmax, cmap=self.cmap)


class PEExplorer(Explorer):
    """Positional-encoding explorer: sliders for d_model and the number of positions,
    a multiple selection of the dimensions to plot; the figure is :func:`pe_figure`."""

    def __init__(self, d_model: int = 32, num_positions: int = 50,
                 dims: Sequence[int] = (4, 5, 6, 7), *, max_d_model: int = 128,
                 max_positions: int = 200, dpi: float = 80):
        super().__init__(dpi)
        self.limits = (max_d_model, max_positions)
        self.state = {"d_model": d_model, "num_positions": num_positions,
                      "dims": tuple(dims)}
        self.update()

    def _make_controls(self, widgets) -> dict:
        s, (max_d, max_n) = {"description_width": "initial"}, self.limits
        return {"d_model": widgets.IntSlider(min=2,
                                             max=max(max_d, self.state["d_model"]),
                                             step=2, description="d_model", style=s,
                                             continuous_update=False),
                "num_positions": widgets.IntSlider(min=2,
                                                   max=max(max_n,
                                                           self.state["num_positions"]),
                                                   description="positions", style=s,
                                                   continuous_update=False),
                "dims": widgets.SelectMultiple(description="dims", rows=5, style=s,
                                               layout=widgets.Layout(width="160px"))}

    def update(self, **state):
        """Change any of d_model, num_positions, dims; redraw; -> the new Figure."""
        new = self._merged(state)
        d = new["d_model"]
        if "d_model" in state and "dims" not in state:  # keep the dims that still exist
            new["dims"] = (tuple(x for x in new["dims"] if x < d)
                           or tuple(range(min(4, d))))
        new["dims"] = tuple(int(x) for x in new["dims"])
        fig = pe_figure(**new)  # validates before anything changes
        self.state = new
        self._redraw(fig)
        return self.figure

    def _control_values(self) -> dict:
        s = self.state
        return {"d_model": {"value": s["d_model"]},
                "num_positions": {"value": s["num_positions"]},
                "dims": {"options": list(range(s["d_model"])), "value": s["dims"]}}

    def html(self) -> str:
        """Sliders and a dims list that redraw :func:`pe_figure`'s three panels in the
        page, without a kernel: the encoding is computed there from the same formula
        as :class:`PositionalEncoding` (sin on even dims, cos on odd ones)."""
        (max_d, max_n), s = self.limits, self.state
        return webfig.html("pe", {
            "state": {"d_model": s["d_model"], "num_positions": s["num_positions"],
                      "dims": list(s["dims"])},
            "max_d_model": max(max_d, s["d_model"]),
            "max_positions": max(max_n, s["num_positions"]),
            "luts": {"pe": webfig.lut("RdBu_r", 128),
                     "dot": webfig.lut("viridis", 128)}})

    def _draw(self):
        return pe_figure(**self.state)


def attention_explorer(attn, src_tokens=None, tgt_tokens=None,
                       **kwargs) -> AttentionExplorer:
    """:class:`AttentionExplorer` (widget in Jupyter/Colab, static figure elsewhere)."""
    return AttentionExplorer(attn, src_tokens, tgt_tokens, **kwargs)


def pe_explorer(d_model: int = 32, num_positions: int = 50,
                dims: Sequence[int] = (4, 5, 6, 7), **kwargs) -> PEExplorer:
    """:class:`PEExplorer` (widget in Jupyter/Colab, static figure elsewhere)."""
    return PEExplorer(d_model, num_positions, dims, **kwargs)
