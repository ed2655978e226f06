"""Answers chapter 5's exercise checks must reject (WRONG) and accept (RIGHT)."""
import math

import torch
import torch.nn.functional as F

import d2lmini as d2l


# ---------------------------------------------------------------- 1. sliding window
def _window_off_by_one(T, window):            # window + 1 keys
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    return ((j <= i) & (i - j <= window))[None, None]


def _band_both_sides(T, window):              # not causal: sees the future too
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    return ((i - j).abs() < window)[None, None]


def _window_2d(T, window):                    # right values, shape (T, T)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    return (j <= i) & (i - j < window)


def _window_inverted(T, window):              # True = masked, torch.nn's convention
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    return ~((j <= i) & (i - j < window))[None, None]


def _window_float(T, window):
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    return ((j <= i) & (i - j < window)).float()[None, None]


def _window_tril_triu(T, window):             # a common slip: diagonal off by one
    ones = torch.ones(T, T, dtype=torch.bool)
    return (ones.tril() & ones.triu(-window))[None, None]


def _uses_package(T, window):
    return d2l.local_causal_mask(T, window)


def _window_right(T, window):
    ones = torch.ones(T, T, dtype=torch.bool)
    return (ones.tril() & ones.triu(1 - window))[None, None]


# ---------------------------------------------------------------- 2. masked loss
def _mean_over_all(logits, targets, pad_id):  # pads count in the denominator
    logp = F.log_softmax(logits, -1).gather(-1, targets[..., None])[..., 0]
    return -(logp * (targets != pad_id)).mean()


def _mean_of_sentence_means(logits, targets, pad_id):
    logp = F.log_softmax(logits, -1).gather(-1, targets[..., None])[..., 0]
    real = (targets != pad_id).float()
    return (-(logp * real).sum(1) / real.sum(1)).mean()


def _log_of_softmax(logits, targets, pad_id):  # underflows for large logits
    logp = torch.log(torch.softmax(logits, -1)).gather(-1, targets[..., None])[..., 0]
    real = targets != pad_id
    return -(logp * real).sum() / real.sum()


def _pads_included(logits, targets, pad_id):  # forgets the mask
    logp = F.log_softmax(logits, -1).gather(-1, targets[..., None])[..., 0]
    return -logp.mean()


def _uses_ignore_index(logits, targets, pad_id):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=pad_id)


def _sum_not_mean(logits, targets, pad_id):
    logp = F.log_softmax(logits, -1).gather(-1, targets[..., None])[..., 0]
    return -(logp * (targets != pad_id)).sum()


def _right_ce(logits, targets, pad_id):
    real = targets != pad_id
    lse = torch.logsumexp(logits[real], dim=-1)
    picked = logits[real].gather(-1, targets[real][:, None])[:, 0]
    return (lse - picked).mean()


