"""Many small training runs, side by side (chapters 9-11).

An ablation that a sceptic believes trains every variant with several seeds.  The runs
are independent, so a machine with two cores can train two at a time: :class:`Runner`
sends them to worker processes (``spawn``, one thread each, so it works the same in a
script, in Jupyter and in Colab) and hands the results back by name::

    runner = Runner()                                   # 2 workers on a 2-core CPU
    runner.submit("full", date_run, [dict(seed=s, steps=300) for s in range(5)])
    runner.submit("no FFN", date_run,
                  [dict(seed=s, steps=300, d_ff=0) for s in range(5)])
    runner["full"]                                      # waits; a list of 5 results

``submit`` returns at once and the workers start; ``runner[name]`` waits for that
name's runs only, so later sections keep training while earlier ones are read.  With
``workers=1`` (the default on a GPU, where one process keeps the device busy) every run
happens in this process when it is submitted.  A run gives the same numbers either way:
same seed, same single thread.

The function a worker runs must be importable (defined in a module, not in a notebook):
:func:`date_run` trains a date translator (:func:`d2lmini.ablation.train_dates`) on a
data set that each process builds once.  Also here, the variants chapters 9-11 train:
:func:`build_transformer` (no residual path, a linear / GELU FFN, dropout in the FFN, a
positional encoding that grows with the position), :func:`probe_run` (how much position
a linear probe finds after each encoder block) and :func:`recall_run` (recall a token
from far back, GRU against attention).  :mod:`d2lmini.seqtasks` holds the other tasks.
"""
from __future__ import annotations

import functools
import math
import multiprocessing
import os
import time
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from . import ablation
from .attention import set_fused_attention
from .masks import padding_mask
from .transformer import EncoderBlock, PositionalEncoding, Transformer
from .attention import MultiHeadAttention
from .utils import check_dropout, check_positive_int, check_tensor, set_seed

__all__ = ["Runner", "default_workers", "date_run", "dates", "build_transformer",
           "NoResidualEncoderBlock", "RelativeSelfAttention", "alibi_slopes",
           "alibi_bias", "rope", "lesion", "encoder_states", "position_probe",
           "probe_chance", "probe_run", "recall_batch", "RecallGRU", "RecallAttention",
           "recall_run"]


def default_workers(device=None) -> int:
    """Worker processes for independent CPU runs: ``min(2, os.cpu_count())``; 1 when
    ``device`` (default :func:`d2lmini.device`) is an accelerator."""
    from .utils import device as best_device
    dev = torch.device(device) if device is not None else best_device()
    if dev.type != "cpu":
        return 1
    return max(1, min(2, os.cpu_count() or 1))


def _init_worker() -> None:
    torch.set_num_threads(1)  # tiny models: one thread each, one worker per core


def _timed(fn: Callable, job: dict):
    t0 = time.perf_counter()
    out = fn(**job)
    return out, time.perf_counter() - t0


class Runner:
    """Independent runs ``fn(**job)`` in ``workers`` processes; results by name.

    ``submit(name, fn, jobs)`` starts the runs (or, with one worker, does them now);
    ``runner[name]`` -> the list of results in the order of ``jobs``;
    ``runner.seconds[name]`` -> the seconds each run took (in its process);
    ``close()`` stops the workers (also when the Runner is garbage-collected).
    """

    def __init__(self, workers: int | None = None, device=None):
        workers = default_workers(device) if workers is None else workers
        self.workers = check_positive_int(workers, "workers")
        self._pool: ProcessPoolExecutor | None = None
        self._futures: dict[str, list] = {}
        self.seconds: dict[str, list[float]] = {}

    def submit(self, name: str, fn: Callable, jobs: Sequence[dict]) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        if name in self._futures:
            raise ValueError(f"runs named {name!r} were already submitted")
        if not callable(fn):
            raise TypeError(f"fn must be a function, got {type(fn).__name__}")
        jobs = list(jobs)
        if not jobs or not all(isinstance(j, dict) for j in jobs):
            raise ValueError("jobs must be a non-empty list of keyword-argument dicts")
        if self.workers == 1:
            self._futures[name] = [_done(_timed(fn, job)) for job in jobs]
            return
        if self._pool is None:
            ctx = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx,
                                             initializer=_init_worker)
        self._futures[name] = [self._pool.submit(_timed, fn, job) for job in jobs]

    def __getitem__(self, name: str) -> list:
        if name not in self._futures:
            raise KeyError(f"no runs named {name!r}; submitted: {list(self._futures)}")
        done = [f.result() for f in self._futures[name]]
        self.seconds[name] = [s for _, s in done]
        return [out for out, _ in done]

    def __contains__(self, name: str) -> bool:
        return name in self._futures

    def names(self) -> list[str]:
        return list(self._futures)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _done(value) -> Future:
    f = Future()
    f.set_result(value)
    return f


