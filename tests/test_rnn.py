"""The GRU encoder-decoder with additive attention, the Conv1d stack and the layer-cost
helpers (d2lmini.rnn, d2lmini.cost)."""
import math

import pytest
import torch
from torch import nn

import d2lmini as d2l
from d2lmini.cost import (GRULayer, SelfAttention, cost_table, gradient_by_distance,
                          path_length, saved_bytes)
from d2lmini.rnn import ConvStack, GRUSeq2Seq



def tiny(**kw):
    torch.manual_seed(0)
    cfg = dict(embed_size=8, num_hiddens=16, num_layers=1)
    cfg.update(kw)
    return GRUSeq2Seq(12, 10, **cfg).eval()


SRC = torch.tensor([[5, 6, 7, 8, 0, 0], [9, 10, 11, 4, 5, 6]])   # 0 = <pad>
TGT = torch.tensor([[1, 4, 5, 6, 7], [1, 8, 9, 3, 2]])


# ---------------------------------------------------------------- GRU encoder-decoder


@pytest.mark.parametrize("num_layers", [1, 2])
def test_shapes(num_layers):
    m = tiny(num_layers=num_layers)
    (outputs, state), mask = m.encode(SRC)
    assert outputs.shape == (2, 6, 16) and state.shape == (num_layers, 2, 16)
    assert mask.shape == (2, 1, 6) and mask.dtype == torch.bool
    assert m(SRC, TGT).shape == (2, 5, 10)
    assert m.decoder.attention_weights.shape == (2, 5, 6)


def test_source_pads_change_nothing():
    m = tiny(num_layers=2)
    with torch.no_grad():
        logits = m(SRC, TGT)
        more = m(torch.cat([SRC, torch.zeros(2, 4, dtype=torch.long)], 1), TGT)
        alone = m(SRC[:1, :4], TGT[:1])                 # row 0 without any pad
    torch.testing.assert_close(more, logits, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(alone, logits[:1], atol=1e-6, rtol=1e-5)


def test_encoder_state_is_the_last_real_token_and_pad_outputs_are_zero():
    m = tiny()
    with torch.no_grad():
        (outputs, state), _ = m.encode(SRC)
        ref_out, ref_state = m.encoder.rnn(m.encoder.embedding(SRC[:1, :4]))
    torch.testing.assert_close(state[:, :1], ref_state)
    torch.testing.assert_close(outputs[:1, :4], ref_out)
    assert (outputs[0, 4:] == 0).all()


def test_attention_weights_ignore_pads_and_sum_to_one():
    m = tiny()
    with torch.no_grad():
        m(SRC, TGT)
    w = m.decoder.attention_weights                               # (B, T, S)
    assert (w[0, :, 4:] == 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 5))


def test_decoder_is_causal_and_uses_additive_attention_on_encoder_outputs():
    m = tiny()
    with torch.no_grad():
        logits = m(SRC, TGT)
        tgt2 = TGT.clone()
        tgt2[:, 3] = 6
        logits2 = m(SRC, tgt2)
    torch.testing.assert_close(logits[:, :3], logits2[:, :3])
    assert not torch.allclose(logits[:, 3:], logits2[:, 3:])
    assert isinstance(m.decoder.attention, d2l.AdditiveAttention)
    # step 0 by hand: query = encoder state, context = additive attention over encoder outputs
    with torch.no_grad():
        (enc, state), mask = m.encode(SRC)
        ctx = m.decoder.attention(state[-1][:, None], enc, enc, mask)
        x = torch.cat([m.decoder.embedding(TGT[:, :1]), ctx], -1)
        out, _ = m.decoder.rnn(x, state)
        torch.testing.assert_close(m.decoder.dense(out), logits[:, :1])


def test_greedy_decode_works_unchanged():
    m = tiny()
    ids = d2l.greedy_decode(m, SRC, max_len=7, bos_id=1, eos_id=2)
    assert ids.shape[0] == 2 and ids.shape[1] <= 7
    # greedy decoding = argmax of teacher-forced logits on its own output
    with torch.no_grad():
        tf = m(SRC, torch.cat([torch.ones(2, 1, dtype=torch.long), ids[:, :-1]], 1))
    first_eos = [(row == 2).nonzero()[0, 0].item() + 1 if (row == 2).any() else len(row) for row in ids]
    for b, n in enumerate(first_eos):
        assert torch.equal(tf[b, :n].argmax(-1), ids[b, :n])


