"""Chapter 8 (the Transformer): the exercises' judges."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from .core import NotYet, Wrong, call, expect, forbid, forbid_loops, register
from .core import fresh_generator as _gen


def _rint(lo: int, hi: int, g: torch.Generator) -> int:
    return int(torch.randint(lo, hi, (1,), generator=g))


# ------------------------------------------------------------------ 1. PE at positions
class _Largest(TorchDispatchMode):
    """Records the largest number of elements of any tensor an operation makes."""

    def __init__(self):
        super().__init__()
        self.largest, self.op = 0, ""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor) and t.numel() > self.largest:
                self.largest, self.op = t.numel(), func.__name__.split(".")[0]
        return out


def _pe_ref(positions, d):
    two_i = torch.arange(0, d, 2, dtype=torch.float64)
    angle = positions.double()[:, None] * torch.exp(two_i * (-math.log(10000.0) / d))
    pe = torch.empty(len(positions), d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = angle.sin(), angle.cos()
    return pe


@register("ch8_pe_at_positions", "positional encoding at positions", chapter=8,
          build=True)
def _pe(answer):
    forbid(answer, ["PositionalEncoding"], "compute the encodings of the given "
                                           "positions yourself")
    g = _gen()
    cases = [(torch.arange(5), 8)]
    for _ in range(3):
        start, n = _rint(0, 300, g), _rint(1, 6, g)
        cases.append((torch.arange(start, start + n), 2 * _rint(1, 40, g)))
    cases.append((torch.randint(0, 400, (7,), generator=g), 2 * _rint(1, 40, g)))
    cases.append((torch.randint(200_000, 1_000_000, (6,), generator=g),
                  2 * _rint(8, 40, g)))
    for positions, d in cases:
        case = f"positions {positions.tolist()}, d_model={d}"
        rec = _Largest()
        with rec:
            got = call(answer, positions.clone(), d, case=case)
        if rec.largest > 16 * len(positions) * d + 4096:
            raise Wrong(f"your code makes a tensor of {rec.largest:,} numbers "
                        f"({rec.op}) for {len(positions)} positions ({case}): that is "
                        f"a table from 0; compute the given positions directly")
        want = _pe_ref(positions, d).float()
        if isinstance(got, torch.Tensor) and got.shape == want.shape and \
                positions.max() > 100_000 and not torch.allclose(got.double(),
                                                                 want.double(),
                                                                 atol=1e-4, rtol=0):
            two_i = torch.arange(0, d, 2, dtype=torch.float32)
            a32 = positions.float()[:, None] * torch.exp(two_i * (-math.log(1e4) / d))
            near = torch.stack([a32.sin(), a32.cos()], -1).flatten(1)
            if (got.float() - near).abs().max() < 0.05:
                raise Wrong(f"float32 cannot hold pos·ω exactly near a million "
                            f"({case}): compute the angles in float64, return float32")
        expect(got, want, case=case, rtol=0, atol=1e-4)
    return f"{len(cases)} random position sets, up to a million, no table from 0"


# ------------------------------------------------------------------ 2. KV-cache mask
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


# ------------------------------------------------------------------ 3. after <eos>
def _after_eos_ref(ids, eos_id, pad_id):
    seen = (ids == eos_id).long().cumsum(1)
    after = (seen - (ids == eos_id).long()) > 0  # strictly after first eos
    return ids.masked_fill(after, pad_id)


@register("ch8_after_eos", "pad after the first <eos>", chapter=8, build=True)
def _after_eos(answer):
    forbid_loops(answer, "the exercise asks for tensor operations, with no Python "
                         "loop over the rows")
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


# ------------------------------------------------------------------ 4. project
def _reference_block(d_model, num_heads, d_ff):
    """The block the exercise describes, from the package's pieces."""
    from ..norms import RMSNorm
    from ..transformer import EncoderBlock, PositionWiseFFN
    blk = EncoderBlock(d_model, num_heads, d_ff, 0.0, norm_first=True)
    blk.norm1, blk.norm2 = RMSNorm(d_model), RMSNorm(d_model)
    blk.ffn = PositionWiseFFN(d_model, d_ff, activation="gelu")
    return blk


