"""Chapter 8: answers each exercise's check must reject (WRONG) and accept (RIGHT)."""
import math

import torch
import torch.nn.functional as F
from torch import nn

import d2lmini as d2l


def _pe(positions, d, base=10000.0, swap=False, dtype=torch.float32, work=torch.float64):
    i = torch.arange(0, d, 2, dtype=work)
    angle = positions.to(work)[:, None] * base ** (-i / d)
    pe = torch.zeros(len(positions), d, dtype=work)
    pe[:, 0::2], pe[:, 1::2] = (angle.cos(), angle.sin()) if swap else (angle.sin(),
                                                                        angle.cos())
    return pe.to(dtype)


def _pe_table(positions, d):
    """Right numbers, from a table that starts at 0."""
    table = _pe(torch.arange(int(positions.max()) + 1), d)
    return table[positions]


def _pe_module(positions, d):
    return d2l.PositionalEncoding(d, max_len=int(positions.max()) + 1).pe[0, positions]


def _after_eos_loop(ids, eos, pad):
    out = ids.clone()
    for row in out:
        hits = (row == eos).nonzero()
        if len(hits):
            row[hits[0, 0] + 1:] = pad
    return out


def _block(order="pre", norm="rms", act="gelu", mask=True, ffn_residual=True,
           qnorm_only=False):
    """A MyEncoderBlock with one chosen mistake."""
    class Block(nn.Module):
        def __init__(self, d_model, num_heads, d_ff):
            super().__init__()
            make = d2l.RMSNorm if norm == "rms" else d2l.LayerNorm
            self.norm1, self.norm2 = make(d_model), make(d_model)
            self.self_attn = d2l.MultiHeadAttention(d_model, num_heads)
            self.ffn = d2l.PositionWiseFFN(d_model, d_ff, activation=act)

        def forward(self, x, m=None):
            m = m if mask else None
            if order == "post":
                x = self.norm1(x + self.self_attn(x, x, x, m))
                return self.norm2(x + self.ffn(x))
            h = self.norm1(x)
            x = x + (self.self_attn(h, x, x, m) if qnorm_only
                     else self.self_attn(h, h, h, m))
            f = self.ffn(self.norm2(x))
            return x + f if ffn_residual else f
    return Block


WRONG = {
    "ch8_pe_at_positions": [
        lambda positions, d: _pe(torch.arange(len(positions)), d),   # positions from 0
        lambda positions, d: _pe(positions, d, swap=True),           # cos and sin swapped
        lambda positions, d: _pe(positions, d, base=1000.0),
        lambda positions, d: _pe(positions, d, dtype=torch.float64),  # wrong dtype
        lambda positions, d: _pe(positions, d, work=torch.float32),   # float32 angles
        _pe_table,                                                    # a table from 0
        _pe_module,
    ],
    "ch8_kv_step_mask": [
        lambda past, new: torch.ones(new, past + new, dtype=torch.bool),     # no mask
        lambda past, new: torch.tril(torch.ones(new, past + new, dtype=torch.bool)),
        lambda past, new: torch.tril(torch.ones(past + new, past + new,
                                                dtype=torch.bool))[:new],
        lambda past, new: torch.tril(torch.ones(new, new, dtype=torch.bool)),
    ],
    "ch8_after_eos": [
        lambda ids, eos, pad: ids,                                           # nothing
        lambda ids, eos, pad: ids.masked_fill((ids == eos).cumsum(1) > 0, pad),  # eos too
        lambda ids, eos, pad: ids.masked_fill(ids == eos, pad),
        lambda ids, eos, pad: ids.masked_fill((ids == eos).cumsum(1) > 1, pad),
        _after_eos_loop,                                                     # a loop
    ],
    "ch8_my_block": [
        _block(order="post"),               # the paper's order, not pre-norm
        _block(norm="layer"),               # LayerNorm: its bias does not load
        _block(act="relu"),                 # ReLU, not GELU
        _block(mask=False),                 # the padding mask is dropped
        _block(ffn_residual=False),         # no residual around the FFN
        _block(qnorm_only=True),            # keys and values not normalised
    ],
}


class _BlockRight(nn.Module):
    """Right, written out: its own FFN (linear1, GELU, linear2) and RMSNorm by hand."""

    class _RMS(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight

    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.self_attn = d2l.MultiHeadAttention(d_model, num_heads)
        self.ffn = nn.Module()
        self.ffn.linear1 = nn.Linear(d_model, d_ff)
        self.ffn.linear2 = nn.Linear(d_ff, d_model)
        self.norm1, self.norm2 = self._RMS(d_model), self._RMS(d_model)

    def forward(self, x, mask=None):
        a = self.norm1(x)
        x = x + self.self_attn(a, a, a, mask)
        return x + self.ffn.linear2(F.gelu(self.ffn.linear1(self.norm2(x))))


RIGHT = {
    "ch8_pe_at_positions": [
        lambda positions, d: torch.stack([
            torch.tensor([math.sin(p / 10000 ** (2 * (j // 2) / d)) if j % 2 == 0 else
                          math.cos(p / 10000 ** (2 * (j // 2) / d)) for j in range(d)])
            for p in positions.tolist()]).float(),
    ],
    "ch8_kv_step_mask": [
        lambda past, new: ~torch.ones(new, past + new, dtype=torch.bool).triu(past + 1),
    ],
    "ch8_after_eos": [
        lambda ids, eos, pad: torch.where((ids == eos).cummax(1).values.roll(1, 1)
                                          & (torch.arange(ids.shape[1]) > 0), pad, ids),
    ],
    "ch8_my_block": [_BlockRight],
}