# ----------------------------------------------------------- the date task, in a worker
@functools.lru_cache(maxsize=8)
def dates(n_train: int = 20000, n_test: int = 1000, seed: int = 0,
          shift: tuple[int, int] = (0, 0),
          lengths: tuple[int, int] | None = None) -> ablation.DateData:
    """``ablation.DateData(n_train, n_test, seed, shift, lengths)``, built once per
    process."""
    return ablation.DateData(n_train, n_test, seed, tuple(shift),
                             None if lengths is None else tuple(lengths))


_VARIANT_KEYS = ("residual", "activation", "ffn_dropout", "pe_growth", "embed_init",
                 "relative", "relative_fn")


def date_run(data: dict | None = None, keep_model: bool = True,
             train_metrics: bool = False, analyses: Sequence[str] = (),
             test_lengths: Sequence[tuple[int, int]] = (), **train_kw) -> dict:
    """:func:`d2lmini.ablation.train_dates` on ``dates(**data)``.

    ``train_metrics=True`` also scores the trained model on its own training dates, as
    ``ablation.evaluate`` does on the held-out ones: keys ``train_loss``,
    ``train_exact_match``, ... (the overfitting gap is ``loss - train_loss``).
    ``analyses``: any of ``"fields"`` (:func:`ablation.by_field`), ``"formats"``
    (:func:`ablation.by_format`),
    ``"reliability"`` (:func:`ablation.reliability` of the held-out tokens),
    ``"lesion"`` (:func:`lesion`), each under its own key.
    ``test_lengths``: ``[(lo, hi), ...]``: also score held-out sources padded to
    ``lo..hi`` characters; ``by_length["lo-hi"]`` holds ``ablation.evaluate``'s
    metrics.  ``keep_model=False`` drops the model from the result.
    """
    unknown = set(analyses) - {"fields", "formats", "reliability", "lesion"}
    if unknown:
        raise ValueError(f"analyses must be among 'fields', 'formats', 'reliability', "
                         f"'lesion', got {sorted(unknown)}")
    d = dates(**{k: tuple(v) if isinstance(v, list) else v      # JSON gives lists
                 for k, v in (data or {}).items()})
    if any(k in train_kw for k in _VARIANT_KEYS):
        train_kw.setdefault("build", build_transformer)
    r = ablation.train_dates(d, **train_kw)
    model = r["model"]
    if train_metrics:
        r.update({f"train_{k}": v
                  for k, v in ablation.evaluate(model, *d.train).items()})
    if "fields" in analyses:
        r["fields"] = ablation.by_field(model, *d.test, d.sources["test"])
    if "formats" in analyses:
        r["formats"] = ablation.by_format(model, *d.test, d.sources["test"],
                                          [t for _, t in d.pairs["test"]])
    if "reliability" in analyses:
        conf, ok, _, _ = ablation.predictions(model, *d.test)
        r["reliability"] = ablation.reliability(conf, ok)
    if "lesion" in analyses:
        r["lesion"] = lesion(model, *d.test)
    if test_lengths:
        r["by_length"] = {f"{lo}-{hi}": ablation.evaluate(
            model, *d.at_lengths("test", lo, hi, seed=7)) for lo, hi in test_lengths}
    if not keep_model:
        r.pop("model")
    return r


# ------------------------------------------------------- the residual path and position
class NoResidualEncoderBlock(EncoderBlock):
    """An :class:`~d2lmini.EncoderBlock` (post-norm) without its two residual
    connections: ``x = norm1(self_attn(x))``, then ``x = norm2(ffn(x))``.  Same
    parameters and names, so the same seed gives the same initial weights as the block
    with residuals.
    forward(x (B, T, d_model), mask) -> (B, T, d_model).
    """

    def forward(self, x: torch.Tensor,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.norm_first:
            raise ValueError("NoResidualEncoderBlock is post-norm only "
                             "(norm_first=False)")
        x = self.norm1(self._sa(x, mask))
        return x if self.ffn is None else self.norm2(self.dropout2(self.ffn(x)))


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "identity": _identity,
               "tanh": torch.tanh, "sigmoid": torch.sigmoid}


