"""d2l.diagram: every block diagram draws, stays phone-readable, holds the parts it names,
and an unknown name is an error that lists the names."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

import d2lmini as d2l
from d2lmini.diagrams import DIAGRAMS

NAMES = sorted(DIAGRAMS)   # every diagram the package draws is tested below
PHONE_PX = 360       # CSS px a phone gives a figure
MIN_PX = 9           # smallest text, as displayed there


def texts(fig):
    return [t for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip()]


@pytest.mark.parametrize("name", NAMES)
def test_diagram_draws_a_readable_figure(name):
    fig = d2l.diagram(name)
    try:
        assert isinstance(fig, matplotlib.figure.Figure)
        width_in = fig.get_size_inches()[0]
        ts = texts(fig)
        assert len(ts) >= 5, f"{name}: only {len(ts)} labels"
        smallest = min(t.get_fontsize() for t in ts)
        px = smallest / 72 / width_in * PHONE_PX
        assert px >= MIN_PX, f"{name}: {smallest} pt text is {px:.1f} px on a phone"
        # every label lies inside the figure (nothing cut off at the edges)
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        W, H = fig.bbox.width, fig.bbox.height
        for t in ts:
            bb = t.get_window_extent(r)
            assert bb.x0 >= -1 and bb.y0 >= -1 and bb.x1 <= W + 1 and bb.y1 <= H + 1, \
                f"{name}: {t.get_text()!r} sticks out of the figure"
    finally:
        plt.close(fig)


@pytest.mark.parametrize("name, words", [
    ("transformer", ["Encoder", "Decoder", "Cross-", "Softmax", "memory (K, V)"]),
    ("encoder_block", ["self-attention", "Add & LayerNorm", "Position-wise FFN", "× N"]),
    ("decoder_block", ["Masked multi-head", "cross-attention", "encoder"]),
    ("multihead", ["split into h heads", "concatenate heads", "Linear W_O", "(B, h, T, d_k)"]),
    ("norm_placement", ["post-norm", "pre-norm", "LN(x + f(x))", "x + f(LN(x))"]),
    ("decoder_only", ["Masked multi-head", "final LayerNorm", "LM head"]),
    ("bert", ["[CLS]", "[MASK]", "MLM head", "no mask"]),
    ("sdpa", ["MatMul: Q Kᵀ", "Scale: ÷ √d_k", "Mask (optional)", "SoftMax over keys",
              "(B, T_q, d_v)"]),
    ("seq2seq", ["context c(t)", "s(t−1)", "h(1)", "Σ"]),
    ("mask_broadcast", ["(B, 1, 1, T)", "(1, 1, T, T)", "padding & causal",
                        "row 0: empty"]),
])
def test_diagram_names_its_parts(name, words):
    fig = d2l.diagram(name)
    try:
        joined = "\n".join(t.get_text() for t in texts(fig))
        for w in words:
            assert w in joined, f"{name}: no {w!r} in {joined!r}"
    finally:
        plt.close(fig)


def test_diagrams_differ():
    pngs = []
    for name in NAMES:
        fig = d2l.diagram(name)
        fig.canvas.draw()
        pngs.append(bytes(fig.canvas.buffer_rgba()))
        plt.close(fig)
    assert len(set(pngs)) == len(NAMES)


def test_unknown_diagram_lists_the_names():
    assert {"transformer", "encoder_block", "decoder_block", "multihead",
            "norm_placement", "decoder_only", "bert"} <= set(NAMES)
    with pytest.raises(ValueError, match="unknown diagram 'gpt'.*decoder_only.*transformer"):
        d2l.diagram("gpt")
