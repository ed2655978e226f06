"""Chapter 6: answers each exercise's check must reject (WRONG) and accept (RIGHT)."""
import math

import torch

WRONG = {
    "ch6_mha_params": [
        lambda E, h, kdim, vdim: 37248,                               # a constant
        lambda E, h, kdim, vdim: 4 * (E * E + E),                     # ignores kdim, vdim
        lambda E, h, kdim, vdim: h * (E * E + E * kdim + E * vdim + 3 * E + E * E + E),
        lambda E, h, kdim, vdim: E * E + E * kdim + E * vdim + E * E,  # no biases
    ],
    "ch6_split_heads": [
        lambda x, h: x.view(x.shape[0], h, x.shape[1], x.shape[2] // h),   # wrong layout
        lambda x, h: x,                                                      # no split
        lambda x, h: x.view(x.shape[0], x.shape[1], h, -1),                  # no transpose
        lambda x, h: x.view(x.shape[0], x.shape[1], h, -1).transpose(1, 2).float(),
    ],
    "ch6_combine_heads": [
        lambda x: x.reshape(x.shape[0], x.shape[2], -1),         # no transpose first
        lambda x: x.transpose(1, 2),                             # not merged
        lambda x: x.sum(1),                                      # sums the heads
        lambda x: x.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], -1),
    ],
    "ch6_self_score": [
        lambda r, d: 8.0,                    # the value for r = 8, d = 64 only
        lambda r, d: r * r / d,              # divided by d, not sqrt(d)
        lambda r, d: r / math.sqrt(d),       # |x|, not |x|^2
        lambda r, d: r * r,                  # unscaled
    ],
}

RIGHT = {
    "ch6_mha_params": [
        lambda E, h, kdim, vdim: E * (E + kdim + vdim) + 3 * E + (E + 1) * E,
    ],
    "ch6_split_heads": [
        lambda x, h: x.reshape(*x.shape[:2], h, -1).permute(0, 2, 1, 3),
        lambda x, h: torch.stack(x.chunk(h, dim=-1), dim=1),
    ],
    "ch6_combine_heads": [
        lambda x: torch.cat(x.unbind(1), dim=-1),
        lambda x: x.permute(0, 2, 1, 3).flatten(2),
    ],
    "ch6_self_score": [
        lambda r, d: r ** 2 * d ** -0.5,
    ],
}
