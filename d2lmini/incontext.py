"""Learning from the prompt: induction heads and few-shot learning of functions.

Two small experiments of chapter 15, after Olsson et al. (2022) and Garg et al. (2022):

* **Induction heads.**  :class:`AttentionOnly` is a Transformer without FFNs (token
  embedding + learned positions, ``num_layers`` pre-norm attention layers, a head).
  Trained on :func:`repeated_sequences` (n random tokens, then the same n again), it
  can predict the second half only by finding the earlier occurrence of the current
  token and copying the token that followed it.  :func:`head_scores` measures each
  head's previous-token score (weight on position t - 1) and induction score (weight
  on t - n + 1, the token after the current token's earlier occurrence);
  :func:`in_context_losses` the loss on the first and on the second half;
  ``model.head_mask`` (L, h) zeroes heads' outputs (ablation).
* **Few-shot functions.**  :func:`permutation_prompts` writes prompts
  x1 f(x1) x2 f(x2) ... for random permutations f of m letters; a GPT trained on them
  (loss on the f(x) tokens only) is asked f(x) after k examples of a permutation it
  never saw.  :func:`ideal_accuracy` is what a learner that knows the class (f is a
  bijection) but not f can reach: 1 on a query it has seen, 1 / (m - outputs seen)
  on one it has not.

Shapes: tokens (B, T) long; attention weights (L, B, h, T, T); head scores (L, h).
"""
from __future__ import annotations

import math
import numbers

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention, set_fused_attention
from .masks import causal_mask
from .norms import LayerNorm
from .utils import check_positive_int, check_tensor, set_seed

__all__ = ["AttentionOnly", "repeated_sequences", "head_scores", "in_context_losses",
           "train_induction", "permutation_prompts", "ideal_accuracy",
           "few_shot_accuracy", "train_few_shot", "held_out_permutations"]


