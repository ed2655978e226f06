"""Chapter 8: answers each exercise's check must reject (WRONG) and accept (RIGHT)."""
import math

import torch


def _pe(positions, d, base=10000.0, swap=False, dtype=torch.float32):
    i = torch.arange(0, d, 2, dtype=torch.float64)
    angle = positions.double()[:, None] * base ** (-i / d)
    pe = torch.zeros(len(positions), d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = (angle.cos(), angle.sin()) if swap else (angle.sin(),
                                                                        angle.cos())
    return pe.to(dtype)


WRONG = {
    "ch8_pe_at_positions": [
        lambda positions, d: _pe(torch.arange(len(positions)), d),   # positions from 0
        lambda positions, d: _pe(positions, d, swap=True),           # cos and sin swapped
        lambda positions, d: _pe(positions, d, base=1000.0),
        lambda positions, d: _pe(positions, d, dtype=torch.float64),
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
    ],
}


def _after_eos_loop(ids, eos, pad):
    out = ids.clone()
    for row in out:
        hits = (row == eos).nonzero()
        if len(hits):
            row[hits[0, 0] + 1:] = pad
    return out


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
    "ch8_after_eos": [_after_eos_loop],
}
