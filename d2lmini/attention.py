"""Attention from scratch: masked softmax, scaled dot-product, additive and
multi-head attention.  Shapes are batch first; weights are (B, h, T_q, T_k)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .utils import check_tensor


def _check_mask(mask: torch.Tensor, scores_shape: torch.Size) -> None:
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(f"mask must be a boolean tensor (True = attend), got {got}")
    try:
        ok = torch.broadcast_shapes(mask.shape, scores_shape) == scores_shape
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to "
                         f"the scores of shape {tuple(scores_shape)}")


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last dim; where ``mask`` is False the weight is exactly 0.

    Masked scores are set to the dtype's most negative *finite* number (not -inf,
    not a hard-coded -1e9 that overflows float16), and the weights of masked
    positions are zeroed afterwards, so a row with no allowed key is all zeros,
    never NaN, in float32, float16 and bfloat16.
    scores: (..., T_q, T_k); mask: bool, broadcastable to scores.
    """
    check_tensor(scores, "scores", floating=True)
    if mask is None:
        return F.softmax(scores, dim=-1)
    _check_mask(mask, scores.shape)
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return F.softmax(scores, dim=-1).masked_fill(~mask, 0.0)


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 mask: torch.Tensor | None = None,
                                 dropout_p: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d_k)) v.

    q: (..., T_q, d_k), k: (..., T_k, d_k), v: (..., T_k, d_v), mask: bool broadcastable
    to (..., T_q, T_k).  Returns (output (..., T_q, d_v), weights (..., T_q, T_k));
    the weights are those before dropout.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(t, name, floating=True)
        if t.dim() < 2:
            raise ValueError(f"{name} must be at least 2-D (..., T, d), got shape {tuple(t.shape)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"query and key feature sizes differ: q has d_k={q.shape[-1]}, "
                         f"k has d_k={k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"key and value lengths differ: k has T_k={k.shape[-2]}, "
                         f"v has T_k={v.shape[-2]}")
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T_q, T_k)
    weights = masked_softmax(scores, mask)
    return F.dropout(weights, dropout_p) @ v, weights


class AdditiveAttention(nn.Module):
    """Bahdanau attention: score(q, k) = w_v^T tanh(W_q q + W_k k).

    Queries and keys may have different sizes.  forward(q (B, T_q, query_size),
    k (B, T_k, key_size), v (B, T_k, d_v), mask bool (B, T_q, T_k)-broadcastable)
    -> (B, T_q, d_v); keeps the weights (B, T_q, T_k) in ``.attention_weights``.
    """

    def __init__(self, query_size: int, key_size: int, num_hiddens: int, dropout: float = 0.0):
        super().__init__()
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights: torch.Tensor | None = None

    def forward(self, q, k, v, mask=None):
        for name, t in (("q", q), ("k", k), ("v", v)):
            check_tensor(t, name, ndim=3, floating=True)
        if q.shape[-1] != self.W_q.in_features or k.shape[-1] != self.W_k.in_features:
            raise ValueError(f"expected query size {self.W_q.in_features} and key size "
                             f"{self.W_k.in_features}, got {q.shape[-1]} and {k.shape[-1]}")
        if k.shape[1] != v.shape[1]:
            raise ValueError(f"key and value lengths differ: {k.shape[1]} vs {v.shape[1]}")
        if isinstance(mask, torch.Tensor) and mask.dim() == 4 and mask.shape[1] == 1:
            mask = mask[:, 0]  # (B, 1, T_q|1, T_k) -> (B, T_q|1, T_k)
        # (B, T_q, 1, h) + (B, 1, T_k, h) -> (B, T_q, T_k, h) -> scores (B, T_q, T_k)
        features = torch.tanh(self.W_q(q)[:, :, None] + self.W_k(k)[:, None])
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, mask)
        return self.dropout(self.attention_weights) @ v


