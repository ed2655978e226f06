"""Chapter 9 (what each piece buys): the exercises' judges."""
from __future__ import annotations


import torch
import torch.nn.functional as F

from .core import Wrong, call, expect, register
from .core import fresh_generator as _gen, as_number as _number


@register("ch9_ffn_params", "parameters d_ff=0 removes", chapter=9,
          build=True)
def _ffn_params(answer):
    from ..transformer import EncoderBlock
    g = _gen()
    cases = [(int(torch.randint(2, 65, (1,), generator=g)) * 2,
              int(torch.randint(1, 300, (1,), generator=g))) for _ in range(4)]
    for d, d_ff in cases:
        count = lambda m: sum(p.numel() for p in m.parameters())
        want = count(EncoderBlock(d, 2, d_ff)) - count(EncoderBlock(d, 2, 0))
        case = f"d_model={d}, d_ff={d_ff}"
        expect(_number(call(answer, d, d_ff, case=case), case), want, case=case, rtol=0,
               atol=0.5)
    return f"{len(cases)} random (d_model, d_ff)"


@register("ch9_smoothed_ce", "label-smoothed cross-entropy", chapter=9,
          build=True)
def _smoothed_ce(answer):
    g = _gen()
    cases = [((6, 5), 0.1), ((2, 7, 11), 0.2), ((3, 4, 9), 0.0), ((8, 15), 0.3)]
    for shape, eps in cases:
        logits = torch.randn(shape, generator=g, dtype=torch.float64) * 2
        target = torch.randint(shape[-1], shape[:-1], generator=g)
        want = F.cross_entropy(logits.reshape(-1, shape[-1]), target.reshape(-1),
                               label_smoothing=eps)
        case = f"logits {tuple(shape)}, eps={eps}"
        got = call(answer, logits.clone(), target.clone(), eps, case=case)
        if isinstance(got, torch.Tensor) and got.numel() != 1:
            raise Wrong(f"expected one number, the mean over every position ({case}), "
                        f"got a tensor of shape {tuple(got.shape)}")
        expect(_number(got, case), want.item(), case=case, rtol=1e-6, atol=1e-9)
    return f"{len(cases)} random cases, (N, V) and (B, T, V), eps 0 to 0.3"


@register("ch9_conv_ffn", "the FFN as a 1x1 convolution", chapter=9,
          build=True)
def _conv_ffn(answer):
    from ..transformer import PositionWiseFFN
    g = _gen()
    cases = [(2, 5, 8, 32), (1, 9, 16, 4), (3, 1, 4, 12)]
    for B, T, d, d_ff in cases:
        torch.manual_seed(int(torch.randint(10**6, (1,), generator=g)))
        ffn = PositionWiseFFN(d, d_ff).double()
        x = torch.randn(B, d, T, generator=g, dtype=torch.float64)     # channels first
        with torch.no_grad():
            want = ffn(x.transpose(1, 2)).transpose(1, 2)
            case = f"x (B, d, T) = {(B, d, T)}, d_ff={d_ff}"
            got = call(answer, x.clone(), ffn, case=case)
        expect(got, want, case=case, rtol=1e-9, atol=1e-12)
    return f"{len(cases)} random shapes, T = 1 included"