def test_bad_inputs():
    m = tiny()
    with pytest.raises(ValueError, match="right-padded"):
        m(torch.tensor([[5, 0, 6]]), TGT[:1])
    with pytest.raises(ValueError, match="at least one real"):
        m(torch.tensor([[0, 0]]), TGT[:1])
    with pytest.raises(ValueError, match="out of range"):
        m(torch.tensor([[5, 12]]), TGT[:1])
    with pytest.raises(ValueError, match="out of range"):
        m(SRC, TGT + 10)
    with pytest.raises(TypeError, match="integer ids"):
        m(SRC.float(), TGT)
    with pytest.raises(ValueError, match="batch sizes differ"):
        m(SRC, TGT[:1])
    with pytest.raises(ValueError, match="2-D"):
        m(SRC[0], TGT)
    with pytest.raises(ValueError, match="num_hiddens"):
        GRUSeq2Seq(12, 10, num_hiddens=0)


def test_learns_to_reverse_quickly(one_thread):
    """Write 5 tokens backwards: the decoder must learn where to look in the source."""
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, 10, (256, 5), generator=g)
    tgt_in = torch.cat([torch.ones(256, 1, dtype=torch.long), src.flip(1)], 1)
    tgt_out = torch.cat([src.flip(1), torch.full((256, 1), 2)], 1)
    torch.manual_seed(0)
    m = GRUSeq2Seq(10, 10, embed_size=16, num_hiddens=32)
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    ce = nn.CrossEntropyLoss()
    for _ in range(100):
        opt.zero_grad()
        ce(m(src, tgt_in).flatten(0, 1), tgt_out.flatten()).backward()
        opt.step()
    test = torch.randint(4, 10, (200, 5), generator=g)              # new sequences
    pred = d2l.greedy_decode(m, test, max_len=6, bos_id=1, eos_id=2)
    assert (pred[:, :5] == test.flip(1)).all(1).float().mean() > 0.9


# ---------------------------------------------------------------- Conv1d stack


def test_conv_stack_shapes_causal_and_matches_conv1d():
    torch.manual_seed(0)
    stack = ConvStack(4, num_layers=2, kernel_size=3)
    x = torch.randn(2, 10, 4)
    outs = stack(x, return_all=True)
    assert len(outs) == 2 and all(o.shape == (2, 10, 4) for o in outs)
    ref = nn.functional.gelu(nn.functional.conv1d(nn.functional.pad(x.transpose(1, 2), (2, 0)),
                                          stack.convs[0].weight, stack.convs[0].bias))
    torch.testing.assert_close(outs[0], ref.transpose(1, 2))
    x2 = x.clone()
    x2[:, 7:] += 1.0                                       # change the future only
    torch.testing.assert_close(stack(x2)[:, :7], stack(x)[:, :7])
    with pytest.raises(ValueError, match="d_model=4"):
        stack(torch.randn(2, 10, 5))
    with pytest.raises(ValueError, match="kernel_size"):
        ConvStack(4, kernel_size=1)


@pytest.mark.parametrize("T", [5, 16, 30])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_path_lengths_match_the_formulas(T, k):
    torch.manual_seed(0)
    x = torch.randn(2, T, 4, dtype=torch.float64)
    plain_layers, dilated_layers = math.ceil((T - 1) / (k - 1)), math.ceil(math.log(T, k) - 1e-9)
    plain = ConvStack(4, num_layers=plain_layers + 2, kernel_size=k).double()
    dilated = ConvStack(4, num_layers=dilated_layers + 2, kernel_size=k, dilated=True).double()
    assert path_length(lambda z: plain(z, return_all=True), x) == plain_layers
    assert path_length(lambda z: dilated(z, return_all=True), x) == dilated_layers
    attn = SelfAttention(4, 2).double()
    assert path_length(lambda z: [attn(z)], x) == 1
    gru = GRULayer(4).double()
    assert path_length(lambda z: [gru(z)], x) == 1
    too_short = ConvStack(4, num_layers=1, kernel_size=2).double()
    assert path_length(lambda z: too_short(z, return_all=True), x) is None


