"""Chapter 10 (what each piece buys, part 2): the exercises' judges."""
from __future__ import annotations


import torch

from .core import Wrong, call, expect, register
from .core import fresh_generator as _gen, as_number as _number


@register("ch10_score_cost", "multiply-adds of the attention scores", chapter=10,
          build=True)
def _score_cost(answer):
    g = _gen()
    cases = []
    for _ in range(5):
        h = int(2 ** torch.randint(0, 6, (1,), generator=g))
        cases.append((int(torch.randint(1, 200, (1,), generator=g)),
                      h * int(torch.randint(1, 17, (1,), generator=g)), h))
    for S, d_model, h in cases:
        want = h * S * S * (d_model // h)         # h heads, S x S dot products of d_k
        case = f"S={S}, d_model={d_model}, h={h}"
        expect(_number(call(answer, S, d_model, h, case=case), case), want, case=case,
               rtol=0, atol=0.5)
    return f"{len(cases)} random (S, d_model, h)"


def _entropy_by_position(targets: torch.Tensor, pad_id: int) -> float:
    out = []
    for t in range(targets.shape[1]):
        col = targets[:, t]
        col = col[col != pad_id]
        if len(col) == 0:
            continue
        p = torch.bincount(col).double()
        p = p[p > 0] / p.sum()
        out.append(-(p * p.log()).sum().item())
    return sum(out) / len(out)


@register("ch10_positional_entropy", "input-blind loss, positions known", chapter=10,
          build=True)
def _positional_entropy(answer):
    g = _gen()
    cases = []
    for _ in range(3):
        n, T, V = (int(torch.randint(20, 200, (1,), generator=g)),
                   int(torch.randint(2, 12, (1,), generator=g)),
                   int(torch.randint(3, 15, (1,), generator=g)))
        # a skewed distribution per position, a few pads at the end of some rows
        logits = torch.randn(T, V, generator=g) * 2
        tg = torch.stack([torch.multinomial(logits[t].softmax(-1), n, replacement=True,
                                            generator=g) for t in range(T)], 1) + 1
        lengths = torch.randint(max(1, T - 2), T + 1, (n,), generator=g)
        tg[torch.arange(T)[None, :] >= lengths[:, None]] = 0              # pad id 0
        cases.append(tg)
    for i, tg in enumerate(cases):
        case = f"targets of shape {tuple(tg.shape)}, pad id 0"
        got = _number(call(answer, tg.clone(), 0, case=case), case)
        expect(got, _entropy_by_position(tg, 0), case=case, rtol=1e-5, atol=1e-8)
    return f"{len(cases)} random target sets, with pads"


def _rope(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    T, d = x.shape[-2], x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)        # (d/2,)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * theta               # (T, d/2)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = x1 * cos - x2 * sin
    out[..., 1::2] = x1 * sin + x2 * cos
    return out


@register("ch10_rope", "rotary position embedding", chapter=10, build=True)
def _rope_judge(answer):
    g = _gen()
    shapes = [(2, 5, 8), (1, 3, 7, 16), (4, 1, 2), (2, 33, 64)]
    for shape in shapes:
        x = torch.randn(shape, generator=g, dtype=torch.float64)
        case = f"x of shape {shape}"
        expect(call(answer, x.clone(), case=case), _rope(x), case=case, rtol=1e-9,
               atol=1e-12)
    # what RoPE is for: q.k depends on the offset only
    q, k = torch.randn(1, 1, 16, generator=g), torch.randn(1, 1, 16, generator=g)
    dots = []
    for p in (0, 7, 30):
        Q = call(answer, q.expand(1, p + 1, 16).contiguous(),
                 case="a shifted pair")[0, p]
        K = call(answer, k.expand(1, p + 4, 16).contiguous(),
                 case="a shifted pair")[0, p + 3]
        dots.append(float(Q @ K))
    if max(dots) - min(dots) > 1e-4 * (1 + abs(dots[0])):
        raise Wrong("q.k of two rotated vectors 3 positions apart changes with where "
                    "the pair sits; it should depend on the offset only")
    return f"{len(shapes)} random shapes, T = 1 included, and the offset property"
