"""Chapter 7 (LayerNorm vs BatchNorm): the exercises' judges."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .core import Wrong, call, expect, register
from .core import fresh_generator as _gen, as_number as _number


@register("ch7_padded_bn", "BatchNorm of a padded real token", chapter=7, build=True)
def _padded_bn(answer):
    from ..norms import BatchNorm
    g = _gen()
    cases = [(5, 20, 2.0)]
    for _ in range(4):
        T = int(torch.randint(3, 60, (1,), generator=g))
        n = int(torch.randint(1, T, (1,), generator=g))
        cases.append((n, T, float(torch.empty(1).uniform_(0.5, 9, generator=g))))
    for n, T, a in cases:
        x = torch.zeros(1, T, 3, dtype=torch.float64)
        x[0, :n] = a
        want = BatchNorm(3, eps=1e-12).double()(x)[0, 0, 0].item()
        case = f"n={n}, T={T}, a={a:.3g}"
        got = _number(call(answer, n, T, a, case=case), case)
        expect(got, want, case=case, rtol=1e-4, atol=0)
    return f"{len(cases)} random (n, T, a)"


@register("ch7_layernorm_backward", "LayerNorm backward by hand", chapter=7, build=True)
def _ln_backward(answer):
    g = _gen()
    shapes = [(4, 8), (2, 3, 16), (5, 2), (1, 7, 33)]
    for shape in shapes:
        x = (torch.randn(shape, generator=g, dtype=torch.float64) * 3 + 1)
        w = torch.randn(shape[-1], generator=g, dtype=torch.float64)
        dy = torch.randn(shape, generator=g, dtype=torch.float64)
        xr = x.clone().requires_grad_()
        F.layer_norm(xr, shape[-1:], w, None, 1e-5).backward(dy)
        case = f"x of shape {shape}"
        got = call(answer, x.clone(), w.clone(), dy.clone(), 1e-5, case=case)
        expect(got, xr.grad, case=case, rtol=1e-6, atol=1e-9)
    return f"{len(shapes)} random shapes in float64, against autograd"


@register("ch7_stack_gradient", "gradient through a stack", chapter=7, build=True)
def _stack_grad(answer):
    g = _gen()
    cases = [(10, 0.1, False), (10, 0.1, True), (3, 1.3, False), (25, 0.05, True)]
    for _ in range(4):
        cases.append((int(torch.randint(1, 40, (1,), generator=g)),
                      float(torch.empty(1).uniform_(0.01, 1.5, generator=g)),
                      bool(torch.randint(0, 2, (1,), generator=g))))
    for layers, scale, residual in cases:
        h0 = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
        h = h0
        for _ in range(layers):
            h = h + scale * h if residual else scale * h
        h.backward()
        want = h0.grad.item()
        kind = "residual" if residual else "plain"
        case = f"{kind}, {layers} layers, scale {scale:.3g}"
        got = _number(call(answer, layers, scale, residual, case=case), case)
        if not math.isclose(got, want, rel_tol=1e-6, abs_tol=0.0):
            raise Wrong(f"wrong value ({case}): relative error "
                        f"{abs(got - want) / abs(want):.2g}")
    return f"{len(cases)} stacks, plain and residual, to 1e-6 relative"
