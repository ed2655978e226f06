"""d2lmini.attention against torch: masked softmax, scaled dot-product, additive and
multi-head attention (forward AND gradients with copied weights), and clear errors."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import d2lmini as d2l

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _close(a, b, tol=1e-5):
    return torch.allclose(a, b, atol=tol, rtol=tol)


# ---------------------------------------------------------------- masked_softmax
@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_softmax_rows_sum_to_one_and_masked_weight_is_zero(dtype):
    torch.manual_seed(0)
    scores = (torch.randn(2, 3, 4, 6) * 5).to(dtype)
    mask = torch.rand(2, 1, 4, 6) > 0.4
    mask[..., 0] = True  # every row keeps at least one key
    w = d2l.masked_softmax(scores, mask)
    assert w.dtype == dtype and w.shape == scores.shape
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    assert torch.allclose(w.float().sum(-1), torch.ones(2, 3, 4), atol=tol)
    assert (w.expand_as(scores)[~mask.expand_as(scores)] == 0).all()  # exactly 0, not tiny
    ref = F.softmax(scores.float().masked_fill(~mask, float("-inf")), dim=-1)
    assert torch.allclose(w.float(), ref, atol=tol)


def test_masked_softmax_without_mask_is_softmax():
    scores = torch.randn(3, 5, 7)
    assert _close(d2l.masked_softmax(scores), F.softmax(scores, dim=-1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_row_is_all_zeros_never_nan(dtype):
    scores = (torch.randn(2, 4, 5) * 30).to(dtype)  # large scores: the -1e9 trick would overflow fp16
    mask = torch.ones(2, 4, 5, dtype=torch.bool)
    mask[0, 1] = False  # row (0, 1) may attend to nothing
    mask[1, :, 3:] = False
    w = d2l.masked_softmax(scores, mask)
    assert not torch.isnan(w).any() and not torch.isinf(w).any()
    assert (w[0, 1] == 0).all()
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    ok_rows = mask.any(-1)
    assert torch.allclose(w.float().sum(-1)[ok_rows], torch.ones(int(ok_rows.sum())), atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_softmax_gradients_are_finite(dtype):
    scores = (torch.randn(2, 4, 5) * 10).to(dtype).requires_grad_()
    mask = torch.rand(2, 4, 5) > 0.5
    mask[0, 0] = False  # one fully masked row
    w = d2l.masked_softmax(scores, mask)
    (w.float() * torch.randn(2, 4, 5)).sum().backward()
    assert torch.isfinite(scores.grad.float()).all()
    assert (scores.grad[~mask] == 0).all()  # masked scores get no gradient


def test_masked_softmax_gradient_matches_torch():
    scores = torch.randn(3, 4, 6, dtype=torch.float64, requires_grad=True)
    mask = torch.rand(3, 4, 6) > 0.3
    mask[..., 2] = True
    g = torch.randn(3, 4, 6, dtype=torch.float64)
    (d2l.masked_softmax(scores, mask) * g).sum().backward()
    ours = scores.grad.clone()
    scores.grad = None
    (F.softmax(scores.masked_fill(~mask, float("-inf")), -1) * g).sum().backward()
    assert torch.allclose(ours, scores.grad, atol=1e-12)


def test_masked_softmax_bad_mask():
    scores = torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match=r"boolean.*got torch.float32"):
        d2l.masked_softmax(scores, torch.ones(2, 3, 4))
    with pytest.raises(ValueError, match=r"boolean.*got list"):
        d2l.masked_softmax(scores, [[True]])
    with pytest.raises(ValueError, match=r"\(2, 5\).*does not broadcast.*\(2, 3, 4\)"):
        d2l.masked_softmax(scores, torch.ones(2, 5, dtype=torch.bool))
    # a mask that would *grow* the scores is rejected too
    with pytest.raises(ValueError, match=r"does not broadcast"):
        d2l.masked_softmax(scores, torch.ones(5, 2, 3, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="floating"):
        d2l.masked_softmax(torch.ones(2, 3, dtype=torch.long))


# ---------------------------------------------------------------- scaled dot-product
def _qkv(B=2, h=3, Tq=5, Tk=7, d=8, dv=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, h, Tq, d, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(B, h, Tk, d, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(B, h, Tk, dv, generator=g, dtype=torch.float64, requires_grad=True)
    return q, k, v


def _grads(fn, *xs):
    out = fn(*xs)
    g = torch.Generator().manual_seed(1)
    out.backward(torch.randn(out.shape, generator=g, dtype=out.dtype))
    grads = [x.grad.clone() for x in xs]
    for x in xs:
        x.grad = None
    return out.detach(), grads


@pytest.mark.parametrize("kind", ["none", "padding", "causal", "both"])
def test_sdpa_matches_torch_forward_and_backward(kind):
    Tq = Tk = 6
    q, k, v = _qkv(Tq=Tq, Tk=Tk)
    tokens = torch.tensor([[5, 3, 2, 7, 0, 0], [4, 4, 1, 9, 8, 2]])
    mask = {"none": None,
            "padding": d2l.padding_mask(tokens, pad_id=0),            # (B, 1, 1, T)
            "causal": d2l.causal_mask(Tq),                            # (1, 1, T, T)
            "both": d2l.padding_mask(tokens, 0) & d2l.causal_mask(Tq)}[kind]
    ours, g_ours = _grads(lambda q, k, v: d2l.scaled_dot_product_attention(q, k, v, mask)[0],
                          q, k, v)
    ref, g_ref = _grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                        q, k, v)
    assert ours.shape == (2, 3, Tq, 6)
    assert torch.allclose(ours, ref, atol=1e-10)
    for a, b in zip(g_ours, g_ref):
        assert torch.allclose(a, b, atol=1e-10)


def test_sdpa_cross_lengths_and_weights():
    q, k, v = _qkv(Tq=3, Tk=9)
    out, w = d2l.scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 3, 3, 6) and w.shape == (2, 3, 3, 9)
    assert torch.allclose(w.sum(-1), torch.ones(2, 3, 3, dtype=w.dtype))
    manual = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), -1)
    assert torch.allclose(w, manual)
    assert torch.allclose(out, manual @ v)


def test_sdpa_works_on_plain_2d_inputs():
    q, k, v = torch.randn(4, 8), torch.randn(6, 8), torch.randn(6, 3)
    out, w = d2l.scaled_dot_product_attention(q, k, v)
    assert out.shape == (4, 3) and w.shape == (4, 6)
    assert torch.allclose(out, F.scaled_dot_product_attention(q, k, v), atol=1e-6)


def test_sdpa_bad_inputs():
    q, k, v = torch.randn(2, 4, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 3)
    with pytest.raises(ValueError, match=r"feature sizes differ.*d_k=8.*d_k=7"):
        d2l.scaled_dot_product_attention(q, torch.randn(2, 5, 7), v)
    with pytest.raises(ValueError, match=r"lengths differ.*T_k=5.*T_k=6"):
        d2l.scaled_dot_product_attention(q, k, torch.randn(2, 6, 3))
    with pytest.raises(ValueError, match=r"boolean.*torch.int64"):
        d2l.scaled_dot_product_attention(q, k, v, torch.ones(2, 4, 5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\(2, 4, 4\) does not broadcast.*\(2, 4, 5\)"):
        d2l.scaled_dot_product_attention(q, k, v, torch.ones(2, 4, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"at least 2-D.*\(8,\)"):
        d2l.scaled_dot_product_attention(torch.randn(8), k, v)
    with pytest.raises(TypeError, match="torch.Tensor"):
        d2l.scaled_dot_product_attention(q.tolist(), k, v)


# ---------------------------------------------------------------- additive attention
def test_additive_attention_shapes_with_different_query_and_key_sizes():
    torch.manual_seed(0)
    att = d2l.AdditiveAttention(query_size=20, key_size=2, num_hiddens=8)
    q, k, v = torch.randn(2, 3, 20), torch.randn(2, 10, 2), torch.randn(2, 10, 4)
    out = att(q, k, v)
    assert out.shape == (2, 3, 4)
    assert att.attention_weights.shape == (2, 3, 10)
    assert torch.allclose(att.attention_weights.sum(-1), torch.ones(2, 3))
    assert torch.allclose(out, att.attention_weights @ v, atol=1e-6)


def test_additive_attention_matches_its_formula():
    torch.manual_seed(0)
    att = d2l.AdditiveAttention(5, 3, 7)
    q, k, v = torch.randn(2, 4, 5), torch.randn(2, 6, 3), torch.randn(2, 6, 2)
    att(q, k, v)
    Wq, Wk, wv = att.W_q.weight, att.W_k.weight, att.w_v.weight[0]
    scores = torch.empty(2, 4, 6)
    for b in range(2):
        for i in range(4):
            for j in range(6):
                scores[b, i, j] = wv @ torch.tanh(Wq @ q[b, i] + Wk @ k[b, j])
    assert torch.allclose(att.attention_weights, torch.softmax(scores, -1), atol=1e-6)


def test_additive_attention_masking():
    torch.manual_seed(0)
    att = d2l.AdditiveAttention(4, 4, 8)
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 2)
    tokens = torch.tensor([[1, 2, 0, 0, 0], [1, 2, 3, 4, 0]])
    pm = d2l.padding_mask(tokens, 0)  # (B, 1, 1, T_k): the 4-D form is accepted
    out = att(q, k, v, pm)
    w = att.attention_weights
    assert (w[0, :, 2:] == 0).all() and (w[1, :, 4] == 0).all()
    assert torch.allclose(w.sum(-1), torch.ones(2, 3))
    # padded values cannot leak: changing them leaves the output unchanged
    v2 = v.clone()
    v2[0, 2:] = 1e3
    v2[1, 4] = -1e3
    assert torch.allclose(att(q, k, v2, pm), out)
    # the 3-D form (B, 1, T_k) gives the same result
    assert torch.allclose(att(q, k, v, pm[:, 0]), out)


def test_additive_attention_bad_inputs():
    att = d2l.AdditiveAttention(4, 3, 8)
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 3), torch.randn(2, 5, 2)
    with pytest.raises(ValueError, match=r"query size 4 and key size 3, got 5 and 3"):
        att(torch.randn(2, 3, 5), k, v)
    with pytest.raises(ValueError, match=r"lengths differ: 5 vs 6"):
        att(q, k, torch.randn(2, 6, 2))
    with pytest.raises(ValueError, match=r"boolean.*torch.float32"):
        att(q, k, v, torch.ones(2, 3, 5))
    with pytest.raises(ValueError, match=r"boolean.*got list"):
        att(q, k, v, [[True] * 5])
    with pytest.raises(ValueError, match=r"does not broadcast"):
        att(q, k, v, torch.ones(2, 3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"3-D"):
        att(torch.randn(3, 4), k, v)


# ---------------------------------------------------------------- multi-head attention
def _pair(d_model=12, h=3, bias=True, seed=0, fast=False):
    torch.manual_seed(seed)
    ref = nn.MultiheadAttention(d_model, h, bias=bias, batch_first=True).double()
    if bias:  # the default biases are zero: make them matter
        with torch.no_grad():
            ref.in_proj_bias.normal_()
            ref.out_proj.bias.normal_()
    ours = d2l.MultiHeadAttention(d_model, h, bias=bias, fast=fast).double()
    ours.load_state_dict(d2l.mha_state_dict_from_torch(ref.state_dict()))
    return ours, ref


def _inputs(B=2, Tq=5, Tk=5, d=12, self_attn=True, seed=3):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, Tq, d, generator=g, dtype=torch.float64, requires_grad=True)
    if self_attn:
        return x, x, x
    mem = torch.randn(B, Tk, d, generator=g, dtype=torch.float64, requires_grad=True)
    return x, mem, mem


def _run(module, fn, inputs):
    """output, input grads (unique tensors) and parameter grads for a random upstream grad."""
    module.zero_grad()
    for x in inputs:
        x.grad = None
    out = fn(*inputs)
    g = torch.Generator().manual_seed(7)
    out.backward(torch.randn(out.shape, generator=g, dtype=out.dtype))
    uniq = list({id(x): x for x in inputs}.values())
    return out.detach(), [x.grad.clone() for x in uniq], module


def _param_grads_equal(ours, ref, tol=1e-10):
    d = ours.d_model
    gq, gk, gv = ours.W_q.weight.grad, ours.W_k.weight.grad, ours.W_v.weight.grad
    assert torch.allclose(torch.cat([gq, gk, gv]), ref.in_proj_weight.grad, atol=tol)
    assert torch.allclose(ours.W_o.weight.grad, ref.out_proj.weight.grad, atol=tol)
    if ours.W_q.bias is not None:
        gb = torch.cat([ours.W_q.bias.grad, ours.W_k.bias.grad, ours.W_v.bias.grad])
        assert gb.shape == (3 * d,)
        assert torch.allclose(gb, ref.in_proj_bias.grad, atol=tol)
        assert torch.allclose(ours.W_o.bias.grad, ref.out_proj.bias.grad, atol=tol)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("self_attn", [True, False])
@pytest.mark.parametrize("kind", ["none", "padding", "causal"])
def test_mha_matches_torch(bias, self_attn, kind):
    Tq, Tk = (5, 5) if self_attn or kind == "causal" else (4, 6)
    if kind == "causal" and not self_attn:
        Tq = Tk = 5
    ours, ref = _pair(bias=bias)
    inputs = _inputs(Tq=Tq, Tk=Tk, self_attn=self_attn)
    tokens = torch.ones(2, Tk, dtype=torch.long)
    tokens[0, -2:] = 0  # two padded keys in the first sequence
    our_mask = {"none": None, "padding": d2l.padding_mask(tokens, 0),
                "causal": d2l.causal_mask(Tq)}[kind]
    kw = {}
    if kind == "padding":
        kw["key_padding_mask"] = ~our_mask[:, 0, 0]   # torch: True = ignore, (B, T_k)
    elif kind == "causal":
        kw["attn_mask"] = ~our_mask[0, 0]             # torch: True = not allowed, (T, T)
    out1, gi1, _ = _run(ours, lambda q, k, v: ours(q, k, v, our_mask), inputs)
    out2, gi2, _ = _run(ref, lambda q, k, v: ref(q, k, v, need_weights=False, **kw)[0], inputs)
    assert out1.shape == (2, Tq, 12)
    assert torch.allclose(out1, out2, atol=1e-10)
    for a, b in zip(gi1, gi2):
        assert torch.allclose(a, b, atol=1e-10)
    _param_grads_equal(ours, ref)


def test_mha_attention_weights_match_torch_per_head():
    ours, ref = _pair()
    x, mem, _ = _inputs(Tq=4, Tk=6, self_attn=False)
    ours(x, mem, mem)
    _, w_ref = ref(x, mem, mem, need_weights=True, average_attn_weights=False)
    assert ours.attention_weights.shape == (2, 3, 4, 6)
    assert torch.allclose(ours.attention_weights, w_ref, atol=1e-10)


def test_mha_accepts_3d_mask_per_query():
    ours, _ = _pair()
    x, _, _ = _inputs()
    m3 = torch.rand(2, 5, 5) > 0.3
    m3[..., 0] = True
    assert torch.allclose(ours(x, x, x, m3), ours(x, x, x, m3[:, None]))
    assert (ours.attention_weights[~m3[:, None].expand(2, 3, 5, 5)] == 0).all()


@pytest.mark.parametrize("kind", ["none", "padding", "causal", "fully_masked_row"])
def test_fast_path_equals_from_scratch(kind):
    slow, _ = _pair()
    fast, _ = _pair(fast=True)
    tokens = torch.tensor([[3, 4, 5, 0, 0], [1, 2, 3, 4, 5]])
    mask = {"none": None, "padding": d2l.padding_mask(tokens, 0),
            "causal": d2l.causal_mask(5)}[kind] if kind != "fully_masked_row" else None
    if kind == "fully_masked_row":
        mask = torch.rand(2, 1, 5, 5) > 0.3
        mask[0, 0, 2] = False  # query 2 of sequence 0 sees nothing
        mask[1, 0, :, 0] = True
    inputs = _inputs()
    out1, g1, _ = _run(slow, lambda q, k, v: slow(q, k, v, mask), inputs)
    out2, g2, _ = _run(fast, lambda q, k, v: fast(q, k, v, mask), inputs)
    assert torch.isfinite(out2).all() and torch.isfinite(g2[0]).all()
    assert torch.allclose(out1, out2, atol=1e-10)
    assert torch.allclose(g1[0], g2[0], atol=1e-10)
    for name, p in slow.named_parameters():
        q = dict(fast.named_parameters())[name]
        assert torch.isfinite(q.grad).all(), name
        assert torch.allclose(p.grad, q.grad, atol=1e-10), name
    assert fast.attention_weights is None and slow.attention_weights is not None
    if kind == "fully_masked_row":  # the empty row outputs W_o's bias alone
        assert torch.allclose(out1[0, 2], slow.W_o.bias.detach())


def test_fast_path_float32_fully_masked_row():
    fast, _ = _pair(fast=True)
    fast = fast.float()
    x = torch.randn(1, 4, 12, requires_grad=True)
    mask = torch.ones(1, 1, 4, 4, dtype=torch.bool)
    mask[..., 1, :] = False
    out = fast(x, x, x, mask)
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(x.grad).all()


def test_mha_bad_inputs():
    with pytest.raises(ValueError, match=r"d_model=10 is not divisible by num_heads=3"):
        d2l.MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match=r"num_heads=0"):
        d2l.MultiHeadAttention(8, 0)
    mha = d2l.MultiHeadAttention(8, 2)
    x = torch.randn(2, 4, 8)
    with pytest.raises(ValueError, match=r"key must have d_model=8 features, got shape \(2, 4, 6\)"):
        mha(x, torch.randn(2, 4, 6), x)
    with pytest.raises(ValueError, match=r"key \(2, 4, 8\), value \(2, 5, 8\)"):
        mha(x, x, torch.randn(2, 5, 8))
    with pytest.raises(ValueError, match=r"query must be 3-D, got shape \(4, 8\)"):
        mha(torch.randn(4, 8), x, x)
    for fast in (False, True):
        mha.fast = fast
        with pytest.raises(ValueError, match=r"boolean.*torch.float32"):
            mha(x, x, x, torch.ones(2, 1, 4, 4))
        with pytest.raises(ValueError, match=r"\(2, 1, 4, 3\) does not broadcast.*\(2, 2, 4, 4\)"):
            mha(x, x, x, torch.ones(2, 1, 4, 3, dtype=torch.bool))


def test_mha_state_dict_round_trip_and_prefix():
    ref = nn.MultiheadAttention(8, 2, batch_first=True)
    sd = d2l.mha_state_dict_from_torch({f"blk.{k}": v for k, v in ref.state_dict().items()},
                                       prefix="blk.")
    assert set(sd) == {f"blk.W_{r}.{p}" for r in "qkvo" for p in ("weight", "bias")}
    assert torch.equal(sd["blk.W_k.weight"], ref.in_proj_weight[8:16])


# ------------------------------------------------------------------ masks as torch takes them
@pytest.mark.parametrize("mask_shape", [(5, 7), (1, 7), (3, 1, 5, 7), (1, 1, 7),
                                        (4, 5, 7)])
def test_sdpa_takes_every_mask_torch_broadcasts(mask_shape):
    """A 2-D (T_q, T_k) mask such as torch.tril(...), or fewer leading dims: the same
    outputs as F.scaled_dot_product_attention."""
    import torch.nn.functional as F
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 4, t, 8, generator=g, dtype=torch.float64)
               for t in (5, 7, 7))
    mask = torch.rand(mask_shape, generator=g) > 0.3
    mask[..., 0] = True                                  # no fully masked row
    ours, _ = d2l.scaled_dot_product_attention(q, k, v, mask=mask)
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.allclose(ours, theirs, atol=1e-12)


def test_sdpa_plain_tril_causal_mask_and_float_mask():
    import torch.nn.functional as F
    g = torch.Generator().manual_seed(1)
    q = k = v = torch.randn(2, 6, 4, generator=g, dtype=torch.float64)
    tril = torch.tril(torch.ones(6, 6, dtype=torch.bool))
    ours, w = d2l.scaled_dot_product_attention(q, k, v, mask=tril)
    assert torch.allclose(ours, F.scaled_dot_product_attention(q, k, v, attn_mask=tril))
    assert torch.allclose(ours, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert (w.triu(1) == 0).all()
    bias = torch.randn(6, 6, generator=g, dtype=torch.float64)
    ours, _ = d2l.scaled_dot_product_attention(q, k, v, mask=bias)
    assert torch.allclose(ours, F.scaled_dot_product_attention(q, k, v, attn_mask=bias))


@pytest.mark.parametrize("mask, match", [
    (torch.ones(5, 6, dtype=torch.bool), "does not broadcast"),       # T_k is 7
    (torch.ones(2, 4, 5, 7, dtype=torch.bool), "does not broadcast"),  # B is 3
    (torch.ones(1, 3, 4, 5, 7, dtype=torch.bool), "does not broadcast"),  # too many dims
    (torch.ones(7, dtype=torch.bool), "at least the 2 dims"),          # torch refuses it
    (torch.ones(5, 7, dtype=torch.long), "boolean tensor .* or a float"),
    (torch.zeros(5, 7, dtype=torch.float32), "dtype of q, k and v"),
    ([[True] * 7] * 5, "boolean tensor"),
])
def test_sdpa_refuses_masks_torch_would_refuse(mask, match):
    q, k, v = (torch.randn(3, 4, t, 8, dtype=torch.float64) for t in (5, 7, 7))
    with pytest.raises(ValueError, match=match):
        d2l.scaled_dot_product_attention(q, k, v, mask=mask)
