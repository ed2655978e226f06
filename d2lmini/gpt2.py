"""GPT-2 in d2lmini's own GPT, and the arithmetic of GPT sizes.

``gpt2_from_hf(model)`` copies the weights of a Hugging Face ``GPT2LMHeadModel`` into a
:class:`d2lmini.GPT` built with GPT-2's options: learned positions, no embedding scale,
tanh-approximated GELU, a head tied to the token embedding, no pad token.  GPT-2 keeps
its matrices in ``Conv1D`` modules that compute x @ W + b with W (in, out), the
transpose of ``nn.Linear``'s (out, in); the query, key and value projections are one
(d, 3d) matrix ``c_attn`` that we split into ``W_q, W_k, W_v``.

The size arithmetic reads a configuration (ours, or Hugging Face's ``GPT2Config``):

    parameters  = V d + n_ctx d                 token and position tables
                + L (4 d^2 + 4 d)               attention: W_q, W_k, W_v, W_o and biases
                + L (2 d d_ff + d_ff + d)       FFN
                + L 4 d + 2 d                   LayerNorms (2 per block, 1 final)
                (+ V d if the head is not tied)
    training FLOPs ~ 6 N D                      (2 N per token forward, 4 N backward)
    KV cache    = 2 L d bytes-per-number         per token of context
"""
from __future__ import annotations

import math
import numbers

import torch
import torch.nn.functional as F

from .gpt import GPT

__all__ = ["gpt2_from_hf", "gpt_config_from_hf", "huggingface_reachable",
           "gpt_param_count", "gpt_train_flops", "gpt_kv_cache_bytes_per_token",
           "lm_bits_per_char", "GPT_CONFIGS", "PUBLISHED_PARAMS"]

_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
                "gelu": "gelu", "relu": "relu"}


def _gpt2_kwargs(vocab_size, d, heads, layers, n_ctx, d_ff=None):
    return dict(vocab_size=vocab_size, d_model=d, num_heads=heads, num_layers=layers,
                d_ff=4 * d if d_ff is None else d_ff, max_len=n_ctx, pad_id=None,
                tie_weights=True, pos_encoding="learned", scale_embedding=False,
                activation="gelu_tanh", bias=True, norm_eps=1e-5)


#: d2l.GPT arguments of the published models (GPT-2: Radford et al. 2019 and the
#: released configs; GPT-3 175B: Brown et al. 2020, table 2.1).
GPT_CONFIGS = {
    "gpt2": _gpt2_kwargs(50257, 768, 12, 12, 1024),
    "gpt2-medium": _gpt2_kwargs(50257, 1024, 16, 24, 1024),
    "gpt2-large": _gpt2_kwargs(50257, 1280, 20, 36, 1024),
    "gpt2-xl": _gpt2_kwargs(50257, 1600, 25, 48, 1024),
    "gpt3-175b": _gpt2_kwargs(50257, 12288, 96, 96, 2048),
}

#: Parameter counts as published: the names of OpenAI's released GPT-2 checkpoints
#: (124M, 355M, 774M, 1558M; the GPT-2 paper's table says 117M, 345M, 762M, 1542M) and
#: GPT-3's 175B.
PUBLISHED_PARAMS = {"gpt2": 124e6, "gpt2-medium": 355e6, "gpt2-large": 774e6,
                    "gpt2-xl": 1558e6, "gpt3-175b": 175e9}


def gpt_config_from_hf(config) -> dict:
    """The d2l.GPT arguments for a Hugging Face ``GPT2Config`` (or an object/dict with
    its fields: vocab_size, n_embd, n_head, n_layer, n_positions, n_inner,
    activation_function, layer_norm_epsilon)."""
    get = (lambda k, default=None: config.get(k, default)) if isinstance(config, dict) \
        else (lambda k, default=None: getattr(config, k, default))
    missing = [k for k in ("vocab_size", "n_embd", "n_head", "n_layer", "n_positions")
               if not isinstance(get(k), int)]
    if missing:
        raise TypeError(f"config must be a GPT2Config (or a dict/object with int "
                        f"fields vocab_size, n_embd, n_head, n_layer, n_positions); "
                        f"{type(config).__name__} lacks {missing}")
    act = get("activation_function", "gelu_new")
    if act not in _ACTIVATIONS:
        raise ValueError(f"activation_function must be one of {sorted(_ACTIVATIONS)}, "
                         f"got {act!r}")
    if (not get("scale_attn_weights", True)
            or get("scale_attn_by_inverse_layer_idx", False)):
        raise ValueError("only GPT-2's attention scaling 1/sqrt(d_k) is supported "
                         "(scale_attn_weights=True, "
                         "scale_attn_by_inverse_layer_idx=False)")
    if get("add_cross_attention", False):
        raise ValueError("a GPT-2 with cross-attention is not a decoder-only model")
    kw = _gpt2_kwargs(get("vocab_size"), get("n_embd"), get("n_head"), get("n_layer"),
                      get("n_positions"), get("n_inner"))
    kw.update(activation=_ACTIVATIONS[act],
              norm_eps=float(get("layer_norm_epsilon", 1e-5)),
              dropout=float(get("resid_pdrop", 0.0)))
    return kw


