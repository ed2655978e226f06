"""d2lmini.masks: padding, length and causal masks, and their use in attention."""
import numpy as np
import pytest
import torch
from torch import nn

import d2lmini as d2l

TOKENS = torch.tensor([[4, 5, 6, 7, 0],
                       [4, 5, 6, 8, 7],
                       [4, 5, 9, 0, 0]])


# ---------------------------------------------------------------- padding_mask
def test_padding_mask_shape_dtype_values():
    m = d2l.padding_mask(TOKENS, pad_id=0)
    assert m.shape == (3, 1, 1, 5) and m.dtype == torch.bool
    assert m[:, 0, 0].tolist() == [[True] * 4 + [False], [True] * 5, [True] * 3 + [False] * 2]


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8])
def test_padding_mask_integer_dtypes_and_other_pad_id(dtype):
    toks = torch.tensor([[3, 1, 9, 9]], dtype=dtype)
    assert d2l.padding_mask(toks, 9)[0, 0, 0].tolist() == [True, True, False, False]


def test_padding_mask_broadcasts_over_heads_and_queries():
    m = d2l.padding_mask(TOKENS, 0)
    assert torch.broadcast_shapes(m.shape, (3, 4, 5, 5)) == (3, 4, 5, 5)


@pytest.mark.parametrize("bad", [TOKENS.float(), TOKENS.bool()])
def test_padding_mask_rejects_float_and_bool_tokens(bad):
    with pytest.raises(TypeError, match="integer ids"):
        d2l.padding_mask(bad, 0)


@pytest.mark.parametrize("bad", [TOKENS[0], TOKENS[None]])
def test_padding_mask_rejects_wrong_rank(bad):
    with pytest.raises(ValueError, match="tokens must be 2-D"):
        d2l.padding_mask(bad, 0)


def test_padding_mask_rejects_non_tensor_and_bad_pad_id():
    with pytest.raises(TypeError, match="torch.Tensor"):
        d2l.padding_mask([[1, 2, 0]], 0)
    with pytest.raises(TypeError, match="pad_id must be an int"):
        d2l.padding_mask(TOKENS, 0.0)
    with pytest.raises(TypeError, match="pad_id must be an int"):
        d2l.padding_mask(TOKENS, False)


# ---------------------------------------------------------------- length_mask
def test_length_mask_equals_padding_mask_of_right_padded_tokens():
    lengths = torch.tensor([4, 5, 3])
    assert torch.equal(d2l.length_mask(lengths, 5), d2l.padding_mask(TOKENS, 0))


def test_length_mask_zero_length_and_longer_T():
    m = d2l.length_mask(torch.tensor([0, 2]), 4)
    assert m.shape == (2, 1, 1, 4)
    assert m[:, 0, 0].tolist() == [[False] * 4, [True, True, False, False]]


def test_length_mask_errors():
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, T=3\]"):
        d2l.length_mask(torch.tensor([4]), 3)
    with pytest.raises(ValueError, match="lengths must lie"):
        d2l.length_mask(torch.tensor([-1]), 3)
    with pytest.raises(TypeError, match="lengths must hold integers"):
        d2l.length_mask(torch.tensor([2.0]), 3)
    with pytest.raises(ValueError, match="lengths must be 1-D"):
        d2l.length_mask(torch.tensor([[2]]), 3)
    with pytest.raises(ValueError, match="T must be >= 1"):
        d2l.length_mask(torch.tensor([0]), 0)


# ---------------------------------------------------------------- causal_mask
@pytest.mark.parametrize("T", [1, 2, 7])
def test_causal_mask_is_lower_triangular(T):
    m = d2l.causal_mask(T)
    assert m.shape == (1, 1, T, T) and m.dtype == torch.bool
    i, j = torch.meshgrid(torch.arange(T), torch.arange(T), indexing="ij")
    assert torch.equal(m[0, 0], j <= i)


def test_causal_mask_device_argument():
    for dev in ("cpu", torch.device("cpu"), d2l.device()):
        m = d2l.causal_mask(3, device=dev)
        assert m.device.type == torch.device(dev).type
    assert d2l.causal_mask(3).device.type == "cpu"


def test_causal_mask_accepts_numpy_int():
    assert d2l.causal_mask(np.int64(3)).shape == (1, 1, 3, 3)


