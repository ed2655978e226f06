"""Worked solutions of chapter 14's exercises (14. Encoder-only: BERT):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch

from ..core import solution


@solution("ch14_mask_tokens")
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15):
    special = torch.tensor(list(special_ids))
    ordinary = torch.tensor([i for i in range(vocab_size) if i not in set(special_ids)])
    chosen = ~torch.isin(tokens, special) & (torch.rand(tokens.shape) < p)
    u = torch.rand(tokens.shape)                  # one draw splits 80 / 10 / 10
    random_ids = ordinary[torch.randint(len(ordinary), tokens.shape)]
    inputs = torch.where(chosen & (u < 0.8), mask_id, tokens)
    inputs = torch.where(chosen & (u >= 0.8) & (u < 0.9), random_ids, inputs)
    return inputs, torch.where(chosen, tokens, -100)


@solution("ch14_segment_ids")
def segment_ids(tokens, sep_id):
    is_sep = (tokens == sep_id).long()
    seps_before = is_sep.cumsum(1) - is_sep       # [SEP]s strictly before each position
    return seps_before.clamp(max=1)


@solution("ch14_nsp_pairs")
def nsp_pairs(ids, n, a_len, b_len, cls_id, sep_id):
    start = torch.randint(len(ids) - a_len - b_len + 1, (n,))
    is_next = torch.randint(2, (n,))
    other = torch.randint(len(ids) - b_len + 1, (n,))
    while (hit := (is_next == 0) & (other == start + a_len)).any():
        other[hit] = torch.randint(len(ids) - b_len + 1, (int(hit.sum()),))
    b_start = torch.where(is_next == 1, start + a_len, other)
    a = ids[start[:, None] + torch.arange(a_len)]            # (n, a_len)
    b = ids[b_start[:, None] + torch.arange(b_len)]          # (n, b_len)
    cls, sep = torch.full((n, 1), cls_id), torch.full((n, 1), sep_id)
    tokens = torch.cat([cls, a, sep, b, sep], 1)
    segments = torch.cat([torch.zeros(n, a_len + 2), torch.ones(n, b_len + 1)], 1)
    return tokens, segments.long(), is_next


@solution("ch14_best_span")
def best_span(start_logits, end_logits, max_len):
    T = start_logits.shape[1]
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    allowed = (j >= i) & (j - i < max_len)                   # (T, T): start i, end j
    scores = start_logits[:, :, None] + end_logits[:, None, :]
    best = scores.masked_fill(~allowed, float("-inf")).flatten(1).argmax(1)
    return torch.stack([best // T, best % T], 1)
