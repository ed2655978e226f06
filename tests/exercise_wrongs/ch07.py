"""Chapter 7: answers each exercise's check must reject (WRONG) and accept (RIGHT)."""
import math

import torch

WRONG = {
    "ch7_padded_bn": [
        lambda n, T, a: math.sqrt(3),                              # the value for n/T = 1/4
        lambda n, T, a: (a - n / T * a) / math.sqrt(n / T * (1 - n / T)),  # forgot a in std
        lambda n, T, a: math.sqrt(n / T / (1 - n / T)),            # p and 1 - p swapped
        lambda n, T, a: 1.0,
    ],
    "ch7_layernorm_backward": [
        lambda x, w, dy, eps: dy * w / torch.sqrt(x.var(-1, unbiased=False, keepdim=True)
                                                  + eps),            # no mean terms
        lambda x, w, dy, eps: dy,
        lambda x, w, dy, eps: _no_xhat_term(x, w, dy, eps),
        lambda x, w, dy, eps: _backward(x, w, dy, eps, unbiased=True),
    ],
    "ch7_stack_gradient": [
        lambda layers, scale, residual: scale ** layers,                 # ignores residual
        lambda layers, scale, residual: 1 + scale * layers if residual else 0.0,
        lambda layers, scale, residual: (1 + scale) ** layers if residual else 1e-10,
        lambda layers, scale, residual: (1 + scale) ** (layers - 1) if residual
        else scale ** layers,
    ],
}


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


RIGHT = {
    "ch7_padded_bn": [
        lambda n, T, a: math.sqrt((T - n) / n),
    ],
    "ch7_layernorm_backward": [_sums, _autograd],
    "ch7_stack_gradient": [
        lambda layers, scale, residual: math.pow(1 + scale if residual else scale, layers),
    ],
}
