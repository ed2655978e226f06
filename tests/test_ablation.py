"""The Transformer's ablation switches (d_ff=0, pos_encoding, scale_embedding) and the
date-task experiment runner d2lmini.ablation (chapter 9)."""
import math

import pytest
import torch

import d2lmini as d2l
from d2lmini import ablation
from d2lmini.transformer import (ConcatPositionalEncoding, LearnedPositionalEncoding,
                                 PositionalEncoding)



def model(**kw):
    torch.manual_seed(0)
    cfg = dict(d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0, max_len=50)
    cfg.update(kw)
    return d2l.Transformer(12, 10, **cfg).eval()


def tokens(B=3, T=7, V=10, seed=1):     # ids valid in both vocabularies
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, V, (B, T), generator=g)


# ---------------------------------------------------------------- defaults unchanged


def test_default_model_keeps_its_names_and_modules():
    keys = set(model().state_dict()) | {n for n, _ in model().named_buffers()}
    for k in ["encoder.embedding.weight", "encoder.pos_encoding.pe", "decoder.pos_encoding.pe",
              "encoder.blocks.1.ffn.linear1.weight", "encoder.blocks.0.norm2.bias",
              "decoder.blocks.1.norm3.weight", "decoder.blocks.0.ffn.linear2.bias"]:
        assert k in keys
    assert not any("weight" in k and "pos_encoding" in k for k in keys)   # no learned table
    assert model().encoder.embedding.weight.shape == (12, 16)


def test_default_embedding_is_scaled_token_embedding_plus_sinusoid():
    m, src = model(), tokens()
    pe = PositionalEncoding(16, max_len=50).pe[:, :7]
    want = m.encoder.embedding(src) * 4.0 + pe                      # sqrt(16) = 4
    assert torch.allclose(m.encoder.embed(src), want, atol=1e-6)
    explicit = model(pos_encoding="sinusoidal", scale_embedding=True)
    assert torch.equal(explicit(src, src[:, :5]), model()(src, src[:, :5]))


# ---------------------------------------------------------------- no FFN


@pytest.mark.parametrize("norm_first", [False, True])
def test_no_ffn_blocks_are_attention_and_norm_only(norm_first):
    m = model(d_ff=0, norm_first=norm_first)
    keys = set(m.state_dict())
    assert not any(".ffn." in k for k in keys)
    assert not any(k.startswith("encoder.blocks.0.norm2") for k in keys)
    assert not any(k.startswith("decoder.blocks.0.norm3") for k in keys)
    blk, x = m.encoder.blocks[0], torch.randn(2, 5, 16)
    sa = lambda y: blk.self_attn(y, y, y)
    want = x + sa(blk.norm1(x)) if norm_first else blk.norm1(x + sa(x))
    assert torch.allclose(blk(x), want, atol=1e-6)
    full = sum(p.numel() for p in model(norm_first=norm_first).parameters())
    ffn_and_norm = 4 * (16 * 32 + 32 + 32 * 16 + 16 + 2 * 16)      # 2 enc + 2 dec blocks
    assert full - sum(p.numel() for p in m.parameters()) == ffn_and_norm


def test_no_ffn_model_trains():
    m, src = model(d_ff=0).train(), tokens()
    m(src, src).sum().backward()
    assert all(p.grad is not None for p in m.parameters())


# ---------------------------------------------------------------- positional encodings


def test_concat_puts_the_sinusoid_beside_a_half_width_embedding():
    m, src = model(pos_encoding="concat"), tokens()
    assert m.encoder.embedding.weight.shape == (12, 8)
    x = m.encoder.embed(src)                                        # (3, 7, 16)
    assert x.shape == (3, 7, 16)
    assert torch.allclose(x[..., :8], m.encoder.embedding(src) * 4.0)
    assert torch.equal(x[..., 8:], PositionalEncoding(8, max_len=50).pe[:, :7].expand(3, 7, 8))
    with pytest.raises(ValueError, match="d_pos"):
        ConcatPositionalEncoding(16, 16)