# ------------------------------------------------------ relative positions: ALiBi, RoPE
def alibi_slopes(num_heads: int) -> torch.Tensor:
    """ALiBi's per-head slopes (Press et al., 2022): for h a power of 2 the geometric
    sequence 2^(-8/h), 2^(-16/h), ..., 2^(-8); otherwise their rule (the slopes of
    the nearest smaller power of 2, then every other slope of the next).  (h,)"""
    check_positive_int(num_heads, "num_heads")

    def powers(n):
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    low = 2 ** int(math.floor(math.log2(num_heads)))
    slopes = powers(low) + powers(2 * low)[0::2][:num_heads - low]
    return torch.tensor(slopes)


def alibi_bias(T: int, num_heads: int) -> torch.Tensor:
    """(h, T, T) bias added to the attention scores: ``-slope_h * |i - j|``, the
    symmetric form of ALiBi for an encoder that reads in both directions."""
    check_positive_int(T, "T")
    pos = torch.arange(T)
    dist = (pos[:, None] - pos[None, :]).abs().float()                 # (T, T)
    return -alibi_slopes(num_heads)[:, None, None] * dist


def rope(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding (Su et al., 2021): rotate each pair of features
    (x_2i, x_2i+1) at position t by the angle t * base^(-2i/d).  x (..., T, d), d
    even -> the same shape; q_t . k_s then depends on t - s only."""
    T, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError(f"rope needs an even feature size, got {d}")
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)
    angle = torch.arange(T, dtype=torch.float64, device=x.device)[:, None] * theta
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)        # (T, d/2)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos],
                       -1).flatten(-2)


class RelativeSelfAttention(MultiHeadAttention):
    """A :class:`~d2lmini.MultiHeadAttention` for self-attention whose only position
    signal is relative: ``scheme="alibi"`` adds ``fn(T, h)`` (default
    :func:`alibi_bias`) to the scores; ``scheme="rope"`` rotates the queries and keys
    with ``fn`` (default :func:`rope`) before their dot products.  Same parameters
    and names as the class it replaces.  forward(x, x, x, mask) -> (B, T, d_model).
    """

    scheme: str = "alibi"
    fn = None

    def forward(self, query, key, value, mask=None):
        if not (query is key and key is value):
            raise ValueError("RelativeSelfAttention is self-attention: pass the same "
                             "tensor as query, key and value")
        check_tensor(query, "x", ndim=3, floating=True)
        B, T, _ = query.shape
        q, k, v = (self.split_heads(t) for t in self._project(query, key, value))
        bias = None
        if self.scheme == "rope":
            fn = self.fn or rope
            q, k = fn(q), fn(k)
        else:
            fn = self.fn or alibi_bias
            bias = fn(T, self.num_heads).to(q.device, q.dtype)[None]    # (1, h, T, T)
        if mask is not None and mask.dim() == 3:
            mask = mask[:, None]
        p = self.dropout if self.training else 0.0
        if self.fast:
            attn = bias
            if mask is not None:
                attn = mask if bias is None else bias.masked_fill(~mask, float("-inf"))
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn, dropout_p=p)
            self.attention_weights = None
        else:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
            if bias is not None:
                scores = scores + bias
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            w = scores.softmax(-1)
            self.attention_weights = w
            out = F.dropout(w, p) @ v
        return self.W_o(self.combine_heads(out))


def _embed_init(model: Transformer, how: str) -> None:
    for stack in (model.encoder, model.decoder):
        w = stack.embedding.weight
        with torch.no_grad():
            if how == "normal":
                nn.init.normal_(w)                                   # nn.Embedding's
            elif how == "scaled":
                w.mul_(math.sqrt(stack.d_model))
            else:
                raise ValueError(f"embed_init must be 'normal' or 'scaled', got "
                                 f"{how!r}")


def build_transformer(src_vocab_size: int, tgt_vocab_size: int, residual: bool = True,
                      activation: str = "relu", ffn_dropout: float = 0.0,
                      pe_growth: bool = False, embed_init: str | None = None,
                      relative: str | None = None, relative_fn=None,
                      **kw) -> Transformer:
    """``Transformer(src_vocab_size, tgt_vocab_size, **kw)`` with one piece changed, the
    parameters (and so, at one seed, the initial weights) left as they are:

    ``residual=False``: the encoder blocks lose their residual connections
    (:class:`NoResidualEncoderBlock`), the decoder keeps them;
    ``activation``: the FFNs' activation, "relu" (default), "gelu", "tanh",
    "sigmoid" or "identity" (a linear FFN: the same parameters without the
    non-linearity);
    ``ffn_dropout``: dropout on the FFNs' hidden units only (after the activation);
    ``pe_growth=True``: the encoder's sinusoidal encoding of position ``pos`` is
    multiplied by ``2 (pos + 1) / 30``: the same directions, with a norm that grows with
    the position instead of staying bounded (mean factor 1 over positions 0..28);
    ``embed_init``: the token embeddings start ``"normal"`` (N(0, 1), nn.Embedding's
    default) or ``"scaled"`` (the Xavier start times sqrt(d_model): with
    ``scale_embedding=False`` the same initial model as the default);
    ``relative``: ``"alibi"`` or ``"rope"``: the encoder's self-attention becomes a
    :class:`RelativeSelfAttention` (``relative_fn`` replaces its bias or rotation)
    and the encoder adds no positional encoding; the decoder keeps its own.
    Pass it as ``build`` to :func:`ablation.train_dates`."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, "
                         f"got {activation!r}")
    model = Transformer(src_vocab_size, tgt_vocab_size, **kw)
    if not residual:
        for blk in model.encoder.blocks:
            blk.__class__ = NoResidualEncoderBlock
    for blk in [*model.encoder.blocks, *model.decoder.blocks]:
        if blk.ffn is not None:
            blk.ffn.activation = ACTIVATIONS[activation]
            blk.ffn.dropout.p = check_dropout(ffn_dropout, "ffn_dropout")
    if pe_growth:
        if type(model.encoder.pos_encoding) is not PositionalEncoding:
            raise ValueError("pe_growth needs pos_encoding='sinusoidal'")
        pe = model.encoder.pos_encoding.pe                            # (1, max_len, d)
        pe.mul_(2 * torch.arange(1, pe.shape[1] + 1, dtype=pe.dtype)[:, None] / 30)
    if embed_init is not None:
        _embed_init(model, embed_init)
    if relative is not None:
        if relative not in ("alibi", "rope"):
            raise ValueError(f"relative must be 'alibi' or 'rope', got {relative!r}")
        if relative_fn is not None and not callable(relative_fn):
            raise TypeError(f"relative_fn must be a function, got "
                            f"{type(relative_fn).__name__}")
        if relative == "rope" and model.encoder.d_model // model.encoder.blocks[
                0].self_attn.num_heads % 2:
            raise ValueError("rope needs an even d_k = d_model / num_heads")
        model.encoder.pos_encoding = nn.Identity()
        for blk in model.encoder.blocks:
            blk.self_attn.__class__ = RelativeSelfAttention
            blk.self_attn.scheme, blk.self_attn.fn = relative, relative_fn
    return model


