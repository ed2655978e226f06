"""Chapter 3 (linear regression): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`.
"""
from __future__ import annotations

import math

import torch

from .core import Wrong, call, expect, register
from .core import fresh_generator as _gen, as_number as _number


def _close(got: float, want: float, case: str, rel: float = 1e-3) -> None:
    if not math.isfinite(got):
        raise Wrong(f"your answer is {got} ({case})")
    if not math.isclose(got, want, rel_tol=rel):
        ratio = got / want if want else float("nan")
        raise Wrong(f"not right ({case}): "
                    f"your answer is {ratio:.3g} times the right one")


@register("ch3_lr_max", "lr_max(X), largest stable lr", chapter=3,
          build=True)
def _lr_max(answer):
    g = _gen()
    cases = []
    for _ in range(4):
        n = int(torch.randint(32, 400, (1,), generator=g))
        d = int(torch.randint(1, 6, (1,), generator=g))
        scale = 0.3 + 2.7 * torch.rand(d, generator=g, dtype=torch.float64)
        if not cases:                             # one with scales far apart
            d, scale = 3, torch.tensor([0.5, 1.0, 3.0], dtype=torch.float64)
        cases.append(torch.randn(n, d, generator=g, dtype=torch.float64) * scale)
    for X in cases:
        case = f"X of shape {tuple(X.shape)}"
        got = _number(call(answer, X.clone(), case=case), case)
        H = 2 / len(X) * X.T @ X                  # Hessian of (1/n) ||X w - y||^2
        _close(got, 2 / torch.linalg.eigvalsh(H).max().item(), case)
    return f"{len(cases)} random data sets, features of different scales"


@register("ch3_initial_loss", "cross-entropy of all-zero logits",
          chapter=3, build=False)
def _initial_loss(answer):
    g = _gen()
    qs = [2, 10] + torch.randint(3, 1000, (3,), generator=g).tolist()
    for q in qs:
        case = f"q = {q}"
        got = _number(call(answer, q, case=case), case)
        labels = torch.randint(0, q, (200,), generator=g)
        want = torch.nn.functional.cross_entropy(
            torch.zeros(200, q, dtype=torch.float64), labels).item()
        _close(got, want, case, rel=1e-6)
    return f"{len(qs)} class counts from 2 to 1,000"


@register("ch3_logsumexp", "logsumexp(o) without overflow", chapter=3, build=True)
def _logsumexp(answer):
    g = _gen()
    cases = [torch.tensor([1000.0, 1001.0, 1002.0]),
             torch.tensor([[-1000.0, -1001.0], [0.5, 90.0]])]
    for shape in [(4, 5), (2, 3, 7)]:
        cases.append(300 * torch.randn(shape, generator=g) + 500)
    for i, o in enumerate(cases):
        case = f"case {i}, o of shape {tuple(o.shape)}"
        got = call(answer, o.clone(), case=case)
        if isinstance(got, torch.Tensor) and torch.isinf(got).any():
            raise Wrong(f"your answer overflows to inf ({case}): "
                        f"subtract the maximum first")
        expect(got, torch.logsumexp(o, dim=-1), case=case, rtol=1e-5, atol=1e-4)
    return f"{len(cases)} cases on the last dim, scores beyond ±1,000"


@register("ch3_normal_equation", "normal_equation(X, y) with a bias", chapter=3,
          build=True)
def _normal_equation(answer):
    g = _gen()
    for _ in range(4):
        n = int(torch.randint(8, 300, (1,), generator=g))
        d = int(torch.randint(1, 6, (1,), generator=g))
        X = torch.randn(n, d, generator=g, dtype=torch.float64)
        w_true = torch.randn(d, generator=g, dtype=torch.float64)
        b_true = 3 * torch.randn((), generator=g, dtype=torch.float64)
        y = X @ w_true + b_true + 0.3 * torch.randn(n, generator=g, dtype=torch.float64)
        case = f"X of shape {(n, d)}"
        got = call(answer, X.clone(), y.clone(), case=case)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise Wrong(f"expected the pair (w, b) ({case}), got {type(got).__name__}")
        X1 = torch.cat([X, torch.ones(n, 1, dtype=X.dtype)], dim=1)
        sol = torch.linalg.lstsq(X1, y[:, None]).solution[:, 0]
        w, b = got
        if not isinstance(w, torch.Tensor):
            raise Wrong(f"w: expected a torch.Tensor ({case}), got {type(w).__name__}")
        expect(w.reshape(-1) if w.numel() == d else w, sol[:d], case=f"w, {case}",
               rtol=1e-6, atol=1e-8, dtype=False)
        _close(_number(b, f"b, {case}"), sol[d].item(), f"b, {case}", rel=1e-6)
    return "4 random noisy data sets, one to five features"
