"""The Transformer of "Attention Is All You Need", block by block.

Sub-module names mirror torch.nn (``self_attn``, ``linear1``, ``norm1``, ...) so
weights copied from ``nn.TransformerEncoderLayer``/``DecoderLayer`` load directly
(see :func:`state_dict_from_torch`).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention, check_state_dict, mha_state_dict_from_torch
from .masks import causal_mask, padding_mask
from .norms import LayerNorm
from .utils import (check_bool, check_device, check_dropout, check_positive_int,
                    check_tensor)


def _compiling() -> bool:
    is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    return bool(is_compiling and is_compiling())


def check_token_ids(tokens: torch.Tensor, vocab_size: int,
                    what: str = "token id") -> None:
    """Raise if an id in ``tokens`` is outside 0..vocab_size-1.

    On the CPU a direct check, which costs nothing there.  On CUDA and under
    ``torch.compile`` an assertion that runs on the device: the host never waits for
    it and the compiled graph has no data-dependent branch, but a failure surfaces
    later as a device-side assert.  (``d2l.train`` checks each batch on the CPU before
    moving it, where the error is a clear ``ValueError``.)  Other devices (MPS): direct.
    """
    if tokens.device.type != "cuda" and not _compiling():
        lo, hi = int(tokens.min()), int(tokens.max())
        if lo < 0 or hi >= vocab_size:
            bad = lo if lo < 0 else hi
            raise ValueError(f"{what} {bad} is out of range for a vocabulary of size "
                             f"{vocab_size} (expected 0..{vocab_size - 1})")
    else:
        torch._assert_async(((tokens >= 0) & (tokens < vocab_size)).all(),
                            f"a {what} is out of range for a vocabulary of size "
                            f"{vocab_size} (expected 0..{vocab_size - 1})")


def check_right_padded(tokens: torch.Tensor, pad_id: int, name: str) -> None:
    """Raise if a row of ``tokens`` has a real token after a pad (left or inner
    padding): the positional encoding counts from column 0, so such a row would be read
    at other positions than the same tokens unpadded.  On the device (no host sync) as
    :func:`check_token_ids`."""
    real = tokens != pad_id
    after_pad = real[:, 1:] & ~real[:, :-1]                          # (B, T - 1)
    msg = (f"{name} must be right-padded (pad_id={pad_id} only after the last real "
           f"token, as d2l.pad_batch does by default)")
    if tokens.device.type != "cuda" and not _compiling():
        if after_pad.any():
            r = int(after_pad.any(1).nonzero()[0])
            raise ValueError(f"{msg}: row {r} has a real token after a pad")
    else:
        torch._assert_async(~after_pad.any(), msg)


class PositionalEncoding(nn.Module):
    """x + PE[:T], PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...).

    Buffer ``pe``: (1, max_len, d_model).  forward(x (B, T, d_model)) -> same shape.
    The table is a formula, not a weight: it is not saved in the state dict (a
    ``max_len=5000`` table would be most of a small model's file), and a state dict
    that holds one (older files) loads too: its ``pe`` is ignored, so a model loads
    into another ``max_len``.
    """

    def __init__(self, d_model: int, dropout: float = 0.0, max_len: int = 5000):
        super().__init__()
        for name, v in (("d_model", d_model), ("max_len", max_len)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
        if d_model < 1 or max_len < 1:
            raise ValueError(f"d_model and max_len must be >= 1, got {d_model} and "
                             f"{max_len}")
        check_dropout(dropout)
        self.dropout = nn.Dropout(dropout)
        pos = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
        div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div[: d_model // 2])
        self.register_buffer("pe", pe[None], persistent=False)  # (1, max_len, d)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # a table saved by an older version: rebuilt here
        state_dict.pop(prefix + "pe", None)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor(x, "x", ndim=3, floating=True)  # embeddings, not token ids
        _, max_len, d = self.pe.shape
        if x.shape[2] != d:
            raise ValueError(f"expected (B, T, d_model={d}), got shape "
                             f"{tuple(x.shape)}")
        if x.shape[1] > max_len:
            raise ValueError(f"sequence length T={x.shape[1]} exceeds "
                             f"max_len={max_len} of the positional encoding")
        return self.dropout(x + self.pe[:, : x.shape[1]])


class LearnedPositionalEncoding(nn.Module):
    """x + P[:T] with a trained table P, parameter ``weight`` (max_len, d_model), as in
    BERT and GPT.  Rows past the longest training input never get a gradient.
    Initialised N(0, 1/2): the same mean square as the sinusoidal table's entries.

    forward(x (B, T, d_model)) -> same shape.
    """

    def __init__(self, d_model: int, dropout: float = 0.0, max_len: int = 5000):
        super().__init__()
        check_positive_int(d_model, "d_model"), check_positive_int(max_len, "max_len")
        self.weight = nn.Parameter(torch.empty(max_len, d_model))
        self.dropout = nn.Dropout(dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.weight, std=math.sqrt(0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor(x, "x", ndim=3, floating=True)
        max_len, d = self.weight.shape
        if x.shape[2] != d or x.shape[1] > max_len:
            raise ValueError(f"expected (B, T <= max_len={max_len}, d_model={d}), "
                             f"got shape {tuple(x.shape)}")
        return self.dropout(x + self.weight[: x.shape[1]])


class ConcatPositionalEncoding(PositionalEncoding):
    """Concatenate instead of add: [x, PE[:T]], the sinusoidal table of width ``d_pos``.

    forward(x (B, T, d_model - d_pos)) -> (B, T, d_model); buffer ``pe``
    (1, max_len, d_pos).
    """

    def __init__(self, d_model: int, d_pos: int, dropout: float = 0.0,
                 max_len: int = 5000):
        if not 0 < d_pos < d_model:
            raise ValueError(f"d_pos must be in 1..d_model-1 = {d_model - 1}, got "
                             f"{d_pos}")
        super().__init__(d_pos, dropout, max_len)
        self.d_model = d_model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor(x, "x", ndim=3, floating=True)
        (_, max_len, d_pos), (B, T, d_tok) = self.pe.shape, x.shape
        if d_tok != self.d_model - d_pos or T > max_len:
            raise ValueError(f"expected (B, T <= max_len={max_len}, d_model - d_pos="
                             f"{self.d_model - d_pos}), got shape {tuple(x.shape)}")
        return self.dropout(torch.cat([x, self.pe[:, :T].expand(B, T, d_pos)], dim=-1))


POS_ENCODINGS = ("sinusoidal", "learned", "concat", "none")


class PositionWiseFFN(nn.Module):
    """linear2(dropout(act(linear1(x)))), the same MLP applied to every position.

    (B, T, d_model) -> (B, T, d_ff) -> (B, T, d_model).
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0,
                 activation: str = "relu"):
        super().__init__()
        check_positive_int(d_model, "d_model"), check_positive_int(d_ff, "d_ff")
        check_dropout(dropout)
        acts = {"relu": F.relu, "gelu": F.gelu, "tanh": torch.tanh,
                "sigmoid": torch.sigmoid}
        if activation not in acts:
            raise ValueError(f"activation must be one of {sorted(acts)}, got "
                             f"{activation!r}")
        self.activation = acts[activation]
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor(x, "x", floating=True)
        if x.shape[-1] != self.linear1.in_features:
            raise ValueError("expected input (..., "
                             f"d_model={self.linear1.in_features}), got shape "
                             f"{tuple(x.shape)}")
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class EncoderBlock(nn.Module):
    """Self-attention and FFN, each wrapped in Add & Norm.

    post-norm (paper):  x = norm(x + sublayer(x))
    pre-norm:           x = x + sublayer(norm(x))
    forward(x (B, T, d_model), mask bool (B, 1, 1|T, T)) -> (B, T, d_model).
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.0,
                 norm_first: bool = False):
        super().__init__()
        self.norm_first = check_bool(norm_first, "norm_first")
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        # d_ff = 0: no FFN sub-layer at all (an ablation, chapter 9); ffn and norm2
        # are None
        self.ffn = PositionWiseFFN(d_model, d_ff, dropout) if d_ff else None
        self.norm1, self.norm2 = (LayerNorm(d_model, fused=True),
                                  LayerNorm(d_model, fused=True) if d_ff else None)
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)

    def _sa(self, x, mask):
        return self.dropout1(self.self_attn(x, x, x, mask))

    def forward(self, x: torch.Tensor,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.norm_first:
            x = x + self._sa(self.norm1(x), mask)
            return x if self.ffn is None else x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self._sa(x, mask))
        return x if self.ffn is None else self.norm2(x + self.dropout2(self.ffn(x)))


class DecoderBlock(nn.Module):
    """Masked self-attention, cross-attention over the encoder memory, FFN.

    forward(x (B, T, d), memory (B, S, d), tgt_mask (B|1, 1, T, T),
    memory_mask (B, 1, 1, S)) -> (B, T, d).
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.0,
                 norm_first: bool = False):
        super().__init__()
        self.norm_first = check_bool(norm_first, "norm_first")
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout)
        # d_ff = 0: none
        self.ffn = PositionWiseFFN(d_model, d_ff, dropout) if d_ff else None
        self.norm1, self.norm2 = (LayerNorm(d_model, fused=True),
                                  LayerNorm(d_model, fused=True))
        self.norm3 = LayerNorm(d_model, fused=True) if d_ff else None
        self.dropout1, self.dropout2, self.dropout3 = (nn.Dropout(dropout)
                                                       for _ in range(3))

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        sa = lambda y: self.dropout1(self.self_attn(y, y, y, tgt_mask))
        ca = lambda y: self.dropout2(self.cross_attn(y, memory, memory, memory_mask))
        ff = lambda y: self.dropout3(self.ffn(y))
        if self.norm_first:
            x = x + sa(self.norm1(x))
            x = x + ca(self.norm2(x))
            return x if self.ffn is None else x + ff(self.norm3(x))
        x = self.norm1(x + sa(x))
        x = self.norm2(x + ca(x))
        return x if self.ffn is None else self.norm3(x + ff(x))


