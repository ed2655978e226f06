"""Chapter 11 (RNN, CNN and attention, measured): the exercises' judges."""
from __future__ import annotations

import numbers

import torch
from torch import nn

from .core import Wrong, call, expect, register
from .core import fresh_generator as _gen


def _int(out, case: str) -> int:
    if isinstance(out, torch.Tensor) and out.numel() == 1:
        out = out.item()
    if isinstance(out, bool) or not isinstance(out, numbers.Real):
        raise Wrong(f"expected a number ({case}), got {type(out).__name__}")
    return out


@register("ch11_crossover", "where attention costs as much as a GRU", chapter=11,
          build=True)
def _crossover(answer):
    g = _gen()
    ds = [int(torch.randint(2, 2000, (1,), generator=g)) for _ in range(5)]
    for d in ds:
        attn = lambda T: 4 * T * d * d + 2 * T * T * d
        want = next(T for T in range(1, 10 * d) if attn(T) >= 6 * T * d * d)
        case = f"d={d}"
        expect(_int(call(answer, d, case=case), case), want, case=case, rtol=0,
               atol=1e-6)
    return f"{len(ds)} random widths d"


def _layers(T: int, k: int, dilated: bool) -> int:
    """fewest causal conv layers until output T-1 sees input 0 (integer arithmetic)"""
    L, reach = 0, 0
    while reach < T - 1:
        reach += (k - 1) * (k ** L if dilated else 1)
        L += 1
    return L


@register("ch11_conv_depth", "layers a causal convolution needs", chapter=11,
          build=True)
def _conv_depth(answer):
    g = _gen()
    cases = [(int(torch.randint(2, 3000, (1,), generator=g)),
              int(torch.randint(2, 9, (1,), generator=g)), bool(i % 2))
             for i in range(8)]
    cases += [(125, 5, True), (126, 5, True), (2, 3, False)]       # exact powers, edges
    for T, k, dil in cases:
        case = f"T={T}, k={k}, dilated={dil}"
        expect(_int(call(answer, T, k, dil, case=case), case), _layers(T, k, dil),
               case=case, rtol=0, atol=1e-6)
    return f"{len(cases)} cases, exact powers of k included"


@register("ch11_source_mask", "the source mask of the GRU decoder", chapter=11,
          build=True)
def _source_mask(answer):
    g = _gen()
    for i in range(3):
        B, S = (int(torch.randint(1, 5, (1,), generator=g)),
                int(torch.randint(2, 12, (1,), generator=g)))
        # one pad id ≠ 0
        pad = int(torch.randint(0 if i else 1, 4, (1,), generator=g))
        src = torch.randint(4, 20, (B, S), generator=g)
        lengths = torch.randint(1, S + 1, (B,), generator=g)
        lengths[0] = min(int(lengths[0]), S - 1)        # every batch holds a pad
        src[torch.arange(S)[None] >= lengths[:, None]] = pad
        want = (src != pad)[:, None, :]
        case = f"src {tuple(src.shape)}, pad id {pad}"
        expect(call(answer, src.clone(), pad, case=case), want, case=case)
    return "3 random batches, pad ids other than 0 included"


@register("ch11_gru_params", "the parameters of nn.GRU", chapter=11, build=True)
def _gru_params(answer):
    g = _gen()
    cases = [(int(torch.randint(1, 200, (1,), generator=g)),
              int(torch.randint(1, 200, (1,), generator=g))) for _ in range(4)]
    for i, h in cases:
        want = sum(p.numel() for p in nn.GRU(i, h).parameters())
        case = f"input_size={i}, hidden_size={h}"
        expect(_int(call(answer, i, h, case=case), case), want, case=case, rtol=0,
               atol=1e-6)
    return f"{len(cases)} random sizes, against nn.GRU"
