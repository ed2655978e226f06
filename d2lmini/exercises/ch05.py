"""Chapter 5 (masks): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`.
"""
from __future__ import annotations

import math

import torch

from .core import Wrong, call, expect, register
from .core import fresh_generator as _gen


def _reference_masked_softmax(scores, mask):
    """Softmax over the last dim in float32; masked weights exactly 0; empty rows 0."""
    s = scores.float().masked_fill(~mask, float("-inf"))
    w = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return (w * mask).to(scores.dtype)


@register("ch5_masked_softmax", "masked_softmax from scratch", chapter=5,
          build=True)
def _masked_softmax(answer):
    g = _gen()
    # (scores shape, mask shape, dtype): the mask broadcasts, as a padding mask does
    cases = [((2, 3, 5), (2, 3, 5), torch.float32),
             ((2, 2, 4, 6), (2, 1, 1, 6), torch.float16),
             ((3, 7), (3, 7), torch.float16),
             ((1, 2, 3, 3), (1, 1, 3, 3), torch.bfloat16),
             ((4, 5), (4, 5), torch.float32)]
    for i, (shape, mshape, dtype) in enumerate(cases):
        scores = (4 * torch.randn(shape, generator=g)).to(dtype)
        mask = torch.rand(mshape, generator=g) > 0.4
        mask[..., 0, :] = False              # a fully masked row (or key column set)
        if len(mshape) == 2:
            mask[1] = True                   # and a row with everything allowed
        case = f"case {i}: scores {tuple(shape)} {dtype}, mask {tuple(mshape)}"
        got = call(answer, scores.clone(), mask.clone(), case=case)
        want = _reference_masked_softmax(scores, mask.expand(shape))
        if (isinstance(got, torch.Tensor) and got.is_floating_point()
                and got.isnan().any()):
            raise Wrong(f"your answer has NaN ({case}): a row with no allowed key "
                        "must come out as zeros")
        tol = 1e-5 if dtype == torch.float32 else 1e-2
        if isinstance(got, torch.Tensor) and got.dtype != want.dtype:
            raise Wrong(f"wrong dtype ({case}): expected {want.dtype}, got {got.dtype}")
        if isinstance(got, torch.Tensor) and got.is_floating_point():
            got = got.float()                # numpy has no bfloat16: compare in float32
        expect(got, want.float(), case=case, rtol=tol, atol=tol)
    return f"{len(cases)} cases: three dtypes, broadcast masks, fully masked rows"


@register("ch5_pad_weight", "pad_weight(real_scores, fill) by hand", chapter=5,
          build=False)
def _pad_weight(answer):
    g = _gen()
    fills = [0.0, -1e9, 2.0, -3.0]
    for i, fill in enumerate(fills):
        n = int(torch.randint(1, 6, (1,), generator=g))
        real = [round(v, 2) for v in (2 * torch.randn(n, generator=g)).tolist()]
        case = f"real scores {real}, fill {fill:g}"
        got = call(answer, list(real), fill, case=case)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            raise Wrong(f"expected a number ({case}), got {type(got).__name__}")
        want = torch.softmax(torch.tensor(real + [fill], dtype=torch.float64),
                             0)[-1].item()
        if not math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-12):
            raise Wrong(f"not right for {case} (does the pad's own e^fill belong in "
                        "the denominator?)")
    return f"{len(fills)} random rows, fills 0, -1e9 and others"


@register("ch5_allowed_pairs", "allowed pairs, padding & causal",
          chapter=5, build=False)
def _allowed_pairs(answer):
    g = _gen()
    for _ in range(4):
        T = int(torch.randint(2, 10, (1,), generator=g))
        B = int(torch.randint(2, 5, (1,), generator=g))
        lengths = torch.randint(1, T + 1, (B,), generator=g).tolist()
        lengths[0] = T                                    # one sentence without padding
        lengths[1] = min(lengths[1], T - 1)               # and one with
        case = f"lengths {lengths}, T = {T}"
        got = call(answer, list(lengths), T, case=case)
        if isinstance(got, torch.Tensor):
            got = got.tolist()
        if not isinstance(got, (list, tuple)):
            raise Wrong(f"expected a list of counts ({case}), got {type(got).__name__}")
        real = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]      # (B, T)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        want = (real[:, None, :] & causal).sum(dim=(1, 2)).tolist()
        if len(got) != len(want):
            raise Wrong(f"expected {len(want)} counts, one per sentence ({case}), "
                        f"got {len(got)}")
        bad = [i for i, (a, b) in enumerate(zip(got, want)) if a != b]
        if bad:
            raise Wrong(f"wrong count for sentence(s) {bad} ({case}); "
                        "the pad query rows are not masked, only the pad keys")
    return "4 random batches of lengths"