class MultiHeadAttention(nn.Module):
    """h heads of scaled dot-product attention, computed in one batch.

    One d_model x d_model projection per role, then ``view``/``transpose`` into
    (B, h, T, d_k): the model dimension is *split* into h pieces, not copied.
    forward(query (B, T_q, d_model), key/value (B, T_k, d_model), mask bool
    broadcastable to (B, h, T_q, T_k)) -> (B, T_q, d_model).

    The default, from-scratch path keeps the weights (B, h, T_q, T_k) in
    ``.attention_weights``.  With ``fast=True`` it calls
    ``torch.nn.functional.scaled_dot_product_attention`` instead (fused kernels,
    no weights kept) and projects inputs that are the same tensor in one matrix
    product: same result, less memory and time.  :func:`set_fused_attention`
    switches every such module of a model at once.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 fast: bool = False):
        super().__init__()
        if num_heads < 1 or d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.dropout, self.fast = dropout, fast
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)
        self.attention_weights: torch.Tensor | None = None

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d_model) -> (B, h, T, d_k)"""
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.d_k).transpose(1, 2)

    def combine_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, h, T, d_k) -> (B, T, d_model)"""
        B, _, T, _ = x.shape
        return x.transpose(1, 2).reshape(B, T, self.d_model)

    def forward(self, query, key, value, mask=None):
        for name, t in (("query", query), ("key", key), ("value", value)):
            check_tensor(t, name, ndim=3, floating=True)
            if t.shape[-1] != self.d_model:
                raise ValueError(f"{name} must have d_model={self.d_model} features, "
                                 f"got shape {tuple(t.shape)}")
        if key.shape[:2] != value.shape[:2] or query.shape[0] != key.shape[0]:
            raise ValueError(f"key and value must be (B, T_k, d_model) with the query's batch "
                             f"size, got query {tuple(query.shape)}, key {tuple(key.shape)}, "
                             f"value {tuple(value.shape)}")
        if mask is not None and isinstance(mask, torch.Tensor) and mask.dim() == 3:
            mask = mask[:, None]  # (B, T_q, T_k) -> (B, 1, T_q, T_k): same for every head
        p = self.dropout if self.training else 0.0
        if self.fast:
            q, k, v = (self.split_heads(t) for t in self._project(query, key, value))
            if mask is not None:
                _check_mask(mask, q.shape[:-1] + k.shape[-2:-1])  # (B, h, T_q, T_k)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
            if mask is not None:  # rows with no allowed key: zeros, as on the slow path
                out = out.masked_fill(~mask.any(-1, keepdim=True), 0.0)
            self.attention_weights = None
        else:
            q = self.split_heads(self.W_q(query))  # (B, h, T_q, d_k)
            k = self.split_heads(self.W_k(key))    # (B, h, T_k, d_k)
            v = self.split_heads(self.W_v(value))  # (B, h, T_k, d_k)
            out, self.attention_weights = scaled_dot_product_attention(q, k, v, mask, p)
        return self.W_o(self.combine_heads(out))  # (B, T_q, d_model)

    def _project(self, query, key, value):
        """W_q query, W_k key, W_v value, with one matrix product for the inputs that are
        the same tensor (self-attention: q, k and v; cross-attention: k and v), as
        ``nn.MultiheadAttention`` does with its stacked ``in_proj_weight``."""
        lins = (self.W_q, self.W_k, self.W_v)
        if query is key and key is value:
            groups = [(query, lins)]
        elif key is value:
            groups = [(query, lins[:1]), (key, lins[1:])]
        else:
            groups = [(x, (lin,)) for x, lin in zip((query, key, value), lins)]
        out = []
        for x, ls in groups:
            if len(ls) == 1:
                out.append(ls[0](x))
                continue
            w = torch.cat([lin.weight for lin in ls])
            b = None if ls[0].bias is None else torch.cat([lin.bias for lin in ls])
            out += F.linear(x, w, b).chunk(len(ls), dim=-1)
        return out


def set_fused_attention(model: nn.Module, enabled: bool = True) -> nn.Module:
    """Switch every :class:`MultiHeadAttention` inside ``model`` to the fused kernel
    (``enabled=True``: faster, keeps no ``.attention_weights``) or back to the
    from-scratch path that keeps them.  Returns ``model``.

    Use it where nobody reads the weights, e.g. for training; switch back before
    drawing attention maps.  The parameters are the same either way.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    found = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    if not found:
        raise ValueError(f"{type(model).__name__} contains no d2lmini MultiHeadAttention")
    for m in found:
        m.fast = bool(enabled)
    return model


def mha_state_dict_from_torch(state_dict: dict, prefix: str = "") -> dict:
    """Rename an ``nn.MultiheadAttention`` state dict (``in_proj_weight``, ``out_proj``)
    to ``MultiHeadAttention``'s (``W_q``, ``W_k``, ``W_v``, ``W_o``); other keys pass through.

    ``prefix`` selects the attention module inside a bigger state dict, e.g.
    ``"self_attn."``; pass "" for a bare ``nn.MultiheadAttention``.
    """
    out = {}
    for key, val in state_dict.items():
        if not key.startswith(prefix):
            out[key] = val
            continue
        name = key[len(prefix):]
        if name in ("in_proj_weight", "in_proj_bias"):
            kind = name.split("_")[-1]
            for role, chunk in zip("qkv", val.chunk(3)):
                out[f"{prefix}W_{role}.{kind}"] = chunk
        elif name.startswith("out_proj."):
            out[f"{prefix}W_o.{name[len('out_proj.'):]}"] = val
        else:
            out[key] = val
    return out
