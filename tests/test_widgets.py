"""d2lmini.widgets and d2lmini.monitor: attention/positional-encoding figures, the
explorers' controls, the training monitor and its animation, and the fallbacks
(no ipywidgets, no kernel).  Headless (Agg), tiny models: seconds, not minutes.
"""
import base64
import importlib
import json
import pathlib
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import d2lmini as d2l
from d2lmini import monitor as M
from d2lmini import widgets as W

SRC = torch.tensor([[5, 6, 7, 8, 0], [9, 10, 11, 0, 0]])   # (B=2, S=5), pad id 0
TGT = torch.tensor([[1, 4, 5, 6], [1, 7, 8, 0]])           # (B=2, T=4)
SRC_TOK = [list("abcde"), list("fgh")]                      # second example: pads labelled <pad>
TGT_TOK = [["<bos>", "x", "y", "z"], ["<bos>", "u", "v"]]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ROOT = pathlib.Path(__file__).resolve().parents[1]


def tiny_model(seed=0):
    d2l.set_seed(seed)
    return d2l.Transformer(20, 15, d_model=16, num_heads=2, num_layers=2, d_ff=32)


@pytest.fixture(scope="module")
def maps():
    return d2l.collect_attention(tiny_model(), SRC, TGT)


@pytest.fixture
def no_warnings():
    """Fail on warnings raised from d2lmini or the tests, never on a third party's own
    (e.g. jupyter_client 6.1.12, Colab's, warns that zmq.eventloop.ioloop is deprecated)."""
    ours = (str(ROOT / "d2lmini"), str(ROOT / "tests"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    assert not [f"{w.filename}:{w.lineno}: {w.message}" for w in caught
                if str(w.filename).startswith(ours)]


def image(fig, i=0):
    """The array drawn by the i-th heatmap of a figure (a masked array)."""
    return fig.axes[i].images[0].get_array()


# ---------------------------------------------------------------- collect_attention
def test_collect_attention_transformer_shapes_values_and_mode():
    model = tiny_model()
    model.train()
    maps = d2l.collect_attention(model, SRC, TGT)
    assert model.training  # mode restored
    assert list(maps) == ["encoder self", "decoder self", "cross"]
    assert maps["encoder self"].shape == (2, 2, 2, 5, 5)     # (L, B, h, S, S)
    assert maps["decoder self"].shape == (2, 2, 2, 4, 4)     # (L, B, h, T, T)
    assert maps["cross"].shape == (2, 2, 2, 4, 5)            # (L, B, h, T, S)
    model.eval()
    model(SRC, TGT)
    for i, blk in enumerate(model.decoder.blocks):
        torch.testing.assert_close(maps["cross"][i], blk.cross_attn.attention_weights)
        torch.testing.assert_close(maps["decoder self"][i], blk.self_attn.attention_weights)
    torch.testing.assert_close(maps["encoder self"][1], model.encoder.blocks[1].self_attn.attention_weights)
    # masks: pad keys, future positions and pad queries are False
    enc = maps.masks["encoder self"]
    assert enc.shape == (2, 2, 5, 5)
    real = SRC[1] != 0
    assert torch.equal(enc[1, 0], real[:, None] & real[None, :])
    causal, real = torch.ones(4, 4, dtype=torch.bool).tril(), TGT[1] != 0
    assert torch.equal(maps.masks["decoder self"][0, 0], causal)
    assert torch.equal(maps.masks["decoder self"][1, 1], causal & real[None, :] & real[:, None])
    assert torch.equal(maps.masks["cross"][1, 0], real[:, None] & (SRC[1] != 0)[None, :])
    for kind, w in maps.items():  # on real queries: masked keys get 0, the rest sums to 1
        m = maps.masks[kind]
        rows = m.any(-1, keepdim=True).expand_as(m)
        assert float(w[:, rows & ~m].abs().max()) == 0.0
        s = w.sum(-1)[:, m.any(-1)]
        torch.testing.assert_close(s, torch.ones_like(s))


def test_collect_attention_encoder_only_and_mha():
    maps = d2l.collect_attention(tiny_model(), SRC)
    assert list(maps) == ["encoder self"]
    d2l.set_seed(1)
    mha = d2l.MultiHeadAttention(16, 4)
    x = torch.randn(2, 5, 16)
    mask = d2l.padding_mask(SRC, 0)
    got = d2l.collect_attention(mha, x, mask=mask)
    assert list(got) == ["self"] and got["self"].shape == (1, 2, 4, 5, 5)
    q, k = mha.split_heads(mha.W_q(x)), mha.split_heads(mha.W_k(x))
    _, ref = d2l.scaled_dot_product_attention(q, k, k, mask)
    torch.testing.assert_close(got["self"][0], ref.detach())
    assert torch.equal(got.masks["self"][:, 0, 0], SRC != 0)
    mha(x, x, x)  # without inputs: the weights of the last forward pass
    torch.testing.assert_close(d2l.collect_attention(mha)["self"][0], mha.attention_weights)


def test_collect_attention_bad_input():
    with pytest.raises(TypeError, match="Transformer or MultiHeadAttention, got Linear"):
        d2l.collect_attention(torch.nn.Linear(2, 2), SRC)
    with pytest.raises(ValueError, match=r"src must be \(B, S\) integer token ids"):
        d2l.collect_attention(tiny_model(), SRC.float())
    with pytest.raises(ValueError, match="run a forward pass first"):
        d2l.collect_attention(d2l.MultiHeadAttention(8, 2))
    with pytest.raises(ValueError, match="mask must be boolean"):
        d2l.attention_figure(torch.rand(2, 3, 3), masks=torch.ones(3, 3))
    with pytest.raises(ValueError, match="does not broadcast"):
        d2l.attention_figure(torch.rand(2, 3, 3), masks=torch.ones(4, 4, dtype=torch.bool))


# ---------------------------------------------------------------- attention_figure
def test_attention_figure_one_head_all_heads_and_mean(maps, no_warnings):
    fig = d2l.attention_figure(maps, "cross", layer=1, head=1, example=0,
                               src_tokens=SRC_TOK, tgt_tokens=TGT_TOK)
    img = image(fig)
    np.testing.assert_allclose(img.data, maps["cross"][1, 0, 1].numpy(), rtol=1e-6)
    assert np.array_equal(img.mask, ~maps.masks["cross"][0, 1].numpy())   # pad key greyed
    assert img.mask[:, 4].all() and not img.mask[:, :4].any()
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == TGT_TOK[0]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == SRC_TOK[0]
    assert len(fig.axes) == 2                                              # heatmap + colour bar

    fig = d2l.attention_figure(maps, "decoder self", layer=-1, head="all", example=1,
                               src_tokens=SRC_TOK, tgt_tokens=TGT_TOK)
    assert len(fig.axes) == 3                                              # 2 heads + colour bar
    for h in range(2):
        np.testing.assert_allclose(image(fig, h).data, maps["decoder self"][1, 1, h].numpy())
        assert fig.axes[h].get_title() == f"head {h}"
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["<bos>", "u", "v", "<pad>"]

    fig = d2l.attention_figure(maps, "encoder self", head="mean")
    np.testing.assert_allclose(image(fig).data, maps["encoder self"][0, 0].mean(0).numpy(), rtol=1e-6)

    w = torch.softmax(torch.randn(3, 2, 4, 6), -1)                         # one (B, h, T_q, T_k)
    fig = d2l.attention_figure(w, head=0, example=2)
    assert "cross attention" in fig._suptitle.get_text()                   # non-square: cross
    np.testing.assert_allclose(image(fig).data, w[2, 0].numpy(), rtol=1e-6)


def test_attention_figure_bad_selection(maps):
    with pytest.raises(ValueError, match=r"kind must be one of \['encoder self', 'decoder self', 'cross'\], got 'self'"):
        d2l.attention_figure(maps, "self")
    with pytest.raises(ValueError, match=r"layer must be an int in \[0, 1\]"):
        d2l.attention_figure(maps, "cross", layer=2)
    with pytest.raises(ValueError, match=r"head must be 'all', 'mean' or an int in \[0, 1\], got 2"):
        d2l.attention_figure(maps, "cross", head=2)
    with pytest.raises(ValueError, match=r"example must be an int in \[0, 1\]"):
        d2l.attention_figure(maps, "cross", example=5)
    with pytest.raises(ValueError, match="got 6 query labels for 5 positions"):
        d2l.attention_figure(maps, "encoder self", src_tokens=list("abcdef"))
    with pytest.raises(ValueError, match=r"must be \(T_q, T_k\), .* got shape \(4,\)"):
        d2l.attention_figure(torch.rand(4))


# ---------------------------------------------------------------- explorers
def test_attention_explorer_controls_drive_the_figure(maps, no_warnings):
    ex = d2l.attention_explorer(maps, SRC_TOK, TGT_TOK)
    assert set(ex.controls) == {"kind", "layer", "head", "example"}
    assert ex.out in ex.widget.children                         # controls + Output in a VBox
    out = ex.out.outputs[0]["data"]                             # the picture IS in the widget state
    assert base64.b64decode(out["image/png"]).startswith(PNG_MAGIC)
    assert out["image/png"] == base64.b64encode(ex.png).decode()
    assert len(ex.figure.axes) == 3                             # initial state: all heads

    ex.controls["head"].value = 1
    assert ex.state["head"] == 1 and len(ex.figure.axes) == 2
    np.testing.assert_allclose(image(ex.figure).data, maps["encoder self"][0, 0, 1].numpy(), rtol=1e-6)
    assert ex.out.outputs[0]["data"]["image/png"] == base64.b64encode(ex.png).decode() != out["image/png"]

    ex.controls["kind"].value = "cross"
    ex.controls["layer"].value = 1
    ex.controls["example"].value = 1
    assert ex.controls["layer"].max == 1 and ex.controls["example"].max == 1
    assert [v for _, v in ex.controls["head"].options] == ["all", "mean", 0, 1]
    np.testing.assert_allclose(image(ex.figure).data, maps["cross"][1, 1, 1].numpy(), rtol=1e-6)
    assert [t.get_text() for t in ex.figure.axes[0].get_xticklabels()] == ["f", "g", "h", "<pad>", "<pad>"]

    ex.update(head="mean", layer=0)                             # from code: controls follow
    assert ex.controls["head"].value == "mean" and ex.controls["layer"].value == 0
    with pytest.raises(ValueError, match=r"unknown setting\(s\) \['heads'\]"):
        ex.update(heads=1)
    assert repr(ex) == "AttentionExplorer(kind='cross', layer=0, head='mean', example=1)"


def test_pe_figure_panels():
    fig = d2l.pe_figure(d_model=16, num_positions=30, dims=(2, 3))
    P = d2l.PositionalEncoding(16, max_len=30).pe[0].numpy()
    np.testing.assert_allclose(image(fig, 0), P)
    lines = fig.axes[1].lines
    assert [ln.get_label() for ln in lines] == ["dim 2", "dim 3"]
    np.testing.assert_allclose(lines[1].get_ydata(), P[:, 3])
    G = np.asarray(fig.axes[2].images[0].get_array())
    np.testing.assert_allclose(G, P @ P.T, rtol=1e-5, atol=1e-5)
    for k in range(-5, 6):  # the dot product depends only on the distance i - j
        diag = np.diagonal(G, k)
        np.testing.assert_allclose(diag, diag[0], atol=1e-4)
    with pytest.raises(ValueError, match=r"dims must lie in \[0, 15\] for d_model=16, got \[16\]"):
        d2l.pe_figure(16, 30, dims=(1, 16))
    with pytest.raises(ValueError, match="num_positions must be an int >= 1, got 0"):
        d2l.pe_figure(16, 0)


def test_pe_explorer_controls(no_warnings):
    ex = d2l.pe_explorer(d_model=32, num_positions=40)
    assert image(ex.figure, 0).shape == (40, 32)
    ex.controls["d_model"].value = 6                            # dims 4, 5 survive, 6 and 7 go
    assert ex.state["dims"] == (4, 5) and ex.controls["dims"].value == (4, 5)
    assert list(ex.controls["dims"].options) == list(range(6))
    assert image(ex.figure, 0).shape == (40, 6)
    ex.controls["dims"].value = (0, 1, 3)
    assert [ln.get_label() for ln in ex.figure.axes[1].lines] == ["dim 0", "dim 1", "dim 3"]
    ex.controls["num_positions"].value = 12
    assert image(ex.figure, 2).shape == (12, 12)
    assert base64.b64decode(ex.out.outputs[0]["data"]["image/png"]) == ex.png


def payload(html, kind):
    """The numbers an explorer's HTML output embeds for its JavaScript."""
    m = re.search(r"window\.d2lfig\." + kind + r"\(r,(\{.*\})\);\};", html, re.S)
    assert m, f"no {kind} call in the HTML"
    return json.loads(m.group(1).replace("<\\/", "</"))


def decode(p):
    """An embedded panel -> (rows, cols) array (weights are kept in thousandths)."""
    vals = np.array([np.nan if x is None else x for x in p["values"]], dtype=float)
    return (vals / p.get("scale", 1)).reshape(p["rows"], p["cols"])


def test_explorer_html_holds_every_setting_and_the_switch(maps, no_warnings):
    """The page needs no kernel: every kind x layer x head x example is embedded, each
    as attention_view decides it, and the script switches between them on input."""
    ex = d2l.attention_explorer(maps, SRC_TOK, TGT_TOK, kind="cross", head=1, example=1)
    html = ex._repr_mimebundle_()["text/html"]
    d = payload(html, "attention")
    assert d["state"] == {"kind": "cross", "layer": 0, "head": 1, "example": 1}
    heads = ["all", "mean", 0, 1]
    expected = {f"{k}|{l}|{h}|{e}" for k in maps for l in range(2) for h in heads for e in range(2)}
    assert set(d["views"]) == expected                                   # 3 * 2 * 4 * 2 = 48
    for key, ref in d["views"].items():
        kind, layer, head, example = key.split("|")
        head = head if head in ("all", "mean") else int(head)
        v = W.attention_view(maps, kind, int(layer), head, int(example),
                             src_tokens=SRC_TOK, tgt_tokens=TGT_TOK)
        assert ref["title"] == v["title"] and len(ref["panels"]) == len(v["values"])
        for i, pi in enumerate(ref["panels"]):
            p = d["panels"][pi]
            got = decode(p)
            allowed = v["mask"][i]                                     # masked cells: stored as 0
            np.testing.assert_allclose(got[allowed], v["values"][i][allowed], atol=6e-4)
            assert (got[~allowed] == 0).all()
            assert d["masks"][p["mask"]] == "".join("1" if x else "0" for x in allowed.ravel())
        assert d["labels"][ref["xlabels"]] == v["xlabels"] and d["labels"][ref["ylabels"]] == v["ylabels"]
    # the switch: controls for every setting, redrawn on input, in one script
    for snippet in ('addEventListener("input"', 'addEventListener("change"', 'addEventListener("click"',
                    "d.views[[st.kind, st.layer, st.head, st.example].join(\"|\")]", "window.d2lfig"):
        assert snippet in html, snippet
    assert not re.search(r"src=|url\(|fetch\(|XMLHttpRequest|import\(", html)  # nothing to fetch
    assert len(html) < 200_000


def test_pe_explorer_html(no_warnings):
    ex = d2l.pe_explorer(d_model=16, num_positions=30, dims=(2, 3), max_d_model=64)
    d = payload(ex._repr_mimebundle_()["text/html"], "pe")
    assert d["state"] == {"d_model": 16, "num_positions": 30, "dims": [2, 3]}
    assert d["max_d_model"] == 64 and len(d["luts"]["pe"]) == 128
    ex.update(d_model=8)
    assert payload(ex._repr_mimebundle_()["text/html"], "pe")["state"]["d_model"] == 8


def test_display_html_everywhere_png_outside_a_kernel(maps, monkeypatch):
    ex = d2l.attention_explorer(maps, SRC_TOK, TGT_TOK)
    bundle = ex._repr_mimebundle_()                             # pytest: no kernel
    assert base64.b64decode(bundle["image/png"]) == ex.png and "d2lfig" in bundle["text/html"]
    monkeypatch.setattr(W, "in_kernel", lambda: True)
    bundle = ex._repr_mimebundle_()                             # Jupyter, Colab, the book
    assert set(bundle) == {"text/plain", "text/html"} and bundle["text/plain"] == repr(ex)
    assert ex._widget is None                                   # no comm opened for the display


def test_widget_creation_failure_falls_back(monkeypatch, no_warnings):
    def no_comm(*args, **kwargs):  # ipywidgets 7 outside a kernel
        raise RuntimeError("Comms cannot be opened without a kernel")
    ipywidgets = pytest.importorskip("ipywidgets")
    monkeypatch.setattr(ipywidgets, "Output", no_comm)
    ex = d2l.pe_explorer(d_model=8)
    assert ex.widget is None and ex.controls == {} and ex.png.startswith(PNG_MAGIC)
    ex.update(dims=(1,))
    assert len(ex.figure.axes[1].lines) == 1


@pytest.fixture
def without_ipywidgets(monkeypatch):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)      # `import ipywidgets` fails
    yield importlib.reload(W)
    monkeypatch.undo()
    importlib.reload(W)


def test_fallback_without_ipywidgets(without_ipywidgets, maps, monkeypatch, no_warnings):
    mod = without_ipywidgets
    assert mod.ipywidgets_or_none() is None
    monkeypatch.setattr(mod, "in_kernel", lambda: True)         # even inside a kernel
    ex = mod.attention_explorer(maps, SRC_TOK, TGT_TOK, kind="cross", head=0)
    assert ex.widget is None and ex.out is None and ex.controls == {}
    assert set(ex._repr_mimebundle_()) == {"text/plain", "text/html"}
    ex.update(head=1)
    np.testing.assert_allclose(image(ex.figure).data, maps["cross"][0, 0, 1].numpy(), rtol=1e-6)
    assert mod.pe_explorer().png.startswith(PNG_MAGIC)


def test_import_d2lmini_without_ipywidgets():
    code = ("import sys; sys.modules['ipywidgets'] = None\n"
            "import matplotlib; matplotlib.use('Agg')\n"
            "import d2lmini as d2l\n"
            "ex = d2l.pe_explorer(d_model=8, num_positions=10)\n"
            "print(ex.widget is None, ex.png[:4] == b'\\x89PNG')")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["True", "True"] and res.stderr == ""


# ---------------------------------------------------------------- training monitor
def _train(model, monitor, steps):
    loss = lambda logits, y: F.cross_entropy(logits.transpose(1, 2), y, ignore_index=0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    return d2l.train(model, loss, opt, [(SRC, TGT, TGT)], num_epochs=steps, callbacks=[monitor],
                     progress=False)


def test_monitor_snapshots_and_animation(no_warnings):
    model = tiny_model()
    mon = d2l.TrainingMonitor((SRC, TGT), every=5, src_tokens=SRC_TOK, tgt_tokens=TGT_TOK,
                              max_frames=4)
    hist = _train(model, mon, 23)
    assert [s["step"] for s in mon.snapshots] == [1, 5, 10, 15, 20]
    assert mon.losses == hist.step_loss and mon.redraws == 0    # headless: record only
    assert mon.snapshots[-1]["loss"] == hist.step_loss[19]
    att = mon.snapshots[-1]["attention"]                         # cross, last layer, mean of heads
    assert att.shape == (1, 4, 5)
    assert model.training                                        # probe runs restore the mode
    assert not np.allclose(att[0], mon.snapshots[0]["attention"][0])  # attention changed
    fig = mon.figure()
    assert fig.axes[1].images[0].get_array().mask[:, 4].all()   # the pad key is greyed
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), hist.step_loss[:20])

    frames = mon.frames()
    assert [s["step"] for s in frames] == [1, 5, 15, 20]          # <= max_frames, ends kept
    html = mon.animation().data                                  # IPython HTML of animation_html()
    d = payload(html, "monitor")                                 # numbers, drawn in the page
    assert [f["step"] for f in d["frames"]] == [1, 5, 15, 20]
    np.testing.assert_allclose(d["losses"], hist.step_loss[:20], rtol=1e-3)
    assert "smooth" not in d                                     # the page smooths, as M.smooth
    assert "function smooth(y)" in html and "centred mean of" in html
    last = d["panels"][d["frames"][-1]["panels"][0]]
    np.testing.assert_allclose(decode(last), att[0], atol=6e-4)
    assert d["mask"] == "".join("1" if x else "0" for x in mon._mask.ravel())
    assert "font-awesome" not in html and not re.search(r"src=|url\(|fetch\(|XMLHttpRequest", html)
    assert 'addEventListener("click"' in html and len(html) < 200_000

    _train(model, mon, 10)                                       # a second train() continues
    assert [s["step"] for s in mon.snapshots][-3:] == [24, 28, 33]
    assert len(mon.losses) == 33


