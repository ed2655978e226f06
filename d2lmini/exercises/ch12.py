"""Chapter 12 (from the Transformer to GPT): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`.
"""
from __future__ import annotations

import time

import torch

from .core import Wrong, call, expect, register
from .core import fresh_generator as _gen


def _randint(lo: int, hi: int, g: torch.Generator) -> int:
    """An int in lo..hi (inclusive)."""
    return int(torch.randint(lo, hi + 1, (1,), generator=g))


# ------------------------------------------------------------- top-p (nucleus) sampling
def _top_p_keep(logits: torch.Tensor, p: float) -> torch.Tensor:
    """bool (B, V): the most likely tokens of each row until their probability adds up
    to at least p (the token that crosses p is kept; the most likely one always is)."""
    probs = logits.float().softmax(-1)
    sorted_p, order = probs.sort(-1, descending=True)
    before = sorted_p.cumsum(-1) - sorted_p  # probability of the tokens above
    keep_sorted = before < p
    return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)


def _top_p_case(g, B, V, dtype, peaked=False):
    """Logits with distinct values, and a p that no row's cumulative sum comes within
    0.01 of (so float16 rounding cannot move the boundary)."""
    for _ in range(1000):
        z = torch.randn(B, V, generator=g) * (4.0 if peaked else 1.5)
        z = z.to(dtype)
        if any(len(set(row.tolist())) < V for row in z):
            continue                                    # ties: the order is ambiguous
        p = float(torch.empty(1).uniform_(0.3, 0.95, generator=g))
        cum = z.float().softmax(-1).sort(-1, descending=True).values.cumsum(-1)
        if (cum - p).abs().min() > 0.01:
            return z, p
    raise RuntimeError("could not draw a top-p case")   # pragma: no cover


@register("ch12_top_p", "top_p_filter", chapter=12, build=True)
def _top_p(answer):
    g = _gen()
    cases = [(1, 8, torch.float32, False), (3, 20, torch.float32, False),
             (2, 50, torch.float32, False), (2, 12, torch.float32, True),
             (4, 16, torch.float16, False)]
    for i, (B, V, dtype, peaked) in enumerate(cases):
        z, p = _top_p_case(g, B, V, dtype, peaked)
        case = f"case {i}: logits {tuple(z.shape)} {dtype}, p={p:.3f}"
        out = call(answer, z.clone(), p, case=case)
        keep = _top_p_keep(z, p)
        want = z.masked_fill(~keep, float("-inf"))
        if isinstance(out, torch.Tensor) and out.shape == z.shape:
            kept = torch.isfinite(out.float())
            for r in range(B):
                if kept[r].sum() != keep[r].sum():
                    raise Wrong(f"{case}: row {r} keeps {int(kept[r].sum())} tokens, "
                                f"expected {int(keep[r].sum())} (the fewest most "
                                f"likely tokens whose probabilities add up to at "
                                f"least p)")
        expect(out, want, case=case, rtol=0, atol=0)
    return f"{len(cases)} random cases, a peaked one and float16 included"


# ------------------------------------------------------------------ repetition penalty
def _penalty_ref(logits: torch.Tensor, previous: torch.Tensor,
                 theta: float) -> torch.Tensor:
    seen = torch.zeros(logits.shape, dtype=torch.bool).scatter(-1, previous, True)
    penalised = torch.where(logits > 0, logits / theta, logits * theta)
    return torch.where(seen, penalised, logits)


