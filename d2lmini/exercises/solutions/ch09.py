"""Worked solutions of chapter 9's exercises (9. What each piece buys):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch.nn.functional as F

from ..core import solution


@solution("ch9_ffn_params")
def ffn_params(d_model, d_ff):
    linear1 = d_model * d_ff + d_ff               # weight + bias
    linear2 = d_ff * d_model + d_model
    return linear1 + linear2 + 2 * d_model        # + LayerNorm weight and bias


@solution("ch9_smoothed_ce")
def smoothed_ce(logits, target, eps):
    V = logits.shape[-1]
    logp = logits.reshape(-1, V).log_softmax(-1)                 # (N, V), N = B*T
    nll = -logp.gather(1, target.reshape(-1, 1)).squeeze(1)       # -log p(right class)
    uniform = -logp.mean(1)                                       # cross-entropy vs 1/V
    return ((1 - eps) * nll + eps * uniform).mean()


@solution("ch9_conv_ffn")
def conv_ffn(x, ffn):
    w1 = ffn.linear1.weight[:, :, None]          # (d_ff, d, 1): a kernel of size 1
    w2 = ffn.linear2.weight[:, :, None]          # (d, d_ff, 1)
    h = F.relu(F.conv1d(x, w1, ffn.linear1.bias))
    return F.conv1d(h, w2, ffn.linear2.bias)