@torch.no_grad()
def lesion(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor,
           tgt_out: torch.Tensor) -> dict:
    """What each block contributes to a trained model, on held-out data.

    ``loss``: the held-out loss with all blocks; ``without["encoder"][i]``: the loss
    when encoder block i is skipped (its input passed on unchanged), likewise for the
    decoder; ``update[side][i]``: the mean over real tokens of
    ``|block(x) - x| / |x|``, how much block i changes the vector it receives."""
    base = ablation.evaluate(model, src, tgt_in, tgt_out)["loss"]
    out = {"loss": base, "without": {}, "update": {}}
    for side in ("encoder", "decoder"):
        losses = []
        for blk in getattr(model, side).blocks:
            blk.forward = lambda x, *args, **kwargs: x         # skip this block
            try:
                losses.append(ablation.evaluate(model, src, tgt_in, tgt_out)["loss"])
            finally:
                del blk.forward
        out["without"][side] = losses
    ratios = {"encoder": [], "decoder": []}
    hooks = []
    for side in ratios:
        keep = (src if side == "encoder" else tgt_out) != model.pad_id       # (B, T)
        for i, blk in enumerate(getattr(model, side).blocks):
            ratios[side].append([])

            def hook(mod, args, y, side=side, i=i, keep=keep):
                x = args[0]
                r = (y - x).norm(dim=-1) / x.norm(dim=-1).clamp(min=1e-12)
                ratios[side][i].append(r[keep[:len(r)]].mean().item())
            hooks.append(blk.register_forward_hook(hook))
    try:
        was_training = model.training
        model.eval()
        model(src[:500], tgt_in[:500])
        model.train(was_training)
    finally:
        for h in hooks:
            h.remove()
    out["update"] = {side: [v[0] for v in vals] for side, vals in ratios.items()}
    return out


