"""Attention from scratch: masked softmax, scaled dot-product, additive and
multi-head attention.  Shapes are batch first; weights are (B, h, T_q, T_k)."""
from __future__ import annotations

import math
from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import nn

from .utils import check_bool, check_dropout, check_positive_int, check_tensor


def _check_mask(mask: torch.Tensor, scores_shape: torch.Size, device=None) -> None:
    """A boolean mask with one dim per dim of the scores, each equal or 1.

    Fewer dims would broadcast from the left: a (B, T) padding mask against
    (B, T_q, T_k) scores would be read as (T_q, T_k) whenever B == T_q, a silent wrong
    answer.  So the number of dims must match exactly.
    """
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(f"mask must be a boolean tensor (True = attend), got {got}")
    if device is not None and mask.device != device:
        raise ValueError(f"mask is on {mask.device} but the scores are on {device}: "
                         f"move it, e.g. mask.to({str(device)!r})")
    want = "(" + ", ".join(f"{n}|1" for n in scores_shape) + ")"
    ok = mask.dim() == len(scores_shape) and all(
        m in (1, n) for m, n in zip(mask.shape, scores_shape))
    if not ok:
        hint = ""
        if mask.dim() == 2 and len(scores_shape) > 2:
            hint = (" (a (B, T) padding mask? use d2l.padding_mask(tokens, pad_id), "
                    "which is (B, 1, 1, T))")
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to the "
                         f"scores of shape {tuple(scores_shape)}: expected a "
                         f"{len(scores_shape)}-D bool mask {want}{hint}")


def _autocast_on(device_type: str) -> bool:
    try:
        return bool(torch.is_autocast_enabled(device_type))
    except TypeError:  # torch < 2.4: no device argument
        return bool(torch.is_autocast_enabled()) if device_type == "cuda" else False


def _check_same(tensors: dict, what: str = "dtype") -> None:
    """q, k, v (or query, key, value) must share dtype and device."""
    for attr in ("dtype", "device"):
        vals = {name: getattr(t, attr) for name, t in tensors.items()}
        if len(set(vals.values())) > 1:
            got = ", ".join(f"{n} {v}" for n, v in vals.items())
            raise ValueError(f"{'/'.join(tensors)} must share one {attr}, got {got}")


def _check_module(x: torch.Tensor, w: torch.Tensor) -> None:
    """Inputs must have the dtype (unless autocast is on) and the device of the
    weights."""
    if x.dtype != w.dtype and not _autocast_on(x.device.type):
        raise TypeError(f"query/key/value are {x.dtype} but the module's weights are "
                        f"{w.dtype}: convert the inputs (x.to({w.dtype})) or the "
                        f"module (.to({x.dtype}))")
    if x.device != w.device:
        raise ValueError(f"inputs are on {x.device} but the module is on {w.device}")


