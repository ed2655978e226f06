"""Worked solutions of chapter 5's exercises (5. Masks):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import math

import torch

from ..core import solution


@solution("ch5_masked_softmax")
def masked_softmax(scores, mask):
    mask = mask.expand(scores.shape)
    # the most negative finite number of the dtype: no overflow, no -inf, no NaN
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(filled, dim=-1)
    return weights * mask          # exactly 0 where masked; an empty row becomes all 0


@solution("ch5_pad_weight")
def pad_weight(real_scores, fill):
    # e^(-1e9) underflows to exactly 0.0, so the -1e9 pad gets weight 0
    return math.exp(fill) / (sum(math.exp(s) for s in real_scores) + math.exp(fill))


@solution("ch5_allowed_pairs")
def allowed_pairs(lengths, T):
    # query t sees keys 0..min(t, L - 1): the triangle of the L real queries, L(L+1)/2,
    # plus the T - L pad queries, which still see all L real keys
    return [L * (L + 1) // 2 + (T - L) * L for L in lengths]
