"""d2lmini.incontext: the induction-head measurements and the few-shot prompts."""
import math

import pytest
import torch

from d2lmini import incontext as ic


def loop_scores(w, tokens):
    B, h, T, _ = w.shape
    prev = torch.zeros(h)
    ind, n = torch.zeros(h), 0
    for b in range(B):
        for t in range(1, T):
            prev += w[b, :, t, t - 1] / (B * (T - 1))
        for t in range(T):
            keys = [j for j in range(1, t + 1) if tokens[b, j - 1] == tokens[b, t]]
            if keys:
                ind += w[b, :, t, keys].sum(-1)
                n += 1
    return prev, ind / max(n, 1)


def test_repeated_sequences_repeat_with_their_lag():
    g = torch.Generator().manual_seed(0)
    x = ic.repeated_sequences(50, 32, 20, lags=(6, 16), generator=g)
    assert x.shape == (50, 32) and x.min() >= 1 and x.max() < 20
    lags = set()
    for row in x:
        lag = next(l for l in range(6, 17) if torch.equal(row[l:], row[:-l]))
        lags.add(lag)
    assert len(lags) > 3
    with pytest.raises(ValueError, match="lags"):
        ic.repeated_sequences(2, 10, 20, lags=(3, 10))


def test_head_scores_equal_a_loop():
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(1, 5, (3, 10), generator=g)
    s = torch.randn(3, 2, 10, 10, generator=g)
    w = s.masked_fill(~torch.ones(10, 10, dtype=torch.bool).tril(), -1e9).softmax(-1)
    prev, ind = ic.head_scores(w, tokens)
    lp, li = loop_scores(w, tokens)
    assert torch.allclose(prev, lp, atol=1e-6) and torch.allclose(ind, li, atol=1e-6)


def test_ideal_heads_score_one():
    T = 12
    tokens = ic.repeated_sequences(1, T, 50, lags=(4, 4),
                                   generator=torch.Generator().manual_seed(2))
    prev_head = torch.zeros(1, 1, T, T)
    prev_head[0, 0, 0, 0] = 1
    prev_head[0, 0, torch.arange(1, T), torch.arange(T - 1)] = 1
    ind_head = torch.eye(T)[None, None].clone()
    for t in range(4, T):                 # the key after the last occurrence, t - 3
        ind_head[0, 0, t] = 0
        ind_head[0, 0, t, t - 3] = 1
    w = torch.cat([prev_head, ind_head], 1)
    prev, ind = ic.head_scores(w, tokens)
    assert prev[0] == 1 and ind[1] == 1 and ind[0] < 0.5
    with pytest.raises(ValueError, match="do not fit tokens"):
        ic.head_scores(w, tokens[:, :5])


def test_no_repeated_token_gives_induction_zero_not_nan():
    w = torch.ones(1, 1, 5, 5).tril() / torch.arange(1, 6)[:, None]
    _, ind = ic.head_scores(w, torch.arange(5)[None])
    assert ind.item() == 0


def test_head_mask_removes_exactly_that_heads_slice():
    torch.manual_seed(0)
    m = ic.AttentionOnly(20, d_model=16, num_heads=(2, 1), num_layers=2, max_len=10)
    x = torch.randint(1, 20, (2, 10))
    m.head_mask[0, 1] = 0
    out = m(x)
    m.head_mask.fill_(1)
    with torch.no_grad():
        m.layers[0].W_o.weight[:, 8:] = 0            # head 1 of layer 0: columns 8..15
    assert torch.allclose(out, m(x), atol=1e-6)
    assert [w.shape for w in m.attention(x)] == [(2, 2, 10, 10), (2, 1, 10, 10)]


def test_in_context_losses_of_an_untrained_model_are_chance():
    torch.manual_seed(0)
    m = ic.AttentionOnly(32, d_model=16, num_heads=2, max_len=32)
    x = ic.repeated_sequences(64, 32, 32, generator=torch.Generator().manual_seed(0))
    early, late = ic.in_context_losses(m, x)
    assert abs(early - late) < 0.1 and abs(early - math.log(32)) < 0.5


def test_permutation_prompts_and_ideal_accuracy():
    g = torch.Generator().manual_seed(0)
    perms = torch.stack([torch.randperm(5, generator=g) for _ in range(400)])
    tokens, xs, ys = ic.permutation_prompts(perms, 6, g)
    assert tokens.shape == (400, 12)
    assert torch.equal(tokens[:, 0::2], xs + 1) and torch.equal(tokens[:, 1::2], ys + 6)
    assert torch.equal(ys, perms.gather(1, xs))
    ideal = ic.ideal_accuracy(xs, ys, 5)
    assert abs(ideal[0].item() - 1 / 5) < 1e-6
    # by hand for row 0
    acc = []
    for i in range(6):
        seen = xs[0, i].item() in xs[0, :i].tolist()
        acc.append(1.0 if seen else 1 / (5 - len(set(ys[0, :i].tolist()))))
    one = ic.ideal_accuracy(xs[:1], ys[:1], 5)
    assert torch.allclose(one, torch.tensor(acc))


class Oracle(torch.nn.Module):
    """Looks the query up among the examples before it; guesses output 0 otherwise."""
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, tokens):
        B, T = tokens.shape
        out = torch.zeros(B, T, 1 + 2 * self.m)
        for b in range(B):
            for t in range(0, T, 2):
                hits = [s for s in range(0, t, 2) if tokens[b, s] == tokens[b, t]]
                out[b, t, tokens[b, hits[0] + 1] if hits else 1 + self.m] = 1
        return out


def test_few_shot_accuracy_of_an_oracle():
    g = torch.Generator().manual_seed(0)
    perms = torch.stack([torch.randperm(4, generator=g) for _ in range(300)])
    tokens, xs, ys = ic.permutation_prompts(perms, 5, g)
    acc = ic.few_shot_accuracy(Oracle(4), tokens, ys, 4, xs)
    assert torch.isnan(acc["seen"][0]) and (acc["seen"][1:] == 1).all()
    assert acc["all"][0].item() == pytest.approx((ys[:, 0] == 0).float().mean().item())


def test_train_few_shot_keeps_test_functions_out():
    r = ic.train_few_shot(seed=0, steps=3, m=4, pairs=3, d_model=16, num_heads=2,
                          test_functions=6)
    tokens, xs, ys = r["test"]
    assert tokens.shape == (6, 6)
