"""Chapter 10: answers each exercise's check must reject (WRONG) and accept (RIGHT)."""
import math

import torch

WRONG = {
    "ch10_score_cost": [
        lambda S, d_model, h: 12800,                        # one case's number
        lambda S, d_model, h: S * S * (d_model // h),       # one head only
        lambda S, d_model, h: h * S * S * d_model,          # d_model instead of d_k per head
        lambda S, d_model, h: S * d_model * d_model,
    ],
    "ch10_positional_entropy": [
        lambda t, pad: 1.1234,
        lambda t, pad: _unigram(t, pad),                     # ignores positions
        lambda t, pad: _by_position(t, pad, keep_pads=True),  # counts the pads
        lambda t, pad: _by_position(t, pad, log=math.log2),   # bits instead of nats
    ],
    "ch10_rope": [
        lambda x: x,
        lambda x: _rope(x, half=True),                      # pairs (i, i + d/2)
        lambda x: _rope(x, sign=-1),                        # rotated the other way
        lambda x: _rope(x, base=1000.0),
    ],
}


def _unigram(t, pad):
    c = t[t != pad]
    p = torch.bincount(c).double()
    p = p[p > 0] / p.sum()
    return -(p * p.log()).sum().item()


def _by_position(t, pad, keep_pads=False, log=math.log):
    hs = []
    for j in range(t.shape[1]):
        c = t[:, j] if keep_pads else t[:, j][t[:, j] != pad]
        if len(c) == 0:
            continue
        p = torch.bincount(c).double()
        p = p[p > 0] / p.sum()
        hs.append(-sum(float(q) * log(float(q)) for q in p))
    return sum(hs) / len(hs)


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


RIGHT = {
    "ch10_score_cost": [lambda S, d_model, h: S ** 2 * d_model],
    "ch10_positional_entropy": [lambda t, pad: _by_position(t, pad)],
    "ch10_rope": [_rope, _rope_complex],
}
