"""Worked solutions of chapter 7's exercises (7. LayerNorm vs BatchNorm):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import math

import torch

from ..core import solution


@solution("ch7_padded_bn")
def bn_real_token(n, T, a):
    p = n / T
    return (a - p * a) / math.sqrt(p * (1 - p) * a ** 2)   # = sqrt((1 - p) / p), any a


@solution("ch7_layernorm_backward")
def layernorm_backward(x, weight, dy, eps):
    mu = x.mean(-1, keepdim=True)
    sigma = torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps)
    x_hat, g = (x - mu) / sigma, dy * weight             # g = dL/dx_hat
    # through mu: - mean(g); through sigma: - x_hat * mean(g * x_hat)
    return (g - g.mean(-1, keepdim=True)
            - x_hat * (g * x_hat).mean(-1, keepdim=True)) / sigma


@solution("ch7_stack_gradient")
def stack_gradient(layers, s, residual):
    # each layer multiplies the gradient by s (plain: it vanishes geometrically) or by
    # 1 + s (residual: the identity path keeps it at least 1)
    return (1 + s) ** layers if residual else s ** layers
