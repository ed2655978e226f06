"""Small synthetic tasks that isolate one question each (chapters 10-11).

* :func:`retrieval_run` -- key-value lookup through ONE attention layer whose score
  function is the only thing that changes: scaled dot product, unscaled dot product or
  additive, at a small or a large d_k (is additive better at large d_k, note 003?).
* :func:`motif_run` -- does a sequence contain the bigram ``0 1``?  A Transformer
  encoder, a GRU and a CNN on training sets of different sizes (weak priors need more
  data, note 002).
* :func:`depth_run` -- a stack of Add & Norm blocks with and without the residual
  path, trained on a regression task (the "degradation" of deep plain stacks, note 004).

Every ``*_run`` takes a ``seed`` and returns a dict of plain numbers and lists, so that
:class:`d2lmini.experiments.Runner` can train several in worker processes.
"""
from __future__ import annotations

import math
import time

import torch
import torch.nn.functional as F
from torch import nn

from .attention import set_fused_attention
from .transformer import EncoderBlock, PositionalEncoding
from .utils import check_positive_int, set_seed

__all__ = ["retrieval_batch", "Retrieval", "retrieval_run", "motif_batch",
           "MotifClassifier", "motif_run", "DepthStack", "depth_run", "SCORES"]

SCORES = ("dot", "dot-unscaled", "additive")


# ---------------------------------------------------------------- key-value retrieval
def retrieval_batch(batch_size: int, pairs: int = 8, keys: int = 16, values: int = 16,
                    generator: torch.Generator | None = None):
    """``pairs`` distinct keys (ids 0..keys-1), each with a random value (0..values-1),
    and one of the keys as the query.  Returns k (B, pairs), v (B, pairs), q (B,), and
    the answer y (B,) = the value stored under the query key."""
    check_positive_int(batch_size, "batch_size"), check_positive_int(pairs, "pairs")
    if keys < pairs:
        raise ValueError(f"need keys >= pairs for distinct keys, got keys={keys}, "
                         f"pairs={pairs}")
    k = torch.rand(batch_size, keys, generator=generator).argsort(-1)[:, :pairs]
    v = torch.randint(values, (batch_size, pairs), generator=generator)
    pick = torch.randint(pairs, (batch_size,), generator=generator)
    rows = torch.arange(batch_size)
    return k, v, k[rows, pick], v[rows, pick]


