"""Chapter 10: answers each exercise's check must reject (WRONG) and accept (RIGHT)."""
import math

import torch


def _by_position(t, pad, keep_pads=False, log=math.log, per_token=True, unigram=False):
    hs, ns, accs = [], [], []
    cols = [t.flatten()] if unigram else [t[:, j] for j in range(t.shape[1])]
    for c in cols:
        c = c if keep_pads else c[c != pad]
        if len(c) == 0:
            continue
        p = torch.bincount(c).double()
        p = p[p > 0] / p.sum()
        hs.append(-sum(float(q) * log(float(q)) for q in p))
        ns.append(len(c))
        accs.append(float(p.max()) * len(c))
    total = sum(ns)
    loss = (sum(h * n for h, n in zip(hs, ns)) / total if per_token
            else sum(hs) / len(hs))
    return loss, sum(accs) / total


def _rope(x, base=10000.0, sign=1, half=False):
    T, d = x.shape[-2], x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = sign * torch.arange(T, dtype=torch.float64)[:, None] * theta
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    if half:
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)


def _rope_complex(x):
    T, d = x.shape[-2], x.shape[-1]
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    rot = torch.polar(torch.ones(T, d // 2, dtype=torch.float64),
                      torch.arange(T, dtype=torch.float64)[:, None] * theta)
    return torch.view_as_real(z * rot).reshape(x.shape)


def _alibi(T, h, sign=-1, causal=False, reverse=False, start=8.0):
    slopes = 2.0 ** (-start * torch.arange(1, h + 1) / h)
    if reverse:
        slopes = slopes.flip(0)
    pos = torch.arange(T)
    rel = pos[:, None] - pos[None, :]
    dist = rel.clamp(min=0) if causal else rel.abs()
    return sign * slopes[:, None, None] * dist


def _alibi_loop(T, num_heads):
    out = torch.zeros(num_heads, T, T)
    for k in range(num_heads):
        m = 2 ** (-8 * (k + 1) / num_heads)
        for i in range(T):
            for j in range(T):
                out[k, i, j] = -m * abs(i - j)
    return out


WRONG = {
    "ch10_head_costs": [
        lambda S, d_model, h: (S * S * d_model, S * S),        # entries do not grow
        lambda S, d_model, h: (h * S * S * d_model, h * S * S),  # d_model per head
        lambda S, d_model, h: (S * S * (d_model // h), h * S * S),  # one head only
        lambda S, d_model, h: S * S * d_model,                  # one number
    ],
    "ch10_input_blind": [
        lambda t, pad: _by_position(t, pad, unigram=True),       # ignores positions
        lambda t, pad: _by_position(t, pad, keep_pads=True),     # counts the pads
        lambda t, pad: _by_position(t, pad, log=math.log2),      # bits, not nats
        lambda t, pad: _by_position(t, pad, per_token=False),    # mean over positions
        lambda t, pad: (1.1234, 0.5),
    ],
    "ch10_rope": [
        lambda x: x,
        lambda x: _rope(x, half=True),                      # pairs (i, i + d/2)
        lambda x: _rope(x, sign=-1),                        # rotated the other way
        lambda x: _rope(x, base=1000.0),
    ],
    "ch10_alibi": [
        lambda T, h: _alibi(T, h, sign=1),                  # favours far keys
        lambda T, h: _alibi(T, h, causal=True),             # the decoder's one-sided form
        lambda T, h: _alibi(T, h, reverse=True),            # slopes in the wrong order
        lambda T, h: _alibi(T, h, start=1.0),               # slopes 2^(-i/h)
        lambda T, h: _alibi(T, 1).expand(h, T, T),          # one slope for every head
    ],
}

RIGHT = {
    "ch10_head_costs": [lambda S, d_model, h: [S ** 2 * d_model, S * S * h]],
    "ch10_input_blind": [lambda t, pad: _by_position(t, pad)],
    "ch10_rope": [_rope, _rope_complex],
    "ch10_alibi": [_alibi_loop],
}