def _linear_weight(module) -> torch.Tensor:
    """The (out, in) matrix of an nn.Linear or a GPT-2 Conv1D (which stores (in,
    out))."""
    w = module.weight.detach()
    return w if isinstance(module, torch.nn.Linear) else w.t()


@torch.no_grad()
def gpt2_from_hf(model) -> GPT:
    """A :class:`GPT` holding the weights of a ``transformers.GPT2LMHeadModel`` (or a
    ``GPT2Model``), any size: the architecture is read from ``model.config``.  The new
    model is in eval mode, on the device and in the dtype of ``model``, with
    ``pad_id=None`` (GPT-2 has no pad token: pass an ``attention_mask`` for padded
    batches).  Its logits equal ``model(ids).logits`` to float rounding."""
    hf = getattr(model, "transformer", model)
    if not (hasattr(hf, "wte") and hasattr(hf, "h") and hasattr(model, "config")):
        raise TypeError(f"expected a transformers GPT2LMHeadModel or GPT2Model, got "
                        f"{type(model).__name__}")
    kw = gpt_config_from_hf(model.config)
    head = getattr(model, "lm_head", None)
    if head is not None and head.weight.data_ptr() != hf.wte.weight.data_ptr():
        kw["tie_weights"] = False
    w0 = hf.wte.weight
    ours = GPT(**kw)
    d = kw["d_model"]
    ours.embedding.weight.copy_(hf.wte.weight)
    ours.pos_encoding.weight.copy_(hf.wpe.weight)
    for blk, h in zip(ours.blocks, hf.h):
        if hasattr(h, "crossattention"):
            raise ValueError("a GPT-2 with cross-attention is not a decoder-only model")
        a = h.attn
        qkv, qkv_b = _linear_weight(a.c_attn), a.c_attn.bias.detach()  # (3d, d), (3d,)
        for i, lin in enumerate((blk.self_attn.W_q, blk.self_attn.W_k,
                                 blk.self_attn.W_v)):
            lin.weight.copy_(qkv[i * d:(i + 1) * d])
            lin.bias.copy_(qkv_b[i * d:(i + 1) * d])
        blk.self_attn.W_o.weight.copy_(_linear_weight(a.c_proj))
        blk.self_attn.W_o.bias.copy_(a.c_proj.bias)
        blk.ffn.linear1.weight.copy_(_linear_weight(h.mlp.c_fc))
        blk.ffn.linear1.bias.copy_(h.mlp.c_fc.bias)
        blk.ffn.linear2.weight.copy_(_linear_weight(h.mlp.c_proj))
        blk.ffn.linear2.bias.copy_(h.mlp.c_proj.bias)
        for ours_ln, hf_ln in ((blk.norm1, h.ln_1), (blk.norm2, h.ln_2)):
            ours_ln.weight.copy_(hf_ln.weight), ours_ln.bias.copy_(hf_ln.bias)
    ours.norm.weight.copy_(hf.ln_f.weight), ours.norm.bias.copy_(hf.ln_f.bias)
    if not kw["tie_weights"]:
        ours.lm_head.weight.copy_(head.weight)
    return ours.to(device=w0.device, dtype=w0.dtype).eval()


# ------------------------------------------------------------------ size arithmetic
def _as_kwargs(config) -> dict:
    if isinstance(config, str):
        if config not in GPT_CONFIGS:
            raise ValueError(f"unknown model {config!r}; expected one of "
                             f"{sorted(GPT_CONFIGS)}")
        return GPT_CONFIGS[config]
    if isinstance(config, GPT):
        return config.config
    if isinstance(config, dict) and "d_model" in config:
        return config
    return gpt_config_from_hf(config)