def _date_exact_match(make_block, seed, steps=400):
    """Exact match on 500 held-out dates of a date model whose encoder block is
    make_block(), trained `steps` steps (pre-norm elsewhere)."""
    from ..text import DateTranslation, bucket_batches
    from ..transformer import Transformer, greedy_decode, label_smoothing_cross_entropy
    from ..schedules import warmup_cosine_schedule
    train = DateTranslation(20000, seed=0)
    test = DateTranslation(500, seed=1, exclude=train)
    src, tgt_in, tgt_out = train.tensors()
    s_test, _, t_test = test.tensors()
    state = torch.random.get_rng_state()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(seed)
        model = Transformer(len(train.src_vocab), len(train.tgt_vocab), d_model=64,
                            num_heads=4, num_layers=1, d_ff=256, dropout=0.0,
                            norm_first=True)
        model.encoder.blocks[0] = make_block()
        opt = torch.optim.Adam(model.parameters(), lr=5e-3, betas=(0.9, 0.98), eps=1e-9)
        sched = warmup_cosine_schedule(30, steps)
        gen = torch.Generator().manual_seed(seed)
        step = 0
        while step < steps:
            for s, ti, to in bucket_batches(src, tgt_in, tgt_out, 64, generator=gen):
                for grp in opt.param_groups:
                    grp["lr"] = 5e-3 * sched(step)
                opt.zero_grad()
                label_smoothing_cross_entropy(model(s, ti), to, 0.1,
                                              ignore_index=0).backward()
                opt.step()
                step += 1
                if step == steps:
                    break
        pred = greedy_decode(model, s_test, 11, 1, 2)
        pred = F.pad(pred, (0, 11 - pred.shape[1]))
        return (pred == t_test).all(1).float().mean().item()
    finally:
        torch.set_num_threads(threads)
        torch.random.set_rng_state(state)


@register("ch8_my_block", "MyEncoderBlock",
          chapter=8, build=True, project=True)
def _my_block(answer):
    from ..masks import padding_mask
    from ..transformer import EncoderBlock
    g = _gen()
    for d, h, d_ff in ((16, 2, 32), (32, 4, 64)):
        case = f"MyEncoderBlock({d}, {h}, {d_ff})"
        blk = call(answer, d, h, d_ff, case=case)
        if isinstance(blk, nn.Module) and not list(blk.parameters()):
            raise NotYet()                          # the placeholder: nothing built yet
        if not isinstance(blk, nn.Module):
            raise Wrong(f"expected an nn.Module, got {type(blk).__name__}")
        if any(isinstance(m, (EncoderBlock, nn.TransformerEncoderLayer))
               for m in blk.modules()):
            raise Wrong("your block wraps a ready-made encoder layer: assemble it from "
                        "attention, norms and the FFN")
        ref = _reference_block(d, h, d_ff).double()
        blk.double()
        with torch.no_grad():
            for p in ref.parameters():
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.3
                        + (1.0 if p.dim() == 1 and p.shape[0] == d else 0.0))
        try:
            blk.load_state_dict(ref.state_dict())
        except RuntimeError as err:
            raise Wrong(f"the reference block's state dict does not load into yours "
                        f"(keys: {list(ref.state_dict())}): {err}") from None
        tokens = torch.tensor([[5, 6, 7, 8, 9, 4], [5, 6, 7, 0, 0, 0]])
        mask = padding_mask(tokens, 0)                        # (2, 1, 1, 6)
        x = torch.randn(2, 6, d, generator=g, dtype=torch.float64)
        g_up = torch.randn(2, 6, d, generator=g, dtype=torch.float64)
        outs = []
        for m in (blk, ref):
            xi = x.clone().requires_grad_()
            y = call(m, xi, mask, case=case)
            if not isinstance(y, torch.Tensor) or y.shape != x.shape:
                raise Wrong(f"forward(x, mask) should return a tensor of shape "
                            f"{tuple(x.shape)} ({case})")
            outs.append((y.detach(), torch.autograd.grad((y * g_up).sum(), xi)[0]))
        (y, dx), (y_ref, dx_ref) = outs
        expect(y, y_ref, case=f"{case}, padded batch", rtol=1e-7, atol=1e-9)
        expect(dx, dx_ref, case=f"gradient of x, {case}", rtol=1e-7, atol=1e-9)
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=g))
    acc = _date_exact_match(lambda: answer(64, 4, 256), seed)
    if acc < 0.5:
        raise Wrong(f"in the date model (400 steps), your block reads the source to an "
                    f"exact match of {acc:.3f} on held-out dates; a model blind to the "
                    f"source gets almost none right, and the reference block above "
                    f"reaches more than 0.5 in these steps")
    return (f"equal to the reference block on 2 sizes (padded batch, output and "
            f"gradient); in the date model, 400 steps: held-out exact match {acc:.3f} "
            f"(a model blind to the source: about 0, its best token accuracy 0.506)")
