"""What a model attended to: attention weights of every layer and head, with the masks
that say which weights matter.  Data only: what a setting of a view shows is decided in
``selection``, and the figures, explorers and views that draw it live in ``plot``,
``widgets``, ``views``, ``monitor`` and ``live``; nothing here imports them.

``collect_attention(model, ...)`` runs one forward pass and returns ``AttentionMaps``:
kind -> weights (L, B, h, T_q, T_k), plus ``.masks`` kind -> bool (B, h, T_q, T_k).
"""
from __future__ import annotations

import numpy as np
import torch

from .attention import MultiHeadAttention
from .masks import causal_mask, padding_mask
from .transformer import Transformer


def _np(x) -> np.ndarray:
    return (x.detach().float().cpu().numpy() if isinstance(x, torch.Tensor)
            else np.asarray(x))


class AttentionMaps(dict):
    """kind -> attention weights (L, B, h, T_q, T_k), as returned by
    :func:`collect_attention`.

    A dict, plus ``.masks``: kind -> bool (B, h, T_q, T_k), True where a weight matters
    (False on pad keys, future positions and pad queries), or no entry when unknown.
    """

    def __init__(self, weights: dict, masks: dict | None = None):
        if not isinstance(weights, dict):
            raise TypeError(f"weights must be a dict kind -> (L, B, h, T_q, T_k) "
                            f"weights, got {type(weights).__name__}")
        if masks is not None and not isinstance(masks, dict):
            raise TypeError(f"masks must be a dict kind -> mask or None, got "
                            f"{type(masks).__name__}")
        super().__init__(weights)
        self.masks = dict(masks or {})


def _full_mask(mask, shape) -> torch.Tensor:
    """A bool mask (T_k,), (T_q, T_k), (B, T_q, T_k) or (B|1, h|1, T_q|1, T_k)
    -> bool (B, h, T_q, T_k) = ``shape``."""
    mask = torch.as_tensor(mask)
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be boolean (True = attend), got {mask.dtype}")
    if mask.dim() == 3:
        mask = mask[:, None]  # same for every head, as in MultiHeadAttention
    try:
        return torch.broadcast_to(mask.cpu(), shape)
    except RuntimeError:
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to the "
                         f"weights (B, h, T_q, T_k) = {tuple(shape)}") from None


def _weights(module: MultiHeadAttention, where: str) -> torch.Tensor:
    w = module.attention_weights
    if w is None:
        raise ValueError(f"{where} kept no attention weights (run a forward pass "
                         f"first; MultiHeadAttention(fast=True) keeps none)")
    return w.detach().float().cpu()


