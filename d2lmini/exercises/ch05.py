"""Chapter 5 (masks): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`.
"""
from __future__ import annotations

import contextlib
import math

import torch
import torch.nn.functional as F
from torch import nn

from .core import Wrong, call, expect, forbid, forbid_loops, register
from .core import fresh_generator as _gen


@contextlib.contextmanager
def _one_thread():
    """Tiny tensors train faster on one thread (and do not fight other programs)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _check_bool_mask(got, shape, case):
    if not isinstance(got, torch.Tensor):
        raise Wrong(f"expected a torch.Tensor ({case}), got {type(got).__name__}")
    if got.dtype != torch.bool:
        raise Wrong(f"expected a boolean mask, True where attention is allowed "
                    f"({case}), got dtype {got.dtype}")
    if tuple(got.shape) != tuple(shape):
        raise Wrong(f"wrong shape ({case}): expected {tuple(shape)}, got "
                    f"{tuple(got.shape)}")


def _explain(got, want, case, names=("query", "key")):
    """Wrong with the first (query, key) pair where two (…, T, T) masks differ."""
    diff = (got != want).nonzero()
    if len(diff):
        *_, i, j = diff[0].tolist()
        allowed = "allowed" if bool(want[tuple(diff[0].tolist())]) else "masked"
        raise Wrong(f"{names[0]} {i} and {names[1]} {j} should be {allowed} ({case}); "
                    f"{len(diff)} entries differ")


# ------------------------------------------------------------------ 1. sliding window
@register("ch5_sliding_window", "sliding_window_mask(T, window)", chapter=5,
          build=True)
def _sliding_window(answer):
    forbid_loops(answer)
    forbid(answer, ["local_causal_mask"], "build the band yourself")
    g = _gen()
    cases = [(6, 2), (9, 1), (7, 7), (5, 9), (8, 3), (1, 1)]
    cases.append((int(torch.randint(10, 20, (1,), generator=g)),
                  int(torch.randint(2, 6, (1,), generator=g))))
    for T, window in cases:
        case = f"T = {T}, window = {window}"
        got = call(answer, T, window, case=case)
        _check_bool_mask(got, (1, 1, T, T), case)
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        want = ((i - j >= 0) & (i - j < window))[None, None]
        _explain(got, want, case)
    # in attention: the reader's mask in F.scaled_dot_product_attention against
    # attention written out for each query over its own window
    T, window, d = 10, 3, 4
    q, k, v = (torch.randn(2, T, d, generator=g, dtype=torch.float64) for _ in range(3))
    mask = call(answer, T, window, case="in attention")
    out = F.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None],
                                         attn_mask=mask)[:, 0]
    for t in range(T):
        lo = max(0, t - window + 1)
        w = torch.softmax(q[:, t:t + 1] @ k[:, lo:t + 1].mT / math.sqrt(d), -1)
        expect(out[:, t:t + 1], w @ v[:, lo:t + 1], case=f"output of query {t}",
               rtol=1e-9, atol=1e-12)
    return (f"{len(cases)} sizes, window 1, window ≥ T; outputs of "
            f"F.scaled_dot_product_attention equal attention over each window")


# ------------------------------------------------------------------ 2. masked loss
def _token_mean_ce(logits, targets, pad_id):
    return F.cross_entropy(logits.double().flatten(0, 1), targets.flatten(),
                           ignore_index=pad_id)


@register("ch5_masked_ce", "masked_cross_entropy by hand", chapter=5,
          build=True)
def _masked_ce(answer):
    forbid(answer, ["cross_entropy", "nll_loss", "sequence_loss", "CrossEntropyLoss",
                    "NLLLoss", "ignore_index"],
           "write it from log-probabilities and the mask")
    g = _gen()
    cases = [(3, 6, 5, 1.0), (2, 9, 11, 3.0), (4, 4, 7, 1.0), (3, 5, 6, 2e4)]
    for i, (B, T, V, scale) in enumerate(cases):
        pad_id = int(torch.randint(0, V, (1,), generator=g))
        logits = scale * torch.randn(B, T, V, generator=g)
        targets = torch.randint(0, V, (B, T), generator=g)
        targets[targets == pad_id] = (pad_id + 1) % V
        lengths = torch.randint(1, T + 1, (B,), generator=g)
        lengths[0], lengths[1] = T, max(1, T // 3)       # very different lengths
        targets[torch.arange(T)[None, :] >= lengths[:, None]] = pad_id
        kind = "logits in the ten thousands" if scale > 100 else "random logits"
        case = (f"case {i}: logits {tuple(logits.shape)}, lengths {lengths.tolist()}, "
                f"{kind}")
        lg = logits.clone().requires_grad_()
        got = call(answer, lg, targets.clone(), pad_id, case=case)
        if not isinstance(got, torch.Tensor) or got.numel() != 1:
            raise Wrong(f"expected a one-element tensor, the mean loss ({case}), got "
                        f"{type(got).__name__}")
        if not torch.isfinite(got).all():
            raise Wrong(f"your loss is inf or NaN ({case}): log(softmax(...)) "
                        "underflows for large logits; use log_softmax or logsumexp")
        want = _token_mean_ce(logits, targets, pad_id)
        real = targets != pad_id
        per_sentence = torch.stack([
            F.cross_entropy(logits[b][real[b]].double(), targets[b][real[b]])
            for b in range(B)]).mean()
        near = {
            "that is the mean of the per-sentence means; the loss averages over all "
            "real tokens of the batch, so a long sentence counts more than a short one":
            per_sentence,
            "that divides by all B·T positions, pads included; divide by the number of "
            "real tokens": want * real.sum() / real.numel(),
            "that is the sum over the real tokens; the loss is their mean":
            want * real.sum(),
            "the pad positions count as targets in your loss": F.cross_entropy(
                logits.double().flatten(0, 1), targets.flatten()),
        }
        for why, value in near.items():
            if (math.isclose(got.item(), value.item(), rel_tol=1e-4)
                    and not math.isclose(got.item(), want.item(), rel_tol=1e-4)):
                raise Wrong(f"{why} ({case})")
        expect(got.reshape(()).double(), want, case=case, rtol=1e-4, atol=1e-6,
               dtype=False)
        try:
            (grad,) = torch.autograd.grad(got.sum(), lg)
        except RuntimeError as err:
            raise Wrong(f"no gradient flows from your loss to the logits ({case}): "
                        f"{err}") from None
        if grad[~real].abs().max() > 0:
            raise Wrong(f"the logits at pad positions get a gradient ({case}): they "
                        "must not count")
    return (f"{len(cases)} batches of different lengths, logits up to 2e4, no gradient "
            "on pads")


# ------------------------------------------------------------------ 3. counting
@register("ch5_allowed_pairs", "allowed pairs, padding & causal",
          chapter=5, build=False)
def _allowed_pairs(answer):
    g = _gen()
    for side in ("right", "left", "right", "left"):
        T = int(torch.randint(3, 10, (1,), generator=g))
        B = int(torch.randint(3, 6, (1,), generator=g))
        lengths = torch.randint(1, T + 1, (B,), generator=g).tolist()
        lengths[0] = T                                    # one sentence without padding
        lengths[1] = min(lengths[1], T - 2)               # and one with a lot
        case = f"lengths {lengths}, T = {T}, side {side!r}"
        got = call(answer, list(lengths), T, side, case=case)
        if isinstance(got, torch.Tensor):
            got = got.tolist()
        if not isinstance(got, (list, tuple)):
            raise Wrong(f"expected a list of counts ({case}), got {type(got).__name__}")
        pos = torch.arange(T)[None, :]
        L = torch.tensor(lengths)[:, None]
        real = pos < L if side == "right" else pos >= T - L                  # (B, T)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        want = (real[:, None, :] & causal).sum(dim=(1, 2)).tolist()
        if len(got) != len(want):
            raise Wrong(f"expected {len(want)} counts, one per sentence ({case}), "
                        f"got {len(got)}")
        bad = [i for i, (a, b) in enumerate(zip(got, want)) if a != b]
        if bad:
            raise Wrong(f"wrong count for sentence(s) {bad} ({case}); count row by "
                        "row: which keys may query t see under each padding side?")
    return "4 random batches, right and left padding"


# ------------------------------------------------------------------ 4. prefix LM
PAD, SEP, N_KEYS, N_VALS = 0, 1, 8, 8
PAIR0 = 2                              # pair tokens: 2 + key * 8 + value
QUERY0 = PAIR0 + N_KEYS * N_VALS       # query tokens: 66 + key
ANS0 = QUERY0 + N_KEYS                 # answer tokens: 74 + value


def _reference_prefix_mask(tokens, prefix_lengths, pad_id):
    real = tokens != pad_id
    T = tokens.shape[1]
    in_prefix = real & (real.cumsum(1) <= prefix_lengths[:, None])
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    return ((causal[None] | in_prefix[:, None, :]) & real[:, None, :])[:, None]


def _lookup_lm_batch(n, g, side):
    """n examples: 3-6 (key, value) pair tokens, SEP, then two (query, answer) steps,
    padded to T = 11 on ``side``. -> tokens (n, 11), prefix lengths (pairs + SEP),
    positions of the two query tokens (n, 2)."""
    n_pairs = torch.randint(3, 7, (n,), generator=g)
    keys = torch.rand(n, N_KEYS, generator=g).argsort(-1)[:, :6]
    vals = torch.randint(N_VALS, (n, 6), generator=g)
    unused = torch.arange(6) >= n_pairs[:, None]
    r = torch.rand(n, 6, generator=g).masked_fill(unused, 2)
    ask = r.argsort(-1)[:, :2]                      # two different pairs to ask about
    T, j = 11, torch.arange(11)
    pair_tok = PAIR0 + keys * N_VALS + vals
    tokens = torch.where(j < n_pairs[:, None],
                         pair_tok.gather(1, j.clamp(max=5).expand(n, T)), PAD)
    rel = j - n_pairs[:, None]
    steps = [torch.full((n,), SEP)]
    for a in range(2):
        steps += [QUERY0 + keys.gather(1, ask[:, a:a + 1])[:, 0],
                  ANS0 + vals.gather(1, ask[:, a:a + 1])[:, 0]]
    for k, src in enumerate(steps):
        tokens = torch.where(rel == k, src[:, None], tokens)
    pos = n_pairs[:, None] + torch.tensor([1, 3])
    if side == "left":
        shift = T - (n_pairs + 5)
        tokens = tokens.gather(1, (j - shift[:, None]) % T)
        pos = pos + shift[:, None]
    return tokens, n_pairs + 1, pos


class _PrefixLM(nn.Module):
    """One attention layer over the tokens, by content only (no positions), so that the
    same example gives the same answer however it is padded."""

    def __init__(self, d=32):
        super().__init__()
        self.key_emb, self.val_emb = nn.Embedding(N_KEYS, d), nn.Embedding(N_VALS, d)
        self.kind = nn.Embedding(5, d)         # pad, SEP, pair, query, answer
        self.attn = _mha(d)
        self.out = nn.Linear(d, N_VALS)

    def forward(self, tokens, mask):
        t = tokens
        pair, query, ans = ((t >= PAIR0) & (t < QUERY0), (t >= QUERY0) & (t < ANS0),
                            t >= ANS0)
        kind = (t == SEP).long() + 2 * pair + 3 * query + 4 * ans
        key = torch.where(pair, (t - PAIR0) // N_VALS,
                          torch.where(query, t - QUERY0, 0))
        val = torch.where(pair, (t - PAIR0) % N_VALS, torch.where(ans, t - ANS0, 0))
        x = (self.kind(kind) + self.key_emb(key) * (pair | query)[..., None]
             + self.val_emb(val) * (pair | ans)[..., None]) * (t != PAD)[..., None]
        return self.out(x + self.attn(x, x, x, mask))


def _mha(d):
    from ..attention import MultiHeadAttention
    return MultiHeadAttention(d, 1)


def _answers(model, tokens, mask, pos):
    logits = model(tokens, mask)
    return logits.gather(1, pos[..., None].expand(-1, -1, N_VALS)).argmax(-1)


@register("ch5_prefix_lm", "prefix_lm_mask, trained", chapter=5,
          build=True, project=True)
def _prefix_lm(answer):
    forbid_loops(answer)
    g = _gen()
    # 1. the mask itself, on fresh batches padded either way
    for i, side in enumerate(("right", "left", "right", "left")):
        B, T = int(torch.randint(3, 6, (1,), generator=g)), int(
            torch.randint(4, 10, (1,), generator=g))
        lengths = torch.randint(1, T + 1, (B,), generator=g)
        lengths[0] = T
        lengths[-1] = int(torch.randint(3, T, (1,), generator=g))   # padded, and
        tokens = torch.randint(3, 20, (B, T), generator=g)
        pos = torch.arange(T)[None, :]
        real = (pos < lengths[:, None] if side == "right"
                else pos >= T - lengths[:, None])
        tokens[~real] = 0
        prefix = (torch.rand(B, generator=g) * (lengths + 1)).long()   # 0 ... length
        prefix[1] = 0                                       # a sentence with no prefix
        prefix[-1] = int(torch.randint(2, int(lengths[-1]), (1,), generator=g))
        # ... a prefix of 2 or more real tokens, shorter than its sentence
        case = (f"case {i}: {side}-padded lengths {lengths.tolist()}, prefix lengths "
                f"{prefix.tolist()}, T = {T}")
        got = call(answer, tokens.clone(), prefix.clone(), 0, case=case)
        _check_bool_mask(got, (B, 1, T, T), case)
        want = _reference_prefix_mask(tokens, prefix, 0)
        for b in range(B):
            _explain(got[b, 0], want[b, 0], f"{case}, sentence {b}")
    # 2. the project: train the lookup LM with the reader's mask, padded both ways
    with torch.random.fork_rng(), _one_thread():
        torch.manual_seed(0)
        model = _PrefixLM()
        opt = torch.optim.Adam(model.parameters(), lr=0.02)
        batches = torch.Generator().manual_seed(0)
        for step in range(100):
            tokens, prefix, pos = _lookup_lm_batch(64, batches,
                                                   "left" if step % 2 else "right")
            mask = call(answer, tokens, prefix, PAD, case="training")
            logits = model(tokens, mask).gather(
                1, pos[..., None].expand(-1, -1, N_VALS))
            target = tokens.gather(1, pos + 1) - ANS0
            loss = F.cross_entropy(logits.flatten(0, 1), target.flatten())
            opt.zero_grad()
            loss.backward()
            opt.step()
        acc, same = {}, True
        with torch.no_grad():
            for side in ("left", "right"):
                tokens, prefix, pos = _lookup_lm_batch(
                    500, torch.Generator().manual_seed(99), side)
                one_pass = _answers(model, tokens, call(answer, tokens, prefix, PAD),
                                    pos)
                right = one_pass == tokens.gather(1, pos + 1) - ANS0
                acc[side] = right.float().mean()
                # step by step: the prefix and the first query only, then the model's
                # own first answer and the second query
                first = pos[:, :1] + 1
                cut = tokens.masked_fill(torch.arange(11)[None] >= first, PAD)
                if side == "left":       # keep the padding on the left
                    shift = 11 - first
                    cut = cut.gather(1, (torch.arange(11)[None] - shift) % 11)
                    p1 = pos[:, :1] + shift
                else:
                    p1 = pos[:, :1]
                step1 = _answers(model, cut, call(answer, cut, prefix, PAD), p1)
                same &= bool((step1[:, 0] == one_pass[:, 0]).all())
    worst = min(a.item() for a in acc.values())
    if not same:
        raise Wrong("after training, answering step by step (prefix and first query "
                    "only) differs from the one pass: a position sees a later one")
    if worst < 0.9:
        raise Wrong(f"after training with your mask the held-out accuracy is "
                    f"{worst:.3f} (chance 0.125)")
    return (f"4 padded batches equal the definition; trained with your mask on left- "
            f"and right-padded batches: held-out accuracy {acc['left']:.3f} (left) / "
            f"{acc['right']:.3f} (right), chance 0.125; step by step = one pass")