@pytest.mark.parametrize("T", [0, -2])
def test_causal_mask_rejects_T_below_1(T):
    with pytest.raises(ValueError, match=f"T must be >= 1, got {T}"):
        d2l.causal_mask(T)


@pytest.mark.parametrize("T", [3.0, "3", True, None, torch.tensor(3)])
def test_causal_mask_rejects_non_int(T):
    with pytest.raises(TypeError, match="T must be an int"):
        d2l.causal_mask(T)


# ---------------------------------------------------------------- masks in attention
def test_causal_property_later_keys_never_change_earlier_outputs():
    torch.manual_seed(0)
    B, h, T, d = 2, 3, 6, 4
    q, k, v = (torch.randn(B, h, T, d) for _ in range(3))
    out, w = d2l.scaled_dot_product_attention(q, k, v, mask=d2l.causal_mask(T))
    assert torch.equal(w.triu(1), torch.zeros_like(w))
    for t0 in range(T):
        k2, v2 = k.clone(), v.clone()
        k2[..., t0:, :] += torch.randn_like(k2[..., t0:, :])
        v2[..., t0:, :] += torch.randn_like(v2[..., t0:, :])
        out2, _ = d2l.scaled_dot_product_attention(q, k2, v2, mask=d2l.causal_mask(T))
        assert torch.allclose(out2[..., :t0, :], out[..., :t0, :], atol=1e-6)
        assert not torch.allclose(out2[..., t0, :], out[..., t0, :], atol=1e-3)


def test_causal_gradients_do_not_flow_from_the_future():
    torch.manual_seed(0)
    T = 5
    q, k, v = (torch.randn(1, 1, T, 4, requires_grad=True) for _ in range(3))
    out, _ = d2l.scaled_dot_product_attention(q, k, v, mask=d2l.causal_mask(T))
    out[..., 2, :].sum().backward()
    for g in (k.grad, v.grad):
        assert torch.equal(g[..., 3:, :], torch.zeros_like(g[..., 3:, :]))
        assert g[..., :3, :].abs().sum() > 0


def test_causal_one_pass_equals_prefix_step_by_step():
    torch.manual_seed(0)
    mha = d2l.MultiHeadAttention(8, 2)
    x = torch.randn(2, 6, 8)
    with torch.no_grad():
        full = mha(x, x, x, d2l.causal_mask(6))
        for t in range(6):
            prefix = x[:, :t + 1]
            step = mha(prefix, prefix, prefix, d2l.causal_mask(t + 1))[:, -1]
            assert torch.allclose(full[:, t], step, atol=1e-6)


def test_padding_mask_makes_padded_outputs_equal_unpadded():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 4, requires_grad=True)
    padded = torch.cat([x, torch.randn(1, 4, 4)], dim=1)             # 4 junk pad positions
    toks = torch.tensor([[5, 6, 7, 0, 0, 0, 0]])
    m = d2l.padding_mask(toks, 0)[:, 0]                                # (1, 1, 7)
    out_p, w_p = d2l.scaled_dot_product_attention(padded, padded, padded, mask=m)
    out_u, _ = d2l.scaled_dot_product_attention(x, x, x)
    assert torch.allclose(out_p[:, :3], out_u, atol=1e-6)
    assert torch.equal(w_p[..., 3:], torch.zeros_like(w_p[..., 3:]))
    g_p, = torch.autograd.grad(out_p[:, :3].sum(), x)
    g_u, = torch.autograd.grad(out_u.sum(), x)
    assert torch.allclose(g_p, g_u, atol=1e-6)


def test_padding_and_causal_combine_to_B1TT():
    both = d2l.padding_mask(TOKENS, 0) & d2l.causal_mask(5)
    assert both.shape == (3, 1, 5, 5) and both.dtype == torch.bool
    B, T = TOKENS.shape
    for b in range(B):
        for i in range(T):
            for j in range(T):
                assert both[b, 0, i, j] == (j <= i and TOKENS[b, j] != 0)
    assert both.any(-1).all()  # position 0 is real: no empty row


