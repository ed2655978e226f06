"""Answers chapter 5's exercise checks must reject (WRONG) and accept (RIGHT)."""
import math

import torch


def _fill_inf(scores, mask):                  # NaN on fully masked rows
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


def _fill_1e9(scores, mask):                  # float16 cannot hold -1e9
    return torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1)


def _no_zeroing(scores, mask):                # empty rows come out uniform
    fill = torch.finfo(scores.dtype).min
    return torch.softmax(scores.masked_fill(~mask, fill), dim=-1)


def _multiply_after(scores, mask):            # rows no longer sum to 1
    return torch.softmax(scores, dim=-1) * mask


def _float32_out(scores, mask):               # right numbers, wrong dtype
    w = torch.softmax(scores.float().masked_fill(~mask, -1e9), dim=-1)
    return w * mask


def _right_masked_softmax(scores, mask):
    mask = mask.expand(scores.shape)
    s = scores.float()
    m = s.masked_fill(~mask, float("-inf")).amax(dim=-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, 0.0)          # an empty row has no maximum
    e = torch.exp((s - m).masked_fill(~mask, float("-inf")))
    total = e.sum(dim=-1, keepdim=True)
    return torch.where(total > 0, e / total.clamp_min(1e-30), 0.0).to(scores.dtype)


def _pairs_causal_only(lengths, T):
    return [T * (T + 1) // 2 for _ in lengths]


def _pairs_triangle_of_length(lengths, T):
    return [L * (L + 1) // 2 for L in lengths]


WRONG = {
    "ch5_masked_softmax": [_fill_inf, _fill_1e9, _no_zeroing, _multiply_after,
                           _float32_out, lambda scores, mask: torch.softmax(scores, -1)],
    "ch5_pad_weight": [
        lambda real, fill: math.exp(fill) / sum(math.exp(s) for s in real),  # pad left out
        lambda real, fill: 0.0,
        lambda real, fill: 1 / (len(real) + 1),
        lambda real, fill: math.exp(fill),
    ],
    "ch5_allowed_pairs": [
        _pairs_causal_only,
        _pairs_triangle_of_length,
        lambda lengths, T: [L * T for L in lengths],
        lambda lengths, T: sum(_pairs_triangle_of_length(lengths, T)),
    ],
}

RIGHT = {
    "ch5_masked_softmax": [_right_masked_softmax],
    "ch5_pad_weight": [
        lambda real, fill: 1 / (1 + sum(math.exp(s - fill) for s in real))
        if fill > -700 else 0.0,
    ],
    "ch5_allowed_pairs": [
        lambda lengths, T: [sum(min(t + 1, L) for t in range(T)) for L in lengths],
    ],
}
