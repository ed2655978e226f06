"""Chapter 4 (attention): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`.
"""
from __future__ import annotations


import torch
import torch.nn.functional as F

from .core import Wrong, call, expect, register
from .core import fresh_generator as _gen


@register("ch4_attention", "attention(Q, K, V), batched", chapter=4, build=True)
def _attention(answer):
    g = _gen()
    # (leading dims, T_q, T_k, d_k, d_v, dtype): T_q != T_k and d_k != d_v on purpose
    cases = [((), 5, 5, 4, 4, torch.float32), ((2,), 3, 7, 8, 5, torch.float32),
             ((2, 3), 4, 6, 16, 2, torch.float64), ((1,), 1, 9, 64, 3, torch.float32)]
    for i, (lead, tq, tk, dk, dv, dtype) in enumerate(cases):
        q = (2 * torch.randn(*lead, tq, dk, generator=g)).to(dtype)
        k = (2 * torch.randn(*lead, tk, dk, generator=g)).to(dtype)
        v = torch.randn(*lead, tk, dv, generator=g).to(dtype)
        case = (f"case {i}: Q {tuple(q.shape)}, K {tuple(k.shape)}, "
                f"V {tuple(v.shape)}, {dtype}")
        got = call(answer, q.clone(), k.clone(), v.clone(), case=case)
        expect(got, F.scaled_dot_product_attention(q, k, v), case=case, rtol=1e-4,
               atol=1e-5)
    return f"{len(cases)} cases: 2-, 3-, 4-D, T_q ≠ T_k, d_k ≠ d_v, float64"


@register("ch4_pearson", "pearson_scores(Q, K)", chapter=4, build=True)
def _pearson(answer):
    g = _gen()
    for i, (tq, tk, d) in enumerate([(3, 4, 10), (1, 6, 50), (5, 2, 3)]):
        q = torch.randn(tq, d, generator=g, dtype=torch.float64) + 3 * torch.randn(
            tq, 1, generator=g, dtype=torch.float64)  # each row has its own offset
        k = torch.randn(tk, d, generator=g, dtype=torch.float64) * 2 + 1
        case = f"case {i}: Q {tuple(q.shape)}, K {tuple(k.shape)}"
        got = call(answer, q.clone(), k.clone(), case=case)
        want = torch.corrcoef(torch.cat([q, k]))[:tq, tq:]
        expect(got, want, case=case, rtol=1e-6, atol=1e-9)
    return "3 random cases, rows with offsets and different scales"


@register("ch4_not_self", "best match is another token",
          chapter=4, build=False)
def _not_self(answer):
    X = answer
    if not isinstance(X, torch.Tensor):
        raise Wrong(f"expected a torch.Tensor, got {type(X).__name__}")
    if tuple(X.shape) != (3, 2):
        raise Wrong(f"expected shape (3, 2), got {tuple(X.shape)}")
    X = X.detach().double()
    if (X.norm(dim=1) < 1e-9).any():
        raise Wrong("a zero row has no direction: its cosine similarity is undefined")
    if (X @ X.T)[0].argmax().item() == 0:
        raise Wrong("row 0's largest dot product is still the one with itself "
                    "(try a longer vector pointing almost the same way)")
    Xn = X / X.norm(dim=1, keepdim=True)
    best = (Xn @ Xn.T).argmax(dim=1)
    if not torch.equal(best, torch.arange(3)):
        rows = [i for i in range(3) if best[i] != i]
        raise Wrong(f"with cosine similarity, row(s) {rows} match another token best "
                    "(two rows pointing the same way tie)")
    return "by dot product row 0 prefers another; by cosine none does"
