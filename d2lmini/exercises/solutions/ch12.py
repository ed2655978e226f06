"""Worked solutions of chapter 12's exercises (12. From the Transformer to GPT):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..core import solution


@solution("ch12_top_p")
def top_p_filter(logits, p):
    probs = logits.float().softmax(-1)
    sorted_p, order = probs.sort(-1, descending=True)
    keep = sorted_p.cumsum(-1) - sorted_p < p         # the probability above each token
    keep = torch.zeros_like(keep).scatter(-1, order, keep)
    return logits.masked_fill(~keep, float("-inf"))


@solution("ch12_repetition_penalty")
def repetition_penalty(logits, previous, theta):
    seen = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, previous, True)
    penalised = torch.where(logits > 0, logits / theta, logits * theta)
    return torch.where(seen, penalised, logits)


@solution("ch12_bits_per_char")
def bits_per_char(logits, targets):
    nats = F.cross_entropy(logits.float().transpose(1, 2), targets, ignore_index=0)
    return nats.item() / math.log(2)