@torch.no_grad()
def collect_attention(model, src: torch.Tensor | None = None,
                      tgt: torch.Tensor | None = None,
                      mask: torch.Tensor | None = None) -> AttentionMaps:
    """The attention weights of every layer and head, from one forward pass.

    * ``Transformer``: ``src`` (B, S) and optionally ``tgt`` (B, T) token ids ->
      {"encoder self": (L, B, h, S, S), "decoder self": (L, B, h, T, T),
      "cross": (L, B, h, T, S)} (only "encoder self" without ``tgt``).  Runs in eval
      mode (no dropout) and restores the training mode.  ``.masks`` are the model's own
      masks (pad keys, causal) and, for display, also False on pad *queries*: rows
      whose outputs nothing downstream uses.
    * ``MultiHeadAttention``: ``src`` (B, T, d_model) -> self-attention
      {"self": (1, B, h, T, T)} with the optional ``mask``; without ``src`` it
      reads the weights of the module's last forward pass.
    Weights are float32 on the CPU.
    """
    if isinstance(model, Transformer):
        for name, t in (("src", src), ("tgt", tgt)):
            if name == "tgt" and t is None:
                continue
            if (not isinstance(t, torch.Tensor) or t.dim() != 2
                    or t.is_floating_point()):
                got = (f"{t.dtype} of shape {tuple(t.shape)}"
                       if isinstance(t, torch.Tensor) else type(t).__name__)
                raise ValueError(f"{name} must be "
                                 f"({'B, S' if name == 'src' else 'B, T'}) "
                                 f"integer token ids, got {got}")
        dev = next(model.parameters()).device
        was_training = model.training
        fused = [m for m in model.modules()
                 if isinstance(m, MultiHeadAttention) and m.fast]
        model.eval()
        try:
            # the from-scratch path keeps the weights (d2l.set_fused_attention)
            for m in fused:
                m.fast = False
            src = src.to(dev)
            if tgt is None:
                model.encode(src)
            else:
                tgt = tgt.to(dev)
                model(src, tgt)
        finally:
            model.train(was_training)
            for m in fused:
                m.fast = True
        stack = lambda blocks, name: torch.stack(
            [_weights(getattr(b, name), f"{name} of block {i}")
             for i, b in enumerate(blocks)])
        enc = stack(model.encoder.blocks, "self_attn")             # (L, B, h, S, S)
        src_real = padding_mask(src, model.pad_id).cpu()           # (B, 1, 1, S)
        src_rows = src_real.transpose(-1, -2)                # (B, 1, S, 1): pad queries
        weights = {"encoder self": enc}
        masks = {"encoder self": _full_mask(src_real & src_rows, enc.shape[1:])}
        if tgt is not None:
            dec, cross = (stack(model.decoder.blocks, "self_attn"),
                          stack(model.decoder.blocks, "cross_attn"))
            tgt_real = padding_mask(tgt, model.pad_id).cpu()       # (B, 1, 1, T)
            tgt_rows = tgt_real.transpose(-1, -2)                  # (B, 1, T, 1)
            causal = causal_mask(tgt.shape[1])                     # (1, 1, T, T)
            weights.update({"decoder self": dec, "cross": cross})
            masks.update({"decoder self": _full_mask(tgt_real & causal & tgt_rows,
                                                     dec.shape[1:]),
                          "cross": _full_mask(src_real & tgt_rows, cross.shape[1:])})
        return AttentionMaps(weights, masks)
    if isinstance(model, MultiHeadAttention):
        if src is not None:
            was_training = model.training
            model.eval()
            try:
                model(src, src, src, mask)
            finally:
                model.train(was_training)
        w = _weights(model, "MultiHeadAttention")[None]            # (1, B, h, T_q, T_k)
        masks = {} if mask is None else {"self": _full_mask(mask, w.shape[1:])}
        return AttentionMaps({"self": w}, masks)
    raise TypeError(f"collect_attention expects a d2lmini Transformer or "
                    f"MultiHeadAttention, got {type(model).__name__}")


def _as_5d(w, kind: str) -> np.ndarray:
    """(T_q, T_k), (B, T_q, T_k), (B, h, T_q, T_k) or (L, B, h, T_q, T_k) -> 5-D
    array."""
    w = _np(w).astype(np.float32)
    if 0 in w.shape:
        raise ValueError(f"attention weights for {kind!r} are empty: shape {w.shape}; "
                         f"expected at least one layer, batch row, head, query and key")
    if w.ndim == 2:
        return w[None, None, None]
    if w.ndim == 3:
        return w[None, :, None]
    if w.ndim == 4:
        return w[None]
    if w.ndim == 5:
        return w
    raise ValueError(f"attention weights for {kind!r} must be (T_q, T_k), "
                     f"(B, T_q, T_k), (B, h, T_q, T_k) or (L, B, h, T_q, T_k), "
                     f"got shape {w.shape}")


def as_attention_maps(attn, masks=None) -> AttentionMaps:
    """Accept :func:`collect_attention`'s result, a dict kind -> weights, or one weights
    tensor (named "self" if square, else "cross"); -> AttentionMaps of 5-D float32
    arrays and bool (B, h, T_q, T_k) masks.  ``masks``: dict kind -> mask, or one
    mask."""
    if isinstance(attn, (torch.Tensor, np.ndarray)):
        w = _as_5d(attn, "weights")
        attn = {"self" if w.shape[-1] == w.shape[-2] else "cross": w}
    if not isinstance(attn, dict) or not attn:
        raise TypeError(f"attention must be a tensor or a non-empty dict kind -> "
                        f"weights, got {type(attn).__name__}")
    maps = {str(k): _as_5d(v, str(k)) for k, v in attn.items()}
    given = getattr(attn, "masks", {}) if masks is None else masks
    if not isinstance(given, dict):
        given = {k: given for k in maps}
    full = {}
    for k, m in given.items():
        if k not in maps:
            raise ValueError(f"mask given for unknown kind {k!r}; "
                             f"kinds are {list(maps)}")
        if m is not None:
            full[k] = _full_mask(m, maps[k].shape[1:]).numpy()
    return AttentionMaps(maps, full)