# ---------------------------------------------------------------- 3. counting
def _pairs_right_formula_always(lengths, T, side):
    return [L * (L + 1) // 2 + (T - L) * L for L in lengths]


def _pairs_triangle_always(lengths, T, side):
    return [L * (L + 1) // 2 for L in lengths]


def _pairs_causal_only(lengths, T, side):
    return [T * (T + 1) // 2 for _ in lengths]


def _pairs_left_sees_all(lengths, T, side):   # left pad queries "see" every real key
    if side == "right":
        return [L * (L + 1) // 2 + (T - L) * L for L in lengths]
    return [L * (L + 1) // 2 + (T - L) * L for L in lengths]


def _pairs_rows_hidden(lengths, T, side):     # as if padding hid the pad query rows
    return [L * (L + 1) // 2 for L in lengths] if side == "right" else [
        L * (L - 1) // 2 for L in lengths]


def _pairs_by_rows(lengths, T, side):
    out = []
    for L in lengths:
        first = 0 if side == "right" else T - L
        real = range(first, first + L)
        out.append(sum(1 for t in range(T) for j in real if j <= t))
    return out


# ---------------------------------------------------------------- 4. prefix LM
def _causal_only(tokens, prefix_lengths, pad_id):
    return d2l.padding_mask(tokens, pad_id) & d2l.causal_mask(tokens.shape[1])


def _prefix_by_position(tokens, prefix_lengths, pad_id):   # wrong under left padding
    real = tokens != pad_id
    T = tokens.shape[1]
    j = torch.arange(T)
    in_prefix = j[None, :] < prefix_lengths[:, None]
    allowed = torch.ones(T, T, dtype=torch.bool).tril()[None] | in_prefix[:, None, :]
    return (allowed & real[:, None, :])[:, None]


def _no_padding(tokens, prefix_lengths, pad_id):           # prefix & causal, pads seen
    real = tokens != pad_id
    T = tokens.shape[1]
    in_prefix = real & (real.cumsum(1) <= prefix_lengths[:, None])
    return (torch.ones(T, T, dtype=torch.bool).tril()[None]
            | in_prefix[:, None, :])[:, None]


def _prefix_off_by_one(tokens, prefix_lengths, pad_id):
    real = tokens != pad_id
    T = tokens.shape[1]
    in_prefix = real & (real.cumsum(1) <= prefix_lengths[:, None] + 1)
    allowed = torch.ones(T, T, dtype=torch.bool).tril()[None] | in_prefix[:, None, :]
    return (allowed & real[:, None, :])[:, None]


def _prefix_queries_only(tokens, prefix_lengths, pad_id):  # prefix keys hidden after it
    real = tokens != pad_id
    T = tokens.shape[1]
    in_prefix = real & (real.cumsum(1) <= prefix_lengths[:, None])
    block = in_prefix[:, :, None] & in_prefix[:, None, :]
    allowed = torch.ones(T, T, dtype=torch.bool).tril()[None] & ~(
        ~in_prefix[:, :, None] & in_prefix[:, None, :]) | block
    return (allowed & real[:, None, :])[:, None]


def _bidirectional(tokens, prefix_lengths, pad_id):       # no causal part at all
    return d2l.padding_mask(tokens, pad_id).expand(-1, 1, tokens.shape[1], -1)


def _prefix_loop(tokens, prefix_lengths, pad_id):         # right, but with a loop
    out = []
    for b in range(tokens.shape[0]):
        out.append(_right_prefix(tokens[b:b + 1], prefix_lengths[b:b + 1], pad_id))
    return torch.cat(out)


def _right_prefix(tokens, prefix_lengths, pad_id):
    real = tokens != pad_id
    T = tokens.shape[1]
    rank = torch.cumsum(real.long(), dim=-1) - 1             # 0, 1, ... on real tokens
    prefix_key = real & (rank < prefix_lengths.unsqueeze(-1))
    i = torch.arange(T).view(T, 1)
    j = torch.arange(T).view(1, T)
    sees = (j <= i).unsqueeze(0) | prefix_key.unsqueeze(1)
    return (sees & real.unsqueeze(1)).unsqueeze(1)


WRONG = {
    "ch5_sliding_window": [_window_off_by_one, _band_both_sides, _window_2d,
                           _window_inverted, _window_float, _window_tril_triu,
                           _uses_package],
    "ch5_masked_ce": [_mean_over_all, _mean_of_sentence_means, _log_of_softmax,
                      _pads_included, _uses_ignore_index, _sum_not_mean],
    "ch5_allowed_pairs": [_pairs_right_formula_always, _pairs_triangle_always,
                          _pairs_causal_only, _pairs_left_sees_all, _pairs_rows_hidden],
    "ch5_prefix_lm": [_causal_only, _prefix_by_position, _no_padding, _prefix_off_by_one,
                      _prefix_queries_only, _bidirectional, _prefix_loop],
}

RIGHT = {
    "ch5_sliding_window": [_window_right],
    "ch5_masked_ce": [_right_ce],
    "ch5_allowed_pairs": [_pairs_by_rows],
    "ch5_prefix_lm": [_right_prefix],
}
