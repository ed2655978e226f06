"""Worked solutions of chapter 14's exercises (14. Encoder-only: BERT):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..core import solution


@solution("ch14_mask_tokens")
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15):
    special = torch.tensor(list(special_ids))
    ordinary = torch.tensor([i for i in range(vocab_size) if i not in set(special_ids)])
    chosen = ~torch.isin(tokens, special) & (torch.rand(tokens.shape) < p)
    u = torch.rand(tokens.shape)
    random_ids = ordinary[torch.randint(len(ordinary), tokens.shape)]
    inputs = torch.where(chosen & (u < 0.8), mask_id, tokens)
    inputs = torch.where(chosen & (u >= 0.8) & (u < 0.9), random_ids, inputs)
    return inputs, torch.where(chosen, tokens, -100)


@solution("ch14_segment_ids")
def segment_ids(tokens, sep_id):
    is_sep = (tokens == sep_id).long()
    seps_before = is_sep.cumsum(1) - is_sep       # [SEP]s strictly before each position
    return seps_before.clamp(max=1)


@solution("ch14_mlm_loss")
def mlm_loss(logits, labels):
    return F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=-100)