class _Stack(nn.Module):
    """Token embedding * sqrt(d_model) + positional encoding, then N blocks.

    Ablations (chapter 9): ``pos_encoding`` "learned" (a trained table), "concat" (a
    d_model/2 embedding beside a d_model/2 sinusoidal PE) or "none";
    ``scale_embedding=False`` drops the sqrt(d_model) factor.
    """

    def __init__(self, block, vocab_size, d_model, num_layers, dropout, norm_first,
                 max_len, pos_encoding="sinusoidal", scale_embedding=True):
        super().__init__()
        if pos_encoding not in POS_ENCODINGS:
            raise ValueError(f"pos_encoding must be one of {POS_ENCODINGS}, got "
                             f"{pos_encoding!r}")
        self.d_model, self.vocab_size = d_model, vocab_size
        self.scale = math.sqrt(d_model) if scale_embedding else 1.0
        d_tok = d_model - d_model // 2 if pos_encoding == "concat" else d_model
        self.embedding = nn.Embedding(vocab_size, d_tok)
        self.pos_encoding = {
            "sinusoidal": lambda: PositionalEncoding(d_model, dropout, max_len),
            "learned": lambda: LearnedPositionalEncoding(d_model, dropout, max_len),
            "concat": lambda: ConcatPositionalEncoding(d_model, d_model // 2, dropout,
                                                       max_len),
            "none": lambda: nn.Dropout(dropout)}[pos_encoding]()
        self.blocks = nn.ModuleList(block() for _ in range(num_layers))
        # pre-norm leaves the residual stream un-normalised: add a final LayerNorm
        self.norm = LayerNorm(d_model, fused=True) if norm_first else nn.Identity()

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        check_tensor(tokens, "tokens", ndim=2)
        if tokens.is_floating_point():
            raise TypeError(f"tokens must hold integer ids, got {tokens.dtype}")
        if tokens.shape[0] == 0 or tokens.shape[1] == 0:
            raise ValueError(f"empty batch: tokens of shape {tuple(tokens.shape)}")
        check_device(tokens, self.embedding.weight, "tokens")
        check_token_ids(tokens, self.vocab_size)
        return self.pos_encoding(self.embedding(tokens) * self.scale)