def test_gradient_by_distance_is_causal_for_the_gru():
    torch.manual_seed(0)
    x = torch.randn(2, 8, 4)
    g = gradient_by_distance(GRULayer(4), x)
    assert g.shape == (8,) and (g > 0).all()
    x_rev = torch.randn(2, 8, 4)
    gru = GRULayer(4)
    g_rev = gradient_by_distance(lambda z: gru(z.flip(1)), x_rev)   # x0 is now read last
    assert (g_rev[:-1] == 0).all() and g_rev[-1] > 0


# ---------------------------------------------------------------- costs


def test_saved_bytes_and_cost_table():
    x = torch.randn(1, 32, 8, requires_grad=True)
    attn = SelfAttention(8, 2)
    small, big = saved_bytes(attn, x), saved_bytes(attn, torch.randn(1, 64, 8, requires_grad=True))
    assert big > 2 * small                                 # the (B, h, T, T) weights
    rows = cost_table([8, 16], d_model=8, batch_size=1, reps=1)
    assert len(rows) == 6 and {r["layer"] for r in rows} == {"GRU", "Conv1d (k=3)", "self-attention"}
    assert all(r["ms"] > 0 and r["MiB"] > 0 for r in rows)
    with pytest.raises(ValueError, match="T must be"):
        cost_table([0], d_model=8)


def test_layer_times_median_and_attention_parts():
    from d2lmini.cost import attention_parts, layer_cost, layer_times
    times, nbytes = layer_times(GRULayer(8), 16, 8, batch_size=1, reps=5)
    assert len(times) == 5 and all(t > 0 for t in times) and nbytes > 0
    med, _ = layer_cost(GRULayer(8), 16, 8, batch_size=1, reps=3)
    assert med > 0
    rows = cost_table([8], d_model=8, batch_size=1, reps=3)
    assert all(r["ms_min"] <= r["ms"] <= r["ms_max"] for r in rows)
    parts = attention_parts(2, 32, 16, 4, reps=2)
    assert set(parts) == {"projections", "QK^T", "scale + softmax", "weights @ V",
                          "score MiB"}
    assert parts["score MiB"] == 2 * 4 * 32 * 32 * 4 / 2**20


# ---------------------------------------------------------------- seqtasks (ch11, ch12)
from d2lmini import seqtasks  # noqa: E402


def test_band_mask_and_local_attention_sees_only_neighbours():
    m = seqtasks.band_mask(5, 1)[0, 0]
    assert m.sum() == 5 + 2 * 4 and m[0, 2] == 0 and m[2, 1] and m[2, 3]
    net = seqtasks.MotifClassifier("local attention").eval()
    x = torch.randint(6, (1, 16))
    h = lambda z: net.layer(net.pos(net.embedding(z) * math.sqrt(32)),
                            seqtasks.band_mask(16))
    y = x.clone()
    y[0, 10] = (y[0, 10] + 1) % 6                 # position 10 changes: 9..11 move
    moved = (h(x) - h(y)).abs().amax(-1)[0]
    assert (moved[[9, 10, 11]] > 0).all() and (moved[:9] == 0).all()


def test_zero_bias_block_equals_the_plain_block():
    class Zero(nn.Module):
        def forward(self, T):
            return torch.zeros(4, T, T)
    torch.manual_seed(0)
    plain = d2l.EncoderBlock(32, 4, 64).eval()
    biased = seqtasks.BiasedEncoderBlock(32, 4, 64, Zero()).eval()
    biased.load_state_dict(plain.state_dict())
    x = torch.randn(2, 7, 32)
    assert torch.allclose(plain(x), biased(x), atol=1e-6)
    with pytest.raises(ValueError, match="num_heads, T, T"):
        seqtasks.BiasedEncoderBlock(32, 4, 64, nn.Identity())(x)