class Retrieval(nn.Module):
    """Embed the query key, the stored keys and values; one attention read-out.

    score "dot": q.k / sqrt(d_k); "dot-unscaled": q.k; "additive":
    w^T tanh(W_q q + W_k k) with a hidden size of d_k.  Queries and keys are projected
    to d_k dimensions with weights drawn N(0, 1/d) from unit-variance embeddings, so
    that their components have unit variance at initialisation, the setting in which
    the Transformer paper argues for the scale.  forward(k (B, n), v (B, n), q (B,))
    -> logits (B, values).
    """

    def __init__(self, score: str = "dot", d_k: int = 16, d: int = 32, keys: int = 16,
                 values: int = 16):
        super().__init__()
        if score not in SCORES:
            raise ValueError(f"score must be one of {SCORES}, got {score!r}")
        check_positive_int(d_k, "d_k"), check_positive_int(d, "d")
        self.score, self.d_k = score, d_k
        self.key_embedding = nn.Embedding(keys, d)            # N(0, 1) rows
        self.value_embedding = nn.Embedding(values, d)
        self.W_q = nn.Linear(d, d_k, bias=False)
        self.W_k = nn.Linear(d, d_k, bias=False)
        for lin in (self.W_q, self.W_k):
            nn.init.normal_(lin.weight, std=d ** -0.5)
        if score == "additive":
            self.w_v = nn.Linear(d_k, 1, bias=False)
        self.out = nn.Linear(d, values)

    def scores(self, k: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """k (B, n) ids, q (B,) ids -> scores (B, n)"""
        qh = self.W_q(self.key_embedding(q))                   # (B, d_k)
        kh = self.W_k(self.key_embedding(k))                   # (B, n, d_k)
        if self.score == "additive":
            return self.w_v(torch.tanh(qh[:, None] + kh)).squeeze(-1)
        s = (kh @ qh[:, :, None]).squeeze(-1)                  # (B, n)
        return s / math.sqrt(self.d_k) if self.score == "dot" else s

    def forward(self, k, v, q):
        w = self.scores(k, q).softmax(-1)                      # (B, n)
        return self.out((w[:, :, None] * self.value_embedding(v)).sum(1))


def retrieval_run(score: str = "dot", d_k: int = 16, seed: int = 0, steps: int = 120,
                  batch_size: int = 64, lr: float = 3e-3, pairs: int = 8,
                  n_eval: int = 2000) -> dict:
    """Train :class:`Retrieval` for ``steps`` Adam steps on fresh batches; return the
    held-out ``accuracy``, the per-step training loss (``step_loss``) and the mean
    largest attention weight at initialisation (``init_max_weight``)."""
    set_seed(seed)
    net = Retrieval(score, d_k)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        k, v, q, _ = retrieval_batch(512, pairs,
                                     generator=torch.Generator().manual_seed(1))
        init_max = net.scores(k, q).softmax(-1).max(-1).values.mean().item()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        k, v, q, y = retrieval_batch(batch_size, pairs, generator=gen)
        loss = F.cross_entropy(net(k, v, q), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    g = torch.Generator().manual_seed(10_000 + seed)
    with torch.no_grad():
        k, v, q, y = retrieval_batch(n_eval, pairs, generator=g)
        acc = net(k, v, q).argmax(-1).eq(y).float().mean().item()
    return {"accuracy": acc, "step_loss": losses, "init_max_weight": init_max}


# ---------------------------------------------------------- a local motif, three priors
def motif_batch(n: int, length: int = 16, vocab: int = 6,
                generator: torch.Generator | None = None):
    """Random sequences x (n, length) over ``vocab`` ids; y (n,) = 1 when the bigram
    ``0 1`` (id 0 directly followed by id 1) occurs somewhere, else 0.  Half of the
    sequences get one planted, so the two classes are about balanced."""
    check_positive_int(n, "n"), check_positive_int(length, "length", minimum=2)
    check_positive_int(vocab, "vocab", minimum=3)
    x = torch.randint(2, vocab, (n, length), generator=generator)    # no 0 or 1 yet
    noise = torch.rand(n, length, generator=generator) < 0.08         # scattered 0s, 1s
    x = torch.where(noise, torch.randint(2, (n, length), generator=generator), x)
    plant = torch.rand(n, generator=generator) < 0.5
    at = torch.randint(length - 1, (n,), generator=generator)
    rows = torch.arange(n)[plant]
    x[rows, at[plant]], x[rows, at[plant] + 1] = 0, 1
    y = ((x[:, :-1] == 0) & (x[:, 1:] == 1)).any(1).long()
    return x, y


class MotifClassifier(nn.Module):
    """Embedding, one sequence layer, max over positions, a linear read-out.

    kind "transformer": + sinusoidal positions, one post-norm encoder block (4 heads);
    "gru": one GRU layer; "cnn": two causal convolutions (k = 3, GELU).  All of width
    ``d``.  forward(x (B, T) ids) -> logits (B, 2).
    """

    KINDS = ("transformer", "gru", "cnn")

    def __init__(self, kind: str, vocab: int = 6, d: int = 32):
        super().__init__()
        if kind not in self.KINDS:
            raise ValueError(f"kind must be one of {self.KINDS}, got {kind!r}")
        self.kind = kind
        self.embedding = nn.Embedding(vocab, d)
        if kind == "transformer":
            self.pos = PositionalEncoding(d, max_len=256)
            self.layer = EncoderBlock(d, 4, 2 * d)
        elif kind == "gru":
            self.layer = nn.GRU(d, d, batch_first=True)
        else:
            self.layer = nn.ModuleList(nn.Conv1d(d, d, 3) for _ in range(2))
        self.out = nn.Linear(d, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embedding(x)                                            # (B, T, d)
        if self.kind == "transformer":
            h = self.layer(self.pos(h * math.sqrt(h.shape[-1])))
        elif self.kind == "gru":
            h = self.layer(h)[0]
        else:
            h = h.transpose(1, 2)                                        # (B, d, T)
            for conv in self.layer:
                h = F.gelu(conv(F.pad(h, (2, 0))))
            h = h.transpose(1, 2)
        return self.out(h.max(1).values)


def motif_run(kind: str = "transformer", n_train: int = 1000, seed: int = 0,
              steps: int = 200, batch_size: int = 32, lr: float = 3e-3,
              n_test: int = 2000) -> dict:
    """Train ``MotifClassifier(kind)`` on ``n_train`` sequences (the same ones for every
    kind at a seed) for ``steps`` Adam steps; return held-out ``accuracy``,
    ``train_accuracy`` and ``params``."""
    check_positive_int(n_train, "n_train")
    data = torch.Generator().manual_seed(seed)
    x, y = motif_batch(n_train, generator=data)
    xt, yt = motif_batch(n_test, generator=torch.Generator().manual_seed(99_999))
    set_seed(seed)
    net = MotifClassifier(kind)
    if kind == "transformer":
        set_fused_attention(net, True)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    order = torch.Generator().manual_seed(seed + 1)
    for _ in range(steps):
        idx = torch.randint(n_train, (batch_size,), generator=order)
        loss = F.cross_entropy(net(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    net.eval()
    with torch.no_grad():
        acc = net(xt).argmax(-1).eq(yt).float().mean().item()
        train_acc = net(x).argmax(-1).eq(y).float().mean().item()
    return {"accuracy": acc, "train_accuracy": train_acc,
            "params": sum(p.numel() for p in net.parameters())}


# --------------------------------------------------- depth with and without residuals
class DepthStack(nn.Module):
    """``depth`` post-norm blocks ``h = norm(h + f(h))`` (``residual=True``) or
    ``h = norm(f(h))`` (plain), f = Linear-ReLU-Linear of width ``width``; a linear
    read-in and read-out.  forward(x (B, d_in)) -> (B, 1)."""

    def __init__(self, depth: int, residual: bool = True, d_in: int = 8,
                 width: int = 32):
        super().__init__()
        check_positive_int(depth, "depth")
        self.residual = residual
        self.inp = nn.Linear(d_in, width)
        self.fs = nn.ModuleList(nn.Sequential(nn.Linear(width, width), nn.ReLU(),
                                              nn.Linear(width, width))
                                for _ in range(depth))
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(depth))
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for f, norm in zip(self.fs, self.norms):
            h = norm(h + f(h)) if self.residual else norm(f(h))
        return self.head(h)


def depth_run(depth: int = 2, residual: bool = True, seed: int = 0, steps: int = 300,
              n_train: int = 512, batch_size: int = 64, lr: float = 1e-3) -> dict:
    """Fit a fixed random teacher (a 2-layer tanh network of 8 inputs) with
    :class:`DepthStack` for ``steps`` Adam steps; the teacher and data depend on nothing
    but a fixed seed, the student's weights and batches on ``seed``.  Returns
    ``step_loss`` (training MSE of each step), ``train_loss`` (MSE on the whole training
    set at the end, relative to the targets' variance) and ``seconds``."""
    g = torch.Generator().manual_seed(2024)
    x = torch.randn(n_train, 8, generator=g)
    W1, W2 = torch.randn(8, 32, generator=g), torch.randn(32, 1, generator=g)
    y = torch.tanh(x @ W1 / 8 ** 0.5) @ W2 / 32 ** 0.5
    y = (y - y.mean()) / y.std()
    set_seed(seed)
    net = DepthStack(depth, residual)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    order = torch.Generator().manual_seed(seed)
    losses, t0 = [], time.perf_counter()
    for _ in range(steps):
        idx = torch.randint(n_train, (batch_size,), generator=order)
        loss = F.mse_loss(net(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        final = F.mse_loss(net(x), y).item()
    return {"step_loss": losses, "train_loss": final,
            "seconds": time.perf_counter() - t0}
