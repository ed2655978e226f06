"""Chapter 6 (multi-head attention): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from .core import Wrong, call, expect, register
from .core import fresh_generator as _gen


def _int(out, case: str) -> float:
    if isinstance(out, torch.Tensor) and out.numel() == 1:
        out = out.item()
    if isinstance(out, bool) or not isinstance(out, (int, float)):
        raise Wrong(f"expected a number ({case}), got {type(out).__name__}")
    return out


@register("ch6_mha_params", "nn.MultiheadAttention params",
          chapter=6, build=True)
def _mha_params(answer):
    g = _gen()
    cases = [(8, 2, 8, 8)]
    for _ in range(4):
        h = int(torch.randint(1, 5, (1,), generator=g))
        E = h * int(torch.randint(2, 12, (1,), generator=g))
        kdim, vdim = (int(v) for v in torch.randint(3, 40, (2,), generator=g))
        cases.append((E, h, kdim, vdim))
    for E, h, kdim, vdim in cases:
        case = f"E={E}, h={h}, kdim={kdim}, vdim={vdim}"
        got = _int(call(answer, E, h, kdim, vdim, case=case), case)
        mha = nn.MultiheadAttention(E, h, kdim=kdim, vdim=vdim)
        want = sum(p.numel() for p in mha.parameters())
        if got != want:
            hint = (" (the count does not depend on h)" if h > 1 and
                    got == want * h else "")
            raise Wrong(f"wrong count for {case}: off by {got - want:+d}{hint}")
    return f"{len(cases)} random sizes, kdim and vdim different from E"


def _split_ref(x, h):
    B, T, D = x.shape
    return x.view(B, T, h, D // h).transpose(1, 2)


def _inputs(g, n=4):
    """(x of shape (B, T, D), h): a fixed case, then n random ones; the last in
    float16."""
    shapes = [(2, 5, 12, 4)]
    for _ in range(n):
        h = int(torch.randint(1, 7, (1,), generator=g))
        shapes.append((int(torch.randint(1, 4, (1,), generator=g)),
                       int(torch.randint(1, 9, (1,), generator=g)),
                       h * int(torch.randint(1, 9, (1,), generator=g)), h))
    for i, (B, T, D, h) in enumerate(shapes):
        dtype = torch.float16 if i == n else torch.float32
        yield torch.randn(B, T, D, generator=g).to(dtype), h


@register("ch6_split_heads", "split_heads", chapter=6, build=True)
def _split(answer):
    g = _gen()
    for x, h in _inputs(g):
        case = f"x of shape {tuple(x.shape)}, h={h}, {x.dtype}"
        expect(call(answer, x, h, case=case), _split_ref(x, h), case=case, atol=0,
               rtol=0)
    return "5 random shapes and head counts, float16 included"


@register("ch6_combine_heads", "combine_heads", chapter=6, build=True)
def _combine(answer):
    g = _gen()
    for x, h in _inputs(g):
        heads = _split_ref(x, h)                           # (B, h, T, D/h)
        case = f"heads of shape {tuple(heads.shape)}, {x.dtype}"
        out = call(answer, heads, case=case)
        expect(out, x, case=case, atol=0, rtol=0)
        # the round trip split -> combine gives back x: a layout error shows here
    return "5 random shapes and head counts, float16 included"


@register("ch6_self_score", "own score without projections", chapter=6, build=True)
def _self_score(answer):
    g = _gen()
    cases = [(8.0, 64)]
    for _ in range(4):
        cases.append((float(torch.empty(1).uniform_(0.5, 12, generator=g)),
                      int(torch.randint(2, 200, (1,), generator=g))))
    for r, d in cases:
        X = torch.randn(50, d, generator=g, dtype=torch.float64)
        X = r * X / X.norm(dim=1, keepdim=True)              # every token of length r
        want = (X @ X.T / math.sqrt(d)).diagonal().mean().item()
        case = f"length {r:.3g}, d={d}"
        got = _int(call(answer, r, d, case=case), case)
        expect(got, want, case=case, rtol=1e-6, atol=0)
    return f"{len(cases)} random lengths and dimensions"
