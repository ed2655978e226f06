"""Worked solutions of chapter 4's exercises (4. Attention):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import math

import torch

from ..core import solution


@solution("ch4_attention_blocked")
def attention_blocked(Q, K, V, block):
    scale = 1 / math.sqrt(Q.shape[-1])
    m = torch.full(Q.shape[:-1] + (1,), -math.inf, dtype=Q.dtype)  # running max
    total = torch.zeros(Q.shape[:-1] + (1,), dtype=Q.dtype)         # sum of e^(s - m)
    acc = torch.zeros(Q.shape[:-1] + (V.shape[-1],), dtype=Q.dtype)  # sum e^(s - m) v
    for start in range(0, K.shape[-2], block):
        Kb, Vb = K[..., start:start + block, :], V[..., start:start + block, :]
        s = Q @ Kb.transpose(-2, -1) * scale             # (..., T_q, block) scores
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        rescale = torch.exp(m - m_new)                   # old sums were relative to m
        e = torch.exp(s - m_new)
        total = total * rescale + e.sum(dim=-1, keepdim=True)
        acc = acc * rescale + e @ Vb
        m = m_new
    return acc / total


@solution("ch4_pearson")
def pearson_scores(Q, K):
    def centre_and_normalise(M):
        M = M - M.mean(dim=1, keepdim=True)           # each row minus its own mean
        return M / M.norm(dim=1, keepdim=True)         # ... and of length 1
    return centre_and_normalise(Q) @ centre_and_normalise(K).T


@solution("ch4_not_self", value=True)
def answer_ch4_not_self():
    # each token twice as long as the one before and 20° further round: its dot
    # product with the next one, 2|x|² cos 20°, beats its own |x|²; the longest
    # token has no longer neighbour, and |x3|² ≥ x3 · x_j for every j (Cauchy-Schwarz)
    angles = torch.tensor([0.0, 20.0, 40.0, 60.0]) * math.pi / 180
    lengths = torch.tensor([1.0, 2.0, 4.0, 8.0])
    X4 = lengths[:, None] * torch.stack([angles.cos(), angles.sin()], dim=1)
    return X4


@solution("ch4_softmax_backward")
def softmax_backward(p, g):
    # (diag(p) - p p^T) g = p * g - p (p . g), row by row
    return p * (g - (p * g).sum(dim=-1, keepdim=True))