@register("ch12_repetition_penalty", "repetition_penalty", chapter=12, build=True)
def _repetition(answer):
    g = _gen()
    cases = [(1, 6, 3, torch.float32), (3, 30, 12, torch.float32),
             (2, 10, 25, torch.float32), (4, 50, 40, torch.float16)]
    for i, (B, V, n, dtype) in enumerate(cases):
        z = (torch.randn(B, V, generator=g) * 2).to(dtype)
        prev = torch.randint(0, V, (B, n), generator=g)             # repeats included
        theta = float(torch.empty(1).uniform_(1.2, 3.0, generator=g))
        case = (f"case {i}: logits {tuple(z.shape)} {dtype}, {n} previous ids, "
                f"theta={theta:.2f}")
        out = call(answer, z.clone(), prev.clone(), theta, case=case)
        tol = 1e-3 if dtype == torch.float16 else 1e-6
        expect(out, _penalty_ref(z, prev, theta), case=case, rtol=tol, atol=tol)
    # in generation: the shipped model, greedy, every earlier token penalised
    from ..checkpoints import load_shakespeare
    model, chars, _ = load_shakespeare()
    prompt = torch.tensor([chars.encode("ROMEO:\n")])
    theirs = _penalised_greedy(model, prompt, 80, answer, 1.3)
    ours = _penalised_greedy(model, prompt, 80, _penalty_ref, 1.3)
    if not torch.equal(theirs, ours):
        t = int((theirs != ours).nonzero()[0, 1]) - prompt.shape[1]
        raise Wrong(f"greedy decoding of the shipped model with your penalty (theta "
                    f"1.3) differs from the reference at step {t}")
    plain = _penalised_greedy(model, prompt, 80, lambda z, prev, th: z, 1.3)
    words = lambda ids: chars.decode(ids[0, prompt.shape[1]:]).split()
    share = lambda w: len(set(w)) / max(len(w), 1)
    return (f"{len(cases)} random cases, repeated ids and float16 included; in greedy "
            f"decoding of the shipped model, distinct words {share(words(theirs)):.2f}"
            f" of those written (without the penalty {share(words(plain)):.2f})")


@torch.no_grad()
def _penalised_greedy(model, ids, n, penalty, theta):
    for _ in range(n):
        logits = model(ids)[:, -1]
        logits[:, 0] = float("-inf")                      # id 0 is padding
        ids = torch.cat([ids, penalty(logits, ids, theta).argmax(-1, keepdim=True)], 1)
    return ids


# ------------------------------------------------------------------ a prefix-LM mask
def _prefix_ref(tokens: torch.Tensor, sep_id: int, pad_id: int) -> torch.Tensor:
    B, T = tokens.shape
    e = (tokens == sep_id).int().argmax(1)                       # first separator
    cols = torch.arange(T)
    allowed = (cols[None, :, None] >= cols[None, None, :]) | \
        (cols[None, None, :] <= e[:, None, None])               # (B, T, T)
    return (allowed & (tokens != pad_id)[:, None, :])[:, None]   # (B, 1, T, T)


@register("ch12_prefix_mask", "prefix_lm_mask", chapter=12, build=True)
def _prefix_mask(answer):
    g = _gen()
    for i in range(4):
        B, T = _randint(1, 5, g), _randint(6, 16, g)
        pad, sep = (0, 1) if i % 2 == 0 else (_randint(2, 4, g), _randint(5, 6, g))
        tokens = torch.randint(7, 30, (B, T), generator=g)
        for r in range(B):
            left = _randint(0, 2, g) if r % 2 else 0           # left pads (generation)
            e = _randint(left + 1, T - 3, g)                   # the separator's column
            end = _randint(e + 2, T, g)                        # answer, then right pads
            tokens[r, :left], tokens[r, e], tokens[r, end:] = pad, sep, pad
        tokens[0, -1] = pad                                    # a pad in every batch
        case = f"case {i}: tokens {tuple(tokens.shape)}, sep_id={sep}, pad_id={pad}"
        out = call(answer, tokens.clone(), sep, pad, case=case)
        want = _prefix_ref(tokens, sep, pad)
        if isinstance(out, torch.Tensor) and out.shape == want.shape:
            if out.dtype != torch.bool:
                raise Wrong(f"{case}: expected a bool mask (True = may attend), got "
                            f"{out.dtype}")
            # a pad query's row is never used: any answer there is fine
            bad = ((out != want) & (tokens != pad)[:, None, :, None]).nonzero()
            if len(bad):
                b, _, q, k = (int(v) for v in bad[0])
                raise Wrong(f"{case}: row {b}, query {q}, key {k}: expected "
                            f"{bool(want[b, 0, q, k])}, got {bool(out[b, 0, q, k])}")
            continue
        expect(out, want, case=case)
    return ("4 random batches, left and right padding, other pad and separator ids "
            "included")


