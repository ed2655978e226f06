"""Worked solutions of chapter 7's exercises (7. LayerNorm vs BatchNorm):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import math

import torch
from torch import nn

from ..core import solution


@solution("ch7_padded_bn")
def bn_padded(n, T, a):
    p = n / T                                  # the share of real positions
    mean = p * a                               # n values a, T - n zeros
    std = math.sqrt(p * a**2 - mean**2)        # E[x^2] - mean^2 = p(1 - p) a^2
    # = |a| sqrt(p (1 - p)): for a < 0 the real token lands at -sqrt((1 - p) / p)
    return (a - mean) / std, (0 - mean) / std


@solution("ch7_layernorm_backward")
def layernorm_backward(x, weight, dy, eps):
    mu = x.mean(-1, keepdim=True)
    sigma = torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps)
    x_hat, g = (x - mu) / sigma, dy * weight             # g = dL/dx_hat
    # through mu: - mean(g); through sigma: - x_hat * mean(g * x_hat)
    return (g - g.mean(-1, keepdim=True)
            - x_hat * (g * x_hat).mean(-1, keepdim=True)) / sigma


@solution("ch7_fold_bn")
def fold_bn(linear, bn):
    # eval-mode BN: y = (z - mean) * s + beta with s = gamma / sqrt(var + eps),
    # z = W x + b  ->  y = (s W) x + (s (b - mean) + beta): scale W's rows
    s = bn.weight / torch.sqrt(bn.running_var + bn.eps)          # (out,)
    b = linear.bias if linear.bias is not None else torch.zeros_like(bn.running_mean)
    folded = nn.Linear(linear.in_features, linear.out_features,
                       dtype=linear.weight.dtype)
    with torch.no_grad():
        folded.weight.copy_(linear.weight * s[:, None])
        folded.bias.copy_((b - bn.running_mean) * s + bn.bias)
    return folded


@solution("ch7_my_layernorm")
class MyLayerNorm(nn.Module):
    class Fn(torch.autograd.Function):
        """Forward as d2l.LayerNorm; backward by hand (exercise 2, plus the
        parameters' gradients)."""

        @staticmethod
        def forward(ctx, x, weight, bias, eps):
            mu = x.mean(-1, keepdim=True)
            sigma = torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps)
            x_hat = (x - mu) / sigma
            ctx.save_for_backward(x_hat, sigma, weight)
            return x_hat * weight + bias

        @staticmethod
        def backward(ctx, dy):
            x_hat, sigma, weight = ctx.saved_tensors
            lead = tuple(range(dy.dim() - 1))              # every dim but features
            d_bias, d_weight = dy.sum(lead), (dy * x_hat).sum(lead)
            g = dy * weight                                # dL/dx_hat
            dx = (g - g.mean(-1, keepdim=True)
                  - x_hat * (g * x_hat).mean(-1, keepdim=True)) / sigma
            return dx, d_weight, d_bias, None              # no gradient for eps

    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))
        self.eps = eps

    def forward(self, x):
        return MyLayerNorm.Fn.apply(x, self.weight, self.bias, self.eps)