def test_combined_mask_in_multihead_attention_and_torch_sdpa():
    torch.manual_seed(0)
    both = d2l.padding_mask(TOKENS, 0) & d2l.causal_mask(5)
    mha = d2l.MultiHeadAttention(8, 2)
    x = torch.randn(3, 5, 8)
    mha(x, x, x, both)
    w = mha.attention_weights                                          # (3, 2, 5, 5)
    assert torch.equal(w * ~both, torch.zeros_like(w))
    assert torch.allclose(w.sum(-1), torch.ones(3, 2, 5))
    q, k, v = (torch.randn(3, 2, 5, 4) for _ in range(3))
    ours, _ = d2l.scaled_dot_product_attention(q, k, v, mask=both)
    theirs = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=both)
    assert torch.allclose(ours, theirs, atol=1e-6)


def test_torch_multihead_attention_wants_the_complement():
    """nn.MultiheadAttention: True = NOT allowed.  ~ours gives the same forward and gradients."""
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(8, 2, batch_first=True)
    ours = d2l.MultiHeadAttention(8, 2)
    ours.load_state_dict(d2l.mha_state_dict_from_torch(theirs.state_dict()))
    x1 = torch.randn(3, 5, 8, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_(True)
    pad, causal = d2l.padding_mask(TOKENS, 0), d2l.causal_mask(5)
    out1 = ours(x1, x1, x1, pad & causal)
    out2, _ = theirs(x2, x2, x2, key_padding_mask=~pad[:, 0, 0], attn_mask=~causal[0, 0])
    assert torch.allclose(out1, out2, atol=1e-6)
    out1.square().sum().backward()
    out2.square().sum().backward()
    assert torch.allclose(x1.grad, x2.grad, atol=1e-5)
    for name, p in ours.named_parameters():
        ref = dict(theirs.named_parameters())
        if name.startswith("W_o"):
            assert torch.allclose(p.grad, ref["out_proj." + name[4:]].grad, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_empty_sequence_mask_gives_zeros_not_nan(dtype):
    m = d2l.length_mask(torch.tensor([0, 3]), 3)                       # sentence 0 is all padding
    scores = torch.randn(2, 1, 3, 3).to(dtype)
    w = d2l.masked_softmax(scores, m)
    assert torch.isfinite(w).all()
    assert torch.equal(w[0], torch.zeros_like(w[0]))
    assert torch.allclose(w[1].float().sum(-1), torch.ones(1, 3), atol=1e-2)


# ---------------------------------------------------------------- right vs left padding
def test_right_padding_term_only_changes_pad_query_rows():
    """Chapter 5: with right padding the causal mask already hides every pad key from
    every real query; padding & causal differs from causal alone in pad-query rows only."""
    both = d2l.padding_mask(TOKENS, 0) & d2l.causal_mask(5)
    differ = (both != d2l.causal_mask(5))[:, 0]                      # (B, T, T)
    real = TOKENS != 0
    assert not (differ & real[:, :, None]).any()
    assert (differ & ~real[:, :, None]).any()


def test_left_padding_leaves_leading_pad_queries_empty_and_real_rows_exact():
    seqs = [[4, 5, 6, 7], [4, 5, 6, 8, 7], [4, 5, 9]]
    left = d2l.pad_batch(seqs, pad_id=0, side="left")
    both = (d2l.padding_mask(left, 0) & d2l.causal_mask(5))[:, 0]  # (B, T, T)
    empty = ~both.any(-1)
    assert empty.tolist() == [[True, False, False, False, False], [False] * 5,
                              [True, True, False, False, False]]
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 8, generator=g)
    x[left == 0] = 0.0
    scores = x @ x.transpose(1, 2) / 8 ** 0.5
    w = d2l.masked_softmax(scores, both)
    assert torch.isfinite(w).all() and torch.equal(w[empty], torch.zeros_like(w[empty]))
    inf = torch.softmax(scores.masked_fill(~both, float("-inf")), -1)
    assert torch.isnan(inf).any(-1).equal(empty)                       # -inf: NaN rows
    for b, s in enumerate(seqs):
        L, real = len(s), left[b] != 0
        ref = d2l.masked_softmax(scores[b][real][:, real],
                                 torch.ones(L, L, dtype=torch.bool).tril())
        assert torch.allclose(w[b][real][:, real], ref, atol=1e-6)
    # the causal mask alone lets real queries look at the pads on their left
    w_causal = d2l.masked_softmax(scores, d2l.causal_mask(5)[0])
    assert (w_causal * (left == 0)[:, None, :]).sum(-1)[left != 0].max() > 0.01
