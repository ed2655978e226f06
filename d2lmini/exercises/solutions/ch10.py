"""Worked solutions of chapter 10's exercises (10. What each piece buys, part 2):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch

from ..core import solution


@solution("ch10_head_costs")
def head_costs(S, d_model, h):
    d_k = d_model // h
    multiply_adds = h * (S * S) * d_k     # S x S dot products of length d_k per head
    score_entries = h * S * S             # each head keeps its own S x S scores
    return multiply_adds, score_entries   # the first is S^2 d_model whatever h is


@solution("ch10_input_blind")
def input_blind(targets, pad_id):
    real = targets != pad_id                                      # (N, T)
    V = int(targets.max()) + 1
    counts = torch.zeros(targets.shape[1], V, dtype=torch.float64)   # (T, V)
    counts.scatter_add_(1, targets.T, real.T.double())           # pads add 0
    tokens = counts.sum(1)                                        # real tokens per t
    p = counts / tokens.clamp(min=1)[:, None]
    entropy = -(p * torch.where(p > 0, p.log(), 0.0)).sum(1)      # (T,), in nats
    loss = (entropy * tokens).sum() / tokens.sum()                # per real token
    accuracy = counts.max(1).values.sum() / tokens.sum()          # the mode per t
    return loss.item(), accuracy.item()


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


@solution("ch10_alibi")
def alibi_bias(T, num_heads):
    slopes = 2.0 ** (-8.0 * torch.arange(1, num_heads + 1) / num_heads)   # (h,)
    pos = torch.arange(T)
    distance = (pos[:, None] - pos[None, :]).abs()                        # (T, T)
    return -slopes[:, None, None] * distance                              # (h, T, T)
