"""What a learner porting a peer's code meets: the Annotated Transformer's copy task has
no end token (greedy_decode(eos_id=None)), and its mask is a plain (T, T) torch.tril
(scaled_dot_product_attention takes what F.scaled_dot_product_attention takes)."""
import torch
import torch.nn.functional as F

import d2lmini as d2l


def test_the_annotated_transformers_copy_task_trains_and_decodes_without_eos():
    torch.manual_seed(0)
    V, T = 11, 10                 # symbols 1..10; 1 also starts every sequence (AT)
    model = d2l.Transformer(V, V, d_model=32, num_heads=2, num_layers=2, d_ff=64,
                            dropout=0.0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)   # 3e-3: a late loss spike
                                                           # left 0.18 copied in one CI run
    g = torch.Generator().manual_seed(0)

    def batches():
        for _ in range(20):
            x = torch.randint(1, V, (32, T), generator=g)
            x[:, 0] = 1
            yield x, x[:, :-1], x[:, 1:]

    d2l.train(model, d2l.sequence_loss, opt, batches, num_epochs=30, progress=False)
    x = torch.randint(1, V, (50, T), generator=torch.Generator().manual_seed(99))
    x[:, 0] = 1
    out = d2l.greedy_decode(model, x, max_len=T - 1, bos_id=1, eos_id=None)
    assert out.shape == (50, T - 1)                    # every row decodes max_len
    copied = (out == x[:, 1:]).all(1).float().mean().item()
    assert copied >= 0.6, f"copied {copied:.2f} of the sequences exactly"   # 0.8-1.0


def test_the_annotated_transformers_subsequent_mask_works_as_in_torch():
    """AT's subsequent_mask is (1, T, T) with True where allowed; a plain
    torch.tril(ones(T, T)) is what F.scaled_dot_product_attention users pass."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 7, 8, generator=g, dtype=torch.float64)
               for _ in range(3))
    for mask in (torch.tril(torch.ones(7, 7, dtype=torch.bool)),
                 torch.tril(torch.ones(1, 7, 7, dtype=torch.bool))):
        ours, w = d2l.scaled_dot_product_attention(q, k, v, mask=mask)
        assert torch.allclose(ours, F.scaled_dot_product_attention(q, k, v,
                                                                   attn_mask=mask))
        assert torch.allclose(ours, F.scaled_dot_product_attention(q, k, v,
                                                                   is_causal=True))
        assert torch.equal(w.triu(1) != 0, torch.zeros_like(w, dtype=torch.bool))