def test_learned_positions_train_only_the_rows_they_see():
    m, src = model(pos_encoding="learned").train(), tokens(T=7)
    table = m.encoder.pos_encoding
    assert isinstance(table, LearnedPositionalEncoding) and table.weight.shape == (50, 16)
    assert 0.5 < table.weight.std().item() < 0.9                    # N(0, 1/2), not xavier
    m(src, src[:, :4]).sum().backward()
    g = table.weight.grad.abs().sum(1)                              # (50,)
    assert (g[:7] > 0).all() and (g[7:] == 0).all()
    x = torch.zeros(1, 7, 16)
    assert torch.equal(table(x), table.weight[:7][None].expand(1, 7, 16))


def test_without_positions_the_encoder_is_permutation_equivariant():
    m, src = model(pos_encoding="none"), tokens()
    perm = torch.tensor([3, 0, 6, 1, 5, 2, 4])
    mem, _ = m.encode(src)
    mem_p, _ = m.encode(src[:, perm])
    assert torch.allclose(mem_p, mem[:, perm], atol=1e-5)
    mem_s, _ = model().encode(src[:, perm])                          # sinusoidal: not so
    assert not torch.allclose(mem_s, model().encode(src)[0][:, perm], atol=1e-3)


def test_unscaled_embedding():
    m, src = model(scale_embedding=False), tokens()
    pe = PositionalEncoding(16, max_len=50).pe[:, :7]
    assert torch.allclose(m.encoder.embed(src), m.encoder.embedding(src) + pe, atol=1e-6)


def test_bad_switches_raise():
    with pytest.raises(ValueError, match="pos_encoding"):
        model(pos_encoding="rope")
    with pytest.raises(ValueError, match="d_ff"):
        model(d_ff=-1)
    with pytest.raises(ValueError, match="max_len"):
        model(pos_encoding="learned")(tokens(T=51), tokens(T=3))


# ---------------------------------------------------------------- the experiment runner


def test_expected_calibration_error_by_hand():
    conf = torch.tensor([0.95, 0.91, 0.62, 0.68, 0.15])
    ok = torch.tensor([True, False, True, True, False])
    # bins: [0.9, 1.0) holds 0.95, 0.91 (acc 0.5, conf 0.93); [0.6, 0.7) holds 0.62, 0.68
    # (acc 1, conf 0.65); [0.1, 0.2) holds 0.15 (acc 0)
    want = (2 * abs(0.5 - 0.93) + 2 * abs(1 - 0.65) + 1 * 0.15) / 5
    assert math.isclose(ablation.expected_calibration_error(conf, ok), want, rel_tol=1e-6)
    assert ablation.expected_calibration_error(torch.ones(4), torch.ones(4, dtype=torch.bool)) == 0
    with pytest.raises(ValueError, match="same shape"):
        ablation.expected_calibration_error(torch.ones(3), torch.ones(4, dtype=torch.bool))


def test_date_data_shift_adds_leading_spaces():
    data = ablation.DateData(n_train=50, n_test=20, shift=(2, 3))
    space = data.src_vocab[" "]
    src = data.train[0]
    assert ((src[:, :2] == space).all() and (src[:, 3] != space).any())
    lengths = (src != 0).sum(1)
    want = torch.tensor([len(s) for s, _ in data.pairs["train"]])
    assert ((lengths - want >= 2) & (lengths - want <= 3)).all()
    s0, s10 = data.test[0], data.shifted("test", 10, 10)[0]
    assert torch.equal(s10[:, 10:10 + s0.shape[1]], s0) and (s10[:, :10] == space).all()
    with pytest.raises(ValueError, match="shift"):
        data.shifted("test", 3, 1)


