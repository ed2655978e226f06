"""A decoder-only Transformer (GPT) and text generation with a key/value cache.

GPT is the Transformer's decoder without cross-attention: prompt and answer are one
sequence, and a causal mask lets every position see only itself and the past, so one
forward pass trains every next-token prediction at once.  ``generate`` continues a
prompt one token at a time: greedy, with a temperature, or from the top k tokens.

Shapes: tokens (B, T) long ids; logits (B, T, V); keys and values of one layer
(B, h, T, d_k) with d_k = d_model / h.
"""
from __future__ import annotations

import math
import numbers
import time
from importlib import resources

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention, scaled_dot_product_attention
from .maps import AttentionMaps
from .masks import causal_mask
from .norms import LayerNorm
from .transformer import (LearnedPositionalEncoding, PositionalEncoding,
                          PositionWiseFFN, _compiling, check_token_ids)
from .utils import check_device, check_generator, check_positive_int, check_tensor


class KVCache:
    """The keys and values every layer has computed so far, so that a new token can
    attend to the prefix without recomputing it.

    ``k``, ``v``: (L, B, h, max_len, d_k), allocated once; ``length``: how many
    positions are filled; ``real``: bool (B, max_len), False on pad tokens (keys
    nobody may attend to); ``count``: (B,) real tokens so far per row, i.e. the
    position of the row's next token.
    """

    def __init__(self, num_layers: int, batch_size: int, num_heads: int, max_len: int,
                 d_k: int, device=None, dtype: torch.dtype = torch.float32):
        for name, v in (("num_layers", num_layers), ("batch_size", batch_size),
                        ("num_heads", num_heads), ("max_len", max_len), ("d_k", d_k)):
            check_positive_int(v, name)
        shape = (num_layers, batch_size, num_heads, max_len, d_k)
        self.k = torch.zeros(shape, device=device, dtype=dtype)
        self.v = torch.zeros(shape, device=device, dtype=dtype)
        self.real = torch.zeros(batch_size, max_len, dtype=torch.bool, device=device)
        self.count = torch.zeros(batch_size, dtype=torch.long, device=device)
        self.length = 0

    @property
    def max_len(self) -> int:
        return self.k.shape[3]

    @property
    def nbytes(self) -> int:
        """Bytes of keys and values: 2 * L * B * h * max_len * d_k * bytes per
        number."""
        return (self.k.numel() * self.k.element_size()
                + self.v.numel() * self.v.element_size())

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        """Write k, v (B, h, T, d_k) at positions length..length+T-1 of ``layer``;
        -> every key and value so far, (B, h, length + T, d_k) each."""
        t0, T = self.length, k.shape[2]
        self.k[layer, :, :, t0:t0 + T] = k
        self.v[layer, :, :, t0:t0 + T] = v
        return self.k[layer, :, :, :t0 + T], self.v[layer, :, :, :t0 + T]


ACTIVATIONS = ("relu", "gelu", "gelu_tanh")


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GELU with the tanh approximation GPT-2 was trained with ("gelu_new" in Hugging
    Face): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return F.gelu(x, approximate="tanh")


class NonFiniteLogitsError(ValueError, RuntimeError, FloatingPointError):
    """The model produced NaN logits while generating: no token can be chosen."""