def masked_softmax(scores: torch.Tensor,
                   mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last dim; where ``mask`` is False the weight is exactly 0.

    Masked scores are set to the dtype's most negative *finite* number (not -inf,
    not a hard-coded -1e9 that overflows float16), and the weights of masked
    positions are zeroed afterwards, so a row with no allowed key is all zeros,
    never NaN, in float32, float16 and bfloat16.
    scores: (..., T_q, T_k); mask: bool with as many dims as ``scores``, each equal or
    1, e.g. (B, 1, T_k) for (B, T_q, T_k) scores (``d2l.padding_mask(...)[:, 0]``).
    """
    check_tensor(scores, "scores", floating=True)
    if mask is None:
        return F.softmax(scores, dim=-1)
    _check_mask(mask, scores.shape, scores.device)
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return F.softmax(scores, dim=-1).masked_fill(~mask, 0.0)


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 mask: torch.Tensor | None = None,
                                 dropout_p: float = 0.0
                                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d_k)) v.

    q: (..., T_q, d_k), k: (..., T_k, d_k), v: (..., T_k, d_v) of one dtype and device,
    leading dims equal (or 1).  mask: what ``F.scaled_dot_product_attention`` takes, a
    tensor that broadcasts to the scores (..., T_q, T_k) from the right: bool, True
    where attention is allowed (``d2l.padding_mask`` (B, 1, 1, T_k), ``d2l.causal_mask``
    or a plain ``torch.tril(torch.ones(T, T, dtype=torch.bool))``), or float, added to
    the scores.  Returns (output (..., T_q, d_v), weights (..., T_q, T_k)); the weights
    are those before dropout.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(t, name, floating=True)
        if t.dim() < 2:
            raise ValueError(f"{name} must be at least 2-D (..., T, d), got shape "
                             f"{tuple(t.shape)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("query and key feature sizes differ: q has "
                         f"d_k={q.shape[-1]}, k has d_k={k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"key and value lengths differ: k has T_k={k.shape[-2]}, "
                         f"v has T_k={v.shape[-2]}")
    _check_same({"q": q, "k": k, "v": v})
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError("q, k and v must agree in their leading (batch, head) dims, "
                         f"got q {tuple(q.shape)}, k {tuple(k.shape)}, v "
                         f"{tuple(v.shape)}") from None
    check_dropout(dropout_p, "dropout_p")
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T_q, T_k)
    if mask is not None:
        mask = _broadcast_mask(mask, scores)
    if mask is not None and mask.is_floating_point():     # added, as torch does
        weights = F.softmax(scores + mask, dim=-1)
    else:
        weights = masked_softmax(scores, mask)
    return F.dropout(weights, dropout_p) @ v, weights


def _broadcast_mask(mask, scores: torch.Tensor) -> torch.Tensor:
    """``mask`` with one dim per dim of ``scores``, as torch broadcasts an attention
    mask (aligned from the right); a clear error where torch would refuse it."""
    if not isinstance(mask, torch.Tensor) or not (
            mask.dtype == torch.bool or mask.is_floating_point()):
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(f"mask must be a boolean tensor (True = attend) or a float "
                         f"tensor added to the scores, got {got}")
    if mask.is_floating_point() and mask.dtype != scores.dtype:
        raise ValueError(f"a float mask must have the dtype of q, k and v "
                         f"({scores.dtype}), got {mask.dtype}")
    if mask.device != scores.device:
        raise ValueError(f"mask is on {mask.device} but the scores are on "
                         f"{scores.device}: move it, e.g. "
                         f"mask.to({str(scores.device)!r})")
    try:
        fits = (2 <= mask.dim() <= scores.dim() and torch.broadcast_shapes(
            mask.shape, scores.shape) == scores.shape)
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to the "
                         f"scores (..., T_q, T_k) of shape {tuple(scores.shape)}: "
                         f"it needs at least the 2 dims (T_q, T_k) and, aligned from "
                         f"the right, each dim equal to the scores' or 1")
    return mask.reshape((1,) * (scores.dim() - mask.dim()) + tuple(mask.shape))


class AdditiveAttention(nn.Module):
    """Bahdanau attention: score(q, k) = w_v^T tanh(W_q q + W_k k).

    Queries and keys may have different sizes.  forward(q (B, T_q, query_size),
    k (B, T_k, key_size), v (B, T_k, d_v), mask bool (B, T_q, T_k)-broadcastable)
    -> (B, T_q, d_v); keeps the weights (B, T_q, T_k) in ``.attention_weights``.
    """

    def __init__(self, query_size: int, key_size: int, num_hiddens: int,
                 dropout: float = 0.0):
        super().__init__()
        for name, n in (("query_size", query_size), ("key_size", key_size),
                        ("num_hiddens", num_hiddens)):
            check_positive_int(n, name)
        check_dropout(dropout)
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
                             f"{self.W_k.in_features}, got {q.shape[-1]} and "
                             f"{k.shape[-1]}")
        if k.shape[1] != v.shape[1]:
            raise ValueError(f"key and value lengths differ: {k.shape[1]} vs "
                             f"{v.shape[1]}")
        if not q.shape[0] == k.shape[0] == v.shape[0]:
            raise ValueError(f"q, k and v batch sizes differ: q {tuple(q.shape)}, "
                             f"k {tuple(k.shape)}, v {tuple(v.shape)}")
        _check_same({"q": q, "k": k, "v": v})
        _check_module(q, self.W_q.weight)
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
    forward(query (B, T_q, d_model), key/value (B, T_k, d_model), mask=None)
    -> (B, T_q, d_model).  ``mask``: bool, True = may attend, either 4-D
    (B|1, h|1, T_q|1, T_k), e.g. ``d2l.padding_mask(tokens, pad_id)`` (B, 1, 1, T_k) or
    ``d2l.causal_mask(T)`` (1, 1, T, T), or 3-D (B|1, T_q|1, T_k), the same for every
    head.  A 2-D mask is refused: (B, T_k) and (T_q, T_k) cannot be told apart.

    The default, from-scratch path keeps the weights (B, h, T_q, T_k) in
    ``.attention_weights``.  With ``fast=True`` it calls
    ``torch.nn.functional.scaled_dot_product_attention`` instead (fused kernels,
    no weights kept) and projects inputs that are the same tensor in one matrix
    product: same result, less memory and time.  :func:`set_fused_attention`
    switches every such module of a model at once.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0,
                 bias: bool = True, fast: bool = False):
        super().__init__()
        for name, v in (("d_model", d_model), ("num_heads", num_heads)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
        check_positive_int(d_model, "d_model")
        check_dropout(dropout)
        check_bool(bias, "bias"), check_bool(fast, "fast")
        if num_heads < 1:
            raise ValueError("num_heads must be a positive int, got "
                             f"num_heads={num_heads}")
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by "
                             f"num_heads={num_heads}")
        self.d_model, self.num_heads, self.d_k = (d_model, num_heads,
                                                  d_model // num_heads)
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
            raise ValueError("key and value must be (B, T_k, d_model) with the "
                             f"query's batch size, got query {tuple(query.shape)}, key "
                             f"{tuple(key.shape)}, value {tuple(value.shape)}")
        _check_same({"query": query, "key": key, "value": value})
        _check_module(query, self.W_q.weight)
        if mask is not None:
            if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
                _check_mask(mask, ())  # raises: not a bool tensor
            if mask.dim() not in (3, 4):
                raise ValueError(
                    "mask must be 4-D (B|1, h|1, T_q|1, T_k) or 3-D (B|1, T_q|1, "
                    f"T_k), got shape {tuple(mask.shape)}"
                    + (" (a (B, T) padding mask? use d2l.padding_mask(tokens, pad_id), "
                       "which is (B, 1, 1, T))" if mask.dim() == 2 else ""))
            if mask.dim() == 3:
                # (B, T_q, T_k) -> (B, 1, T_q, T_k): same for every head
                mask = mask[:, None]
            B, h, T_q, T_k = (query.shape[0], self.num_heads, query.shape[1],
                              key.shape[1])
            _check_mask(mask, torch.Size((B, h, T_q, T_k)), query.device)
        p = self.dropout if self.training else 0.0
        if self.fast:
            q, k, v = (self.split_heads(t) for t in self._project(query, key, value))
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
        """W_q query, W_k key, W_v value, with one matrix product for the inputs that
        are the same tensor (self-attention: q, k and v; cross-attention: k and v), as
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
    check_bool(enabled, "enabled")
    found = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    if not found:
        raise ValueError(f"{type(model).__name__} contains no d2lmini "
                         "MultiHeadAttention")
    for m in found:
        m.fast = bool(enabled)
    return model


def check_state_dict(state_dict) -> None:
    """A state dict is a mapping name -> tensor (``module.state_dict()``)."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"state_dict must be a dict name -> tensor, e.g. "
                        f"torch_module.state_dict(), got {type(state_dict).__name__}")


def mha_state_dict_from_torch(state_dict: dict, prefix: str = "") -> dict:
    """Rename an ``nn.MultiheadAttention`` state dict (``in_proj_weight``, ``out_proj``)
    to ``MultiHeadAttention``'s (``W_q``, ``W_k``, ``W_v``, ``W_o``); other keys pass
    through.

    ``prefix`` selects the attention module inside a bigger state dict, e.g.
    ``"self_attn."``; pass "" for a bare ``nn.MultiheadAttention``.
    """
    check_state_dict(state_dict)
    if not isinstance(prefix, str):
        raise TypeError(f"prefix must be a string such as 'self_attn.', got {prefix!r}")
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