def test_teacher_forced_exact_match_equals_greedy_decoding(one_thread):
    data = ablation.DateData(n_train=2000, n_test=200)
    r = ablation.train_dates(data, steps=150, seed=0, batch_size=32, lr=1e-2)
    assert 0 < r["exact_match"] < 1                                 # some right, some wrong
    src, _, tgt_out = data.test
    m = r["model"]
    pred = d2l.greedy_decode(m, src, 11, data.tgt_vocab.bos_id, data.tgt_vocab.eos_id)
    pred = torch.nn.functional.pad(pred, (0, 11 - pred.shape[1]), value=0)
    assert (pred == tgt_out).all(1).float().mean().item() == pytest.approx(r["exact_match"])
    again = ablation.train_dates(data, steps=150, seed=0, batch_size=32, lr=1e-2)
    assert again["loss"] == pytest.approx(r["loss"], rel=1e-5)
    assert 0 <= r["ece"] <= 1 and r["conf_wrong"] < r["conf_right"]


def test_summarize():
    rs = [{"exact_match": 0.5}, {"exact_match": 0.7}, {"exact_match": 0.6}]
    assert ablation.summarize(rs) == pytest.approx((0.6, 0.5, 0.7))
    with pytest.raises(ValueError):
        ablation.summarize([])


# ---------------------------------------------------------------- paired seeds, tables, spread
def test_paired_differences_are_per_seed_and_refuse_unequal_lists():
    a = [{"loss": 1.0}, {"loss": 2.0}, {"loss": 4.0}]
    b = [{"loss": 0.5}, {"loss": 2.5}, {"loss": 1.0}]
    assert ablation.paired(a, b, "loss") == [0.5, -0.5, 3.0]
    with pytest.raises(ValueError, match="equally long"):
        ablation.paired(a, b[:2], "loss")


def test_table_prints_mean_min_max(capsys):
    runs = {"x": [{"exact_match": 0.2, "loss": 1.0}, {"exact_match": 0.4, "loss": 3.0}]}
    ablation.table(runs, ["x"])
    out = capsys.readouterr().out.splitlines()
    assert "0.300 [0.200, 0.400]" in out[1] and "2.000 [1.000, 3.000]" in out[1]


def test_spread_plot_draws_one_dot_per_seed():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    runs = {"a": [{"loss": v} for v in (1.0, 2.0, 3.0)], "b": [{"loss": 5.0}] * 3}
    ablation.spread_plot(ax, runs, ["a", "b"], "loss", highlight="a")
    dots = [l for l in ax.lines if l.get_marker() == "o"]
    assert [len(l.get_ydata()) for l in dots] == [3, 3]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    plt.close(fig)


# ---------------------------------------------------------------- baselines and analyses
def test_auroc_counts_pairs_and_half_ties():
    conf = torch.tensor([0.9, 0.8, 0.8, 0.3, 0.2])
    ok = torch.tensor([True, True, False, False, True])
    # right: 0.9, 0.8, 0.2; wrong: 0.8, 0.3.  Pairs (right > wrong): 0.9 beats both,
    # 0.8 ties 0.8 (1/2) and beats 0.3, 0.2 beats neither: (2 + 1.5 + 0) / 6
    assert ablation.auroc(conf, ok) == pytest.approx(3.5 / 6)
    assert ablation.auroc(torch.tensor([0.9, 0.1]), torch.tensor([True, False])) == 1.0
    assert math.isnan(ablation.auroc(torch.ones(3), torch.ones(3, dtype=torch.bool)))
    with pytest.raises(ValueError, match="same shape"):
        ablation.auroc(torch.ones(3), torch.ones(2, dtype=torch.bool))


def test_reliability_bins():
    conf = torch.tensor([0.95, 0.91, 0.62, 0.68, 0.15])
    ok = torch.tensor([True, False, True, True, False])
    r = ablation.reliability(conf, ok)
    assert r["n"][9] == 2 and r["accuracy"][9] == 0.5
    assert r["confidence"][6] == pytest.approx(0.65) and r["n"][1] == 1
    assert math.isnan(r["accuracy"][0]) and sum(r["n"]) == 5


