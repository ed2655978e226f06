"""Boolean attention masks.  Convention: True where attention is ALLOWED
(the same as ``torch.nn.functional.scaled_dot_product_attention``).

Masks are shaped to broadcast against attention scores (B, h, T_q, T_k):
padding (B, 1, 1, T_k) & causal (1, 1, T, T) -> (B, 1, T, T).
"""
from __future__ import annotations

import numbers

import torch

from .utils import check_tensor


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Keys that are real tokens.  tokens: (B, T) integer ids -> bool (B, 1, 1, T).

    Broadcasts over heads and queries: every query may look at every real token.
    """
    check_tensor(tokens, "tokens", ndim=2)
    if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
        raise TypeError(f"tokens must hold integer ids, got {tokens.dtype}")
    _check_int(pad_id, "pad_id", minimum=0)
    return (tokens != pad_id)[:, None, None, :]


def length_mask(lengths: torch.Tensor, T: int) -> torch.Tensor:
    """Padding mask from valid lengths: lengths (B,) ints -> bool (B, 1, 1, T),
    True at positions ``t < lengths[b]``.  Equals ``padding_mask`` of right-padded
    tokens."""
    check_tensor(lengths, "lengths", ndim=1)
    if (lengths.is_floating_point() or lengths.is_complex()
            or lengths.dtype == torch.bool):
        raise TypeError(f"lengths must hold integers, got {lengths.dtype}")
    T = _check_int(T, "T", minimum=1)
    if len(lengths) and (lengths.min() < 0 or lengths.max() > T):
        raise ValueError(f"lengths must lie in [0, T={T}], got min "
                         f"{lengths.min().item()} and max {lengths.max().item()}")
    positions = torch.arange(T, device=lengths.device)
    return (positions[None, :] < lengths[:, None])[:, None, None, :]


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Look-ahead mask: query t may see keys 0..t.  -> bool (1, 1, T, T),
    lower-triangular."""
    T = _check_int(T, "T", minimum=1)
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()[None, None]


def local_causal_mask(T: int, window: int,
                      device: torch.device | str | None = None) -> torch.Tensor:
    """Locally banded causal mask (GPT-3's sparse layers): query i may see keys j with
    0 <= i - j < window, itself and the window - 1 keys before it.  -> bool
    (1, 1, T, T); ``window >= T`` gives ``causal_mask(T)``, ``window == 1`` the
    diagonal."""
    T = _check_int(T, "T", minimum=1)
    window = _check_int(window, "window", minimum=1)
    i = torch.arange(T, device=device)
    lag = i[:, None] - i[None, :]                                  # (T, T): i - j
    return ((lag >= 0) & (lag < window))[None, None]