# ------------------------------------------------------------------ induction heads
class AttentionOnly(nn.Module):
    """An attention-only Transformer: x = E[tokens] + P[positions]; for each layer
    x = x + attn(LN(x)) (causal, ``num_heads`` heads, no FFN); logits = head(LN(x)).

    ``num_heads``: one int for every layer, or one per layer.  ``head_mask``: a float
    buffer (num_layers, most heads), all ones; set entry (i, j) to 0 to remove head j
    of layer i (its slice of the concatenated heads, before W_o).
    forward(tokens (B, T)) -> logits (B, T, vocab_size); each layer keeps its last
    attention weights in ``layers[i].attention_weights`` when not fused.
    """

    def __init__(self, vocab_size: int, d_model: int = 64, num_heads=4,
                 num_layers: int = 2, max_len: int = 64):
        super().__init__()
        for name, v in (("vocab_size", vocab_size), ("d_model", d_model),
                        ("num_layers", num_layers), ("max_len", max_len)):
            check_positive_int(v, name)
        heads = ([num_heads] * num_layers if isinstance(num_heads, int)
                 else list(num_heads))
        if len(heads) != num_layers:
            raise ValueError(f"num_heads must be an int or one int per layer "
                             f"({num_layers}), got {num_heads!r}")
        for h in heads:
            check_positive_int(h, "num_heads")
            if d_model % h:
                raise ValueError(f"d_model={d_model} must be divisible by every "
                                 f"layer's head count, got {num_heads!r}")
        self.vocab_size, self.max_len, self.heads = vocab_size, max_len, heads
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Parameter(torch.randn(max_len, d_model) * 0.02)
        self.norms = nn.ModuleList(LayerNorm(d_model, fused=True)
                                   for _ in range(num_layers))
        self.layers = nn.ModuleList(MultiHeadAttention(d_model, h) for h in heads)
        self.norm = LayerNorm(d_model, fused=True)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        # head_mask[i, j] multiplies head j of layer i (padded with ones past its heads)
        self.register_buffer("head_mask", torch.ones(num_layers, max(heads)))
        for i, (attn, h) in enumerate(zip(self.layers, heads)):
            def zero_heads(module, args, i=i, h=h):     # before W_o: (B, T, h * d_k)
                x, = args
                m = self.head_mask[i, :h].repeat_interleave(d_model // h)
                return (x * m.to(x.dtype),)
            attn.W_o.register_forward_pre_hook(zero_heads)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        check_tensor(tokens, "tokens", ndim=2)
        T = tokens.shape[1]
        if T > self.max_len:
            raise ValueError(f"sequence of {T} tokens is longer than max_len="
                             f"{self.max_len}")
        x = self.embedding(tokens) + self.pos[:T]
        mask = causal_mask(T, tokens.device)
        for norm, attn in zip(self.norms, self.layers):
            h = norm(x)
            x = x + attn(h, h, h, mask)
        return self.lm_head(self.norm(x))

    @torch.no_grad()
    def attention(self, tokens: torch.Tensor) -> list:
        """Every layer's attention weights for ``tokens`` (B, T): a list of
        (B, h_i, T, T), one per layer."""
        fast = [a.fast for a in self.layers]
        was = self.training
        self.eval()
        try:
            for a in self.layers:
                a.fast = False
            self(tokens)
            return [a.attention_weights for a in self.layers]
        finally:
            for a, f in zip(self.layers, fast):
                a.fast = f
            self.train(was)


def repeated_sequences(batch_size: int, length: int, vocab_size: int,
                       lags: tuple[int, int] = (6, 16),
                       generator: torch.Generator | None = None) -> torch.Tensor:
    """``batch_size`` rows of ``length`` tokens that repeat with a period (lag) drawn
    per row from ``lags`` (inclusive): the first ``lag`` tokens are random ids
    1..vocab_size-1, every later token copies the one ``lag`` positions back ->
    (B, length) long.  Nothing in a row's first period can be predicted; everything
    after it can, but only by content: the lag changes from row to row, so no fixed
    offset finds it."""
    check_positive_int(batch_size, "batch_size")
    check_positive_int(length, "length", 2)
    check_positive_int(vocab_size, "vocab_size", 3)
    lo, hi = lags
    if not 1 <= lo <= hi < length:
        raise ValueError(f"lags must be (low, high) with 1 <= low <= high < length="
                         f"{length}, got {lags!r}")
    x = torch.randint(1, vocab_size, (batch_size, length), generator=generator)
    lag = torch.randint(lo, hi + 1, (batch_size, 1), generator=generator)
    return x.gather(1, torch.arange(length) % lag)               # x[t] = x[t mod lag]


def head_scores(weights: torch.Tensor, tokens: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """Each head's previous-token and induction scores from one layer's attention
    ``weights`` (B, h, T, T) on ``tokens`` (B, T):

    - previous-token score: mean over queries t >= 1 of the weight on key t - 1;
    - induction score (Olsson et al.'s prefix matching): mean, over the queries t
      whose token occurred before, of the total weight on the keys j <= t that
      FOLLOW an earlier occurrence (1 <= j <= t and tokens[j - 1] == tokens[t]).

    -> (prev (h,), induction (h,)): 1 for a head that always does it."""
    check_tensor(weights, "weights", ndim=4)
    check_tensor(tokens, "tokens", ndim=2)
    B, T = tokens.shape
    if (weights.shape[0], weights.shape[2], weights.shape[3]) != (B, T, T):
        raise ValueError(f"weights {tuple(weights.shape)} do not fit tokens "
                         f"{tuple(tokens.shape)}: expected ({B}, h, {T}, {T})")
    t = torch.arange(1, T)
    prev = weights[:, :, t, t - 1].mean((0, 2))                              # (h,)
    # follows[b, t, j]: key j comes right after an earlier occurrence of token t
    follows = torch.zeros(B, T, T, dtype=torch.bool, device=tokens.device)
    follows[:, :, 1:] = tokens[:, :, None] == tokens[:, None, :-1]
    follows &= torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril()
    has = follows.any(-1)                                                    # (B, T)
    mass = (weights * follows[:, None].to(weights.dtype)).sum(-1)          # (B, h, T)
    induction = (mass * has[:, None]).sum((0, 2)) / has.sum().clamp(min=1)
    return prev, induction


@torch.no_grad()
def in_context_losses(model: nn.Module, tokens: torch.Tensor,
                      early: tuple[int, int] = (1, 6),
                      late: tuple[int, int] | None = None) -> tuple:
    """Mean next-token loss at early and late positions of ``tokens`` (B, T):
    targets at positions early[0]..early[1]-1 (default 1..5: inside every row's first
    period, nothing to copy yet) and late[0]..late[1]-1 (default the last T // 2
    positions: after every row's first period) -> (early, late).  Olsson et al.'s
    in-context score is late - early; the in-context gain is early - late."""
    T = tokens.shape[1]
    late = (T - T // 2, T) if late is None else late
    was = model.training
    model.eval()
    try:
        logits = model(tokens[:, :-1])
    finally:
        model.train(was)
    loss = F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:],
                           reduction="none")              # column j: target at j + 1
    return (loss[:, early[0] - 1:early[1] - 1].mean().item(),
            loss[:, late[0] - 1:late[1] - 1].mean().item())


def train_induction(seed: int = 0, steps: int = 600, length: int = 32,
                    vocab_size: int = 32, d_model: int = 32, num_heads=2,
                    batch_size: int = 32, lr: float = 3e-3, every: int = 20,
                    eval_rows: int = 128) -> dict:
    """Train a 2-layer :class:`AttentionOnly` on :func:`repeated_sequences` from seed
    ``seed``; every ``every`` steps, on fixed held-out sequences, record the early and
    late losses, the in-context score (late - early) and the best previous-token score
    in layer 1 and induction score in layer 2.  -> {"model", "log": [{step, early,
    late, score, prev, induction}], "eval": the held-out tokens}."""
    check_positive_int(steps, "steps")
    check_positive_int(every, "every")
    set_seed(seed)
    model = AttentionOnly(vocab_size, d_model, num_heads, 2, length)
    set_fused_attention(model, True)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(seed)
    held = repeated_sequences(eval_rows, length, vocab_size,
                              generator=torch.Generator().manual_seed(10_000 + seed))
    log = []

    def record(step):
        early, late = in_context_losses(model, held)
        w = model.attention(held[:32])
        prev, ind = head_scores(w[0], held[:32])[0], head_scores(w[1], held[:32])[1]
        log.append({"step": step, "early": early, "late": late, "score": late - early,
                    "prev": prev.max().item(), "induction": ind.max().item()})

    record(0)
    for step in range(1, steps + 1):
        x = repeated_sequences(batch_size, length, vocab_size, generator=g)
        loss = F.cross_entropy(model(x[:, :-1]).transpose(1, 2), x[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % every == 0 or step == steps:
            record(step)
    return {"model": model, "log": log, "eval": held}


# ------------------------------------------------------------------ few-shot functions
def permutation_prompts(perms: torch.Tensor, pairs: int,
                        generator: torch.Generator | None = None):
    """Prompts x1 f(x1) ... x_pairs f(x_pairs) for the permutations ``perms`` (F, m)
    (row r maps letter i to perms[r, i]).  Inputs x are drawn uniformly with
    replacement from the m letters; input letter i is token 1 + i, output letter j
    is token 1 + m + j (0 is padding).  -> (tokens (F, 2 pairs) long, xs (F, pairs),
    ys (F, pairs)) with letters 0..m-1 in xs and ys."""
    if not isinstance(perms, torch.Tensor) or perms.dim() != 2:
        raise ValueError(f"perms must be a (F, m) tensor of permutations, got "
                         f"{getattr(perms, 'shape', type(perms).__name__)}")
    check_positive_int(pairs, "pairs")
    Fn, m = perms.shape
    xs = torch.randint(m, (Fn, pairs), generator=generator)
    ys = perms.gather(1, xs)
    tokens = torch.stack([1 + xs, 1 + m + ys], 2).reshape(Fn, 2 * pairs)
    return tokens, xs, ys


def ideal_accuracy(xs: torch.Tensor, ys: torch.Tensor, m: int) -> torch.Tensor:
    """The expected accuracy, at every pair i, of a learner that knows f is a
    permutation of m letters but not which: after the i examples before pair i, a
    query it has seen is answered right; one it has not is a guess among the outputs
    not yet seen.  xs, ys (F, pairs) -> (pairs,) mean over rows."""
    Fn, P = xs.shape
    acc = torch.zeros(Fn, P)
    for i in range(P):
        seen = (xs[:, :i] == xs[:, i:i + 1]).any(1)                          # (F,)
        outs = torch.zeros(Fn, m, dtype=torch.bool)
        if i:
            outs.scatter_(1, ys[:, :i], True)
        acc[:, i] = torch.where(seen, 1.0, 1.0 / (m - outs.sum(1)).clamp(min=1))
    return acc.mean(0)


@torch.no_grad()
def few_shot_accuracy(model: nn.Module, tokens: torch.Tensor, ys: torch.Tensor,
                      m: int, xs: torch.Tensor | None = None) -> dict:
    """Accuracy of ``model`` at every pair i (i = the number of examples before it):
    the argmax over the m output tokens at the position of x_i against f(x_i).
    -> {"all": (pairs,), and with ``xs``: "seen", "unseen": (pairs,) accuracy on the
    queries seen / not seen among the examples before (NaN where there are none)}."""
    was = model.training
    model.eval()
    try:
        logits = model(tokens)[:, 0::2, 1 + m:1 + 2 * m]                  # (F, P, m)
    finally:
        model.train(was)
    right = (logits.argmax(-1) == ys).float()                              # (F, P)
    out = {"all": right.mean(0)}
    if xs is not None:
        P = xs.shape[1]
        seen = torch.stack([(xs[:, :i] == xs[:, i:i + 1]).any(1) for i in range(P)], 1)
        nan = torch.tensor(float("nan"))
        out["seen"] = torch.stack([right[seen[:, i], i].mean() if seen[:, i].any()
                                   else nan for i in range(P)])
        out["unseen"] = torch.stack([right[~seen[:, i], i].mean() if (~seen[:, i]).any()
                                     else nan for i in range(P)])
    return out


def _random_perms(count: int, m: int, generator: torch.Generator) -> torch.Tensor:
    return torch.rand(count, m, generator=generator).argsort(1)


def held_out_permutations(seed: int = 0, count: int = 2000, m: int = 8) -> torch.Tensor:
    """The ``count`` permutations of m letters that :func:`train_few_shot` (from
    ``seed``) keeps out of training -> (count, m) long."""
    check_positive_int(count, "count")
    check_positive_int(m, "m", 2)
    return _random_perms(count, m, torch.Generator().manual_seed(50_000 + seed))


def train_few_shot(seed: int = 0, steps: int = 1500, m: int = 8, pairs: int = 9,
                   d_model: int = 64, num_heads: int = 4, num_layers: int = 2,
                   batch_size: int = 64, lr: float = 3e-3, test_functions: int = 2000
                   ) -> dict:
    """Train a ``d2l.GPT`` on prompts of random permutations of m letters (loss on the
    f(x) tokens only), every batch fresh functions, none of them among the
    ``test_functions`` permutations held out (drawn first, from ``seed``).  -> {"model",
    "test": (tokens, xs, ys) of the held-out functions, "m", "pairs", "steps"}."""
    from .gpt import GPT
    from .schedules import warmup_cosine_schedule
    check_positive_int(m, "m", 2)
    check_positive_int(pairs, "pairs", 2)
    check_positive_int(steps, "steps")
    gt = torch.Generator().manual_seed(50_000 + seed)
    test = _random_perms(test_functions, m, gt)
    held = {tuple(p) for p in test.tolist()}
    test_prompts = permutation_prompts(test, pairs, gt)
    set_seed(seed)
    model = GPT(1 + 2 * m, d_model=d_model, num_heads=num_heads,
                num_layers=num_layers, d_ff=4 * d_model, max_len=2 * pairs)
    set_fused_attention(model, True)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, warmup_cosine_schedule(max(1, steps // 20), steps, final=0.1))
    g = torch.Generator().manual_seed(seed)
    target = torch.zeros(2 * pairs, dtype=torch.bool)
    target[0::2] = True                     # at x_i the next token is f(x_i)
    for _ in range(steps):
        perms = _random_perms(batch_size, m, g)
        fresh = torch.tensor([tuple(p) not in held for p in perms.tolist()])
        tokens, _, _ = permutation_prompts(perms[fresh], pairs, g)
        logits = model(tokens[:, :-1])[:, target[:-1]]                  # (B, P, V)
        loss = F.cross_entropy(logits.transpose(1, 2), tokens[:, 1::2])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    return {"model": model, "test": test_prompts, "m": m, "pairs": pairs,
            "steps": steps, "seed": seed}
