"""Small tasks that isolate one question each (chapters 10-12).

* :func:`retrieval_run` -- key-value lookup through ONE attention layer whose score
  function is the only thing that changes: scaled dot product, unscaled dot product or
  additive, at a small or a large d_k (is additive better at large d_k, note 003?).
* :func:`motif_run` -- does a sequence contain the bigram ``0 1``?  A Transformer
  encoder, one with local attention, a GRU and a CNN on training sets of different
  sizes, each trained until its validation loss stops improving (weak priors need
  more data, note 002); :func:`order_blind_accuracy`, the best that ignores order.
* :func:`recall_positions_run` -- recall the first token of a sequence after many
  distractors: a GRU against attention with different position codes (note 003).
* :func:`dates_seq2seq_run` -- chapter 8's date task for a GRU encoder-decoder with
  additive attention (Bahdanau) and for the Transformer, same recipe and budget.
* :func:`dates_decoder_run` -- chapter 12's dates for a decoder-only model and the
  variants that test why it writes malformed dates (:class:`PrefixGPT`).
* :func:`depth_run` -- a stack of Add & Norm blocks with and without the residual
  path, trained on a regression task (the "degradation" of deep plain stacks, note 004).

Every ``*_run`` takes a ``seed`` and returns a dict of plain numbers and lists, so that
:class:`d2lmini.experiments.Runner` can train several in worker processes.
"""
from __future__ import annotations

import functools
import math
import time
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .attention import set_fused_attention
from .gpt import GPT
from .masks import causal_mask
from .text import pad_batch
from .transformer import EncoderBlock, LearnedPositionalEncoding, PositionalEncoding
from .utils import check_positive_int, check_tensor, set_seed

__all__ = ["retrieval_batch", "Retrieval", "retrieval_run", "motif_batch",
           "order_blind_accuracy", "band_mask", "BiasedEncoderBlock", "MotifClassifier",
           "motif_run", "RECALL_MODELS", "recall_model", "gru_memory_profile",
           "recall_positions_run", "PROBE", "dates_seq2seq_run", "date_lm_batch",
           "PrefixGPT", "greedy_answers", "DATE_VARIANTS", "dates_decoder_run",
           "DepthStack", "depth_run", "SCORES"]

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


# ---------------------------------------------------------- a local motif, four priors
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


def order_blind_accuracy(x_test: torch.Tensor, y_test: torch.Tensor,
                         n_fit: int = 200_000, seed: int = 12_345) -> dict:
    """The best a classifier can do on the motif task without the order of the
    tokens: it knows how many 0s and 1s a sequence holds (all an order-blind model
    can use, since the other ids carry no information), and predicts the majority
    label of sequences with those counts, estimated from ``n_fit`` fresh sequences.
    Returns ``{"order_blind": accuracy on (x_test, y_test), "majority": always
    predicting the commoner label, "both_present": the rule 'holds a 0 and a 1'}``."""
    x, y = motif_batch(n_fit, length=x_test.shape[1],
                       generator=torch.Generator().manual_seed(seed))
    L = x.shape[1] + 1
    key = lambda s: (s == 0).sum(1) * L + (s == 1).sum(1)        # (count 0, count 1)
    ones = torch.zeros(L * L).index_add_(0, key(x), y.float())
    seen = torch.zeros(L * L).index_add_(0, key(x), torch.ones(len(y)))
    predict = (ones > seen / 2).long()[key(x_test)]
    both = ((x_test == 0).any(1) & (x_test == 1).any(1)).long()
    majority = max(y_test.float().mean().item(), 1 - y_test.float().mean().item())
    return {"order_blind": predict.eq(y_test).float().mean().item(),
            "majority": majority,
            "both_present": both.eq(y_test).float().mean().item()}