def gpt_param_count(config) -> int:
    """Parameters of a GPT from its configuration: a d2l.GPT, its ``config`` dict, a
    key of :data:`GPT_CONFIGS`, or a Hugging Face ``GPT2Config``.  Tied weights count
    once."""
    c = _as_kwargs(config)
    V, d, L, f, n = (c["vocab_size"], c["d_model"], c["num_layers"], c["d_ff"],
                     c["max_len"])
    b = 1 if c.get("bias", True) else 0
    emb = V * d + (n * d if c.get("pos_encoding", "sinusoidal") == "learned" else 0)
    attn = 4 * d * d + b * 4 * d
    ffn = 2 * d * f + b * (f + d)
    norms = 2 * 2 * d
    head = 0 if c.get("tie_weights", False) else V * d
    return emb + L * (attn + ffn + norms) + 2 * d + head


def gpt_train_flops(config, tokens: float) -> float:
    """Training compute ~ 6 N D floating-point operations for N parameters and D
    tokens: a forward pass costs about 2 N per token (a multiply and an add per
    weight), the backward pass twice that.  (Attention's own T^2 term is left out.)"""
    if isinstance(tokens, bool) or not isinstance(tokens, numbers.Real) or not (
            math.isfinite(tokens) and tokens >= 0):
        raise ValueError(f"tokens must be a finite number >= 0 (training tokens), "
                         f"got {tokens!r}")
    return 6.0 * gpt_param_count(config) * float(tokens)


def gpt_kv_cache_bytes_per_token(config, bytes_per_number: int = 2) -> int:
    """Bytes one token of context takes in the KV cache: keys and values (2) of every
    layer, d_model numbers each: 2 L d bytes_per_number (2 for fp16/bf16)."""
    if isinstance(bytes_per_number, bool) or not isinstance(bytes_per_number, int) \
            or bytes_per_number < 1:
        raise ValueError(f"bytes_per_number must be a positive int (2 for fp16/bf16, "
                         f"4 for fp32), got {bytes_per_number!r}")
    c = _as_kwargs(config)
    return 2 * c["num_layers"] * c["d_model"] * bytes_per_number


@torch.no_grad()
def lm_bits_per_char(model, ids, n_chars: int, bos_id: int, window: int | None = None,
                     batch_size: int = 8) -> float:
    """A language model's held-out cost in bits per character, a unit that compares
    models with different tokenizers on the same text.

    ``ids``: the tokens of a text of ``n_chars`` characters (a list or 1-D tensor).
    They are read in consecutive windows of ``window`` tokens (default
    ``model.max_len``), each preceded by ``bos_id`` (GPT-2's ``<|endoftext|>``), so
    every token is predicted, with at least one token before it.  Returns the summed
    cross-entropy in nats / ``n_chars`` / ln 2."""
    ids = torch.as_tensor(ids, dtype=torch.long).flatten()
    window = model.max_len if window is None else window
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive int, got {window!r}")
    if isinstance(n_chars, bool) or not isinstance(n_chars, int) or n_chars < 1:
        raise ValueError(f"n_chars must be a positive int, got {n_chars!r}")
    if len(ids) == 0:
        raise ValueError("ids is empty: there is nothing to predict")
    dev = next(model.parameters()).device
    was_training = model.training
    model.eval()
    step, total = window, 0.0
    full = len(ids) // step * step
    batches = list(ids[:full].view(-1, step).split(batch_size))
    if full < len(ids):
        batches.append(ids[full:][None])                  # the last, shorter row
    try:
        for rows in batches:
            x = torch.cat([torch.full((len(rows), 1), bos_id), rows], 1).to(dev)
            logits = model(x[:, :-1]).float()                # (b, window, V)
            total += F.cross_entropy(logits.flatten(0, 1), x[:, 1:].flatten(),
                                     reduction="sum").item()
    finally:
        model.train(was_training)
    return total / n_chars / math.log(2)


def huggingface_reachable(host: str = "huggingface.co", port: int = 443,
                          timeout: float = 3.0) -> bool:
    """True when a TCP connection to ``host`` opens within ``timeout`` seconds (name
    lookup included): a short look before a cell tries to download weights.  Never
    waits longer than ``timeout``; offline it returns False."""
    import socket
    import threading

    result = []

    def connect():
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            result.append(True)
        except OSError:
            result.append(False)

    t = threading.Thread(target=connect, daemon=True)
    t.start()
    t.join(timeout)
    return bool(result and result[0])
