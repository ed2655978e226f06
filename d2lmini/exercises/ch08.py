"""Chapter 8 (the Transformer): the exercises' judges."""
from __future__ import annotations

import torch

from .core import Wrong, call, expect, register
from .core import fresh_generator as _gen


def _rint(lo: int, hi: int, g: torch.Generator) -> int:
    return int(torch.randint(lo, hi, (1,), generator=g))


@register("ch8_pe_at_positions", "positional encoding at positions", chapter=8,
          build=True)
def _pe(answer):
    from ..transformer import PositionalEncoding
    g = _gen()
    cases = [(torch.arange(5), 8)]
    for _ in range(4):
        start, n = _rint(0, 300, g), _rint(1, 6, g)
        cases.append((torch.arange(start, start + n), 2 * _rint(1, 40, g)))
    cases.append((torch.randint(0, 400, (7,), generator=g), 2 * _rint(1, 40, g)))
    for positions, d in cases:
        table = PositionalEncoding(d, max_len=int(positions.max()) + 1).pe[0]
        want = table[positions]                                   # (n, d) float32
        case = f"positions {positions.tolist()}, d_model={d}"
        expect(call(answer, positions.clone(), d, case=case), want, case=case,
               rtol=1e-4, atol=1e-4)
    return f"{len(cases)} random position sets, some far from 0"


def _kv_ref(past, new):
    q = torch.arange(past, past + new)[:, None]      # absolute query positions
    return torch.arange(past + new)[None, :] <= q    # (new, past + new)


@register("ch8_kv_step_mask", "causal mask for a cached step", chapter=8,
          build=True)
def _kv_mask(answer):
    g = _gen()
    cases = [(0, 4), (5, 1), (3, 3)]
    for _ in range(4):
        cases.append((_rint(0, 20, g), _rint(1, 8, g)))
    for past, new in cases:
        case = f"past={past}, new={new}"
        got = call(answer, past, new, case=case)
        if not isinstance(got, torch.Tensor) or got.dtype != torch.bool:
            kind = got.dtype if isinstance(got, torch.Tensor) else type(got).__name__
            raise Wrong(f"expected a bool tensor ({case}), got {kind}")
        want = _kv_ref(past, new)
        if tuple(got.shape) != tuple(want.shape):
            raise Wrong(f"wrong shape ({case}): expected {tuple(want.shape)} = "
                        f"(new queries, all keys), got {tuple(got.shape)}")
        if not torch.equal(got, want):
            bad = (got != want).nonzero()[0].tolist()
            raise Wrong(f"wrong entries ({case}): "
                        f"first at query {bad[0]}, key {bad[1]}")
    return f"{len(cases)} (past, new) pairs, empty cache and one new token too"


def _after_eos_ref(ids, eos_id, pad_id):
    seen = (ids == eos_id).long().cumsum(1)
    after = (seen - (ids == eos_id).long()) > 0  # strictly after first eos
    return ids.masked_fill(after, pad_id)


@register("ch8_after_eos", "pad after the first <eos>", chapter=8, build=True)
def _after_eos(answer):
    g = _gen()
    cases = [torch.tensor([[5, 6, 2, 7, 2], [2, 5, 5, 5, 5], [5, 6, 7, 8, 9]])]
    for _ in range(4):
        B, T = _rint(1, 6, g), _rint(1, 12, g)
        cases.append(torch.randint(2, 7, (B, T), generator=g))  # eos_id 2 appears often
    for i, ids in enumerate(cases):
        case = f"case {i}, ids of shape {tuple(ids.shape)}"
        got = call(answer, ids.clone(), 2, 0, case=case)
        expect(got, _after_eos_ref(ids, 2, 0), case=case, rtol=0, atol=0)
    return f"{len(cases)} random batches: rows with no, one and several <eos>"