def test_motif_embeddings_and_early_stopping():
    small = seqtasks.MotifClassifier("transformer")
    big = seqtasks.MotifClassifier("transformer", embed_std=1.0)
    assert small.embedding.weight.std() < 0.5 < big.embedding.weight.std()
    r = seqtasks.motif_run("cnn", n_train=40, steps=60, patience=20, eval_every=10,
                           n_val=50, n_test=50)
    assert r["steps"] <= 60 and r["best_step"] <= r["steps"]
    assert len(r["curve"]["step"]) == r["steps"] // 10
    x, y = seqtasks.motif_batch(400, generator=torch.Generator().manual_seed(1))
    base = seqtasks.order_blind_accuracy(x, y, n_fit=20_000)
    assert base["majority"] <= base["order_blind"] <= 1


def test_recall_models_share_their_start_and_profile_the_gru():
    from d2lmini import experiments
    nets = {}
    for m in seqtasks.RECALL_MODELS:
        d2l.set_seed(0)
        nets[m] = seqtasks.recall_model(m)
    assert torch.equal(nets["attention"].blocks[0].self_attn.W_q.weight,
                       nets["attention, unit tokens"].blocks[0].self_attn.W_q.weight)
    assert nets["attention, learned positions"].pos.weight.shape == (64, 32)
    job = dict(steps=3, max_distance=5, eval_distances=(1, 5), marked=False, seed=1)
    assert (seqtasks.recall_positions_run("gru", **job)["accuracy"]
            == experiments.recall_run("gru", **job)["accuracy"])
    r = seqtasks.recall_positions_run("gru", profile=True, **job)
    assert len(r["profile"]["grad"]) == 64 and len(r["profile_init"]["z_mean"]) == 64
    with pytest.raises(ValueError, match="GRU"):
        seqtasks.recall_positions_run("attention", profile=True, **job)


def test_prefix_gpt_positions_and_mask():
    torch.manual_seed(0)
    kw = dict(d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=40)
    plain = d2l.GPT(12, **kw).eval()
    same = seqtasks.PrefixGPT(12, sep_id=3, **kw).eval()
    same.load_state_dict(plain.state_dict())
    x = torch.tensor([[5, 6, 7, 3, 8, 9, 0], [5, 6, 3, 8, 9, 10, 11]])
    assert torch.allclose(same(x), plain(x), atol=1e-6)      # count + causal = GPT
    prefix = seqtasks.PrefixGPT(12, sep_id=3, prefix="bidirectional", **kw).eval()
    prefix.load_state_dict(plain.state_dict())
    y = x.clone()
    y[:, 1] = 4                            # a prompt token: earlier prompt rows move
    assert (prefix(x)[:, 0] != prefix(y)[:, 0]).any()
    z = x.clone()
    z[1, 5] = 4                            # an answer token: nothing before it moves
    assert torch.allclose(prefix(x)[1, :5], prefix(z)[1, :5])
    rel = seqtasks.PrefixGPT(12, sep_id=3, positions="from_sep", sep_position=20, **kw)
    rel.load_state_dict(plain.state_dict())
    a = torch.tensor([[5, 3, 8]])
    b = torch.tensor([[7, 7, 7, 5, 3, 8]])             # longer prompt, same end
    assert not torch.allclose(rel(a)[0, -1], plain(a)[0, -1])
    with pytest.raises(ValueError, match="positions"):
        seqtasks.PrefixGPT(12, sep_id=3, positions="rope", **kw)
    assert seqtasks.greedy_answers(plain.eval(), [[5, 3], [6, 7, 3]], 4, eos_id=2)
    assert rel(b).shape == (1, 6, 12)


def test_date_lm_batch_masks_the_prompt():
    vocab = d2l.Vocab(list("0123456789-abc ="))
    x, y = seqtasks.date_lm_batch([("1 abc 2", "2002-01-01")], vocab)
    assert (y[0, :7] == vocab.pad_id).all() and y[0, 7] == vocab.encode(["2"])[0]
    assert y[0, -1] == vocab.eos_id and (x != vocab.eos_id).all()
