"""Synthetic regression data and minibatches (chapter 3)."""
from __future__ import annotations

import math
import numbers
from typing import Iterator

import torch

from .utils import check_generator, check_positive_int, check_tensor


def synthetic_data(w: torch.Tensor, b: float, num_examples: int,
                   noise: float = 0.01, generator: torch.Generator | None = None
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw ``y = X w + b + noise`` with ``X ~ N(0, 1)``.

    w: (d,)  ->  X: (num_examples, d), y: (num_examples, 1)
    """
    check_tensor(w, "w", ndim=1, floating=True)
    if isinstance(num_examples, bool) or not isinstance(num_examples, int):
        raise TypeError("num_examples must be an int, got "
                        f"{type(num_examples).__name__} {num_examples!r}")
    if num_examples < 1:
        raise ValueError(f"num_examples must be >= 1, got {num_examples}")
    # (d,) would broadcast against X w
    if isinstance(b, torch.Tensor) and b.numel() != 1:
        raise ValueError("b must be one number, got a tensor of shape "
                         f"{tuple(b.shape)}")
    if isinstance(noise, bool) or not isinstance(noise, numbers.Real) or not (
            math.isfinite(noise) and noise >= 0):
        raise ValueError("noise must be a finite number >= 0 (its standard "
                         f"deviation), got {noise!r}")
    check_generator(generator)
    X = torch.randn(num_examples, len(w), generator=generator, dtype=w.dtype)
    y = X @ w + b
    y = y + noise * torch.randn(y.shape, generator=generator, dtype=w.dtype)
    return X, y.reshape(-1, 1)


def data_iter(batch_size: int, X: torch.Tensor, y: torch.Tensor, shuffle: bool = True,
              generator: torch.Generator | None = None
              ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield minibatches ``(X[idx], y[idx])`` of at most ``batch_size`` rows.

    X: (n, ...), y: (n, ...)  ->  batches (batch_size, ...); the last may be smaller.
    """
    check_tensor(X, "X")
    check_tensor(y, "y")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X and y must have the same number of rows, "
                         f"got X {tuple(X.shape)} and y {tuple(y.shape)}")
    check_positive_int(batch_size, "batch_size")
    check_generator(generator)
    n = X.shape[0]
    order = torch.randperm(n, generator=generator) if shuffle else torch.arange(n)
    for i in range(0, n, batch_size):
        idx = order[i:i + batch_size]
        yield X[idx], y[idx]
