"""Chapter 7: answers each exercise's check must reject (WRONG) and accept (RIGHT)."""
import math

import torch
from torch import nn


def _padded(n, T, a, sign=True, unbiased=False, swap=False):
    p = n / T
    s = math.sqrt((1 - p) / p)
    real, pad = s, -1 / s
    if unbiased:
        real *= math.sqrt((T - 1) / T)
        pad *= math.sqrt((T - 1) / T)
    if swap:
        real, pad = -pad, -real
    return (real, pad) if (a > 0 or not sign) else (-real, -pad)


def _backward(x, w, dy, eps, unbiased=False):
    mu = x.mean(-1, keepdim=True)
    sigma = torch.sqrt(x.var(-1, unbiased=unbiased, keepdim=True) + eps)
    xhat, g = (x - mu) / sigma, dy * w
    return (g - g.mean(-1, keepdim=True)
            - xhat * (g * xhat).mean(-1, keepdim=True)) / sigma


def _no_xhat_term(x, w, dy, eps):
    sigma = torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps)
    g = dy * w
    return (g - g.mean(-1, keepdim=True)) / sigma


def _fold(linear, bn, eps_outside=False, unbiased=None, no_beta=False, cols=False,
          inplace=False):
    var = bn.running_var if unbiased is None else unbiased(bn)
    s = bn.weight / ((torch.sqrt(var) + bn.eps) if eps_outside
                     else torch.sqrt(var + bn.eps))
    b = linear.bias if linear.bias is not None else torch.zeros_like(s)
    out = linear if inplace else nn.Linear(linear.in_features, linear.out_features)
    with torch.no_grad():
        w = linear.weight * (s[None, :linear.in_features] if cols else s[:, None])
        out.weight.copy_(w)
        out.bias.copy_((b - bn.running_mean) * s + (0 if no_beta else bn.bias))
    return out


def _ln_class(kind):
    """MyLayerNorm with one chosen mistake."""
    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias):
            mu = x.mean(-1, keepdim=True)
            sigma = torch.sqrt(x.var(-1, unbiased=kind == "unbiased", keepdim=True)
                               + 1e-5)
            xh = (x - mu) / sigma
            ctx.save_for_backward(xh, sigma, weight)
            return xh * weight + bias

        @staticmethod
        def backward(ctx, dy):
            xh, sigma, weight = ctx.saved_tensors
            lead = tuple(range(dy.dim() - 1))
            g = dy * weight
            if kind == "no_mean_terms":
                dx = g / sigma
            else:
                dx = (g - g.mean(-1, keepdim=True)
                      - xh * (g * xh).mean(-1, keepdim=True)) / sigma
            dw = (dy * xh).sum(lead) if kind != "dw_from_x" else (dy * xh).sum()
            db = dy.sum(lead)
            return dx, dw, db

    class LN(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))
            self.bias = nn.Parameter(torch.zeros(d))

        def forward(self, x):
            if kind == "autograd":                 # no backward of its own
                return nn.functional.layer_norm(x, x.shape[-1:], self.weight, self.bias)
            return Fn.apply(x, self.weight, self.bias)
    return LN


WRONG = {
    "ch7_padded_bn": [
        lambda n, T, a: _padded(n, T, a, sign=False),          # "any a": sign lost
        lambda n, T, a: _padded(n, T, a, unbiased=True),       # unbiased variance
        lambda n, T, a: _padded(n, T, a, swap=True),           # p and 1 - p swapped
        lambda n, T, a: (math.sqrt(3), -1 / math.sqrt(3)),     # the n/T = 1/4 case
        lambda n, T, a: _padded(n, T, a)[0],                   # only one number
    ],
    "ch7_layernorm_backward": [
        lambda x, w, dy, eps: dy * w / torch.sqrt(x.var(-1, unbiased=False, keepdim=True)
                                                  + eps),            # no mean terms
        lambda x, w, dy, eps: dy,
        lambda x, w, dy, eps: _no_xhat_term(x, w, dy, eps),
        lambda x, w, dy, eps: _backward(x, w, dy, eps, unbiased=True),
    ],
    "ch7_fold_bn": [
        lambda lin, bn: _fold(lin, bn, eps_outside=True),
        lambda lin, bn: _fold(lin, bn, no_beta=True),
        lambda lin, bn: _fold(lin, bn, unbiased=lambda m: m.running_var * 15 / 16),
        lambda lin, bn: _fold(lin, bn, inplace=True),              # changes its input
        lambda lin, bn: nn.Sequential(lin, bn),                    # not one Linear
    ],
    "ch7_my_layernorm": [
        _ln_class("autograd"),             # torch's backward, not the reader's
        _ln_class("no_mean_terms"),        # dx without the two extra terms
        _ln_class("unbiased"),             # unbiased variance in forward
        _ln_class("dw_from_x"),            # weight gradient summed to one number
    ],
}


def _autograd(x, w, dy, eps):
    x = x.clone().requires_grad_()
    mu = x.mean(-1, keepdim=True)
    y = (x - mu) / torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + eps) * w
    (dx,) = torch.autograd.grad(y, x, dy)
    return dx


def _sums(x, w, dy, eps):
    N = x.shape[-1]
    xc = x - x.mean(-1, keepdim=True)
    inv = 1 / torch.sqrt((xc * xc).sum(-1, keepdim=True) / N + eps)
    g = dy * w
    return inv / N * (N * g - g.sum(-1, keepdim=True)
                      - xc * inv * inv * (g * xc).sum(-1, keepdim=True))


def _fold_right(linear, bn):
    inv_std = torch.rsqrt(bn.running_var + bn.eps)
    out = nn.Linear(linear.in_features, linear.out_features).to(linear.weight.dtype)
    bias = 0 if linear.bias is None else linear.bias
    with torch.no_grad():
        out.weight.copy_(torch.diag(bn.weight * inv_std) @ linear.weight)
        out.bias.copy_(bn.bias + bn.weight * inv_std * (bias - bn.running_mean))
    return out


class _LNFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        xc = x - x.mean(-1, keepdim=True)
        inv = torch.rsqrt((xc * xc).mean(-1, keepdim=True) + 1e-5)
        ctx.save_for_backward(xc, inv, weight)
        return xc * inv * weight + bias

    @staticmethod
    def backward(ctx, dy):
        xc, inv, weight = ctx.saved_tensors
        N = xc.shape[-1]
        g = dy * weight
        dx = inv / N * (N * g - g.sum(-1, keepdim=True)
                        - xc * inv * inv * (g * xc).sum(-1, keepdim=True))
        flat = lambda t: t.reshape(-1, N)
        return dx, flat(dy * xc * inv).sum(0), flat(dy).sum(0)


class _LNRight(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        return _LNFn.apply(x, self.weight, self.bias)


RIGHT = {
    "ch7_padded_bn": [
        lambda n, T, a: (math.copysign(math.sqrt((T - n) / n), a),
                         -math.copysign(math.sqrt(n / (T - n)), a)),
    ],
    "ch7_layernorm_backward": [_sums, _autograd],
    "ch7_fold_bn": [_fold_right],
    "ch7_my_layernorm": [_LNRight],
}
