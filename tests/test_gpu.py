"""The CUDA (and MPS) path.  Skipped on machines without an accelerator."""
import pytest
import torch

import d2lmini as d2l

ACCEL = [d for d in ("cuda", "mps") if (d == "cuda" and torch.cuda.is_available())
         or (d == "mps" and getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())]
pytestmark = pytest.mark.skipif(not ACCEL, reason="needs a GPU (CUDA or MPS)")


def test_device_prefers_the_accelerator():
    assert d2l.device().type == ACCEL[0]


@pytest.mark.parametrize("fast", [False, True])
def test_attention_on_gpu_matches_cpu(fast):
    d2l.set_seed(0)
    mha = d2l.MultiHeadAttention(32, 4, fast=fast)
    x = torch.randn(2, 7, 32)
    mask = d2l.causal_mask(7)
    ref = mha(x, x, x, mask)
    dev = d2l.device()
    mha.to(dev)
    out = mha(x.to(dev), x.to(dev), x.to(dev), mask.to(dev))
    assert torch.allclose(out.cpu(), ref, atol=1e-4)
    if dev.type == "cuda":  # bf16 stays finite with a fully masked row
        q = torch.randn(1, 2, 3, 8, device=dev, dtype=torch.bfloat16)
        m = torch.tensor([[True, False, False], [False, False, False], [True, True, True]], device=dev)
        assert torch.isfinite(d2l.scaled_dot_product_attention(q, q, q, m)[0]).all()


def test_a_transformer_trains_on_gpu_with_amp():
    d2l.set_seed(0)
    dev = d2l.device()
    data = d2l.DateTranslation(256, seed=0)
    src, tgt_in, tgt_out = data.tensors()
    model = d2l.Transformer(len(data.src_vocab), len(data.tgt_vocab), 32, 4, 1, 64, 0.0).to(dev)
    ce = torch.nn.CrossEntropyLoss(ignore_index=0)
    loss = lambda logits, y: ce(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))
    hist = d2l.train(model, loss, torch.optim.Adam(model.parameters(), 3e-3),
                     [(src, tgt_in, tgt_out)] * 50, device=dev, amp=True, progress=False)
    assert hist.step_loss[-1] < hist.step_loss[0] / 2
    assert next(model.parameters()).device.type == dev.type