class GPTBlock(nn.Module):
    """The decoder block without cross-attention, pre-norm:

        x = x + dropout(self_attn(norm1(x)))     masked (causal) self-attention
        x = x + dropout(ffn(norm2(x)))           position-wise FFN

    forward(x (B, T, d_model), mask bool (B|1, 1, T, T_k), cache=None, layer=0)
    -> (B, T, d_model).  Sub-modules named as in ``EncoderBlock`` (``self_attn``,
    ``ffn``, ``norm1``, ``norm2``).  With a :class:`KVCache`, the keys and values of
    x are appended to the cache and the queries of x attend to every cached position
    (T_k = cached + T); the projections are the same ``W_q, W_k, W_v, W_o``.
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.0,
                 activation: str = "gelu", bias: bool = True, norm_eps: float = 1e-5):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, "
                             f"got {activation!r}")
        self.norm1 = LayerNorm(d_model, norm_eps, fused=True)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout, bias=bias)
        self.norm2 = LayerNorm(d_model, norm_eps, fused=True)
        self.ffn = PositionWiseFFN(d_model, d_ff, dropout,
                                   "gelu" if activation == "gelu_tanh" else activation)
        # GPT-2's GELU: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))
        if activation == "gelu_tanh":
            self.ffn.activation = gelu_tanh
        if not bias:                   # matrices only (the LayerNorms keep their shift)
            self.ffn.linear1 = nn.Linear(d_model, d_ff, bias=False)
            self.ffn.linear2 = nn.Linear(d_ff, d_model, bias=False)
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)

    def attend(self, x: torch.Tensor, mask=None, cache: KVCache | None = None,
               layer: int = 0) -> torch.Tensor:
        attn = self.self_attn
        if cache is None:  # recompute: keys and values of every position of x
            return attn(x, x, x, mask)
        B, T, d = x.shape
        split = lambda y: (y.view(B, T, attn.num_heads, -1)
                           .transpose(1, 2))                        # (B, h, T, d_k)
        k, v = cache.update(layer, split(attn.W_k(x)),
                            split(attn.W_v(x)))                     # (B, h, t0+T, d_k)
        q, p = split(attn.W_q(x)), (attn.dropout if self.training else 0.0)
        # the fused kernel, as MultiHeadAttention(fast=True)
        if getattr(attn, "fast", False):
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
            out, attn.attention_weights = out.masked_fill(
                ~mask.any(-1, keepdim=True), 0.0), None
        else:
            out, attn.attention_weights = scaled_dot_product_attention(q, k, v, mask, p)
        return attn.W_o(out.transpose(1, 2).reshape(B, T, d))          # (B, T, d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                cache: KVCache | None = None, layer: int = 0) -> torch.Tensor:
        x = x + self.dropout1(self.attend(self.norm1(x), mask, cache, layer))
        return x + self.dropout2(self.ffn(self.norm2(x)))


class GPT(nn.Module):
    """Decoder-only Transformer: token embedding (* sqrt(d_model)) + positions, N
    pre-norm :class:`GPTBlock`s, a final LayerNorm and a linear head.

    forward(tokens (B, T) integer ids, cache=None, attention_mask=None) -> logits
    (B, T, vocab_size); logit t predicts token t + 1.  It builds its own masks: causal
    (position t sees 0..t) and padding (no query attends to a pad token).  A token's
    position counts the real tokens before it, so a left-padded prompt gives the same
    logits as the unpadded one.  Blocks in ``blocks[i]``.  With a :class:`KVCache`
    (``new_cache``), ``tokens`` continue the cached sequence and only their logits
    are computed.

    Options (the defaults are chapter 12's model; ``gpt2_from_hf`` sets GPT-2's):

    - ``pos_encoding``: "sinusoidal" (chapter 8's fixed table, buffer
      ``pos_encoding.pe``) or "learned" (a trained table, ``pos_encoding.weight``
      (max_len, d_model), as GPT-2);
    - ``scale_embedding``: multiply the token embedding by sqrt(d_model) (GPT-2: no);
    - ``activation``: the FFN's "relu", "gelu" or "gelu_tanh" (GPT-2's approximation);
    - ``bias``: biases in the attention and FFN matrices (LayerNorms always have one);
    - ``tie_weights``: the head reuses the token embedding's matrix (GPT-2: yes);
    - ``pad_id``: the id that marks padding, or None (GPT-2): no id is padding, every
      token is text, and a batch of prompts of different lengths needs an explicit
      ``attention_mask`` (B, T), True (or 1) on real tokens, False (0) on padding;
    - ``norm_eps``: the LayerNorms' epsilon.

    ``config`` holds the constructor's arguments (plain values): ``GPT(**m.config)``
    builds the same architecture.
    """

    def __init__(self, vocab_size: int, d_model: int = 64, num_heads: int = 4,
                 num_layers: int = 2, d_ff: int = 256, dropout: float = 0.0,
                 max_len: int = 128, pad_id: int | None = 0, tie_weights: bool = False,
                 pos_encoding: str = "sinusoidal", scale_embedding: bool = True,
                 activation: str = "gelu", bias: bool = True, norm_eps: float = 1e-5):
        super().__init__()
        for name, v in (("vocab_size", vocab_size), ("d_model", d_model),
                        ("num_heads", num_heads), ("num_layers", num_layers),
                        ("d_ff", d_ff), ("max_len", max_len)):
            check_positive_int(v, name)
        if pad_id is not None and (not isinstance(pad_id, numbers.Integral)
                                   or isinstance(pad_id, bool)
                                   or not 0 <= pad_id < vocab_size):
            raise ValueError(f"pad_id must be an id in 0..{vocab_size - 1} or None, "
                             f"got {pad_id!r}")
        if pos_encoding not in ("sinusoidal", "learned"):
            raise ValueError(f"pos_encoding must be 'sinusoidal' or 'learned', "
                             f"got {pos_encoding!r}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, "
                             f"got {activation!r}")
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) \
                or not 0 <= dropout < 1:
            raise ValueError(f"dropout must be a number in [0, 1), got {dropout!r}")
        for name, v in (("tie_weights", tie_weights),
                        ("scale_embedding", scale_embedding), ("bias", bias)):
            if not isinstance(v, bool):
                raise TypeError(f"{name} must be True or False, got {v!r}")
        if isinstance(norm_eps, bool) or not isinstance(norm_eps, numbers.Real) \
                or not 0 < norm_eps < math.inf:
            raise ValueError(f"norm_eps must be a finite positive number, "
                             f"got {norm_eps!r}")
        pad_id = None if pad_id is None else int(pad_id)
        self.config = dict(vocab_size=vocab_size, d_model=d_model, num_heads=num_heads,
                           num_layers=num_layers, d_ff=d_ff, dropout=float(dropout),
                           max_len=max_len, pad_id=pad_id, tie_weights=tie_weights,
                           pos_encoding=pos_encoding, scale_embedding=scale_embedding,
                           activation=activation, bias=bias, norm_eps=float(norm_eps))
        self.vocab_size, self.d_model, self.max_len, self.pad_id = (vocab_size, d_model,
                                                                    max_len, pad_id)
        self.scale = math.sqrt(d_model) if scale_embedding else 1.0
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.pos_encoding = (PositionalEncoding if pos_encoding == "sinusoidal"
                             else LearnedPositionalEncoding)(d_model, dropout, max_len)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads, d_ff, dropout,
                                             activation, bias, norm_eps)
                                    for _ in range(num_layers))
        # pre-norm leaves the stream un-normalised
        self.norm = LayerNorm(d_model, norm_eps, fused=True)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        for p in self.parameters():      # as d2l.Transformer: Xavier for every matrix
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        if pos_encoding == "learned":
            self.pos_encoding.reset_parameters()
        if tie_weights:  # one matrix reads tokens in and writes them out
            self.lm_head.weight = self.embedding.weight

    def embed(self, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """tokens, pos (B, T) -> embedding (* sqrt(d_model)) + P[pos],
        (B, T, d_model)"""
        pe = self.pos_encoding
        table = (pe.pe[0] if isinstance(pe, PositionalEncoding)
                 else pe.weight)                                    # (max_len, d)
        return pe.dropout(self.embedding(tokens) * self.scale + table[pos])

    def check_tokens(self, tokens, name: str = "tokens") -> None:
        check_tensor(tokens, name, ndim=2)
        if (tokens.is_floating_point() or tokens.is_complex()
                or tokens.dtype == torch.bool):
            raise TypeError(f"{name} must hold integer token ids, got {tokens.dtype}")
        if tokens.shape[0] == 0 or tokens.shape[1] == 0:
            raise ValueError(f"{name} must hold at least one token per row, got shape "
                             f"{tuple(tokens.shape)}")
        if tokens.device.type == "cuda" or _compiling():  # on the device, no host sync
            return check_token_ids(tokens, self.vocab_size)
        lo, hi = int(tokens.min()), int(tokens.max())
        if lo < 0 or hi >= self.vocab_size:
            raise ValueError(f"{name}: id {lo if lo < 0 else hi} is outside the "
                             f"vocabulary (expected ids 0..{self.vocab_size - 1})")

    # d2l.train checks each batch on the CPU before it moves
    check_inputs = check_tokens

    def real_tokens(self, tokens: torch.Tensor, attention_mask=None,
                    name: str = "attention_mask") -> torch.Tensor:
        """bool (B, T): True on the tokens that are text, False on padding (the pad id,
        if the model has one, and wherever ``attention_mask`` is False/0)."""
        real = (torch.ones_like(tokens, dtype=torch.bool) if self.pad_id is None
                else tokens != self.pad_id)
        if attention_mask is None:
            return real
        if not isinstance(attention_mask, torch.Tensor):
            raise TypeError(f"{name} must be a tensor (B, T) of booleans or 0/1, got "
                            f"{type(attention_mask).__name__}")
        if tuple(attention_mask.shape) != tuple(tokens.shape):
            raise ValueError(f"{name} must have the tokens' shape "
                             f"{tuple(tokens.shape)}, "
                             f"got {tuple(attention_mask.shape)}")
        if attention_mask.dtype != torch.bool:
            if attention_mask.is_complex() or \
                    ((attention_mask != 0) & (attention_mask != 1)).any():
                raise ValueError(f"{name} must hold booleans or 0/1, got other "
                                 f"{attention_mask.dtype} values")
            attention_mask = attention_mask != 0
        return real & attention_mask.to(tokens.device)

    def new_cache(self, batch_size: int, max_len: int | None = None) -> KVCache:
        """An empty :class:`KVCache` for ``batch_size`` rows of up to ``max_len`` tokens
        (default: the model's), on the model's device and in its dtype."""
        max_len = self.max_len if max_len is None else max_len
        (check_positive_int(batch_size, "batch_size"),
         check_positive_int(max_len, "max_len"))
        attn, w = self.blocks[0].self_attn, self.embedding.weight
        return KVCache(len(self.blocks), batch_size, attn.num_heads, max_len,
                       self.d_model // attn.num_heads, w.device, w.dtype)

    def forward(self, tokens: torch.Tensor, cache: KVCache | None = None,
                attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """tokens (B, T) -> logits (B, T, V).  ``attention_mask`` (B, T), optional: True
        or 1 on real tokens (with a cache: for the new tokens only)."""
        check_tensor(tokens, "tokens", ndim=2)
        check_device(tokens, self.embedding.weight, "tokens")
        self.check_tokens(tokens)
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache (model.new_cache(batch_size)) or "
                            f"None, got {type(cache).__name__}")
        B, T = tokens.shape
        t0 = 0 if cache is None else cache.length
        if t0 + T > self.max_len:
            raise ValueError(f"sequence of {t0 + T} tokens is longer than the model's "
                             f"max_len={self.max_len}")
        real = self.real_tokens(tokens, attention_mask)                    # (B, T)
        if cache is None:
            pos = real.cumsum(1) - 1                                        # (B, T)
            mask = (real[:, None, None, :]
                    & causal_mask(T, tokens.device))                # (B, 1, T, T)
        else:
            if cache.k.shape[1] != B or t0 + T > cache.max_len:
                raise ValueError(f"the cache holds {cache.k.shape[1]} rows of up to "
                                 f"{cache.max_len} tokens ({t0} filled); got tokens "
                                 f"of shape {tuple(tokens.shape)}")
            pos = cache.count[:, None] + real.cumsum(1) - 1                # (B, T)
            cache.real[:, t0:t0 + T] = real
            cache.count += real.sum(1)
            # query i is at position t0 + i: it sees the real keys 0..t0 + i
            causal = torch.ones(T, t0 + T, dtype=torch.bool,
                                device=tokens.device).tril(t0)
            mask = cache.real[:, None, None, :t0 + T] & causal       # (B, 1, T, t0 + T)
        x = self.embed(tokens, pos.clamp(min=0, max=self.max_len - 1))    # (B, T, d)
        for i, blk in enumerate(self.blocks):
            x = blk(x, mask, cache, i)
        if cache is not None:
            cache.length += T
        return self.lm_head(self.norm(x))                                  # (B, T, V)

    @torch.no_grad()
    def attention_maps(self, tokens: torch.Tensor):
        """Self-attention weights of every block and head for ``tokens`` (B, T), for the
        book's attention explorer -> ``AttentionMaps`` {"self": (L, B, h, T, T)}, with
        masks False on future keys, pad keys and pad queries.  Runs in eval mode."""
        was_training = self.training
        fused = [(b.self_attn, b.self_attn.fast) for b in self.blocks]
        self.eval()
        try:
            for attn, _ in fused:
                attn.fast = False  # the from-scratch path keeps the weights
            tokens = tokens.to(self.embedding.weight.device)
            self(tokens)
        finally:
            self.train(was_training)
            for attn, fast in fused:
                attn.fast = fast
        w = torch.stack([b.self_attn.attention_weights.detach().float().cpu()
                         for b in self.blocks])
        real = self.real_tokens(tokens).cpu()
        mask = (real[:, None, None, :] & real[:, None, :, None]
                & causal_mask(tokens.shape[1]))
        return AttentionMaps({"self": w}, {"self": mask.expand(w.shape[1:])})


# ------------------------------------------------------------------ generation
def _check_int(value, name: str, lo: int, hi: int | None = None,
               allow_none: bool = False):
    if value is None and allow_none:
        return
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not ok or value < lo or (hi is not None and value > hi):
        want = f"an int in {lo}..{hi}" if hi is not None else f"an int >= {lo}"
        raise ValueError(f"{name} must be {want}{' or None' if allow_none else ''}, "
                         f"got {value!r}")


def sample_next(logits: torch.Tensor, temperature: float = 0.0,
                top_k: int | None = None,
                generator: torch.Generator | None = None) -> torch.Tensor:
    """Choose the next token of every row.  logits (B, V) -> ids (B,).

    ``temperature == 0``: the argmax (greedy).  Otherwise sample from
    softmax(logits / temperature), restricted to the ``top_k`` largest logits when
    given.  The draw happens on the generator's device, so a seeded CPU generator
    gives the same choices whatever device the model is on.
    """
    if temperature == 0:
        return logits.argmax(-1)
    # the largest logit becomes 0 first: a tiny temperature cannot overflow to inf
    # (inf/inf = nan)
    logits = logits.float()
    logits = (logits - logits.amax(-1, keepdim=True)) / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]                       # (B, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = F.softmax(logits, dim=-1)                                         # (B, V)
    where = generator.device if generator is not None else probs.device
    ids = torch.multinomial(probs.to(where), 1, generator=generator)         # (B, 1)
    return ids[:, 0].to(logits.device)


@torch.no_grad()
def generate(model: GPT, prompt: torch.Tensor, max_new_tokens: int,
             temperature: float = 0.0, top_k: int | None = None,
             eos_id: int | None = None, use_cache: bool = True,
             generator: torch.Generator | None = None,
             attention_mask: torch.Tensor | None = None,
             sliding_window: bool = False) -> torch.Tensor:
    """Continue ``prompt`` (B, T0) long ids by up to ``max_new_tokens`` tokens.

    -> ids (B, T0 + n), the prompt included, n <= max_new_tokens.  Each step picks
    the next token with :func:`sample_next` (``temperature=0``: greedy argmax; else
    sampling, optionally from the ``top_k`` most likely tokens, reproducible with a
    seeded ``generator``).  The pad id is never chosen: it marks padding, not text.  A
    row that has written ``eos_id`` gets the pad id (``eos_id`` if the model has no pad
    id) from then on; generation stops when every row has.  ``use_cache=True`` keeps
    every layer's keys and values (:class:`KVCache`) and feeds the model only the
    newest token; ``use_cache=False`` re-reads the whole sequence every step.  Both
    compute the same logits (up to float rounding), so greedy output is the same
    either way.

    A batch of prompts of different lengths is padded on the LEFT (``d2l.pad_batch(
    seqs, pad_id, side="left")``), so that every row's next token is in the last
    column; each row then gets the positions and masks it would get alone.  Padding is
    the model's ``pad_id``, or, for a model without one (``pad_id=None``, as GPT-2),
    the False/0 entries of ``attention_mask`` (B, T0).  A pad after a real token
    (right padding) is an error.

    ``sliding_window=True`` continues past the model's ``max_len``: once the sequence
    fills the context, each step reads only its last ``max_len`` tokens (as nanoGPT),
    whose positions restart at 0.  Without it, ``T0 + max_new_tokens > max_len`` is an
    error.  NaN logits raise :class:`NonFiniteLogitsError` (a ``ValueError``).
    """
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a d2lmini GPT, got {type(model).__name__}")
    V = model.vocab_size
    if not isinstance(prompt, torch.Tensor):
        raise TypeError(f"prompt must be a torch.Tensor of token ids (B, T0), got "
                        f"{type(prompt).__name__}")
    if prompt.dim() != 2:
        raise ValueError(f"prompt must be 2-D (B, T0) token ids, got shape "
                         f"{tuple(prompt.shape)}"
                         + (" (use prompt[None] for one sequence)"
                            if prompt.dim() == 1 else ""))
    if prompt.dtype != torch.long:
        raise TypeError(f"prompt must hold torch.long token ids, got {prompt.dtype}")
    # on the host: a clear error on every device
    model.check_tokens(prompt.cpu(), "prompt")
    _check_int(max_new_tokens, "max_new_tokens", 0)
    if not isinstance(sliding_window, bool):
        raise TypeError(f"sliding_window must be True or False, got {sliding_window!r}")
    B, T0 = prompt.shape
    W = model.max_len
    if T0 > W and not sliding_window:
        raise ValueError(f"prompt has {T0} tokens but the model's max_len is {W} "
                         f"(sliding_window=True reads only the last {W})")
    if T0 + max_new_tokens > W and not sliding_window:
        raise ValueError(f"prompt ({T0} tokens) + max_new_tokens ({max_new_tokens}) = "
                         f"{T0 + max_new_tokens} exceeds the model's max_len={W}: "
                         f"ask for at most {W - T0} new tokens, or pass "
                         f"sliding_window=True to keep only the last {W} tokens "
                         f"in view")
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) \
            or not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0 (0 = greedy), "
                         f"got {temperature!r}")
    _check_int(top_k, "top_k", 1, V, allow_none=True)
    _check_int(eos_id, "eos_id", 0, V - 1, allow_none=True)
    if eos_id is not None and eos_id == model.pad_id:
        raise ValueError(f"eos_id={eos_id} is the model's pad id, which generate never "
                         f"chooses (padding is not text): pass the id of the end token")
    check_generator(generator)
    if isinstance(attention_mask, torch.Tensor):
        attention_mask = attention_mask.cpu()
    real = model.real_tokens(prompt.cpu(), attention_mask)                   # (B, T0)
    right = real.cummax(1).values & ~real                 # padding after a real token
    if right.any():
        r, t = (int(i) for i in right.nonzero()[0])
        raise ValueError(f"prompt row {r} has padding at column {t}, after a real "
                         f"token (right padding): pad prompts on the LEFT, e.g. "
                         f"d2l.pad_batch(seqs, pad_id, side='left'), so that every row "
                         f"ends with its last real token")
    if not real.any(1).all():
        r = int((~real.any(1)).nonzero()[0])
        raise ValueError(f"prompt row {r} is all padding: every row needs at least one "
                         f"real token")
    dev = model.embedding.weight.device
    ids, real = prompt.to(dev), real.to(dev)
    if max_new_tokens == 0:
        return ids.clone()
    fill = model.pad_id if model.pad_id is not None else eos_id   # after a row's eos
    was_training = model.training
    model.eval()
    try:
        cache = model.new_cache(B, min(T0 + max_new_tokens, W)) if use_cache else None
        logits = model(ids[:, -W:], cache, real[:, -W:])[:, -1]               # (B, V)
        done = torch.zeros(B, dtype=torch.bool, device=dev)
        for step in range(max_new_tokens):
            if torch.isnan(logits).any():
                rows = torch.isnan(logits).any(-1).nonzero()[:, 0].tolist()
                raise NonFiniteLogitsError(
                    f"the model's logits are NaN at generation step {step} "
                    f"(rows {rows}): no token can be chosen; check the weights and "
                    f"the input")
            if model.pad_id is not None:
                logits[:, model.pad_id] = float("-inf")            # padding is not text
            next_id = sample_next(logits, float(temperature), top_k, generator)  # (B,)
            if eos_id is not None:
                next_id = next_id.masked_fill(done, fill)          # finished rows: pad
                done |= next_id == eos_id
            ids = torch.cat([ids, next_id[:, None]], dim=1)        # (B, T0 + step + 1)
            real = torch.cat([real, model.real_tokens(next_id[:, None])], dim=1)
            if step == max_new_tokens - 1 or (eos_id is not None and bool(done.all())):
                break
            if cache is not None and cache.length < cache.max_len:
                # new token only
                logits = model(next_id[:, None], cache, real[:, -1:])[:, -1]
            else:                                # the whole sequence (its last W) again
                logits = model(ids[:, -W:], None, real[:, -W:])[:, -1]
    finally:
        model.train(was_training)
    return ids


# ------------------------------------------------------------------ measuring the cache
def kv_cache_bytes(model: GPT, batch_size: int, length: int,
                   dtype: torch.dtype = torch.float32) -> int:
    """Bytes a cache of ``length`` tokens takes: keys and values (2) for every layer,
    row, position and model dimension (h * d_k = d_model):
    2 * num_layers * batch_size * length * d_model * bytes per number."""
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a d2lmini GPT, got {type(model).__name__}")
    (check_positive_int(batch_size, "batch_size"),
     check_positive_int(length, "length", 0))
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype such as torch.float16, "
                        f"got {dtype!r}")
    return 2 * len(model.blocks) * batch_size * length * model.d_model * \
        torch.empty((), dtype=dtype).element_size()


def kv_cache_benchmark(lengths=(32, 64, 128, 256), model: GPT | None = None,
                       batch_size: int = 1, prompt_len: int = 8, repeats: int = 1,
                       device=None) -> list[dict]:
    """Greedy generation time with and without the KV cache.

    For each n in ``lengths``: generate n tokens after a random prompt of
    ``prompt_len`` tokens, best of ``repeats`` runs, with ``use_cache`` True and False.
    The default model is an untrained ``GPT(vocab_size=96, d_model=128, num_heads=4,
    num_layers=4, d_ff=512)`` (speed does not depend on the weights).  -> one dict per
    length: ``new_tokens``, ``cached_s``, ``recompute_s``, ``speedup``, ``cache_bytes``,
    ``same_output`` (the two greedy outputs are equal).
    """
    lengths = list(lengths) if isinstance(lengths, (list, tuple, range)) else lengths
    if not isinstance(lengths, list) or not lengths:
        raise ValueError(f"lengths must be a non-empty list of new-token counts, "
                         f"got {lengths!r}")
    for name, v in [("batch_size", batch_size), ("prompt_len", prompt_len),
                    ("repeats", repeats)] + [("each length", n) for n in lengths]:
        check_positive_int(v, name)
    if model is not None and not isinstance(model, GPT):
        raise TypeError(f"model must be a d2lmini GPT or None, "
                        f"got {type(model).__name__}")
    dev = torch.device(device) if device is not None else (
        next(model.parameters()).device if model is not None else torch.device("cpu"))
    if model is None:
        torch.manual_seed(0)
        model = GPT(96, d_model=128, num_heads=4, num_layers=4, d_ff=512,
                    max_len=prompt_len + max(lengths)).to(dev)
    model.eval()
    g = torch.Generator().manual_seed(0)
    prompt = torch.randint(1, model.vocab_size, (batch_size, prompt_len),
                           generator=g).to(dev)

    def timed(n, use_cache):
        best, out = float("inf"), None
        for _ in range(repeats):
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t = time.perf_counter()
            out = generate(model, prompt, n, use_cache=use_cache)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t)
        return best, out

    generate(model, prompt, 4), generate(model, prompt, 4, use_cache=False)  # warm-up
    rows = []
    for n in lengths:
        (tc, a), (tr, b) = timed(n, True), timed(n, False)
        rows.append({"new_tokens": n, "cached_s": tc, "recompute_s": tr,
                     "speedup": tr / tc,
                     "cache_bytes": kv_cache_bytes(model, batch_size, prompt_len + n,
                                                   model.embedding.weight.dtype),
                     "same_output": torch.equal(a, b)})
    return rows


# -------------------------------------------------------- text shipped with the package
def load_corpus(name: str = "book.txt") -> str:
    """Text shipped inside the package (``d2lmini/corpus/``): ``book.txt``, this book's
    own English prose (from the chapters' text cells and the intro), and
    ``tinyshakespeare.txt`` (about 1 MB of Shakespeare's plays, Karpathy's char-rnn
    corpus), for language models and tokenizers.  Nothing is downloaded."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a corpus file name such as 'book.txt', got "
                        f"{type(name).__name__}")
    files = resources.files("d2lmini") / "corpus"
    path = files / name
    if not path.is_file():
        have = sorted(p.name for p in files.iterdir() if p.name.endswith(".txt"))
        raise ValueError(f"no corpus named {name!r}; expected one of {have}")
    return path.read_text(encoding="utf-8")
