"""GPT-3's attention pattern and its bill.

GPT-3 (Brown et al. 2020, section 2.1) is GPT-2's architecture "with the exception
that we use alternating dense and locally banded sparse attention patterns in the
layers of the transformer, similar to the Sparse Transformer".  As a mask: a dense
layer's query i sees keys 0..i (``causal_mask``), a banded layer's only the window
keys i - window + 1..i (``local_causal_mask``).  :class:`SparseGPT` is ``d2l.GPT``
with one such pattern per layer.

The rest is arithmetic on a configuration: the allowed (query, key) entries of a
pattern and the attention FLOPs they cost, and the training bill of a model:
parameters, 6 N D FLOPs, the bytes of mixed-precision Adam, the time at a stated
utilisation.
"""
from __future__ import annotations

import numbers

import torch

from .gpt import GPT
from .masks import causal_mask, local_causal_mask
from .utils import check_device, check_tensor

__all__ = ["SparseGPT", "alternating_windows", "attention_entries",
           "attention_flops", "training_bill", "ADAM_BYTES_PER_PARAM"]

#: bytes per parameter to train with Adam in mixed precision (Rajbhandari et al. 2020,
#: ZeRO): fp16 weights 2 + fp16 gradients 2 + fp32 master weights 4 + Adam's two
#: fp32 moments 4 + 4; activations not counted
ADAM_BYTES_PER_PARAM = 16


def _check_window(w, name: str):
    if w is None:
        return None
    if isinstance(w, bool) or not isinstance(w, numbers.Integral) or w < 1:
        raise ValueError(f"{name} must be None (dense) or an int >= 1 (a local "
                         f"window), got {w!r}")
    return int(w)


def alternating_windows(num_layers: int, window: int) -> list:
    """GPT-3's pattern for ``num_layers`` layers: dense, banded, dense, banded, ...
    -> [None, window, None, window, ...] (None = dense)."""
    if isinstance(num_layers, bool) or not isinstance(num_layers, int) \
            or num_layers < 1:
        raise ValueError(f"num_layers must be a positive int, got {num_layers!r}")
    window = _check_window(window, "window")
    return [None if i % 2 == 0 else window for i in range(num_layers)]


class SparseGPT(GPT):
    """``d2l.GPT`` whose layer i attends with ``windows[i]``: None for the dense
    causal mask, an int w for ``local_causal_mask(T, w)`` (keys i - w + 1..i), or a
    function ``pattern(T)`` -> bool (1, 1, T, T) mask of one's own (True = allowed;
    it is combined with the padding mask, and every row must allow its diagonal).

    Same arguments as :class:`GPT` plus ``windows`` (one entry per layer; default all
    dense, i.e. exactly ``GPT``).  Parameters and state dict are GPT's: the pattern
    changes which scores exist, not the weights.  forward(tokens (B, T),
    attention_mask=None) -> logits (B, T, V); no KV cache (generate with
    ``use_cache=False``)."""

    def __init__(self, *args, windows=None, **kwargs):
        super().__init__(*args, **kwargs)
        L = len(self.blocks)
        windows = [None] * L if windows is None else list(windows)
        if len(windows) != L:
            raise ValueError(f"windows must give one entry per layer ({L}), got "
                             f"{len(windows)}: {windows!r}")
        self.windows = [w if callable(w) else _check_window(w, f"windows[{i}]")
                        for i, w in enumerate(windows)]

    def pattern(self, layer: int, T: int, device=None) -> torch.Tensor:
        """The bool (1, 1, T, T) mask layer ``layer`` attends with."""
        w = self.windows[layer]
        if w is None:
            return causal_mask(T, device)
        if isinstance(w, int):
            return local_causal_mask(T, w, device)
        m = w(T)
        if (not isinstance(m, torch.Tensor) or m.dtype != torch.bool
                or tuple(m.shape[-2:]) != (T, T) or m.dim() != 4):
            raise ValueError(f"windows[{layer}](T={T}) must return a bool mask "
                             f"(1, 1, {T}, {T}), got "
                             f"{getattr(m, 'dtype', type(m).__name__)} "
                             f"{tuple(getattr(m, 'shape', ()))}")
        return m.to(device)

    def forward(self, tokens: torch.Tensor, cache=None,
                attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        if cache is not None:
            raise ValueError("SparseGPT keeps no KV cache: call generate(..., "
                             "use_cache=False)")
        check_tensor(tokens, "tokens", ndim=2)
        check_device(tokens, self.embedding.weight, "tokens")
        self.check_tokens(tokens)
        B, T = tokens.shape
        if T > self.max_len:
            raise ValueError(f"sequence of {T} tokens is longer than the model's "
                             f"max_len={self.max_len}")
        real = self.real_tokens(tokens, attention_mask)                    # (B, T)
        pos = (real.cumsum(1) - 1).clamp(min=0, max=self.max_len - 1)
        x = self.embed(tokens, pos)                                        # (B, T, d)
        for i, blk in enumerate(self.blocks):
            band = self.pattern(i, T, tokens.device)                      # (1,1,T,T)
            x = blk(x, real[:, None, None, :] & band)
        return self.lm_head(self.norm(x))


def attention_entries(T: int, window: int | None = None) -> int:
    """Allowed (query, key) pairs of one head in one layer over T positions:
    T (T + 1) / 2 for the causal mask (window None or >= T), and
    w T - w (w - 1) / 2 for a band of w keys."""
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise ValueError(f"T must be a positive int, got {T!r}")
    w = _check_window(window, "window")
    w = T if w is None else min(w, T)
    return w * T - w * (w - 1) // 2


def attention_flops(T: int, d_model: int, window: int | None = None) -> int:
    """Forward FLOPs of one layer's scores and weighted sum over the allowed entries
    (Q K^T and A V: a multiply and an add per entry per dimension each), summed over
    the heads: 4 d_model entries.  A dense kernel given a mask still computes all
    T^2 scores; only a kernel that skips the masked blocks saves these FLOPs."""
    if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model < 1:
        raise ValueError(f"d_model must be a positive int, got {d_model!r}")
    return 4 * d_model * attention_entries(T, window)


def training_bill(n_params: float, tokens: float, peak_flops: float,
                  utilisation: float, devices: int = 1) -> dict:
    """What training costs: FLOPs = 6 N D; bytes of mixed-precision Adam = 16 N;
    seconds = FLOPs / (devices x peak x utilisation).  -> {"flops", "bytes",
    "seconds", "days", "years"}."""
    for name, v in (("n_params", n_params), ("tokens", tokens),
                    ("peak_flops", peak_flops)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not v > 0:
            raise ValueError(f"{name} must be a positive number, got {v!r}")
    if isinstance(utilisation, bool) or not isinstance(utilisation, numbers.Real) \
            or not 0 < utilisation <= 1:
        raise ValueError(f"utilisation must be a fraction in (0, 1], got "
                         f"{utilisation!r}")
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ValueError(f"devices must be a positive int, got {devices!r}")
    flops = 6.0 * n_params * tokens
    seconds = flops / (devices * peak_flops * utilisation)
    return {"flops": flops, "bytes": ADAM_BYTES_PER_PARAM * n_params,
            "seconds": seconds, "days": seconds / 86400,
            "years": seconds / (365.25 * 86400)}
