"""Chapter 11 (RNN, CNN and attention, measured): the exercises' judges."""
from __future__ import annotations

import ast

import torch
from torch import nn

from .core import Wrong, _tree, call, expect, register
from .core import fresh_generator as _gen


def _randint(lo: int, hi: int, g: torch.Generator) -> int:
    """An int in lo..hi (inclusive)."""
    return int(torch.randint(lo, hi + 1, (1,), generator=g))


# ------------------------------------------------------------- a bidirectional GRU
@register("ch11_bidirectional", "a bidirectional GRU from two GRUs", chapter=11,
          build=True)
def _bidirectional(answer):
    if any(isinstance(node, ast.keyword) and node.arg == "bidirectional"
           for node in ast.walk(_tree(answer))):
        raise Wrong("build it from the two one-way GRUs you are given, not with "
                    "nn.GRU(bidirectional=True)")
    g = _gen()
    for i in range(3):
        d, H = _randint(2, 12, g), _randint(2, 12, g)
        B, T = _randint(1, 4, g), _randint(2, 9, g)
        torch.manual_seed(_randint(0, 2**31 - 1, g))
        both = nn.GRU(d, H, batch_first=True, bidirectional=True)
        fwd, bwd = nn.GRU(d, H, batch_first=True), nn.GRU(d, H, batch_first=True)
        with torch.no_grad():
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(fwd, f"{name}_l0").copy_(getattr(both, f"{name}_l0"))
                getattr(bwd, f"{name}_l0").copy_(getattr(both, f"{name}_l0_reverse"))
        x = torch.randn(B, T, d, generator=g)
        case = f"case {i}: x {tuple(x.shape)}, hidden size {H}"
        out = call(answer, fwd, bwd, x.clone(), case=case)
        with torch.no_grad():
            want = both(x)[0]
        if isinstance(out, tuple):
            raise Wrong(f"{case}: return the outputs (B, T, 2H) only, not a tuple")
        if isinstance(out, torch.Tensor) and out.shape == want.shape:
            out_d = out.detach()
            if torch.allclose(out_d[..., :H], want[..., H:], atol=1e-5) and \
                    torch.allclose(out_d[..., H:], want[..., :H], atol=1e-5):
                raise Wrong(f"{case}: the two halves are swapped: the left-to-right "
                            f"GRU's outputs come first")
            if torch.allclose(out_d[..., :H], want[..., :H], atol=1e-5) and \
                    torch.allclose(out_d[..., H:].flip(1), want[..., H:], atol=1e-5):
                raise Wrong(f"{case}: the right-to-left half is in reading order: "
                            f"its output for position t must sit at position t")
        expect(out.detach() if isinstance(out, torch.Tensor) else out, want,
               case=case, rtol=1e-4, atol=1e-5)
    return "3 random sizes, against nn.GRU(bidirectional=True) with the same weights"


# ------------------------------------------------------------- truncated BPTT
@register("ch11_truncated_bptt", "truncated backpropagation through time",
          chapter=11, build=True)
def _truncated(answer):
    from ..cost import gradient_by_distance
    g = _gen()
    for i in range(3):
        d, H = _randint(2, 8, g), _randint(2, 8, g)
        B, T, k = _randint(1, 3, g), _randint(9, 20, g), _randint(2, 6, g)
        if T % k == 0:
            T += 1                                     # a last, shorter chunk
        torch.manual_seed(_randint(0, 2**31 - 1, g))
        rnn = nn.GRU(d, H, batch_first=True)
        x = torch.randn(B, T, d, generator=g)
        case = f"case {i}: x {tuple(x.shape)}, chunks of k={k}"
        out = call(answer, rnn, x.clone(), k, case=case)
        if isinstance(out, tuple):
            raise Wrong(f"{case}: return the outputs (B, T, H) only, not a tuple")
        with torch.no_grad():
            want = rnn(x)[0]
        if isinstance(out, torch.Tensor) and out.shape == want.shape and not \
                torch.allclose(out.detach(), want, atol=1e-5):
            first = (out.detach() - want).abs().amax((0, 2)).gt(1e-5).nonzero()
            t = int(first[0]) if len(first) else 0
            raise Wrong(f"{case}: the outputs differ from rnn(x) from position {t} "
                        f"on: each chunk must start from the state the previous "
                        f"chunk ended in (truncation cuts the gradient, not the "
                        f"state)")
        expect(out.detach() if isinstance(out, torch.Tensor) else out, want,
               case=case, rtol=1e-4, atol=1e-5)
        if not out.requires_grad:
            raise Wrong(f"{case}: the outputs carry no gradient (no torch.no_grad, "
                        f"no detach of the outputs: only the state between chunks "
                        f"is detached)")
        grad = gradient_by_distance(lambda z: answer(rnn, z, k), x)
        reach = int((grad > 0).sum())
        if reach != k:
            more = "beyond" if reach > k else "within"
            raise Wrong(f"{case}: the gradient of input 0 reaches {reach} outputs, "
                        f"expected exactly the first chunk's {k}: detach the state "
                        f"between chunks (and only there); something {more} the "
                        f"first chunk is wrong")
    return "3 random sizes: rnn(x)'s outputs, and input 0's gradient stops at k"


