"""GPT-3's locally banded attention (d2l.local_causal_mask, SparseGPT) and its bill."""
import math

import pytest
import torch
import torch.nn.functional as F

import d2lmini as d2l
from d2lmini import gpt3


def loop_mask(T, window):
    m = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        for j in range(T):
            m[i, j] = 0 <= i - j < window
    return m[None, None]


@pytest.mark.parametrize("T,window", [(1, 1), (5, 1), (5, 2), (7, 3), (8, 8), (6, 20),
                                      (16, 5)])
def test_local_mask_equals_a_loop(T, window):
    m = d2l.local_causal_mask(T, window)
    assert m.shape == (1, 1, T, T) and m.dtype == torch.bool
    assert torch.equal(m, loop_mask(T, window))


def test_wide_window_is_the_causal_mask_and_every_row_sees_itself():
    for T in (1, 4, 9):
        assert torch.equal(d2l.local_causal_mask(T, T), d2l.causal_mask(T))
        assert torch.equal(d2l.local_causal_mask(T, T + 7), d2l.causal_mask(T))
    m = d2l.local_causal_mask(10, 3)[0, 0]
    assert m.diagonal().all() and m.sum(1).tolist() == [1, 2] + [3] * 8


def test_local_mask_in_torch_sdpa_matches_ours_and_a_band_of_keys():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 9, 4, generator=g) for _ in range(3))
    mask = d2l.local_causal_mask(9, 3)
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    ours, w = d2l.scaled_dot_product_attention(q, k, v, mask)
    assert torch.allclose(ours, theirs, atol=1e-6)
    assert torch.all(w[..., ~mask[0, 0]] == 0)
    # query 5 attends to keys 3, 4, 5 only: the same as attention over that slice
    alone = F.scaled_dot_product_attention(q[..., 5:6, :], k[..., 3:6, :],
                                           v[..., 3:6, :])
    assert torch.allclose(theirs[..., 5:6, :], alone, atol=1e-6)


def test_local_mask_device_and_errors():
    assert d2l.local_causal_mask(4, 2, device="cpu").device.type == "cpu"
    with pytest.raises(ValueError, match="window must be >= 1, got 0"):
        d2l.local_causal_mask(4, 0)
    with pytest.raises(TypeError, match="window must be an int, got float"):
        d2l.local_causal_mask(4, 2.0)
    with pytest.raises(ValueError, match="T must be >= 1"):
        d2l.local_causal_mask(0, 2)
    with pytest.raises(TypeError, match="T must be an int"):
        d2l.local_causal_mask(True, 2)


def test_sparse_gpt_with_dense_layers_is_gpt():
    torch.manual_seed(0)
    dense = d2l.GPT(20, d_model=16, num_heads=2, num_layers=2, d_ff=32, max_len=12)
    sparse = gpt3.SparseGPT(20, d_model=16, num_heads=2, num_layers=2, d_ff=32,
                            max_len=12)
    sparse.load_state_dict(dense.state_dict())
    x = torch.randint(1, 20, (3, 12))
    assert torch.allclose(sparse(x), dense(x), atol=1e-6)
    sparse.windows = [None, 12]                # a window as long as the context
    assert torch.allclose(sparse(x), dense(x), atol=1e-6)


def test_banded_layers_see_only_their_window():
    """With every layer banded (w = 3, 2 layers), output t depends on tokens
    t - 4..t only: the receptive field grows by w - 1 per layer."""
    torch.manual_seed(0)
    m = gpt3.SparseGPT(20, d_model=16, num_heads=2, num_layers=2, d_ff=32, max_len=12,
                       windows=[3, 3]).eval()
    x = torch.randint(1, 20, (1, 12))
    y = x.clone()
    y[0, 2] = 1 + x[0, 2] % 19
    moved = (m(x) - m(y)).abs().amax(-1)[0] > 1e-6
    assert moved.nonzero().flatten().tolist() == [2, 3, 4, 5, 6]


def test_sparse_gpt_errors():
    with pytest.raises(ValueError, match="one entry per layer"):
        gpt3.SparseGPT(20, d_model=16, num_heads=2, num_layers=2, windows=[None])
    with pytest.raises(ValueError, match=r"windows\[1\] must be None"):
        gpt3.SparseGPT(20, d_model=16, num_heads=2, num_layers=2, windows=[None, 0])
    m = gpt3.SparseGPT(20, d_model=16, num_heads=2, num_layers=2)
    with pytest.raises(ValueError, match="use_cache=False"):
        d2l.generate(m, torch.tensor([[1, 2]]), 3)
    out = d2l.generate(m, torch.tensor([[1, 2]]), 3, use_cache=False)
    assert out.shape == (1, 5)


def test_alternating_windows_and_entries():
    assert gpt3.alternating_windows(4, 8) == [None, 8, None, 8]
    assert gpt3.attention_entries(10) == 55
    assert gpt3.attention_entries(10, 3) == int(loop_mask(10, 3).sum())
    assert gpt3.attention_entries(10, 50) == 55
    assert gpt3.attention_flops(10, 16, 3) == 4 * 16 * 27


def test_gpt3_bill_matches_the_paper():
    n = d2l.gpt_param_count("gpt3-175b")
    assert abs(n / 175e9 - 1) < 0.01
    bill = gpt3.training_bill(n, 300e9, 125e12, 0.35, devices=1024)
    assert abs(bill["flops"] / 3.14e23 - 1) < 0.01       # Brown et al., table D.1
    assert bill["bytes"] == 16 * n
    assert 70 < bill["days"] < 90
    with pytest.raises(ValueError, match="utilisation"):
        gpt3.training_bill(n, 300e9, 125e12, 35)