@torch.no_grad()
def encoder_states(model: Transformer, src: torch.Tensor) -> list[torch.Tensor]:
    """The encoder's hidden states: after the embedding (and positional encoding), then
    after each block.  src (B, S) -> list of num_layers + 1 tensors (B, S, d_model)."""
    was_training = model.training
    model.eval()
    mask = padding_mask(src, model.pad_id)
    states = [model.encoder.embed(src)]
    for blk in model.encoder.blocks:
        states.append(blk(states[-1], mask))
    model.train(was_training)
    return states


def position_probe(states: torch.Tensor, src: torch.Tensor, pad_id: int = 0,
                   ridge: float = 1e-3) -> float:
    """How well a linear read-out recovers each token's position from its hidden state.

    states (N, S, d), src (N, S): a least-squares linear classifier (one-hot position
    targets, a small ridge) is fitted on the real tokens of the first half of the N
    sequences and scored on the second half: the share of tokens whose position index
    is the argmax.  1.0: position is linearly readable; about 1/S: it is gone.
    """
    if states.dim() != 3 or states.shape[:2] != src.shape:
        raise ValueError(f"expected states (N, S, d) and src (N, S), got "
                         f"{tuple(states.shape)} and {tuple(src.shape)}")
    N, S, d = states.shape
    if N < 2:
        raise ValueError(f"need at least 2 sequences (half to fit, half to score), "
                         f"got {N}")
    pos = torch.arange(S).expand(N, S)
    real = src != pad_id
    h = torch.cat([states.double(), torch.ones(N, S, 1, dtype=torch.float64)], -1)
    half = N // 2
    X, y = h[:half][real[:half]], pos[:half][real[:half]]   # (n, d + 1), (n,)
    Y = torch.nn.functional.one_hot(y, S).double()          # (n, S)
    A = X.T @ X + ridge * len(X) * torch.eye(d + 1, dtype=torch.float64)
    W = torch.linalg.solve(A, X.T @ Y)                      # (d + 1, S)
    Xt, yt = h[half:][real[half:]], pos[half:][real[half:]]
    return (Xt @ W).argmax(-1).eq(yt).double().mean().item()


def probe_chance(src: torch.Tensor, pad_id: int = 0) -> float:
    """The chance level of :func:`position_probe`: the accuracy of always answering
    the position most common among the real tokens of the first half of ``src``
    (N, S), scored on the second half, as the probe is."""
    N, S = src.shape
    half = N // 2
    real = src != pad_id
    pos = torch.arange(S).expand(N, S)
    majority = torch.bincount(pos[:half][real[:half]], minlength=S).argmax()
    return pos[half:][real[half:]].eq(majority).double().mean().item()


def probe_run(data: dict | None = None, residual: bool = True, steps: int = 0,
              **train_kw) -> dict:
    """Position read-out accuracy of every encoder layer (:func:`position_probe` on the
    held-out sources), for a model at initialisation (``steps=0``) or after
    :func:`ablation.train_dates`.  Returns ``{"probe": [acc per layer, 0 = embedding],
    ...}`` plus the training metrics when it trained."""
    d = dates(**(data or {}))
    if steps:
        r = ablation.train_dates(d, steps=steps, build=build_transformer,
                                 residual=residual, **train_kw)
    else:
        cfg = {k: train_kw.get(k, v) for k, v in
               dict(d_model=32, num_heads=4, num_layers=1, d_ff=128).items()}
        cfg.update({k: v for k, v in train_kw.items() if k not in
                    ("seed", "lr", "warmup", "batch_size", "smoothing", "device")})
        set_seed(train_kw.get("seed", 0))
        model = build_transformer(len(d.src_vocab), len(d.tgt_vocab), residual=residual,
                                  dropout=0.0, max_len=64, **cfg)
        r = {"model": model}
    src = d.test[0]
    r["probe"] = [position_probe(s, src, d.src_vocab.pad_id)
                  for s in encoder_states(r["model"].cpu(), src)]
    r.pop("model")
    return r


