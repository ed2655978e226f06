"""Worked solutions of chapter 8's exercises (8. The Transformer):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch
from torch import nn

from ...attention import MultiHeadAttention
from ...norms import RMSNorm
from ...transformer import PositionWiseFFN
from ..core import solution


@solution("ch8_pe_at_positions")
def pe_at(positions, d_model):
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)           # 0, 2, 4, ...
    # float64: near a million, float32's 24-bit mantissa loses pos * omega's decimals
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


@solution("ch8_my_block")
class MyEncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(d_model), RMSNorm(d_model)   # d2l.RMSNorm
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = PositionWiseFFN(d_model, d_ff, activation="gelu")

    def forward(self, x, mask=None):
        h = self.norm1(x)                       # normalise the sub-layer's input ...
        x = x + self.self_attn(h, h, h, mask)   # ... and add to the raw stream
        return x + self.ffn(self.norm2(x))