def test_input_blind_baseline_knows_positions_not_inputs():
    # column 0 always 3, column 1 half 4 half 5, column 2 padded in half the rows
    t = torch.tensor([[3, 4, 6], [3, 5, 0], [3, 4, 6], [3, 5, 0]])
    b = ablation.input_blind_baseline(t, pad_id=0)
    want = (4 * 0.0 + 4 * math.log(2) + 2 * 0.0) / 10          # per real token
    assert b["loss"] == pytest.approx(want)
    assert b["token_accuracy"] == pytest.approx((4 + 2 + 2) / 10)
    p = torch.tensor([4, 2, 2, 2]) / 10                           # ids 3, 4, 5, 6
    assert b["unigram_loss"] == pytest.approx(-(p * p.log()).sum().item())
    assert b["unigram_accuracy"] == pytest.approx(0.4)
    with pytest.raises(ValueError, match="integer targets"):
        ablation.input_blind_baseline(t.float())


def test_input_blind_floor_of_the_dates():
    data = ablation.DateData(n_train=20000, n_test=10)
    b = ablation.input_blind_baseline(data.train[2])
    assert b["loss"] == pytest.approx(1.123, abs=0.005)           # review ch06-10, V1
    assert b["token_accuracy"] == pytest.approx(0.506, abs=0.005)
    assert b["unigram_loss"] == pytest.approx(2.27, abs=0.01)


def test_lengths_place_the_date_anywhere_in_a_window():
    data = ablation.DateData(n_train=300, n_test=50, lengths=(0, 32))
    n = data.source_lengths("train")
    assert int(n.max()) <= 32 and len(set(n.tolist())) > 10
    assert all(s.strip() == p for s, (p, _) in zip(data.sources["train"],
                                                   data.pairs["train"]))
    src = data.at_lengths("test", 41, 48)[0]
    real = (src != data.src_vocab.pad_id).sum(1)
    assert int(real.min()) >= 41 and int(real.max()) <= 48
    with pytest.raises(ValueError, match="longest source"):
        data.at_lengths("test", 0, 10)
    with pytest.raises(ValueError, match="not both"):
        ablation.DateData(n_train=10, n_test=5, shift=(1, 2), lengths=(0, 32))


def test_by_field_splits_the_iso_date():
    data = ablation.DateData(n_train=50, n_test=40)
    torch.manual_seed(0)
    m = d2l.Transformer(len(data.src_vocab), len(data.tgt_vocab), d_model=16,
                        num_heads=2, num_layers=1, d_ff=32, dropout=0.0, max_len=64)
    out = ablation.by_field(m, *data.test, data.sources["test"])
    assert set(out) == {"month as a word", "month as digits"}
    n = sum(out[g]["year"]["n"] for g in out)
    assert n == 40 and all(set(out[g]) == {"year", "month", "day"} for g in out)
    words = [s for s in data.sources["test"] if any(c.isascii() and c.isalpha()
                                                    for c in s)]
    assert out["month as a word"]["day"]["n"] == len(words)
    with pytest.raises(ValueError, match="one source string per row"):
        ablation.by_field(m, *data.test, data.sources["test"][:3])


def test_train_dates_records_a_held_out_curve(one_thread):
    data = ablation.DateData(n_train=500, n_test=50)
    r = ablation.train_dates(data, steps=12, warmup=2, batch_size=16, eval_at=(4, 12))
    assert r["curve"]["step"] == [4, 12]
    assert r["curve"]["loss"][-1] == pytest.approx(r["loss"])
    assert 0 <= r["auroc"] <= 1 or math.isnan(r["auroc"])
    with pytest.raises(ValueError, match="eval_at"):
        ablation.train_dates(data, steps=5, warmup=1, eval_at=(9,))