def test_smoothed_loss_is_centred_with_no_lag():
    """The smoothed curve follows a falling loss without trailing it (an exponential
    average of k steps lags ~k steps); it averages the noise away; the title quotes the
    mean of the last window."""
    steps = np.arange(500)
    clean = 2.0 * np.exp(-steps / 150)
    noisy = clean * (1 + 0.2 * np.random.default_rng(0).standard_normal(500))
    s = M.smooth(noisy)
    assert M.window(500) == 20 and s.shape == (500,)
    mid = slice(20, 480)
    assert np.abs(s[mid] - clean[mid]).mean() < 0.3 * np.abs(noisy[mid] - clean[mid]).mean()
    assert abs(np.mean(s[mid] - clean[mid])) < 0.01            # no lag: no bias on a slope
    np.testing.assert_allclose(M.smooth([1.0, 2.0, 6.0]), [1.0, 2.0, 6.0])  # window 1: itself
    assert M.smooth([3.0, 1.0, 2.0, 4.0] * 25)[0] == 3.0        # ends: the window shrinks
    assert M.recent_loss(noisy) == pytest.approx(noisy[-20:].mean())


def test_monitor_live_display_updates_one_handle(monkeypatch, no_warnings):
    shown = []

    class Handle:
        def update(self, obj):
            shown.append(("update", obj.data[:8]))

    def fake_display(obj, display_id=None):
        shown.append(("display", obj.data[:8], display_id))
        return Handle()

    import IPython.display
    monkeypatch.setattr(IPython.display, "display", fake_display)
    monkeypatch.setattr(M, "in_kernel", lambda: True)
    probe = lambda net: d2l.collect_attention(net, SRC)              # function probe: encoder
    mon = d2l.TrainingMonitor(probe, every=4, head="all", max_overhead=None)
    _train(tiny_model(), mon, 9)
    assert mon.redraws == len(mon.snapshots) == 3                  # steps 1, 4, 8
    assert shown == [("display", PNG_MAGIC, True), ("update", PNG_MAGIC), ("update", PNG_MAGIC)]
    assert mon.snapshots[0]["attention"].shape == (2, 5, 5)       # all heads, encoder self
    assert mon.render().startswith(PNG_MAGIC)


