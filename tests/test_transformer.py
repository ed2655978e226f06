"""The Transformer (d2lmini.transformer, d2lmini.schedules) against torch.nn and the paper."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import d2lmini as d2l



def tiny(norm_first=False, V_src=12, V_tgt=10, **kw):
    torch.manual_seed(0)
    cfg = dict(d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0, norm_first=norm_first)
    cfg.update(kw)
    return d2l.Transformer(V_src, V_tgt, **cfg).eval()


# ---------------------------------------------------------------- positional encoding


def pe_formula(max_len, d):
    pe = torch.zeros(max_len, d, dtype=torch.float64)
    for pos in range(max_len):
        for j in range(d):
            angle = pos / 10000 ** ((j - j % 2) / d)
            pe[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return pe


@pytest.mark.parametrize("d", [8, 7, 1])
def test_positional_encoding_matches_the_formula(d):
    layer = d2l.PositionalEncoding(d, max_len=60)
    assert layer.pe.shape == (1, 60, d)
    assert "pe" in dict(layer.named_buffers()) and not list(layer.parameters())
    assert torch.allclose(layer.pe[0].double(), pe_formula(60, d), atol=1e-6)


def test_positional_encoding_forward_adds_the_first_T_rows():
    layer = d2l.PositionalEncoding(8, max_len=20)
    x = torch.randn(3, 5, 8)
    assert torch.equal(layer(x), x + layer.pe[:, :5])
    assert layer(torch.zeros(1, 20, 8)).shape == (1, 20, 8)          # T == max_len is fine


def test_positional_encoding_dropout_only_in_training():
    layer = d2l.PositionalEncoding(8, dropout=0.5, max_len=20)
    x = torch.randn(2, 5, 8)
    assert torch.equal(layer.eval()(x), x + layer.pe[:, :5])
    assert not torch.equal(layer.train()(x), x + layer.pe[:, :5])


def test_positional_encoding_bad_input():
    layer = d2l.PositionalEncoding(8, max_len=10)
    with pytest.raises(ValueError, match="sequence length T=11 exceeds max_len=10"):
        layer(torch.zeros(1, 11, 8))
    with pytest.raises(ValueError, match=r"expected \(B, T, d_model=8\), got shape \(1, 4, 6\)"):
        layer(torch.zeros(1, 4, 6))
    with pytest.raises(ValueError, match="must be 3-D"):
        layer(torch.zeros(4, 8))
    with pytest.raises(ValueError, match="d_model and max_len must be >= 1"):
        d2l.PositionalEncoding(0)


def test_positional_encoding_shift_is_a_rotation():
    pe = d2l.PositionalEncoding(16, max_len=200).pe[0].double()
    w = torch.exp(torch.arange(0, 16, 2, dtype=torch.float64) * (-math.log(10000.0) / 16))
    for k in (1, 7, 50):
        c, s = torch.cos(w * k), torch.sin(w * k)
        sin, cos = pe[:-k, 0::2], pe[:-k, 1::2]
        assert torch.allclose(sin * c + cos * s, pe[k:, 0::2], atol=1e-4)
        assert torch.allclose(cos * c - sin * s, pe[k:, 1::2], atol=1e-4)


# ---------------------------------------------------------------- FFN


def test_ffn_is_a_kernel_size_one_convolution():
    torch.manual_seed(0)
    ffn = d2l.PositionWiseFFN(8, 32)
    conv1, conv2 = nn.Conv1d(8, 32, 1), nn.Conv1d(32, 8, 1)
    with torch.no_grad():
        conv1.weight.copy_(ffn.linear1.weight[..., None]), conv1.bias.copy_(ffn.linear1.bias)
        conv2.weight.copy_(ffn.linear2.weight[..., None]), conv2.bias.copy_(ffn.linear2.bias)
    x = torch.randn(3, 6, 8)
    ref = conv2(F.relu(conv1(x.transpose(1, 2)))).transpose(1, 2)
    assert torch.allclose(ffn(x), ref, atol=1e-6)


@pytest.mark.parametrize("act,fn", [("relu", F.relu), ("gelu", F.gelu)])
def test_ffn_matches_sequential(act, fn):
    torch.manual_seed(0)
    ffn = d2l.PositionWiseFFN(8, 16, activation=act)
    x = torch.randn(2, 4, 8)
    ref = F.linear(fn(F.linear(x, ffn.linear1.weight, ffn.linear1.bias)),
                   ffn.linear2.weight, ffn.linear2.bias)
    assert torch.allclose(ffn(x), ref, atol=1e-6)
    with pytest.raises(ValueError, match="activation must be one of"):
        d2l.PositionWiseFFN(8, 16, activation="swish")


# ---------------------------------------------------------------- blocks vs torch


def _grads_by_our_names(module_torch):
    return d2l.state_dict_from_torch({k: p.grad for k, p in module_torch.named_parameters()})


def _assert_same_param_grads(ours, theirs, atol=1e-5):
    ref = _grads_by_our_names(theirs)
    names = dict(ours.named_parameters())
    assert set(names) == set(ref)
    for k, p in names.items():
        assert torch.allclose(p.grad, ref[k], atol=atol), k


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("mask_kind", ["none", "padding", "causal"])
def test_encoder_block_matches_torch(norm_first, mask_kind):
    torch.manual_seed(0)
    d, h, d_ff, B, T = 16, 4, 32, 3, 6
    theirs = nn.TransformerEncoderLayer(d, h, d_ff, dropout=0.0, batch_first=True,
                                        norm_first=norm_first)
    ours = d2l.EncoderBlock(d, h, d_ff, norm_first=norm_first)
    ours.load_state_dict(d2l.state_dict_from_torch(theirs.state_dict()))
    x = torch.randn(B, T, d)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    real = torch.arange(T)[None] < torch.tensor([6, 3, 1])[:, None]       # (B, T)
    if mask_kind == "none":
        y1, y2, rows = ours(x1), theirs(x2), torch.ones(B, T, dtype=torch.bool)
    elif mask_kind == "padding":
        y1 = ours(x1, real[:, None, None, :])
        y2 = theirs(x2, src_key_padding_mask=~real)
        rows = real
    else:
        causal = d2l.causal_mask(T)
        y1, y2 = ours(x1, causal), theirs(x2, src_mask=~causal[0, 0], is_causal=True)
        rows = torch.ones(B, T, dtype=torch.bool)
    assert torch.allclose(y1[rows], y2[rows], atol=1e-5)
    w = torch.randn_like(y1)
    (y1[rows] * w[rows]).sum().backward()
    (y2[rows] * w[rows]).sum().backward()
    assert torch.allclose(x1.grad, x2.grad, atol=1e-5)
    _assert_same_param_grads(ours, theirs)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_block_matches_torch(norm_first):
    torch.manual_seed(1)
    d, h, d_ff, B, T, S = 16, 4, 32, 3, 5, 7
    theirs = nn.TransformerDecoderLayer(d, h, d_ff, dropout=0.0, batch_first=True,
                                        norm_first=norm_first)
    ours = d2l.DecoderBlock(d, h, d_ff, norm_first=norm_first)
    ours.load_state_dict(d2l.state_dict_from_torch(theirs.state_dict()))
    x, mem = torch.randn(B, T, d), torch.randn(B, S, d)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    m1, m2 = mem.clone().requires_grad_(), mem.clone().requires_grad_()
    src_real = torch.arange(S)[None] < torch.tensor([7, 4, 2])[:, None]   # (B, S)
    tgt_real = torch.arange(T)[None] < torch.tensor([5, 5, 3])[:, None]   # (B, T)
    causal = d2l.causal_mask(T)
    y1 = ours(x1, m1, tgt_mask=causal & tgt_real[:, None, None, :],
              memory_mask=src_real[:, None, None, :])
    y2 = theirs(x2, m2, tgt_mask=~causal[0, 0], tgt_key_padding_mask=~tgt_real,
                memory_key_padding_mask=~src_real)
    assert torch.allclose(y1[tgt_real], y2[tgt_real], atol=1e-5)
    w = torch.randn_like(y1)
    (y1[tgt_real] * w[tgt_real]).sum().backward()
    (y2[tgt_real] * w[tgt_real]).sum().backward()
    assert torch.allclose(x1.grad, x2.grad, atol=1e-5)
    assert torch.allclose(m1.grad, m2.grad, atol=1e-5)
    _assert_same_param_grads(ours, theirs)


def test_state_dict_from_torch_names():
    sd = d2l.state_dict_from_torch(nn.TransformerDecoderLayer(8, 2, 16, batch_first=True).state_dict())
    assert set(sd) == set(d2l.DecoderBlock(8, 2, 16).state_dict())
    assert "cross_attn.W_q.weight" in sd and "ffn.linear1.weight" in sd


# ---------------------------------------------------------------- the whole model


def test_transformer_output_shape_and_structure():
    model = tiny()
    src, tgt = torch.randint(4, 12, (3, 7)), torch.randint(4, 10, (3, 5))
    assert model(src, tgt).shape == (3, 5, 10)
    assert len(model.encoder.blocks) == len(model.decoder.blocks) == 2
    assert isinstance(model.encoder.norm, nn.Identity)
    assert isinstance(tiny(norm_first=True).encoder.norm, d2l.LayerNorm)
    memory, src_mask = model.encode(src)
    assert memory.shape == (3, 7, 16) and src_mask.shape == (3, 1, 1, 7)


def test_transformer_embeds_scaled_by_sqrt_d_model_plus_pe():
    model = tiny()
    tokens = torch.randint(0, 12, (2, 6))
    expected = model.encoder.embedding(tokens) * 4.0 + model.encoder.pos_encoding.pe[:, :6]
    assert torch.allclose(model.encoder.embed(tokens), expected)


def test_transformer_default_sizes_are_the_papers():
    m = d2l.Transformer(100, 100)
    assert len(m.encoder.blocks) == 6 and m.encoder.d_model == 512
    blk = m.encoder.blocks[0]
    assert blk.self_attn.num_heads == 8 and blk.ffn.linear1.out_features == 2048
    assert blk.dropout1.p == 0.1 and m.pad_id == 0 and not blk.norm_first


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_is_causal(norm_first):
    model = tiny(norm_first)
    src, tgt = torch.randint(4, 12, (2, 6)), torch.randint(4, 10, (2, 6))
    with torch.no_grad():
        base = model(src, tgt)
        for t in range(6):
            changed = tgt.clone()
            changed[:, t] = (changed[:, t] - 3) % 6 + 4                  # another real token
            out = model(src, changed)
            assert torch.allclose(out[:, :t], base[:, :t], atol=1e-6)    # earlier: unchanged
            assert not torch.allclose(out[:, t:], base[:, t:])           # from t on: changed


def test_source_padding_does_not_change_real_results():
    model = tiny()
    short, long = torch.tensor([[5, 6, 7]]), torch.tensor([[5, 6, 7, 8, 9, 10]])
    tgt = torch.tensor([[1, 4, 5]])
    with torch.no_grad():
        alone = model(short, tgt)
        padded = model(torch.tensor([[5, 6, 7, 0, 0, 0, 0]]), tgt)
        batch = model(d2l.pad_batch([[5, 6, 7], [5, 6, 7, 8, 9, 10]]), tgt.repeat(2, 1))
        memory, _ = model.encode(torch.tensor([[5, 6, 7, 0, 0]]))
        mem_alone, _ = model.encode(short)
    assert torch.allclose(alone, padded, atol=1e-6)
    assert torch.allclose(alone[0], batch[0], atol=1e-6)
    assert torch.allclose(model(long, tgt).detach(), batch[1:], atol=1e-6)
    assert torch.allclose(memory[:, :3], mem_alone, atol=1e-6)


def test_target_padding_does_not_change_real_positions():
    model = tiny()
    src = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        a = model(src, torch.tensor([[1, 4, 5]]))
        b = model(src, torch.tensor([[1, 4, 5, 0, 0]]))
    assert torch.allclose(a, b[:, :3], atol=1e-6)


def test_gradients_reach_every_parameter():
    model = tiny(norm_first=True).train()
    src, tgt = torch.randint(4, 12, (2, 5)), torch.randint(4, 10, (2, 4))
    model(src, tgt).sum().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_dropout_active_only_in_training():
    model = tiny(dropout=0.3).train()
    src, tgt = torch.randint(4, 12, (2, 5)), torch.randint(4, 10, (2, 4))
    assert not torch.equal(model(src, tgt), model(src, tgt))
    model.eval()
    assert torch.equal(model(src, tgt), model(src, tgt))


# ---------------------------------------------------------------- bad input


def test_bad_token_ids_are_clear_errors():
    model = tiny()
    tgt = torch.tensor([[1, 4]])
    with pytest.raises(ValueError, match=r"token id 12 is out of range for a vocabulary of size 12"):
        model(torch.tensor([[4, 12]]), tgt)
    with pytest.raises(ValueError, match=r"token id -1 is out of range"):
        model(torch.tensor([[4, -1]]), tgt)
    with pytest.raises(ValueError, match=r"token id 10 is out of range for a vocabulary of size 10"):
        model(torch.tensor([[4, 5]]), torch.tensor([[1, 10]]))
    with pytest.raises(TypeError, match="tokens must hold integer ids, got torch.float32"):
        model(torch.tensor([[4.0, 5.0]]), tgt)


def test_bad_shapes_are_clear_errors():
    model = tiny(max_len=8)
    tgt = torch.tensor([[1, 4]])
    with pytest.raises(ValueError, match="sequence length T=9 exceeds max_len=8"):
        model(torch.randint(4, 12, (1, 9)), tgt)
    with pytest.raises(ValueError, match="empty batch"):
        model(torch.zeros(0, 4, dtype=torch.long), torch.zeros(0, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="empty batch"):
        model(torch.zeros(1, 0, dtype=torch.long), tgt)
    with pytest.raises(ValueError, match="src must be 2-D"):
        model(torch.tensor([4, 5]), tgt)
    with pytest.raises(ValueError, match="batch sizes differ: 2 vs 1"):
        model(torch.randint(4, 12, (2, 3)), tgt)
    with pytest.raises(TypeError, match="src must be a torch.Tensor"):
        model([[4, 5]], tgt)


# ---------------------------------------------------------------- greedy decoding


class Scripted(d2l.Transformer):
    """A Transformer whose decoder emits a fixed script: row b writes script[b, t] at step t."""

    def __init__(self, script):
        super().__init__(10, 10, d_model=8, num_heads=2, num_layers=1, d_ff=8, dropout=0.0)
        self.script = script

    def decode(self, tgt, memory, src_mask):
        B, T = tgt.shape
        logits = torch.zeros(B, T, 10)
        logits[torch.arange(B), -1, self.script[:, T - 1]] = 1.0
        return logits


def test_greedy_decode_stops_after_eos_and_pads_after():
    eos = 2
    model = Scripted(torch.tensor([[5, eos, 7, 7, 7, 7],
                                   [6, 6, 6, eos, 7, 7],
                                   [8, 8, eos, 9, 9, 9]])).train()
    out = d2l.greedy_decode(model, torch.randint(4, 10, (3, 4)), max_len=6, bos_id=1, eos_id=eos)
    assert out.tolist() == [[5, eos, 0, 0], [6, 6, 6, eos], [8, 8, eos, 0]]   # stops when all done
    assert model.training                                           # mode restored
    short = d2l.greedy_decode(model, torch.randint(4, 10, (3, 4)), max_len=2, bos_id=1, eos_id=eos)
    assert short.tolist() == [[5, eos], [6, 6], [8, 8]]              # (B, max_len), no <bos>


def test_greedy_decode_shapes_and_bad_arguments():
    model = tiny()
    src = torch.randint(4, 12, (4, 5))
    out = d2l.greedy_decode(model, src, max_len=7, bos_id=1, eos_id=2)
    assert out.shape[0] == 4 and 1 <= out.shape[1] <= 7 and out.dtype == torch.long
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_len must be a positive int"):
            d2l.greedy_decode(model, src, max_len=bad, bos_id=1, eos_id=2)
    with pytest.raises(ValueError, match=r"eos_id must be an id in 0..9, got 10"):
        d2l.greedy_decode(model, src, 5, bos_id=1, eos_id=10)
    with pytest.raises(ValueError, match="token id 12 is out of range"):
        d2l.greedy_decode(model, torch.tensor([[4, 12]]), 5, 1, 2)
    with pytest.raises(ValueError, match="empty batch"):
        d2l.greedy_decode(model, torch.zeros(0, 3, dtype=torch.long), 5, 1, 2)
    with pytest.raises(TypeError, match="integer ids"):
        d2l.greedy_decode(model, src.float(), 5, 1, 2)
    model.train()
    with pytest.raises(ValueError, match="out of range"):
        d2l.greedy_decode(model, torch.tensor([[4, 99]]), 5, 1, 2)
    assert model.training                                           # restored after an error


def test_greedy_decode_equals_step_by_step_argmax():
    model = tiny()
    src = torch.randint(4, 12, (2, 5))
    out = d2l.greedy_decode(model, src, max_len=4, bos_id=1, eos_id=2)
    ys = torch.ones(2, 1, dtype=torch.long)
    with torch.no_grad():
        for _ in range(out.shape[1]):
            ys = torch.cat([ys, model(src, ys)[:, -1].argmax(-1, keepdim=True)], 1)
    finished = torch.zeros(2, dtype=torch.bool)
    for t in range(out.shape[1]):   # after <eos>, greedy_decode writes pads
        ys[finished, t + 1] = 0
        finished |= ys[:, t + 1] == 2
    assert torch.equal(out, ys[:, 1:])


def test_toy_pair_translates_exactly_after_training(one_thread):
    pairs = d2l.toy_translation()
    sv = d2l.Vocab(w for s, _ in pairs for w in s.split())
    tv = d2l.Vocab(w for _, t in pairs for w in t.split())
    src = d2l.pad_batch([sv.encode(s.split()) for s, _ in pairs])
    full = d2l.pad_batch([tv.encode(t.split(), bos=True, eos=True) for _, t in pairs])
    d2l.set_seed(0)
    model = d2l.Transformer(len(sv), len(tv), d_model=32, num_heads=4, num_layers=2, d_ff=64,
                            dropout=0.0)
    loss = lambda logits, y: d2l.label_smoothing_cross_entropy(logits, y, 0.0, ignore_index=0)
    hist = d2l.train(model, loss, torch.optim.Adam(model.parameters(), lr=3e-3),
                     [(src, full[:, :-1], full[:, 1:])], num_epochs=60, progress=False)
    assert hist.step_loss[-1] < 0.05
    pred = d2l.greedy_decode(model, src, max_len=10, bos_id=tv.bos_id, eos_id=tv.eos_id)
    assert [" ".join(tv.decode(p)) for p in pred] == [t for _, t in pairs]


# ---------------------------------------------------------------- label smoothing


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.5])
@pytest.mark.parametrize("ignore_index", [0, -100])
def test_label_smoothing_matches_torch_forward_and_gradient(eps, ignore_index):
    torch.manual_seed(0)
    logits = torch.randn(3, 5, 11, requires_grad=True)
    target = torch.randint(1, 11, (3, 5))
    target[0, 3:] = ignore_index
    target[2, 1:] = ignore_index
    ours = d2l.label_smoothing_cross_entropy(logits, target, eps, ignore_index=ignore_index)
    ref = F.cross_entropy(logits.reshape(-1, 11), target.reshape(-1), label_smoothing=eps,
                          ignore_index=ignore_index)
    assert torch.allclose(ours, ref, atol=1e-6)
    g1, = torch.autograd.grad(ours, logits)
    g2, = torch.autograd.grad(ref, logits)
    assert torch.allclose(g1, g2, atol=1e-7)
    assert (g1[target == ignore_index] == 0).all()


def test_label_smoothing_is_cross_entropy_with_the_smoothed_target():
    torch.manual_seed(0)
    logits, y, eps, V = torch.randn(6, 7), torch.randint(0, 7, (6,)), 0.2, 7
    q = (1 - eps) * F.one_hot(y, V) + eps / V
    explicit = -(q * F.log_softmax(logits, -1)).sum(-1).mean()
    assert torch.allclose(d2l.label_smoothing_cross_entropy(logits, y, eps), explicit)
    # its minimum is the entropy of q, reached at p = q
    at_q = d2l.label_smoothing_cross_entropy(q.log(), y, eps)
    assert torch.allclose(at_q, -(q * q.log()).sum(-1).mean(), atol=1e-6)


def test_label_smoothing_never_takes_log_of_zero():
    logits = torch.tensor([[300.0, 0.0, 0.0], [0.0, -300.0, 300.0]], requires_grad=True)
    y = torch.tensor([0, 2])
    loss = d2l.label_smoothing_cross_entropy(logits, y, 0.1)
    loss.backward()
    assert loss.isfinite() and logits.grad.isfinite().all()
    assert torch.allclose(loss, F.cross_entropy(logits, y, label_smoothing=0.1))


def test_label_smoothing_all_ignored_is_nan_like_torch():
    logits, y = torch.randn(2, 3, 5), torch.zeros(2, 3, dtype=torch.long)
    ours = d2l.label_smoothing_cross_entropy(logits, y, 0.1, ignore_index=0)
    ref = F.cross_entropy(logits.reshape(-1, 5), y.reshape(-1), label_smoothing=0.1, ignore_index=0)
    assert ours.isnan() and ref.isnan()


def test_label_smoothing_bad_input():
    logits = torch.randn(2, 3, 5)
    with pytest.raises(ValueError, match=r"disagree: logits \(2, 3, 5\), target \(2, 4\)"):
        d2l.label_smoothing_cross_entropy(logits, torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="target must hold integer class ids"):
        d2l.label_smoothing_cross_entropy(logits, torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"smoothing must be in \[0, 1\]"):
        d2l.label_smoothing_cross_entropy(logits, torch.zeros(2, 3, dtype=torch.long), 1.5)
    with pytest.raises(ValueError, match=r"target ids must be in 0..4"):
        d2l.label_smoothing_cross_entropy(logits, torch.full((2, 3), 5))
    with pytest.raises(TypeError, match="logits must be a floating-point tensor"):
        d2l.label_smoothing_cross_entropy(torch.ones(2, 5, dtype=torch.long), torch.zeros(2, dtype=torch.long))


# ---------------------------------------------------------------- schedules


def test_noam_schedule_is_the_papers_formula():
    lr = d2l.noam_schedule(d_model=512, warmup=4000)
    for s in (1, 100, 3999, 4000, 4001, 10000, 100000):
        want = 512 ** -0.5 * min(s ** -0.5, s * 4000 ** -1.5)
        assert math.isclose(lr(s - 1), want, rel_tol=1e-12)           # LambdaLR counts from 0
    values = [lr(s) for s in range(20000)]
    assert max(range(20000), key=values.__getitem__) == 3999          # peak at step 4000
    assert math.isclose(max(values), (512 * 4000) ** -0.5, rel_tol=1e-12)
    assert math.isclose(d2l.noam_schedule(64, 10, factor=2.0)(9), 2 * (64 * 10) ** -0.5)


def test_warmup_cosine_schedule():
    f = d2l.warmup_cosine_schedule(warmup=10, total=110, final=0.1)
    assert math.isclose(f(0), 0.1) and math.isclose(f(4), 0.5) and f(9) == 1.0
    assert math.isclose(f(59), 0.1 + 0.9 * 0.5)                       # half-way down
    assert math.isclose(f(109), 0.1) and math.isclose(f(500), 0.1)
    values = [f(s) for s in range(110)]
    assert all(a <= b for a, b in zip(values[:10], values[1:10]))    # up during warm-up
    assert all(a >= b for a, b in zip(values[9:], values[10:]))      # then down


def test_schedules_drive_lambda_lr():
    p = nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=0.5)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, d2l.warmup_cosine_schedule(4, 20))
    seen = []
    for _ in range(20):
        seen.append(opt.param_groups[0]["lr"])
        opt.step(), sched.step()
    assert seen[:4] == [0.125, 0.25, 0.375, 0.5] and seen[-1] == pytest.approx(0.0, abs=1e-12)


def test_schedules_bad_arguments():
    with pytest.raises(ValueError, match="warmup must be a positive int"):
        d2l.noam_schedule(512, 0)
    with pytest.raises(ValueError, match="d_model must be a positive int"):
        d2l.noam_schedule(0, 10)
    with pytest.raises(ValueError, match=r"warmup \(20\) must not exceed total \(10\)"):
        d2l.warmup_cosine_schedule(20, 10)


def test_greedy_decode_without_an_end_token_decodes_max_len():
    """The Annotated Transformer's copy task uses every id: no <eos> to stop at. Every
    row decodes max_len tokens, each the argmax over the non-pad ids given its
    prefix."""
    torch.manual_seed(0)
    model = d2l.Transformer(11, 11, d_model=16, num_heads=2, num_layers=1,
                            d_ff=32).eval()
    src = torch.randint(1, 11, (3, 6))
    out = d2l.greedy_decode(model, src, max_len=9, bos_id=1, eos_id=None)
    assert out.shape == (3, 9) and (out != model.pad_id).all()
    ys = torch.ones(3, 1, dtype=torch.long)
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        for _ in range(9):
            logits = model.decode(ys, memory, src_mask)[:, -1]
            logits[:, model.pad_id] = -float("inf")
            ys = torch.cat([ys, logits.argmax(-1, keepdim=True)], 1)
    assert torch.equal(out, ys[:, 1:])
    with pytest.raises(ValueError, match="eos_id must be an id"):
        d2l.greedy_decode(model, src, max_len=9, bos_id=1, eos_id=11)


def test_dropout_acts_in_the_four_places_of_chapter_8():
    """dropout=p reaches the embedding + PE sum, every sub-layer's output, the
    attention weights and the FFN's hidden layer (chapter 8's figure)."""
    m = d2l.Transformer(11, 13, d_model=16, num_heads=2, num_layers=2, d_ff=32,
                        dropout=0.3)
    names = {n.split(".")[-1] for n, mod in m.named_modules()
             if isinstance(mod, torch.nn.Dropout) and mod.p == 0.3}
    assert {"dropout", "dropout1", "dropout2", "dropout3"} <= names
    assert m.encoder.pos_encoding.dropout.p == 0.3
    assert m.encoder.blocks[0].ffn.dropout.p == 0.3
    attn = [mod for mod in m.modules() if isinstance(mod, d2l.MultiHeadAttention)]
    assert len(attn) == 2 + 2 * 2 and all(a.dropout == 0.3 for a in attn)


def test_generator_and_target_embedding_can_be_tied():
    """Chapter 8 ties the generator to the target embedding: one matrix, counted
    once, and the model still runs forward and backward."""
    m = d2l.Transformer(11, 13, d_model=16, num_heads=2, num_layers=1, d_ff=32,
                        dropout=0.0)
    before = sum(p.numel() for p in m.parameters())
    m.generator.weight = m.decoder.embedding.weight
    assert sum(p.numel() for p in m.parameters()) == before - 13 * 16
    out = m(torch.tensor([[4, 5, 6]]), torch.tensor([[1, 4, 5]]))
    out.sum().backward()
    assert m.decoder.embedding.weight.grad is not None
