"""Worked solutions of chapter 11's exercises (11. RNN, CNN and attention, measured):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations


from ..core import solution


@solution("ch11_crossover")
def crossover(d):
    return d


@solution("ch11_conv_depth")
def conv_layers(T, k, dilated):
    if not dilated:
        return -(-(T - 1) // (k - 1))             # ceiling division
    L = 0
    while k ** L < T:
        L += 1
    return L


@solution("ch11_source_mask")
def source_mask(src, pad_id):
    return (src != pad_id)[:, None, :]          # add the query axis


@solution("ch11_gru_params")
def gru_params(input_size, hidden_size):
    # 3 gates, each: W_i (h x input), W_h (h x h) and two biases of h
    h = hidden_size
    return 3 * (h * input_size + h * h + 2 * h)
