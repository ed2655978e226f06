"""Chapter 12 (from the Transformer to GPT): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

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
    return f"{len(cases)} random cases, repeated ids and float16 included"


# ------------------------------------------------------------------ bits per character
@register("ch12_bits_per_char", "bits_per_char", chapter=12, build=True)
def _bits_per_char(answer):
    g = _gen()
    cases = [(1, 5, 7, torch.float32, 0), (3, 9, 20, torch.float32, 4),
             (2, 16, 66, torch.float32, 10), (4, 12, 30, torch.float16, 8)]
    for i, (B, T, V, dtype, n_pad) in enumerate(cases):
        logits = (torch.randn(B, T, V, generator=g) * 2).to(dtype)
        targets = torch.randint(1, V, (B, T), generator=g)
        targets.view(-1)[torch.randperm(B * T, generator=g)[:n_pad]] = 0  # pad: no loss
        case = f"case {i}: logits {tuple(logits.shape)} {dtype}, {n_pad} pad targets"
        out = call(answer, logits.clone(), targets.clone(), case=case)
        if isinstance(out, torch.Tensor):
            if out.numel() != 1:
                raise Wrong(f"{case}: expected one number, got a tensor of shape "
                            f"{tuple(out.shape)}")
            out = out.item()
        if isinstance(out, bool) or not isinstance(out, (int, float)):
            raise Wrong(f"{case}: expected one number, got {type(out).__name__}")
        nats = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(),
                               ignore_index=0).item()
        tol = 2e-3 if dtype == torch.float16 else 1e-5
        expect(out, nats / math.log(2), case=case, rtol=tol, atol=0)
    return f"{len(cases)} random cases with pad targets, float16 logits included"