class Encoder(_Stack):
    def forward(self, src, src_mask=None):
        x = self.embed(src)
        for blk in self.blocks:
            x = blk(x, src_mask)
        return self.norm(x)


class Decoder(_Stack):
    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None):
        x = self.embed(tgt)
        for blk in self.blocks:
            x = blk(x, memory, tgt_mask, memory_mask)
        return self.norm(x)


class Transformer(nn.Module):
    """Encoder-decoder Transformer.  forward(src (B, S), tgt (B, T)) -> logits
    (B, T, V_tgt).

    Builds the masks itself: source padding for the encoder and for cross-attention,
    target padding AND causal for the decoder's self-attention.
    Ablation switches (chapter 9; the defaults are the paper's model): ``d_ff=0`` (no
    FFN sub-layer), ``pos_encoding`` ("sinusoidal", "learned", "concat", "none") and
    ``scale_embedding`` (multiply the embeddings by sqrt(d_model)).

    ``pad_id`` marks padding in both vocabularies (``Vocab``'s is 0); rows are padded on
    the right (``d2l.pad_batch``'s default): a real token after a pad is an error, since
    the positions count from column 0.  ``max_len`` bounds the source and target
    lengths.  ``.config`` holds the constructor's arguments, so
    ``d2l.save(path, model, vocab)`` / ``d2l.load(path)`` rebuild the same model.
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 512,
                 num_heads: int = 8, num_layers: int = 6, d_ff: int = 2048,
                 dropout: float = 0.1, norm_first: bool = False, pad_id: int = 0,
                 max_len: int = 5000, pos_encoding: str = "sinusoidal",
                 scale_embedding: bool = True):
        super().__init__()
        for name, v in (("src_vocab_size", src_vocab_size),
                        ("tgt_vocab_size", tgt_vocab_size),
                        ("d_model", d_model), ("num_heads", num_heads),
                        ("num_layers", num_layers), ("max_len", max_len)):
            check_positive_int(v, name)
        if not isinstance(d_ff, int) or isinstance(d_ff, bool) or d_ff < 0:
            raise ValueError(f"d_ff must be an int >= 0 (0: no FFN), got {d_ff!r}")
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by "
                             f"num_heads={num_heads}")
        check_dropout(dropout)
        V = min(src_vocab_size, tgt_vocab_size)
        if (not isinstance(pad_id, int) or isinstance(pad_id, bool)
                or not 0 <= pad_id < V):
            raise ValueError(f"pad_id must be an id in both vocabularies, 0..{V - 1}, "
                             f"got {pad_id!r}")
        for name, v in (("norm_first", norm_first),
                        ("scale_embedding", scale_embedding)):
            if not isinstance(v, bool):
                raise TypeError(f"{name} must be True or False, got {v!r}")
        # the constructor's arguments, plain values: d2l.save stores them,
        # d2l.load rebuilds
        self.config = dict(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size,
                           d_model=d_model, num_heads=num_heads, num_layers=num_layers,
                           d_ff=d_ff, dropout=dropout, norm_first=norm_first,
                           pad_id=pad_id, max_len=max_len, pos_encoding=pos_encoding,
                           scale_embedding=scale_embedding)
        self.pad_id = pad_id
        enc = lambda: EncoderBlock(d_model, num_heads, d_ff, dropout, norm_first)
        dec = lambda: DecoderBlock(d_model, num_heads, d_ff, dropout, norm_first)
        stack = dict(dropout=dropout, norm_first=norm_first, max_len=max_len,
                     pos_encoding=pos_encoding, scale_embedding=scale_embedding)
        self.encoder = Encoder(enc, src_vocab_size, d_model, num_layers, **stack)
        self.decoder = Decoder(dec, tgt_vocab_size, d_model, num_layers, **stack)
        self.generator = nn.Linear(d_model, tgt_vocab_size)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        for m in self.modules():  # a learned position table keeps its own init
            if isinstance(m, LearnedPositionalEncoding):
                m.reset_parameters()

    def encode(self, src: torch.Tensor):
        """src (B, S) -> (memory (B, S, d_model), src_mask (B, 1, 1, S))"""
        src_mask = padding_mask(src, self.pad_id)
        check_device(src, self.encoder.embedding.weight, "src")
        check_right_padded(src, self.pad_id, "src")
        return self.encoder(src, src_mask), src_mask

    def decode(self, tgt, memory, src_mask):
        """tgt (B, T), memory (B, S, d) -> logits (B, T, V_tgt)"""
        tgt_mask = (padding_mask(tgt, self.pad_id)
                    & causal_mask(tgt.shape[1], tgt.device))
        check_device(tgt, self.decoder.embedding.weight, "tgt")
        check_right_padded(tgt, self.pad_id, "tgt")
        return self.generator(self.decoder(tgt, memory, tgt_mask, src_mask))

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        check_tensor(src, "src", ndim=2), check_tensor(tgt, "tgt", ndim=2)
        if src.shape[0] != tgt.shape[0]:
            raise ValueError(f"src and tgt batch sizes differ: {src.shape[0]} vs "
                             f"{tgt.shape[0]}")
        memory, src_mask = self.encode(src)
        return self.decode(tgt, memory, src_mask)

    def check_inputs(self, src: torch.Tensor, tgt: torch.Tensor) -> None:
        """Check the token ids of a batch, e.g. on the CPU before it moves to a GPU
        (``d2l.train`` does this), where a bad id gets a clear error."""
        check_token_ids(src, self.encoder.vocab_size)
        check_token_ids(tgt, self.decoder.vocab_size)


@torch.no_grad()
def greedy_decode(model: Transformer, src: torch.Tensor, max_len: int, bos_id: int,
                  eos_id: int | None = None) -> torch.Tensor:
    """Generate one token at a time, always taking the most likely next token.

    src (B, S) -> ids (B, <= max_len) without <bos>.  A row stops after its <eos>;
    its later positions hold the pad id.  ``eos_id=None`` (a task without an end
    token): every row decodes exactly ``max_len`` tokens. The encoder runs once; the
    decoder re-reads its whole prefix at every step (no key/value cache: simple,
    O(max_len^2)). ``model``: an encoder-decoder with ``encode``/``decode``
    (``Transformer``, ``GRUSeq2Seq``); a decoder-only ``GPT`` continues a prompt
    with ``d2l.generate``.
    """
    if not all(hasattr(model, a) for a in ("encode", "decode", "decoder", "pad_id")):
        hint = " (for a GPT use d2l.generate(model, prompt, ...))" if hasattr(
            model, "blocks") else ""
        raise TypeError("greedy_decode needs an encoder-decoder model with encode() "
                        f"and decode(), such as d2l.Transformer or d2l.GRUSeq2Seq, got "
                        f"{type(model).__name__}{hint}")
    check_positive_int(max_len, "max_len")
    V = model.decoder.vocab_size
    for name, i in (("bos_id", bos_id), ("eos_id", eos_id)):
        if i is None and name == "eos_id":
            continue
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < V:
            raise ValueError(f"{name} must be an id in 0..{V - 1}, got {i!r}")
        if i == model.pad_id:
            raise ValueError(f"{name}={i} is the model's pad id: the decoder would "
                             f"mask it out (Vocab's ids are bos_id=1, eos_id=2)")
    check_tensor(src, "src", ndim=2)
    was_training = model.training
    model.eval()
    try:
        memory, src_mask = model.encode(src)  # once: (B, S, d)
        ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        for _ in range(max_len):
            logits = model.decode(ys, memory, src_mask)[:, -1]          # (B, V)
            if torch.isnan(logits).any():
                raise ValueError("the model's logits are NaN (diverged training, or "
                                 "NaN weights?): there is no most likely token to pick")
            logits[:, model.pad_id] = -math.inf      # a pad is never a next token
            next_id = logits.argmax(-1)                                  # (B,)
            next_id = next_id.masked_fill(done, model.pad_id)    # finished rows: pad
            ys = torch.cat([ys, next_id[:, None]], dim=1)        # (B, t + 1)
            if eos_id is not None:
                done |= next_id == eos_id
            if done.all():
                break
    finally:
        model.train(was_training)
    return ys[:, 1:]


def label_smoothing_cross_entropy(logits: torch.Tensor, target: torch.Tensor,
                                  smoothing: float = 0.1,
                                  ignore_index: int = -100) -> torch.Tensor:
    """Cross-entropy against the smoothed target q = (1 - eps) * one_hot(y) + eps / V.

    logits (..., V), target (...) integer ids -> scalar: the mean over the positions
    whose target is not ``ignore_index`` (pass the pad id), i.e.
    (1 - eps) * (-log p_y) + eps * mean_c(-log p_c), the same as
    ``F.cross_entropy(logits, target, label_smoothing=eps, ignore_index=...)``.
    It works on ``log_softmax(logits)``, which is always finite: the log of a
    probability that underflowed to 0 (log(0) = -inf, and 0 * -inf = nan) never
    appears.  Like torch, a batch whose targets are all ignored gives nan.
    """
    check_tensor(logits, "logits", floating=True)
    check_tensor(target, "target")
    if target.is_floating_point() or target.dtype == torch.bool:
        raise TypeError(f"target must hold integer class ids, got {target.dtype}")
    if logits.shape[:-1] != target.shape:
        raise ValueError(f"logits (..., V) and target (...) disagree: logits "
                         f"{tuple(logits.shape)}, target {tuple(target.shape)}")
    if isinstance(smoothing, bool) or not isinstance(smoothing, (int, float)) or not (
            0.0 <= smoothing <= 1.0):
        raise ValueError(f"smoothing must be in [0, 1], got {smoothing}")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int):
        raise TypeError(f"ignore_index must be an int (the pad id, or -100), got "
                        f"{ignore_index!r}")
    V = logits.shape[-1]
    keep = target != ignore_index                                   # (...)
    y = target.masked_fill(~keep, 0)
    bad = keep & ((target < 0) | (target >= V))
    if target.device.type != "cuda" and not _compiling():
        if bad.any():
            raise ValueError(f"target ids must be in 0..{V - 1} (or "
                             f"ignore_index={ignore_index}), got "
                             f"{int(target[keep].min())}..{int(target[keep].max())}")
    else:  # validated on the device: no host sync per step (see check_token_ids)
        torch._assert_async(~bad.any(), f"target ids must be in 0..{V - 1} "
                                        f"(or ignore_index={ignore_index})")
    logp = F.log_softmax(logits.float(), dim=-1)                     # (..., V)
    nll = -logp.gather(-1, y[..., None]).squeeze(-1)                 # -log p_y
    uniform = -logp.mean(dim=-1)                                     # mean_c -log p_c
    loss = (1 - smoothing) * nll + smoothing * uniform
    return (loss * keep).sum() / keep.sum()


def sequence_loss(logits: torch.Tensor, targets: torch.Tensor, pad_id: int | None = 0,
                  label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean cross-entropy of a batch of sequences, over the targets that are not
    padding.

    logits (B, T, V) float, targets (B, T) integer ids -> scalar.  Positions whose
    target is ``pad_id`` (``Vocab``'s is 0) count for nothing, so padding a batch
    further does not change the loss; ``pad_id=None`` counts every position.
    ``label_smoothing`` in [0, 1] (the paper uses 0.1) is
    :func:`label_smoothing_cross_entropy`'s.  Use it as ``loss`` in ``d2l.train`` for a
    ``Transformer`` (``(src, tgt_in, tgt_out)`` batches) or a ``GPT`` (``(x, y)``
    batches).  A batch whose targets are all padding gives nan (nothing to average).
    """
    check_tensor(logits, "logits", ndim=3, floating=True)
    check_tensor(targets, "targets", ndim=2)
    if logits.shape[:2] != targets.shape:
        raise ValueError(f"logits (B, T, V) and targets (B, T) disagree: logits "
                         f"{tuple(logits.shape)}, targets {tuple(targets.shape)}")
    if pad_id is not None and (not isinstance(pad_id, int) or isinstance(pad_id, bool)):
        raise TypeError(f"pad_id must be an int id or None, got {pad_id!r}")
    if (isinstance(label_smoothing, bool)
            or not isinstance(label_smoothing, (int, float))):
        raise TypeError("label_smoothing must be a number in [0, 1], got "
                        f"{label_smoothing!r}")
    ignore = -100 if pad_id is None else pad_id
    return label_smoothing_cross_entropy(logits, targets, float(label_smoothing),
                                         ignore)


def state_dict_from_torch(state_dict: dict) -> dict:
    """Map an ``nn.TransformerEncoderLayer``/``DecoderLayer`` state dict onto
    ``EncoderBlock``/``DecoderBlock`` names: ``multihead_attn`` -> ``cross_attn``,
    ``linear1/2`` -> ``ffn.linear1/2``, attention projections -> ``W_q/W_k/W_v/W_o``."""
    check_state_dict(state_dict)
    renamed = {}
    for key, val in state_dict.items():
        key = key.replace("multihead_attn.", "cross_attn.")
        if key.startswith(("linear1.", "linear2.")):
            key = "ffn." + key
        renamed[key] = val
    for prefix in ("self_attn.", "cross_attn."):
        renamed = mha_state_dict_from_torch(renamed, prefix)
    return renamed