# ------------------------------------------------- a KV cache for the encoder-decoder
def _count_rows(model):
    """Forward hooks that add up the rows each decoder block's self- and
    cross-attention key projections see -> (counts dict, hook handles)."""
    counts, handles = {"self": 0, "cross": 0}, []
    for blk in model.decoder.blocks:
        for kind, attn in (("self", blk.self_attn), ("cross", blk.cross_attn)):
            def hook(mod, inp, out, kind=kind):
                counts[kind] += inp[0].numel() // inp[0].shape[-1]
            handles.append(attn.W_k.register_forward_hook(hook))
    return counts, handles


def _decode_case(answer, model, src, n, bos, eos, case):
    from ..transformer import greedy_decode
    counts, handles = _count_rows(model)
    try:
        want = greedy_decode(model, src, n, bos, eos)
        uncached = sum(counts.values())
        for k in counts:
            counts[k] = 0
        t0 = time.perf_counter()
        got = call(answer, model, src.clone(), n, bos, eos, case=case)
        seconds = time.perf_counter() - t0
    finally:
        for h in handles:
            h.remove()
    if isinstance(got, torch.Tensor) and got.shape == want.shape \
            and not torch.equal(got.cpu(), want.cpu()):
        r, t = (int(v) for v in (got.cpu() != want.cpu()).nonzero()[0])
        raise Wrong(f"{case}: row {r} differs from greedy_decode at step {t} "
                    f"(with a cache, each step must compute exactly what the full "
                    f"decoder computes for its last position)")
    expect(got, want, case=case)
    B, S = src.shape
    L = len(model.decoder.blocks)
    if counts["cross"] > L * B * S:
        raise Wrong(f"{case}: the cross-attention keys were computed for "
                    f"{counts['cross'] // (B * S * L)} steps' worth of memory rows: "
                    f"the encoder's memory never changes, so its keys and values "
                    f"can be computed once per layer, before the first step")
    if counts["self"] > L * B * (n + 1):
        raise Wrong(f"{case}: the decoder's self-attention computed keys for "
                    f"{counts['self'] // L} rows per layer in {n} steps: a cache "
                    f"computes them for the newest token only (at most {B} rows a "
                    f"step)")
    return seconds, sum(counts.values()), uncached


@register("ch12_encdec_cache", "a KV cache for the encoder-decoder", chapter=12,
          build=True, project=True)
def _encdec_cache(answer):
    from .. import ablation
    from ..transformer import Transformer, greedy_decode
    g = _gen()
    for i, (norm_first, layers, d_ff) in enumerate([(False, 1, 64), (True, 2, 64),
                                                     (False, 2, 0)]):
        torch.manual_seed(_randint(0, 2**31 - 1, g))
        Vs, Vt = _randint(12, 30, g), _randint(8, 20, g)
        model = Transformer(Vs, Vt, d_model=32, num_heads=4, num_layers=layers,
                            d_ff=d_ff, dropout=0.0, norm_first=norm_first).eval()
        with torch.no_grad():                        # some rows end early, some not
            model.generator.bias[2] += 2.0
        B, S, n = _randint(3, 6, g), _randint(4, 10, g), _randint(10, 16, g)
        src = torch.randint(3, Vs, (B, S), generator=g)
        lengths = torch.randint(1, S + 1, (B,), generator=g)
        src[torch.arange(S)[None] >= lengths[:, None]] = 0          # right padding
        case = (f"case {i}: {'pre' if norm_first else 'post'}-norm, {layers} "
                f"layer(s), d_ff={d_ff}, src {tuple(src.shape)}, max_len={n}")
        _decode_case(answer, model, src, n, 1, 2, case)
    # the chapter's task: a date translator, trained briefly
    data = ablation.DateData(n_train=3000, n_test=300)
    model = ablation.train_dates(data, steps=150, d_model=32)["model"].eval()
    bos, eos = data.tgt_vocab.bos_id, data.tgt_vocab.eos_id
    t0 = time.perf_counter()
    greedy_decode(model, data.test[0], 11, bos, eos)
    full = time.perf_counter() - t0
    cached, rows, rows_full = _decode_case(answer, model, data.test[0], 11, bos, eos,
                                           "300 held-out dates, a trained date model")
    return (f"3 random models (post- and pre-norm, with and without FFN), and 300 "
            f"held-out dates with a trained date model: the same tokens as "
            f"greedy_decode; the decoder's key projections saw {rows:,} rows with "
            f"your cache, {rows_full:,} without; {cached:.2f} s against {full:.2f} s")