# ------------------------------------------------------------- recall across a distance
def recall_batch(batch_size: int, distance: int, vocab: int = 8,
                 generator: torch.Generator | None = None, marked: bool = True):
    """A token to remember, then ``distance`` distractors: x (batch_size, distance + 1)
    long, y (batch_size,) the class of x[:, 0].  ``marked=True``: the token to remember
    comes from its own ids ``vocab..2*vocab-1`` (y = x[:, 0] - vocab) and the
    distractors from ``0..vocab-1``, so a model can find it by what it is, not only by
    where it is; ``marked=False``: all from ``0..vocab-1``, y = x[:, 0]."""
    (check_positive_int(batch_size, "batch_size"),
     check_positive_int(distance, "distance"))
    check_positive_int(vocab, "vocab", minimum=2)
    x = torch.randint(vocab, (batch_size, distance + 1), generator=generator)
    y = x[:, 0].clone()
    if marked:
        x[:, 0] += vocab
    return x, y


class RecallGRU(nn.Module):
    """Embedding, one GRU layer, a linear read-out of the last state.
    forward(x (B, T) ids) -> logits (B, vocab)."""

    def __init__(self, vocab: int = 8, d_embed: int = 32, d_hidden: int = 40):
        super().__init__()
        self.embedding = nn.Embedding(2 * vocab, d_embed)          # marked ids included
        self.rnn = nn.GRU(d_embed, d_hidden, batch_first=True)
        self.out = nn.Linear(d_hidden, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.rnn(self.embedding(x))[0][:, -1])


class RecallAttention(nn.Module):
    """Embedding * sqrt(d) + sinusoidal positions, ``num_layers`` encoder blocks
    (self-attention + FFN, post-norm), a linear read-out at the last position.
    forward(x (B, T) ids) -> logits (B, vocab)."""

    def __init__(self, vocab: int = 8, d_model: int = 32, num_heads: int = 4,
                 d_ff: int = 64, num_layers: int = 1, max_len: int = 1024):
        super().__init__()
        self.scale = math.sqrt(d_model)
        self.embedding = nn.Embedding(2 * vocab, d_model)          # marked ids included
        self.pos = PositionalEncoding(d_model, max_len=max_len)
        self.blocks = nn.ModuleList(EncoderBlock(d_model, num_heads, d_ff)
                                    for _ in range(num_layers))
        self.out = nn.Linear(d_model, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.pos(self.embedding(x) * self.scale)
        for blk in self.blocks:
            h = blk(h)
        return self.out(h[:, -1])


def recall_run(model: str = "gru", seed: int = 0, steps: int = 400,
               max_distance: int = 64,
               eval_distances: Sequence[int] = (1, 4, 16, 64), vocab: int = 8,
               batch_size: int = 64, lr: float = 3e-3, n_eval: int = 500,
               marked: bool = True, **model_kw) -> dict:
    """Train ``model`` ("gru" or "attention") to recall the first token of sequences
    whose distance to it is drawn from 1..max_distance (one distance per batch),
    ``steps`` Adam steps (:func:`recall_batch`, ``marked``); then its accuracy on
    ``n_eval`` fresh sequences at each of ``eval_distances``.
    Returns ``{"accuracy": {distance: share right}, "params", "seconds",
    "step_loss"}``."""
    makers = {"gru": RecallGRU, "attention": RecallAttention}
    if model not in makers:
        raise ValueError(f"model must be one of {sorted(makers)}, got {model!r}")
    set_seed(seed)
    net = makers[model](vocab=vocab, **model_kw)
    set_fused_attention(net, True) if model == "attention" else None
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    losses, t0 = [], time.perf_counter()
    for _ in range(steps):
        dist = int(torch.randint(1, max_distance + 1, (1,), generator=gen))
        x, y = recall_batch(batch_size, dist, vocab, gen, marked)
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    seconds = time.perf_counter() - t0
    net.eval()
    acc, g = {}, torch.Generator().manual_seed(10_000 + seed)
    with torch.no_grad():
        for dist in eval_distances:
            x, y = recall_batch(n_eval, dist, vocab, g, marked)
            acc[dist] = net(x).argmax(-1).eq(y).float().mean().item()
    return {"accuracy": acc, "params": sum(p.numel() for p in net.parameters()),
            "seconds": seconds, "step_loss": losses}
