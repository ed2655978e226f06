"""Chapter 2 (autograd): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here with autograd (not on
the page) and compares the reader's hand-derived answer with :func:`expect`.
"""
from __future__ import annotations


import torch
from torch.autograd.functional import jacobian

from .core import Wrong, call, expect, register
from .core import fresh_generator as _gen


@register("ch2_softmax_jacobian", "softmax_jacobian(x)", chapter=2, build=True)
def _softmax_jacobian(answer):
    g = _gen()
    sizes = [1, 4] + torch.randint(2, 10, (3,), generator=g).tolist()
    for i, n in enumerate(sizes):
        dtype = torch.float64 if i % 2 else torch.float32
        x = (3 * torch.randn(n, generator=g)).to(dtype)
        case = f"x of length {n}, {dtype}"
        got = call(answer, x.clone(), case=case)
        want = jacobian(lambda t: torch.softmax(t, dim=0), x)
        expect(got, want, case=case, rtol=1e-4, atol=1e-6)
    return f"{len(sizes)} random vectors of length 1 to 9, float32 and float64"


def _grads_ref(X, y, w, b):
    w, b = w.clone().requires_grad_(), b.clone().requires_grad_()
    ((X @ w + b - y) ** 2).sum().backward()
    return w.grad, b.grad


@register("ch2_linreg_grads", "dL/dw, dL/db of Σ squared error", chapter=2,
          build=True)
def _linreg_grads(answer):
    g = _gen()
    shapes = [(32, 3), (5, 5), (7, 2), (1, 4)]
    for n, d in shapes:
        X, y = torch.randn(n, d, generator=g), torch.randn(n, generator=g)
        w, b = torch.randn(d, generator=g), torch.randn((), generator=g)
        case = f"n = {n}, d = {d}"
        got = call(answer, X, y, w, b, case=case)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise Wrong(f"expected the pair (grad_w, grad_b) ({case}), "
                        f"got {type(got).__name__}")
        want_w, want_b = _grads_ref(X, y, w, b)
        expect(got[0], want_w, case=f"grad_w, {case}", rtol=1e-4, atol=1e-5)
        gb = got[1]
        if isinstance(gb, torch.Tensor) and gb.numel() == 1:
            gb = gb.reshape(())                       # (1,) or () both fine
        elif isinstance(gb, (int, float)) and not isinstance(gb, bool):
            gb = torch.tensor(float(gb))              # a plain number is fine too
        expect(gb, want_b, case=f"grad_b, {case}", rtol=1e-4, atol=1e-5, dtype=False)
    return f"{len(shapes)} random data sets, n = 1 and n = d included"


@register("ch2_predict_grad", "x.grad: two backwards, one detach",
          chapter=2, build=False)
def _predict_grad(answer):
    g = _gen()
    for n in [3] + torch.randint(1, 8, (3,), generator=g).tolist():
        x0 = 2 * torch.randn(n, generator=g)
        x = x0.clone().requires_grad_()
        for _ in range(2):
            (x ** 3).sum().backward()
        (x * x.detach()).sum().backward()
        case = f"x of length {n}"
        got = call(answer, x0.clone(), case=case)
        expect(got, x.grad, case=case, rtol=1e-5, atol=1e-5)
    return "4 random x, each against what autograd accumulates"
