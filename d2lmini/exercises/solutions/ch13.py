"""Worked solutions of chapter 13's exercises (13. GPT-2 for real):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch

from ..core import solution


@solution("ch13_bpe_merge")
def merge(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


@solution("ch13_split_c_attn")
def split_c_attn(weight, bias):
    d = weight.shape[0]
    W = torch.stack([weight[:, i * d:(i + 1) * d].T for i in range(3)])  # (3, d, d)
    return W, bias.view(3, d)


@solution("ch13_param_count")
def gpt2_params(vocab_size, n_ctx, d_model, num_layers):
    d = d_model
    attention = 4 * (d * d + d)                   # W_q, W_k, W_v, W_o with biases
    ffn = (d * 4 * d + 4 * d) + (4 * d * d + d)   # linear1, linear2
    norms = 2 * 2 * d                             # two LayerNorms: weight and bias
    return vocab_size * d + n_ctx * d + num_layers * (attention + ffn + norms) + 2 * d
