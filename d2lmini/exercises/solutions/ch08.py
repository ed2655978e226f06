"""Worked solutions of chapter 8's exercises (8. The Transformer):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch

from ..core import solution


@solution("ch8_pe_at_positions")
def pe_at(positions, d_model):
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)           # 0, 2, 4, ...
    angle = positions.double()[:, None] / 10000 ** (two_i / d_model)   # (n, d_model/2)
    pe = torch.empty(len(positions), d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = angle.sin(), angle.cos()
    return pe.float()


@solution("ch8_kv_step_mask")
def step_mask(past, new):
    q = torch.arange(past, past + new)[:, None]     # absolute positions of the queries
    k = torch.arange(past + new)[None, :]             # positions of all keys
    return k <= q                                     # (new, past + new)
    # torch.tril(torch.ones(new, past + new)) would align the diagonal with key 0, as
    # if the new tokens stood at the start of the sequence


@solution("ch8_after_eos")
def after_eos(ids, eos_id, pad_id):
    is_eos = (ids == eos_id).long()
    eos_before = is_eos.cumsum(1) - is_eos    # how many <eos> strictly before each
    return ids.masked_fill(eos_before > 0, pad_id)
