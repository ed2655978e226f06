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
from .utils import check_dropout, check_positive_int, set_seed

__all__ = ["Runner", "default_workers", "date_run", "dates", "build_transformer",
           "NoResidualEncoderBlock", "encoder_states", "position_probe", "probe_run",
           "recall_batch", "RecallGRU", "RecallAttention", "recall_run"]


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
          shift: tuple[int, int] = (0, 0)) -> ablation.DateData:
    """``ablation.DateData(n_train, n_test, seed, shift)``, built once per process."""
    return ablation.DateData(n_train, n_test, seed, tuple(shift))


def date_run(data: dict | None = None, keep_model: bool = True,
             train_metrics: bool = False, **train_kw) -> dict:
    """:func:`d2lmini.ablation.train_dates` on ``dates(**data)``.

    ``train_metrics=True`` also scores the trained model on its own training dates, as
    ``ablation.evaluate`` does on the held-out ones: keys ``train_loss``,
    ``train_exact_match``, ... (the overfitting gap is ``loss - train_loss``).
    ``keep_model=False`` drops the model from the result (less to send back).
    """
    d = dates(**(data or {}))
    if any(k in train_kw
           for k in ("residual", "activation", "ffn_dropout", "pe_growth")):
        train_kw.setdefault("build", build_transformer)
    r = ablation.train_dates(d, **train_kw)
    if train_metrics:
        r.update({f"train_{k}": v
                  for k, v in ablation.evaluate(r["model"], *d.train).items()})
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


ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "identity": _identity}


def build_transformer(src_vocab_size: int, tgt_vocab_size: int, residual: bool = True,
                      activation: str = "relu", ffn_dropout: float = 0.0,
                      pe_growth: bool = False, **kw) -> Transformer:
    """``Transformer(src_vocab_size, tgt_vocab_size, **kw)`` with one piece changed, the
    parameters (and so, at one seed, the initial weights) left as they are:

    ``residual=False``: the encoder blocks lose their residual connections
    (:class:`NoResidualEncoderBlock`), the decoder keeps them;
    ``activation``: the FFNs' activation, "relu" (default), "gelu" or "identity" (a
    linear FFN: the same parameters without the non-linearity);
    ``ffn_dropout``: dropout on the FFNs' hidden units only (after the activation);
    ``pe_growth=True``: the encoder's sinusoidal encoding of position ``pos`` is
    multiplied by ``2 (pos + 1) / 30``: the same directions, with a norm that grows with
    the position instead of staying bounded (mean factor 1 over positions 0..28).
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
    return model


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