def test_monitor_overhead_budget_and_bad_args(monkeypatch):
    mon = d2l.TrainingMonitor((SRC, TGT), every=1, live=True, max_overhead=0.0)
    _train(tiny_model(), mon, 6)
    assert len(mon.snapshots) == 6 and mon.redraws == 1            # budget 0: the first only
    assert 0 < mon.overhead <= 1
    with pytest.raises(ValueError, match="every must be a positive int"):
        d2l.TrainingMonitor(every=0)
    with pytest.raises(ValueError, match="max_frames must be an int >= 2"):
        d2l.TrainingMonitor(max_frames=1)
    with pytest.raises(TypeError, match=r"probe must be \(src, tgt\).*got str"):
        d2l.TrainingMonitor("src")
    with pytest.raises(ValueError, match="no snapshot yet"):
        d2l.TrainingMonitor().animation_html()


# ---------------------------------------------------------------- a real kernel (nbclient)
def test_notebook_embeds_widget_pictures_and_live_frames(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cells = ["import torch, torch.nn.functional as F, d2lmini as d2l\n"
             "d2l.set_seed(0)\n"
             "m = d2l.Transformer(20, 15, d_model=16, num_heads=2, num_layers=2, d_ff=32)\n"
             f"src, tgt = torch.tensor({SRC.tolist()}), torch.tensor({TGT.tolist()})",
             "d2l.attention_explorer(d2l.collect_attention(m, src, tgt), tgt_tokens=['a', 'b', 'c', 'd'])",
             "mon = d2l.TrainingMonitor((src, tgt), every=2, max_overhead=None)\n"
             "loss = lambda lg, y: F.cross_entropy(lg.transpose(1, 2), y, ignore_index=0)\n"
             "h = d2l.train(m, loss, torch.optim.Adam(m.parameters()), [(src, tgt, tgt)], 4,"
             " callbacks=[mon], progress=False)"]
    cells.insert(2, "ex = d2l.attention_explorer(d2l.collect_attention(m, src, tgt))\n"
                    "ex.controls['head'].value = 1\n"
                    "ex.widget")                                   # the ipywidgets version
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outs = [o for c in nb.cells for o in c.outputs]
    assert not [o for o in outs if o.output_type == "stream" and o.name == "stderr"]
    shown = nb.cells[1].outputs[0]["data"]                         # the explorer: HTML, no widget
    assert shown["text/plain"].startswith("AttentionExplorer(kind='encoder self'")
    assert set(shown) == {"text/plain", "text/html"} and "window.d2lfig.attention" in shown["text/html"]
    view = nb.cells[2].outputs[0]["data"]                          # the live widget path
    state = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    model_id = view["application/vnd.jupyter.widget-view+json"]["model_id"]
    assert state[model_id]["model_name"] == "VBoxModel"
    pictures = [o["data"]["image/png"] for s in state.values() if s["model_name"] == "OutputModel"
                for o in s["state"]["outputs"]]
    assert len(pictures) == 1 and base64.b64decode(pictures[0]).startswith(PNG_MAGIC)
    assert any(s["model_name"] == "DropdownModel" and s["state"].get("index") == 3
               for s in state.values())                          # head 1 set from code
    live = nb.cells[3].outputs                                     # one display, updated in place
    assert len(live) == 1 and base64.b64decode(live[0]["data"]["image/png"]).startswith(PNG_MAGIC)


def test_explorer_passes_colour_scale_through():
    w = torch.rand(1, 1, 2, 4, 4) * 0.5
    ex = d2l.attention_explorer(w, vmax=1.0, cmap="Blues")
    im = ex.figure.axes[0].images[0]
    assert im.get_clim() == (0.0, 1.0) and im.get_cmap().name.startswith("Blues")