def band_mask(T: int, reach: int = 1, device=None) -> torch.Tensor:
    """bool (1, 1, T, T): True where |i - j| <= reach (each position attends to
    itself and its ``reach`` neighbours on either side)."""
    i = torch.arange(T, device=device)
    return ((i[:, None] - i[None, :]).abs() <= reach)[None, None]


class BiasedEncoderBlock(EncoderBlock):
    """An :class:`~d2lmini.EncoderBlock` whose self-attention scores get an additive
    float bias ``bias(T)`` of shape (h, T, T) (a learned relative position bias, say)
    before the softmax.  Same parameters and names as the plain block, plus the bias
    module's."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, bias: nn.Module):
        super().__init__(d_model, num_heads, d_ff)
        self.bias = bias

    def _sa(self, x, mask):
        attn, T = self.self_attn, x.shape[1]
        b = self.bias(T)
        if not isinstance(b, torch.Tensor) or tuple(b.shape) != (attn.num_heads, T, T):
            got = tuple(b.shape) if isinstance(b, torch.Tensor) else type(b).__name__
            raise ValueError(f"bias({T}) must return a float tensor (num_heads, T, T) "
                             f"= ({attn.num_heads}, {T}, {T}), got {got}")
        b = b.to(x.dtype)
        if mask is not None:
            b = b.masked_fill(~mask, float("-inf"))
        q, k, v = (attn.split_heads(W(x)) for W in (attn.W_q, attn.W_k, attn.W_v))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=b)
        return self.dropout1(attn.W_o(attn.combine_heads(out)))


class MotifClassifier(nn.Module):
    """Embedding, one sequence layer, max over positions, a linear read-out.

    kind "transformer": token embedding * sqrt(d) + sinusoidal positions, one
    post-norm encoder block (4 heads), attention over all positions; "local
    attention": the same, each position attending only to itself and its two
    neighbours (:func:`band_mask`); "gru": one GRU layer; "cnn": two causal
    convolutions (k = 3, GELU).  All of width ``d``.

    ``embed_std``: the standard deviation of the token embedding's initial entries
    (attention kinds; default ``d ** -0.5``, so that after the sqrt(d) scale a token
    and a position code have entries of the same size, as in ``d2l.Transformer``;
    1.0, torch's default, makes the tokens sqrt(d) times larger than the positions).
    ``bias``: a module, ``bias(T) -> (4, T, T)`` float, added to the attention
    scores (attention kinds; :class:`BiasedEncoderBlock`).
    forward(x (B, T) ids) -> logits (B, 2).
    """

    KINDS = ("transformer", "local attention", "gru", "cnn")

    def __init__(self, kind: str, vocab: int = 6, d: int = 32,
                 embed_std: float | None = None, bias: nn.Module | None = None):
        super().__init__()
        if kind not in self.KINDS:
            raise ValueError(f"kind must be one of {self.KINDS}, got {kind!r}")
        attention = kind in ("transformer", "local attention")
        if bias is not None and not (attention and isinstance(bias, nn.Module)):
            raise ValueError("bias must be an nn.Module, for an attention kind "
                             f"('transformer' or 'local attention'), got "
                             f"{type(bias).__name__} for kind {kind!r}")
        self.kind = kind
        self.embedding = nn.Embedding(vocab, d)
        if attention:
            std = d ** -0.5 if embed_std is None else embed_std
            if not (isinstance(std, (int, float)) and 0 < std < math.inf):
                raise ValueError(f"embed_std must be a positive number, got {std!r}")
            nn.init.normal_(self.embedding.weight, std=std)
            self.pos = PositionalEncoding(d, max_len=256)
            self.layer = (EncoderBlock(d, 4, 2 * d) if bias is None
                          else BiasedEncoderBlock(d, 4, 2 * d, bias))
        elif kind == "gru":
            self.layer = nn.GRU(d, d, batch_first=True)
        else:
            self.layer = nn.ModuleList(nn.Conv1d(d, d, 3) for _ in range(2))
        self.out = nn.Linear(d, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embedding(x)                                            # (B, T, d)
        if self.kind in ("transformer", "local attention"):
            mask = (band_mask(x.shape[1], 1, x.device)
                    if self.kind == "local attention" else None)
            h = self.layer(self.pos(h * math.sqrt(h.shape[-1])), mask)
        elif self.kind == "gru":
            h = self.layer(h)[0]
        else:
            h = h.transpose(1, 2)                                        # (B, d, T)
            for conv in self.layer:
                h = F.gelu(conv(F.pad(h, (2, 0))))
            h = h.transpose(1, 2)
        return self.out(h.max(1).values)


def _accuracy_and_loss(net: nn.Module, x: torch.Tensor, y: torch.Tensor):
    with torch.no_grad():
        logits = net(x)
    return (logits.argmax(-1).eq(y).float().mean().item(),
            F.cross_entropy(logits, y).item())


def motif_run(kind: str = "transformer", n_train: int = 1000, seed: int = 0,
              steps: int = 200, batch_size: int = 32, lr: float = 3e-3,
              n_test: int = 2000, patience: int | None = None, eval_every: int = 100,
              n_val: int = 1000, embed_std: float | None = None,
              bias: nn.Module | None = None) -> dict:
    """Train ``MotifClassifier(kind)`` on ``n_train`` sequences (the same ones for every
    kind at a seed) with Adam, batches of ``batch_size`` drawn with replacement.

    ``patience=None``: exactly ``steps`` steps, the final model is scored.  With
    ``patience``: early stopping.  Every ``eval_every`` steps the accuracy and loss on
    ``n_val`` validation sequences (fixed per seed, never trained on) are measured;
    training stops when the validation accuracy has not improved for ``patience``
    steps (or after ``steps``), and the weights with the best validation accuracy
    (ties: the lower validation loss) are scored.

    Returns held-out ``accuracy`` (on ``n_test`` sequences, the same for every run),
    ``train_accuracy`` (on the ``n_train`` training sequences), ``val_accuracy``,
    ``params``, ``best_step``, ``steps`` run, ``seconds`` and, with ``patience``,
    ``curve``: ``{"step", "train_accuracy", "val_accuracy", "train_loss",
    "val_loss"}`` lists, one entry per evaluation.
    """
    check_positive_int(n_train, "n_train"), check_positive_int(steps, "steps")
    if patience is not None:
        check_positive_int(patience, "patience")
        check_positive_int(eval_every, "eval_every")
    x, y = motif_batch(n_train, generator=torch.Generator().manual_seed(seed))
    xv, yv = motif_batch(n_val, generator=torch.Generator().manual_seed(50_000 + seed))
    xt, yt = motif_batch(n_test, generator=torch.Generator().manual_seed(99_999))
    set_seed(seed)
    net = MotifClassifier(kind, embed_std=embed_std, bias=bias)
    if kind in ("transformer", "local attention") and bias is None:
        set_fused_attention(net, True)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    order = torch.Generator().manual_seed(seed + 1)
    curve = {k: [] for k in ("step", "train_accuracy", "val_accuracy", "train_loss",
                             "val_loss")}
    best, best_step, best_state = (math.inf, math.inf), 0, None
    best_acc, gained = -1.0, 0                  # last step the val accuracy improved
    t0, step = time.perf_counter(), 0
    while step < steps:
        net.train()
        idx = torch.randint(n_train, (batch_size,), generator=order)
        loss = F.cross_entropy(net(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if patience is not None and (step % eval_every == 0 or step == steps):
            net.eval()
            (ta, tl), (va, vl) = _accuracy_and_loss(net, x, y), \
                _accuracy_and_loss(net, xv, yv)
            for k, v in zip(curve, (step, ta, va, tl, vl)):
                curve[k].append(v)
            if (-va, vl) < best:                    # higher accuracy, then lower loss
                best, best_step = (-va, vl), step
                best_state = {k: v.clone() for k, v in net.state_dict().items()}
            if va > best_acc:
                best_acc, gained = va, step
            elif step - gained >= patience:
                break
    if best_state is not None:
        net.load_state_dict(best_state)
    net.eval()
    out = {"accuracy": _accuracy_and_loss(net, xt, yt)[0],
           "train_accuracy": _accuracy_and_loss(net, x, y)[0],
           "val_accuracy": _accuracy_and_loss(net, xv, yv)[0],
           "params": sum(p.numel() for p in net.parameters()),
           "best_step": best_step if patience is not None else step, "steps": step,
           "seconds": time.perf_counter() - t0}
    if patience is not None:
        out["curve"] = curve
    return out


# ------------------------------------------------ recall by position: longer, other PEs
RECALL_MODELS = ("gru", "attention", "attention, unit tokens",
                 "attention, learned positions")


def recall_model(model: str, vocab: int = 8) -> nn.Module:
    """The recall models of chapter 11: ``"gru"`` and ``"attention"`` are
    :class:`~d2lmini.experiments.RecallGRU` and
    :class:`~d2lmini.experiments.RecallAttention` (token embeddings drawn N(0, 1),
    times sqrt(d), plus sinusoidal positions); ``"attention, unit tokens"`` draws the
    token embeddings N(0, 1/d), so that after the sqrt(d) scale they are as large as
    the position code; ``"attention, learned positions"`` replaces the sinusoids by a
    trained table of 64 positions (N(0, 1/2) at the start).  Everything else, and at
    one seed the shared initial weights, are the same."""
    from .experiments import RecallAttention, RecallGRU
    if model not in RECALL_MODELS:
        raise ValueError(f"model must be one of {RECALL_MODELS}, got {model!r}")
    if model == "gru":
        return RecallGRU(vocab=vocab)
    net = RecallAttention(vocab=vocab)
    d = net.embedding.weight.shape[1]
    if model == "attention, unit tokens":
        with torch.no_grad():
            net.embedding.weight.mul_(d ** -0.5)
    elif model == "attention, learned positions":
        net.pos = LearnedPositionalEncoding(d, max_len=64)       # T <= 64 here
    return net


def gru_memory_profile(net: nn.Module, T: int = 64, batch_size: int = 16,
                       vocab: int = 8, seed: int = 0) -> dict:
    """How a recall GRU (``net.embedding``, ``net.rnn``) treats a sequence of ``T``
    random tokens: ``grad[t] = ||d h_t / d e_0||``, how strongly its state at t still
    depends on the first embedded token (t = 0..T-1), and ``z_mean[t]``, the mean
    update gate at step t (z = 1: keep the state unchanged)."""
    from .cost import gradient_by_distance
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(vocab, (batch_size, T), generator=g)
    rnn = net.rnn
    e = net.embedding(x).detach()
    grad = gradient_by_distance(lambda z: rnn(z)[0], e)
    with torch.no_grad():
        h = rnn(e)[0]                                               # (B, T, H)
        h_prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], 1)
        W_iz, W_hz = rnn.weight_ih_l0.chunk(3)[1], rnn.weight_hh_l0.chunk(3)[1]
        b_iz, b_hz = rnn.bias_ih_l0.chunk(3)[1], rnn.bias_hh_l0.chunk(3)[1]
        z = torch.sigmoid(e @ W_iz.T + b_iz + h_prev @ W_hz.T + b_hz)  # (B, T, H)
    return {"grad": grad.tolist(), "z_mean": z.mean((0, 2)).tolist()}


def recall_positions_run(model: str = "gru", seed: int = 0, steps: int = 300,
                         max_distance: int = 48,
                         eval_distances: Sequence[int] = (1, 8, 24, 48), vocab: int = 8,
                         batch_size: int = 64, lr: float = 3e-3, n_eval: int = 500,
                         marked: bool = False, profile: bool = False) -> dict:
    """:func:`d2lmini.experiments.recall_run` for every model of :func:`recall_model`
    (the same batches and evaluation; for "gru" and "attention" the same numbers):
    recall the first token after 1..``max_distance`` distractors, ``steps`` Adam
    steps.  Returns ``{"accuracy": {distance: share right}, "params", "seconds",
    "step_loss"}``, and with ``profile=True`` (GRU only) ``"profile"`` and
    ``"profile_init"``: :func:`gru_memory_profile` after training and at the
    start."""
    from .experiments import recall_batch
    check_positive_int(steps, "steps")
    set_seed(seed)
    net = recall_model(model, vocab)
    if model != "gru":
        set_fused_attention(net, True)
    out = {}
    if profile:
        if model != "gru":
            raise ValueError("profile=True measures a GRU: model must be 'gru'")
        out["profile_init"] = gru_memory_profile(net, vocab=vocab)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    losses, t0 = [], time.perf_counter()
    for _ in range(steps):
        dist = int(torch.randint(1, max_distance + 1, (1,), generator=gen))
        x, y = recall_batch(batch_size, dist, vocab, gen, marked)
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    out["seconds"] = time.perf_counter() - t0
    net.eval()
    acc, g = {}, torch.Generator().manual_seed(10_000 + seed)
    with torch.no_grad():
        for dist in eval_distances:
            x, y = recall_batch(n_eval, dist, vocab, g, marked)
            acc[dist] = net(x).argmax(-1).eq(y).float().mean().item()
    if profile:
        out["profile"] = gru_memory_profile(net, vocab=vocab)
    out.update(accuracy=acc, params=sum(p.numel() for p in net.parameters()),
               step_loss=losses)
    return out


# ------------------------------------------- dates: a GRU seq2seq beside a Transformer
PROBE = ("3 March 1998", "1998-03-03")


def dates_seq2seq_run(model: str = "gru", seed: int = 0, steps: int = 1200,
                      batch_size: int = 64, lr: float = 5e-3, warmup: int = 50,
                      smoothing: float = 0.1,
                      evals: Sequence[int] = (100, 200, 400, 800),
                      embed_size: int = 64, num_hiddens: int = 96) -> dict:
    """Chapter 8's recipe on the dates (Adam, beta_2 = 0.98, peak lr ``lr``, ``warmup``
    steps then cosine decay, label smoothing, bucketed batches of ``batch_size``,
    ``steps`` steps) for ``model``: ``"transformer"``, chapter 8's model (one encoder
    and one decoder block, d_model 64, 4 heads, d_ff 256), or ``"gru"``, a
    :class:`~d2lmini.GRUSeq2Seq` with additive attention (``embed_size``,
    ``num_hiddens``).  The same seed gives the same batches for both.

    Returns the held-out metrics of ``ablation.evaluate`` at the end (``exact_match``,
    ``loss``, ...), ``params``, ``seconds`` (training only), ``seconds_per_step``,
    ``curve`` (held-out exact match and loss after each of ``evals`` and at the end,
    with the training seconds so far) and ``alignment``: the attention of the probe
    date's answer rows over its source characters (T_tgt, S), averaged over heads
    (the Transformer's decoder cross-attention)."""
    from .ablation import evaluate
    from .experiments import dates
    from .rnn import GRUSeq2Seq
    from .schedules import warmup_cosine_schedule
    from .text import bucket_batches, pad_batch
    from .transformer import Transformer, label_smoothing_cross_entropy
    if model not in ("gru", "transformer"):
        raise ValueError(f"model must be 'gru' or 'transformer', got {model!r}")
    check_positive_int(steps, "steps")
    data = dates()
    V_src, V_tgt = len(data.src_vocab), len(data.tgt_vocab)
    set_seed(seed)
    net = (GRUSeq2Seq(V_src, V_tgt, embed_size=embed_size, num_hiddens=num_hiddens)
           if model == "gru" else
           Transformer(V_src, V_tgt, d_model=64, num_heads=4, num_layers=1, d_ff=256,
                       dropout=0.0))
    if model == "transformer":
        set_fused_attention(net, True)
    opt = torch.optim.Adam(net.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt,
                                              warmup_cosine_schedule(warmup, steps))
    gen = torch.Generator().manual_seed(seed)
    curve = {"step": [], "seconds": [], "exact_match": [], "loss": []}
    step, losses, seconds = 0, [], 0.0

    def measure():
        if model == "transformer":
            set_fused_attention(net, False)
        r = evaluate(net, *data.test)
        if model == "transformer":
            set_fused_attention(net, True)
        for k, v in (("step", step), ("seconds", seconds),
                     ("exact_match", r["exact_match"]), ("loss", r["loss"])):
            curve[k].append(v)
        return r

    net.train()
    t0 = time.perf_counter()
    while step < steps:
        for src, tgt_in, tgt_out in bucket_batches(*data.train, batch_size,
                                                   generator=gen):
            loss = label_smoothing_cross_entropy(net(src, tgt_in), tgt_out, smoothing,
                                                 ignore_index=data.tgt_vocab.pad_id)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            losses.append(loss.item())
            if step in evals:
                seconds += time.perf_counter() - t0
                measure()
                net.train()
                t0 = time.perf_counter()
            if step >= steps:
                break
    seconds += time.perf_counter() - t0
    result = measure()
    net.eval()
    if model == "transformer":
        set_fused_attention(net, False)
    src = pad_batch([data.src_vocab.encode(PROBE[0])])
    tgt = pad_batch([data.tgt_vocab.encode(PROBE[1], bos=True)])
    with torch.no_grad():
        net(src, tgt)
    w = (net.decoder.attention_weights[0] if model == "gru" else
         net.decoder.blocks[-1].cross_attn.attention_weights[0].mean(0))  # (T, S)
    result.pop("model", None)
    result.update(params=sum(p.numel() for p in net.parameters()), seconds=seconds,
                  seconds_per_step=seconds / steps, step_loss=losses, curve=curve,
                  alignment=w.tolist())
    return result


# ----------------------------------------- dates with a decoder-only model (chapter 12)
def date_lm_batch(pairs, vocab):
    '''"3 March 1998" -> ids of "3 March 1998=1998-03-03<eos>" (right-padded), and the
    targets: the sequence shifted by one, <pad> (no loss) on the prompt's positions.
    ``vocab`` holds every source character and "=".  -> (x (n, T), y (n, T)).'''
    seq = pad_batch([vocab.encode(list(s) + ["="] + list(t), eos=True)
                     for s, t in pairs])
    prompt_len = torch.tensor([len(s) + 1 for s, _ in pairs])             # with "="
    x, y = seq[:, :-1].clone(), seq[:, 1:].clone()
    x[x == vocab.eos_id] = vocab.pad_id              # <eos> is only ever a target
    y[torch.arange(y.shape[1]) < prompt_len[:, None] - 1] = vocab.pad_id
    return x, y


class PrefixGPT(GPT):
    """A :class:`~d2lmini.GPT` for prompt-then-answer sequences whose prompt ends with
    the separator ``sep_id``, with two possible changes (same parameters as ``GPT``):

    ``positions="from_sep"``: token t gets position ``sep_position + t - e`` (e: the
    separator's column), so the answer's characters sit at the same positions in
    every example, however long the prompt (default ``"count"``: as ``GPT``, the
    number of real tokens before it);
    ``prefix="bidirectional"``: a prefix LM, every token sees the whole prompt (up to
    and including the separator), so the prompt is read both ways; the answer stays
    causal (default ``"causal"``).

    forward(tokens (B, T)) -> logits (B, T, V); no KV cache.
    """

    def __init__(self, vocab_size: int, sep_id: int, positions: str = "count",
                 prefix: str = "causal", sep_position: int = 32, **kw):
        super().__init__(vocab_size, **kw)
        if positions not in ("count", "from_sep"):
            raise ValueError(f"positions must be 'count' or 'from_sep', got "
                             f"{positions!r}")
        if prefix not in ("causal", "bidirectional"):
            raise ValueError(f"prefix must be 'causal' or 'bidirectional', got "
                             f"{prefix!r}")
        self.sep_id, self.positions, self.prefix = sep_id, positions, prefix
        self.sep_position = sep_position

    def forward(self, tokens: torch.Tensor, cache=None, attention_mask=None):
        if cache is not None or attention_mask is not None:
            raise ValueError("PrefixGPT takes tokens only (no cache, no mask)")
        check_tensor(tokens, "tokens", ndim=2)
        self.check_tokens(tokens)
        B, T = tokens.shape
        real = self.real_tokens(tokens)                                  # (B, T)
        is_sep = tokens == self.sep_id
        e = torch.where(is_sep.any(1), is_sep.int().argmax(1), T)        # (B,)
        cols = torch.arange(T, device=tokens.device)
        if self.positions == "count":
            pos = real.cumsum(1) - 1
        else:
            pos = self.sep_position + cols[None] - e[:, None]
        allowed = causal_mask(T, tokens.device)                          # (1, 1, T, T)
        if self.prefix == "bidirectional":
            allowed = allowed | (cols[None, :] <= e[:, None])[:, None, None, :]
        mask = real[:, None, None, :] & allowed                          # (B, 1, T, T)
        x = self.embed(tokens, pos.clamp(min=0, max=self.max_len - 1))
        for blk in self.blocks:
            x = blk(x, mask)
        return self.lm_head(self.norm(x))


@torch.no_grad()
def greedy_answers(model: nn.Module, prompts: list[list[int]], n: int, eos_id: int,
                   pad_id: int = 0) -> list[list[int]]:
    """Greedy continuation of each prompt (a list of ids), by re-reading the whole
    sequence each step (works for :class:`PrefixGPT` as for ``GPT``): the prompts are
    left-padded into one batch; a row stops at ``eos_id``.  -> the written ids of
    each row, without ``eos_id``."""
    was = model.training
    model.eval()
    T0 = max(map(len, prompts))
    dev = model.embedding.weight.device
    ids = torch.tensor([[pad_id] * (T0 - len(p)) + p for p in prompts], device=dev)
    done = torch.zeros(len(prompts), dtype=torch.bool, device=dev)
    for _ in range(n):
        logits = model(ids)[:, -1]
        logits[:, pad_id] = float("-inf")
        nxt = logits.argmax(-1).masked_fill(done, pad_id)
        done |= nxt == eos_id
        ids = torch.cat([ids, nxt[:, None]], 1)
        if bool(done.all()):
            break
    model.train(was)
    return [[i for i in row if i not in (pad_id, eos_id)]
            for row in ids[:, T0:].tolist()]


DATE_VARIANTS = ("encoder-decoder", "decoder-only", "positions from =", "prefix LM")


@functools.lru_cache(maxsize=2)
def _date_lm_data(n_train: int = 20000, n_test: int = 1000):
    from .text import DateTranslation, Vocab
    train_set = DateTranslation(n_train, seed=0)
    test_set = DateTranslation(n_test, seed=1, exclude=train_set)
    vocab = Vocab(train_set.src_vocab.idx_to_token[4:] + ["="])
    return train_set, test_set, vocab


def dates_decoder_run(variant: str = "decoder-only", seed: int = 0, steps: int = 500,
                      batch_size: int = 32, lr: float = 5e-3, warmup: int = 50,
                      smoothing: float = 0.1) -> dict:
    """Chapter 12's date comparison, one run: ``variant`` in :data:`DATE_VARIANTS`,
    trained as the chapter trains its two models (Adam, beta_2 = 0.98, warm-up then
    cosine decay, label smoothing, bucketed batches, ``steps`` steps; the models are
    built in the chapter's order after ``set_seed(seed)``, so the three decoder-only
    variants start from the same weights, and seed 0 is the chapter's run).

    Returns ``exact_match`` (greedy, on the 1,000 held-out dates), ``wrong``,
    ``malformed`` (wrong answers not of the form YYYY-MM-DD), ``loss`` (held-out
    cross-entropy per answer token, teacher-forced, no smoothing), ``params``,
    ``seconds``."""
    import re

    from .schedules import warmup_cosine_schedule
    from .text import bucket_batches
    from .train import train
    from .transformer import Transformer, greedy_decode, label_smoothing_cross_entropy
    if variant not in DATE_VARIANTS:
        raise ValueError(f"variant must be one of {DATE_VARIANTS}, got {variant!r}")
    train_set, test_set, vocab = _date_lm_data()
    src_vocab, tgt_vocab = train_set.src_vocab, train_set.tgt_vocab
    set_seed(seed)
    encdec = Transformer(len(src_vocab), len(tgt_vocab), d_model=64, num_heads=4,
                         num_layers=1, d_ff=256, dropout=0.0)
    kw = dict(d_model=64, num_heads=4, num_layers=2, d_ff=256, max_len=48)
    sep = vocab.token_to_idx["="]
    net = {"encoder-decoder": lambda: encdec,
           "decoder-only": lambda: GPT(len(vocab), **kw),
           "positions from =": lambda: PrefixGPT(len(vocab), sep, "from_sep", **kw),
           "prefix LM": lambda: PrefixGPT(len(vocab), sep, prefix="bidirectional",
                                          **kw)}[variant]()
    ce = lambda logits, y: label_smoothing_cross_entropy(logits, y, smoothing,
                                                         ignore_index=0)
    opt = torch.optim.Adam(net.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine_schedule(warmup,
                                                                          steps))
    g = torch.Generator().manual_seed(seed)
    if variant == "encoder-decoder":
        src, tgt_in, tgt_out = train_set.tensors()
        batches = lambda: bucket_batches(src, tgt_in, tgt_out, batch_size, generator=g)
    else:
        x_train, y_train = date_lm_batch(train_set.pairs, vocab)
        batches = lambda: ((x, y) for x, _, y in bucket_batches(
            x_train, x_train, y_train, batch_size, generator=g))
    set_fused_attention(net)
    hist = train(net, ce, opt, batches, num_epochs=100, scheduler=sched,
                 max_steps=steps, progress=False)
    set_fused_attention(net, False)
    net.eval()
    wants = [t for _, t in test_set.pairs]
    with torch.no_grad():
        if variant == "encoder-decoder":
            s, ti, to = test_set.tensors()
            pred = greedy_decode(net, s, 11, tgt_vocab.bos_id, tgt_vocab.eos_id)
            written = ["".join(tgt_vocab.decode(row)) for row in pred.tolist()]
            logits, y = net(s, ti), to
        else:
            prompts = [vocab.encode(list(s) + ["="]) for s, _ in test_set.pairs]
            written = ["".join(vocab.decode(row)) for row in
                       greedy_answers(net, prompts, 11, vocab.eos_id, vocab.pad_id)]
            x, y = date_lm_batch(test_set.pairs, vocab)
            logits = net(x)
        loss = F.cross_entropy(logits.float().transpose(1, 2), y, ignore_index=0).item()
    wrong = [w for w, t in zip(written, wants) if w != t]
    return {"exact_match": 1 - len(wrong) / len(wants), "wrong": len(wrong),
            "malformed": sum(not re.fullmatch(r"\d{4}-\d{2}-\d{2}", w) for w in wrong),
            "loss": loss, "params": sum(p.numel() for p in net.parameters()),
            "seconds": hist.seconds, "examples": wrong[:8]}


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
