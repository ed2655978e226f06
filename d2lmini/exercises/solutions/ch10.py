"""Worked solutions of chapter 10's exercises (10. What each piece buys, part 2):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch

from ..core import solution


@solution("ch10_score_cost")
def score_cost(S, d_model, h):
    d_k = d_model // h
    return h * (S * S) * d_k          # S x S dot products of length d_k per head


@solution("ch10_positional_entropy")
def positional_entropy(targets, pad_id):
    hs = []
    for t in range(targets.shape[1]):
        col = targets[:, t][targets[:, t] != pad_id]
        if len(col):
            p = torch.bincount(col).double()
            p = p[p > 0] / p.sum()
            hs.append(-(p * p.log()).sum())
    return torch.stack(hs).mean().item()


@solution("ch10_rope")
def rope(x):
    T, d = x.shape[-2], x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)   # (d/2,)
    angle = torch.arange(T, dtype=torch.float64)[:, None] * theta          # (T, d/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out
