"""Worked solutions of chapter 4's exercises (4. Attention):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import math

import torch

from ..core import solution


@solution("ch4_attention")
def attention(Q, K, V):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])   # (..., T_q, T_k)
    return torch.softmax(scores, dim=-1) @ V                    # (..., T_q, d_v)


@solution("ch4_pearson")
def pearson_scores(Q, K):
    def centre_and_normalise(M):
        M = M - M.mean(dim=1, keepdim=True)           # each row minus its own mean
        return M / M.norm(dim=1, keepdim=True)         # ... and of length 1
    return centre_and_normalise(Q) @ centre_and_normalise(K).T


@solution("ch4_not_self", value=True)
def answer_ch4_not_self():
    X3 = torch.tensor([[1.0, 0.0],     # token 0
                       [3.0, 1.0],     # longer, 18° away: x0 . x1 = 3 > x0 . x0 = 1
                       [0.0, 1.0]])
    return X3
