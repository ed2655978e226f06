"""Worked solutions of chapter 5's exercises (5. Masks):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..core import solution


@solution("ch5_sliding_window")
def sliding_window_mask(T, window):
    i = torch.arange(T)[:, None]           # query positions, a column
    j = torch.arange(T)[None, :]           # key positions, a row
    allowed = (j <= i) & (i - j < window)  # causal, and at most window - 1 steps back
    return allowed[None, None]             # (1, 1, T, T)


@solution("ch5_masked_ce")
def masked_cross_entropy(logits, targets, pad_id):
    logp = F.log_softmax(logits, dim=-1)                  # stable for any logits
    picked = logp.gather(-1, targets[..., None])[..., 0]  # (B, T): log p(target)
    real = targets != pad_id
    return -(picked * real).sum() / real.sum()  # mean over the batch's real tokens


@solution("ch5_allowed_pairs")
def allowed_pairs(lengths, T, side):
    # right padding: the L real queries see a triangle, L(L+1)/2, and the T - L pad
    # queries (after them) still see all L real keys; left padding: the pad queries
    # come first and see no real key at all (their rows are empty)
    if side == "right":
        return [L * (L + 1) // 2 + (T - L) * L for L in lengths]
    return [L * (L + 1) // 2 for L in lengths]


@solution("ch5_prefix_lm")
def prefix_lm_mask(tokens, prefix_lengths, pad_id):
    real = tokens != pad_id                                    # (B, T)
    T = tokens.shape[1]
    # the prefix is the first P real tokens, wherever the padding puts them
    in_prefix = real & (real.cumsum(dim=1) <= prefix_lengths[:, None])
    causal = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril()
    allowed = causal[None] | in_prefix[:, None, :]             # (B, T, T)
    return (allowed & real[:, None, :])[:, None]               # (B, 1, T, T)
