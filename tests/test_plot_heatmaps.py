"""d2lmini.show_heatmaps: a grid of heatmaps, token tick labels, masked cells, clear errors."""
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

import d2lmini as d2l

TOKS = "bob cashed a check at the bank".split()


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _images(fig):
    return [ax.images[0] for ax in fig.axes if ax.images]


def test_single_matrix_returns_figure_with_token_ticks():
    w = torch.softmax(torch.randn(7, 7), -1)
    fig = d2l.show_heatmaps(w, TOKS, TOKS, titles=["one"])
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 2  # one heatmap + the colour bar
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == TOKS
    assert [t.get_text() for t in ax.get_yticklabels()] == TOKS
    assert ax.get_xlabel() == "keys" and ax.get_ylabel() == "queries"
    assert ax.get_title() == "one"
    assert np.allclose(_images(fig)[0].get_array(), w.numpy())


def test_grid_shapes_and_shared_colour_bar():
    w = torch.rand(2, 3, 4, 5)
    fig = d2l.show_heatmaps(w, list("abcde"), list("wxyz"), titles=[f"t{i}" for i in range(6)])
    heat = [ax for ax in fig.axes if ax.images]
    assert len(heat) == 6 and len(fig.axes) == 7
    assert [ax.get_title() for ax in heat] == [f"t{i}" for i in range(6)]
    # every heatmap has the same colour scale (one shared bar)
    assert len({im.get_clim() for im in _images(fig)}) == 1
    assert _images(fig)[0].get_clim() == (0.0, pytest.approx(float(w.max())))
    # shared axes: the bottom row shows the key tokens, the first column the query tokens
    for ax in heat[3:]:
        assert [t.get_text() for t in ax.get_xticklabels()] == list("abcde")
        assert ax.get_xlabel() == "keys"
    for ax in heat[::3]:
        assert [t.get_text() for t in ax.get_yticklabels()] == list("wxyz")
        assert ax.get_ylabel() == "queries"


def test_three_d_is_one_row_or_wrapped_with_ncols():
    w = torch.rand(6, 3, 3)
    fig = d2l.show_heatmaps(w)
    assert len(_images(fig)) == 6
    fig = d2l.show_heatmaps(w, ncols=4, titles=[f"h{i}" for i in range(6)])
    assert len(_images(fig)) == 6  # the two spare cells of the 2 x 4 grid are hidden
    assert sum(not ax.axison for ax in fig.axes) == 2


def test_masked_cells_are_masked():
    w = torch.softmax(torch.randn(2, 5, 5), -1)
    causal = d2l.causal_mask(5)  # (1, 1, 5, 5) broadcasts over the grid
    fig = d2l.show_heatmaps(w, mask=causal)
    for im in _images(fig):
        arr = im.get_array()
        assert np.ma.isMaskedArray(arr)
        assert np.array_equal(np.ma.getmaskarray(arr), ~causal[0, 0].numpy())
    # a padding mask (B, 1, 1, T_k) hides whole key columns
    pm = d2l.padding_mask(torch.tensor([[1, 2, 3, 0, 0]]), 0)
    fig = d2l.show_heatmaps(w[0], mask=pm)
    m = np.ma.getmaskarray(_images(fig)[0].get_array())
    assert m[:, 3:].all() and not m[:, :3].any()


def test_annotate_writes_values():
    w = torch.tensor([[0.25, 0.75], [1.0, 0.0]])
    fig = d2l.show_heatmaps(w, annotate=True, mask=torch.tensor([[True, True], [True, False]]))
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["0.25", "0.75", "1.00"]  # the masked cell gets no number


def test_bad_inputs_raise():
    w = torch.rand(3, 4)
    with pytest.raises(ValueError, match=r"expected 4 xlabels \(one per key\), got 3"):
        d2l.show_heatmaps(w, xlabels=list("abc"))
    with pytest.raises(ValueError, match=r"expected 3 ylabels \(one per query\), got 4"):
        d2l.show_heatmaps(w, ylabels=list("abcd"))
    with pytest.raises(ValueError, match=r"expected 2 titles.*got 3"):
        d2l.show_heatmaps(torch.rand(2, 3, 4), titles=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"2-D, 3-D or 4-D, got shape \(4,\)"):
        d2l.show_heatmaps(torch.rand(4))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 3\) does not broadcast"):
        d2l.show_heatmaps(w, mask=torch.ones(3, 3, dtype=torch.bool))


def _smallest_px_on_phone(fig, phone_px=360):
    """The smallest text of a figure, in CSS px, once a phone shrinks it to its width
    (matplotlib draws 100 px per inch; tight bounding boxes only make it larger)."""
    fig.canvas.draw()
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text)
             if t.get_text().strip() and t.get_visible()]
    w_px = fig.get_figwidth() * 100
    return min(sizes) * 100 / 72 * min(1.0, phone_px / w_px)


@pytest.mark.parametrize("shape", [(7, 7), (4, 9, 9), (8, 6, 6), (2, 2, 4, 5)])
def test_heatmap_text_readable_on_a_phone(shape):
    w = torch.rand(*shape)
    Tq, Tk = shape[-2:]
    fig = d2l.show_heatmaps(w, list("abcdefghi")[:Tk], list("abcdefghi")[:Tq])
    assert _smallest_px_on_phone(fig) >= 9
    assert fig.get_figwidth() <= 8.6 or len(shape) == 4  # rows of n matrices wrap
    plt.close(fig)


def test_wide_row_wraps_into_a_divisor_grid():
    fig = d2l.show_heatmaps(torch.rand(8, 6, 6), titles=[f"h{i}" for i in range(8)])
    heat = [ax for ax in fig.axes if ax.images]
    assert len(heat) == 8 and len(fig.axes) == 9          # no empty cells: 2 x 4
    assert [ax.get_title() for ax in heat] == [f"h{i}" for i in range(8)]
    assert fig.get_figwidth() <= 8.6
    fig = d2l.show_heatmaps(torch.rand(3, 4, 4))          # narrow enough: one row
    assert len({round(ax.get_position().y0, 3) for ax in fig.axes if ax.images}) == 1
    plt.close("all")


@pytest.mark.parametrize("figsize", [(4.5, 3), (6, 3), (8, 4)])
def test_curves_text_readable_on_a_phone(figsize):
    fig = d2l.plot(torch.arange(10.0), [torch.arange(10.0) ** 2, torch.arange(10.0)],
                   "x", "y", legend=["square", "line"], title="t", figsize=figsize)
    assert _smallest_px_on_phone(fig) >= 9
    plt.close(fig)


def test_empty_matrices_are_refused_with_their_shape():
    import pytest
    with pytest.raises(ValueError, match=r"must not be empty, got shape \(1, 1, 0, 0\)"):
        d2l.show_heatmaps(torch.zeros(1, 1, 0, 0))