# ------------------------------------------------------------- a relative position bias
MOTIF_STEPS, MOTIF_N, MOTIF_HEADS, MOTIF_REACH = 400, 200, 4, 4


@register("ch11_relative_bias", "a learned relative position bias", chapter=11,
          build=True, project=True)
def _relative_bias(answer):
    from .. import seqtasks
    g = _gen()
    for h, D in ((2, 3), (4, 1), (3, 5)):
        case = f"RelativeBias({h}, {D})"
        bias = call(answer, h, D, case=case)
        if not isinstance(bias, nn.Module):
            raise Wrong(f"{case}: expected an nn.Module, got {type(bias).__name__}")
        call(bias, 2, case=f"{case}, T=2")          # a placeholder: "no answer yet"
        n = sum(p.numel() for p in bias.parameters() if p.requires_grad)
        if n != h * (2 * D + 1):
            raise Wrong(f"{case}: {n} trainable numbers, expected one per head and "
                        f"offset -{D}..{D}: {h} x {2 * D + 1} = {h * (2 * D + 1)}")
        for T in (1, D + 3, 2 * D + 5):
            b = call(bias, T, case=f"{case}, T={T}")
            expect(tuple(b.shape) if isinstance(b, torch.Tensor) else b, (h, T, T),
                   case=f"{case}(T={T}): shape")
            if not b.is_floating_point():
                raise Wrong(f"{case}(T={T}): expected a float tensor, got {b.dtype}")
            if b.detach().abs().max() != 0:
                raise Wrong(f"{case}: start every number at zero (an untrained bias "
                            f"must not prefer any offset)")
        with torch.no_grad():
            for p in bias.parameters():
                p.copy_(torch.randn(p.shape, generator=g))
        T = 2 * D + 6
        b = call(bias, T, case=f"{case}, T={T}")
        i = torch.arange(T)
        off = (i[None, :] - i[:, None]).clamp(-D, D)                 # j - i, clipped
        for o in range(-D, D + 1):
            vals = b.detach()[:, off == o]                           # (h, count)
            if (vals - vals[:, :1]).abs().max() > 1e-6:
                raise Wrong(f"{case}: b[h, i, j] must depend on j - i only (clipped "
                            f"to ±{D}): the cells of offset {o} differ")
        per = torch.stack([b.detach()[:, off == o][:, 0] for o in range(-D, D + 1)], 1)
        gaps = (per[:, :, None] - per[:, None, :]).abs() + torch.eye(2 * D + 1) * 9
        if gaps.min() < 1e-6:
            raise Wrong(f"{case}: two offsets share one number; every offset -{D}.."
                        f"{D} needs its own (j - i and i - j differ: the key is "
                        f"before or after the query), |j - i| > {D} the one of ±{D}")
        if h > 1 and (per[1:] - per[:1]).abs().max() < 1e-6:
            raise Wrong(f"{case}: every head has the same bias; give each head its own")
        w = torch.randn(b.shape, generator=g)
        (b * w).sum().backward()
        if any(p.grad is None or p.grad.abs().max() == 0 for p in bias.parameters()):
            raise Wrong(f"{case}: a parameter gets no gradient from the bias")
    # the chapter's task: the motif Transformer with the bias, 200 training sequences
    bias = call(answer, MOTIF_HEADS, MOTIF_REACH, case="the motif run")
    r = seqtasks.motif_run("transformer", n_train=MOTIF_N, seed=0, steps=MOTIF_STEPS,
                           bias=bias)
    x, y = seqtasks.motif_batch(2000, generator=torch.Generator().manual_seed(99_999))
    blind = seqtasks.order_blind_accuracy(x, y)["order_blind"]
    if r["accuracy"] < 0.95:
        raise Wrong(f"trained with your bias on {MOTIF_N} sequences, the motif "
                    f"Transformer reaches a held-out accuracy of {r['accuracy']:.3f}, "
                    f"not clearly above the best order-blind rule ({blind:.3f}): "
                    f"is the bias added per head, with offset j - i for query i "
                    f"and key j?")
    return (f"the structure on 3 sizes, and the motif Transformer with your bias: "
            f"held-out accuracy {r['accuracy']:.3f} after {MOTIF_STEPS} steps on "
            f"{MOTIF_N} sequences (order-blind best {blind:.3f})")
