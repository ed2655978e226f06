"""LayerNorm, RMSNorm and BatchNorm from scratch, state-dict compatible with torch.nn.

All take feature-last input (..., F): LayerNorm and RMSNorm normalise each token over
its own features; BatchNorm normalises each feature over every other dim (batch, time).
"""
from __future__ import annotations

import math
import numbers

import torch
import torch.nn.functional as F
from torch import nn

from .utils import check_bool, check_positive_int, check_tensor


def _check_eps(eps: float) -> None:
    if (isinstance(eps, bool) or not isinstance(eps, (int, float))
            or not 0 < eps < math.inf):
        raise ValueError(f"eps must be a finite positive number, got {eps!r}")


class LayerNorm(nn.Module):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the trailing dims.

    Statistics per example: for x (B, T, F) and normalized_shape F they are (B, T, 1).
    The variance is the *biased* one (divide by n) and eps sits inside the square
    root, exactly as ``nn.LayerNorm`` (the Annotated Transformer's unbiased std with
    eps outside differs slightly).

    ``fused=True`` computes the same formula in one kernel (``F.layer_norm``, what
    ``nn.LayerNorm`` calls): faster, and what the book's models use; the default keeps
    the lines below, which chapter 7 derives.
    """

    def __init__(self, normalized_shape: int | tuple[int, ...], eps: float = 1e-5,
                 fused: bool = False):
        super().__init__()
        self.fused = check_bool(fused, "fused")
        ok = lambda n: (isinstance(n, numbers.Integral) and not isinstance(n, bool)
                        and n > 0)
        shape = ((normalized_shape,)
                 if not isinstance(normalized_shape, (tuple, list, torch.Size))
                 else tuple(normalized_shape))
        if not shape or not all(ok(n) for n in shape):
            raise ValueError("normalized_shape must be a positive int or a tuple of "
                             f"them, got {normalized_shape!r}")
        _check_eps(eps)
        shape = tuple(int(n) for n in shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = nn.Parameter(torch.ones(shape))
        self.bias = nn.Parameter(torch.zeros(shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor(x, "x", floating=True)
        n = len(self.normalized_shape)
        if tuple(x.shape[-n:]) != self.normalized_shape:
            raise ValueError(f"expected input ending in {self.normalized_shape}, "
                             f"got shape {tuple(x.shape)}")
        if self.fused:
            return F.layer_norm(x, self.normalized_shape, self.weight, self.bias,
                                self.eps)
        dims = tuple(range(-n, 0))
        # one pass for both statistics, each (B, T, 1)
        var, mean = torch.var_mean(x, dim=dims, unbiased=False, keepdim=True)
        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x^2) + eps) * weight over the trailing dims (Zhang & Sennrich,
    2019): LayerNorm without the mean and without the bias.

    Statistics per example, as :class:`LayerNorm`: for x (B, T, F) and
    normalized_shape F the root mean square is (B, T, 1).  Parameter ``weight`` only,
    state-dict compatible with ``nn.RMSNorm`` (torch >= 2.4) when both use the same
    ``eps``; LLaMA-style models use it in place of LayerNorm.
    """

    def __init__(self, normalized_shape: int | tuple[int, ...], eps: float = 1e-6):
        super().__init__()
        ok = lambda n: (isinstance(n, numbers.Integral) and not isinstance(n, bool)
                        and n > 0)
        shape = ((normalized_shape,)
                 if not isinstance(normalized_shape, (tuple, list, torch.Size))
                 else tuple(normalized_shape))
        if not shape or not all(ok(n) for n in shape):
            raise ValueError("normalized_shape must be a positive int or a tuple of "
                             f"them, got {normalized_shape!r}")
        _check_eps(eps)
        shape = tuple(int(n) for n in shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = nn.Parameter(torch.ones(shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor(x, "x", floating=True)
        n = len(self.normalized_shape)
        if tuple(x.shape[-n:]) != self.normalized_shape:
            raise ValueError(f"expected input ending in {self.normalized_shape}, "
                             f"got shape {tuple(x.shape)}")
        dims = tuple(range(-n, 0))
        ms = x.pow(2).mean(dim=dims, keepdim=True)            # (B, T, 1)
        return x / torch.sqrt(ms + self.eps) * self.weight


class BatchNorm(nn.Module):
    """Batch normalisation over every dim but the last (feature-last input).

    For x (B, F) the statistics are (1, F); for x (B, T, F) they are (1, 1, F).
    Training uses the batch statistics and updates ``running_mean``/``running_var``
    (unbiased variance, as torch does); eval uses the running statistics.
    Equal to ``nn.BatchNorm1d`` applied to x.transpose(1, 2).
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1):
        super().__init__()
        check_positive_int(num_features, "num_features")
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) \
                or not 0.0 <= momentum <= 1.0:
            raise ValueError(f"momentum must be a number in [0, 1], got {momentum!r}")
        _check_eps(eps)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor(x, "x", ndim=(2, 3), floating=True)
        if x.shape[-1] != self.num_features:
            raise ValueError(f"expected {self.num_features} features in the last dim, "
                             f"got shape {tuple(x.shape)}")
        dims = tuple(range(x.dim() - 1))  # all but the feature dim
        if self.training:
            n = x.numel() // self.num_features
            if n < 2:
                raise ValueError(f"BatchNorm needs more than 1 value per feature in "
                                 f"training, got input of shape {tuple(x.shape)}")
            mean = x.mean(dim=dims)
            var = x.var(dim=dims, unbiased=False)
            with torch.no_grad():
                m = self.momentum
                self.running_mean.mul_(1 - m).add_(m * mean)
                self.running_var.mul_(1 - m).add_(m * var * n / (n - 1))
                self.num_batches_tracked += 1
        else:
            mean, var = self.running_mean, self.running_var
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias
