"""Chapter 6 (multi-head attention): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .core import NotYet, Wrong, call, expect, forbid_loops, register
from .core import fresh_generator as _gen


def _int(out, case: str) -> float:
    if isinstance(out, torch.Tensor) and out.numel() == 1:
        out = out.item()
    if isinstance(out, bool) or not isinstance(out, (int, float)):
        raise Wrong(f"expected a number ({case}), got {type(out).__name__}")
    return out


def _rint(lo: int, hi: int, g: torch.Generator) -> int:
    return int(torch.randint(lo, hi, (1,), generator=g))


# ------------------------------------------------------------------ 1. counting
@register("ch6_mha_params", "nn.MultiheadAttention params",
          chapter=6, build=True)
def _mha_params(answer):
    g = _gen()
    cases = [(8, 2, 8, 8)]
    for _ in range(4):
        h = _rint(1, 5, g)
        E = h * _rint(2, 12, g)
        kdim, vdim = (int(v) for v in torch.randint(3, 40, (2,), generator=g))
        cases.append((E, h, kdim, vdim))
    for E, h, kdim, vdim in cases:
        case = f"E={E}, h={h}, kdim={kdim}, vdim={vdim}"
        got = _int(call(answer, E, h, kdim, vdim, case=case), case)
        mha = nn.MultiheadAttention(E, h, kdim=kdim, vdim=vdim)
        want = sum(p.numel() for p in mha.parameters())
        if got != want:
            hint = (" (the count does not depend on h)" if h > 1 and
                    got == want * h else "")
            raise Wrong(f"wrong count for {case}: off by {got - want:+d}{hint}")
    return f"{len(cases)} random sizes, kdim and vdim different from E"


# ------------------------------------------------------------------ 2. (T, B, D)
@register("ch6_split_heads_tbd", "split_heads_tbd", chapter=6, build=True)
def _split_tbd(answer):
    g = _gen()
    shapes = [(5, 2, 12, 4), (3, 4, 8, 2)]          # T != B, so (T, ...) and (B, ...)
    while len(shapes) < 6:                           # differ in shape
        T, B, h = _rint(2, 9, g), _rint(2, 5, g), _rint(1, 6, g)
        if T != B:
            shapes.append((T, B, h * _rint(1, 8, g), h))
    for i, (T, B, D, h) in enumerate(shapes):
        dtype = torch.float16 if i == len(shapes) - 1 else torch.float32
        x = torch.randn(T, B, D, generator=g).to(dtype)
        case = f"x of shape {tuple(x.shape)} = (T, B, D), h={h}, {dtype}"
        got = call(answer, x.clone(), h, case=case)
        want = x.view(T, B, h, D // h).permute(1, 2, 0, 3)
        as_batch_first = x.reshape(B, T, h, D // h).transpose(1, 2)
        if (isinstance(got, torch.Tensor) and got.shape == want.shape
                and not torch.equal(got, want) and torch.equal(got, as_batch_first)):
            raise Wrong(f"right shape, wrong numbers ({case}): your cut reads the "
                        f"memory as if it were (B, T, D); in (T, B, D) memory, token t "
                        f"of sentence b is row t·B + b")
        expect(got, want, case=case, atol=0, rtol=0)
    return f"{len(shapes)} random shapes and head counts, float16 included"


# ------------------------------------------------------------------ 3. grouped
def _gqa_ref(q, k, v, tiled=False):
    h, gk = q.shape[1], k.shape[1]
    rep = (lambda t: t.repeat(1, h // gk, 1, 1)) if tiled else (
        lambda t: t.repeat_interleave(h // gk, dim=1))
    k, v = rep(k), rep(v)
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return w @ v


@register("ch6_grouped_attention", "grouped_attention", chapter=6, build=True)
def _grouped(answer):
    forbid_loops(answer, "the exercise asks for tensor operations, with no Python "
                         "loop over heads")
    g = _gen()
    cases = [(2, 4, 2, 3, 5, 8), (1, 6, 3, 4, 4, 16), (2, 8, 1, 1, 7, 4),
             (1, 4, 4, 2, 3, 8), (3, 6, 2, 5, 6, 8)]
    for i, (B, h, gk, tq, tk, dk) in enumerate(cases):
        q = torch.randn(B, h, tq, dk, generator=g, dtype=torch.float64)
        k = torch.randn(B, gk, tk, dk, generator=g, dtype=torch.float64)
        v = torch.randn(B, gk, tk, dk, generator=g, dtype=torch.float64)
        case = f"case {i}: q {tuple(q.shape)}, k and v {tuple(k.shape)}"
        got = call(answer, q.clone(), k.clone(), v.clone(), case=case)
        want = _gqa_ref(q, k, v)
        if (1 < gk < h and isinstance(got, torch.Tensor) and got.shape == want.shape
                and torch.allclose(got.double(), _gqa_ref(q, k, v, tiled=True))):
            raise Wrong(f"query head i uses key/value head i mod g ({case}): the "
                        f"h/g heads that share one are consecutive, head i uses "
                        f"i·g // h (repeat_interleave, not repeat)")
        expect(got, want, case=case, rtol=1e-7, atol=1e-9)
    return (f"{len(cases)} cases: 1 key/value head, as many as query heads, and "
            f"groups in between")


# ------------------------------------------------------------------ 4. project
class _TwoRelationNet(nn.Module):
    """Section 6.5's model with a given attention layer."""

    def __init__(self, attention, vocab_size=26, max_len=8, d_model=32):
        super().__init__()
        self.vocab_size = vocab_size
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.attn = attention
        self.readout = nn.Linear(d_model, 2 * vocab_size)

    def forward(self, x):
        from ..masks import causal_mask
        T = x.shape[1]
        e = self.tok(x) + self.pos.weight[:T]
        a = self.attn(e, e, e, causal_mask(T, x.device))
        return self.readout(a).view(*x.shape, 2, self.vocab_size)


def _two_relations(n, g):
    x = torch.randint(0, 26, (n, 8), generator=g)
    y = torch.full((n, 8, 2), -100)
    y[:, 1:, 0], y[:, 1:, 1] = x[:, :-1], x[:, :1]
    return x, y


def _train_two_relations(make_attention, seed, steps=300):
    """Test accuracy (both letters right, t >= 2) after `steps` Adam steps."""
    loss = lambda lg, y: F.cross_entropy(lg.reshape(-1, 26), y.reshape(-1),
                                         ignore_index=-100)
    g = torch.Generator().manual_seed(seed)
    x, y = _two_relations(steps * 64, g)
    x_test, y_test = _two_relations(2000, g)
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        net = _TwoRelationNet(make_attention())
        opt = torch.optim.Adam(net.parameters(), lr=5e-3)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for xb, yb in zip(x.split(64), y.split(64)):
                opt.zero_grad()
                loss(net(xb), yb).backward()
                opt.step()
        finally:
            torch.set_num_threads(threads)
        with torch.no_grad():
            right = net(x_test).argmax(-1)[:, 2:] == y_test[:, 2:]
    finally:
        torch.random.set_rng_state(state)
    return right.all(-1).float().mean().item()


def _linear(mod, name, d_in, d_out, case):
    lin = getattr(mod, name, None)
    if not isinstance(lin, nn.Linear):
        raise Wrong(f"your module needs an nn.Linear sub-module {name} ({case}), "
                    f"got {type(lin).__name__}")
    if (lin.in_features, lin.out_features) != (d_in, d_out):
        raise Wrong(f"{name} should map {d_in} -> {d_out} features ({case}), yours "
                    f"maps {lin.in_features} -> {lin.out_features}")


def _outputs_and_grads(mod, q, kv, mask, g_up):
    q, kv = q.clone().requires_grad_(), kv.clone().requires_grad_()
    out = mod(q, kv, kv, mask)
    if not isinstance(out, torch.Tensor):
        raise Wrong(f"forward should return a tensor, got {type(out).__name__}")
    if out.shape != g_up.shape:
        raise Wrong(f"forward returned shape {tuple(out.shape)}, expected "
                    f"{tuple(g_up.shape)} = (B, T_q, d_model)")
    params = [mod.W_q.weight, mod.W_k.weight, mod.W_v.weight, mod.W_o.weight]
    grads = torch.autograd.grad((out * g_up).sum(), [q, kv, *params],
                                allow_unused=True)
    return out.detach(), grads


@register("ch6_my_mha", "MyMultiHeadAttention", chapter=6,
          build=True, project=True)
def _my_mha(answer):
    from ..attention import MultiHeadAttention
    from ..masks import causal_mask
    g = _gen()
    d, h = 16, 4
    # 1. num_kv_heads = num_heads: the same function as d2l.MultiHeadAttention
    mod = call(answer, d, h, h, case="MyMultiHeadAttention(16, 4, 4)")
    if isinstance(mod, nn.Module) and not list(mod.parameters()):
        raise NotYet()                          # the placeholder: nothing built yet
    if not isinstance(mod, nn.Module):
        raise Wrong(f"expected an nn.Module, got {type(mod).__name__}")
    if any(isinstance(m, (MultiHeadAttention, nn.MultiheadAttention))
           for m in mod.modules()):
        raise Wrong("your module wraps a ready-made multi-head attention: build it "
                    "from nn.Linear and your own attention")
    for name, d_out in (("W_q", d), ("W_k", d), ("W_v", d), ("W_o", d)):
        _linear(mod, name, d, d_out, "num_kv_heads = num_heads = 4")
    ref = MultiHeadAttention(d, h).double()
    mod.double()                                  # float64: no round-off in the way
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    try:
        mod.load_state_dict(ref.state_dict())
    except RuntimeError as err:
        raise Wrong(f"d2l.MultiHeadAttention's state dict does not load into yours "
                    f"(its keys: {list(ref.state_dict())}): {err}") from None
    for case, tq, tk, mask in (
            ("self-attention, causal mask (1, 1, 5, 5)", 5, 5, causal_mask(5)),
            ("cross-attention, T_q = 3, T_k = 7, padding mask (2, 1, 1, 7)", 3, 7,
             torch.tensor([[True] * 7, [True] * 4 + [False] * 3])[:, None, None, :]),
            ("self-attention, no mask", 6, 6, None)):
        q = torch.randn(2, tq, d, generator=g, dtype=torch.float64)
        kv = q if tq == tk else torch.randn(2, tk, d, generator=g, dtype=torch.float64)
        g_up = torch.randn(2, tq, d, generator=g, dtype=torch.float64)
        try:
            got, got_g = _outputs_and_grads(mod, q, kv, mask, g_up)
        except Wrong:
            raise
        except Exception as err:
            raise Wrong(f"your module raised {type(err).__name__} on {case}: "
                        f"{err}") from None
        want, want_g = _outputs_and_grads(ref, q, kv, mask, g_up)
        expect(got, want, case=case, rtol=1e-7, atol=1e-9)
        for name, a, b in zip(("the query", "key/value", "W_q", "W_k", "W_v", "W_o"),
                              got_g, want_g):
            if a is None:
                raise Wrong(f"no gradient reaches {name} ({case})")
            expect(a, b, case=f"gradient of {name}, {case}", rtol=1e-7, atol=1e-9)
    # 2. fewer key/value heads: grouped-query attention
    for hq, hk in ((4, 2), (4, 1)):
        case = f"MyMultiHeadAttention(16, {hq}, {hk})"
        mod = call(answer, d, hq, hk, case=case)
        d_k = d // hq
        for name, d_out in (("W_q", d), ("W_k", hk * d_k), ("W_v", hk * d_k),
                            ("W_o", d)):
            _linear(mod, name, d, d_out, case)
        x = torch.randn(2, 5, d, generator=g)
        mask = causal_mask(5)
        with torch.no_grad():
            got = call(mod, x, x, x, mask, case=case)
            split = lambda t, n: t.view(2, 5, n, d_k).transpose(1, 2)
            q, k, v = (split(mod.W_q(x), hq), split(mod.W_k(x), hk),
                       split(mod.W_v(x), hk))
            outs = {}
            for tiled in (False, True):
                kk, vv = ((t.repeat(1, hq // hk, 1, 1) if tiled else
                           t.repeat_interleave(hq // hk, dim=1)) for t in (k, v))
                s = (q @ kk.transpose(-2, -1) / math.sqrt(d_k)).masked_fill(
                    ~mask, float("-inf"))
                o = torch.softmax(s, -1) @ vv
                outs[tiled] = mod.W_o(o.transpose(1, 2).reshape(2, 5, d))
        if (hk > 1 and isinstance(got, torch.Tensor) and got.shape == outs[True].shape
                and torch.allclose(got, outs[True], atol=1e-5)):
            raise Wrong(f"query head i uses key/value head i mod g ({case}): "
                        f"consecutive query heads share one (repeat_interleave)")
        expect(got, outs[False], case=f"{case}, causal mask", rtol=1e-4, atol=1e-5)
    # 3. the project: the two-relation task with 2 query heads and 1 key/value head
    # about one seed in six stalls for 300 steps even with a right layer: the best
    # of three seeds is judged (heads that share one output slice never get there)
    for _ in range(3):
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=g))
        acc = _train_two_relations(lambda: answer(32, 2, 1), seed)
        if acc >= 0.9:
            break
    one = _train_two_relations(lambda: MultiHeadAttention(32, 1), seed)
    if acc < 0.9:
        raise Wrong(f"trained on the two-relation task (300 steps, best of 3 seeds), "
                    f"your layer with 2 query heads and 1 key/value head gets both "
                    f"letters right on {acc:.3f} of the test positions (one head, same "
                    f"seed: {one:.3f}); two heads of d2l.MultiHeadAttention reach "
                    f"1.000. Does each query head keep its own slice of the output?")
    return (f"equal to d2l.MultiHeadAttention (self- and cross-attention, masks, "
            f"gradients) and to grouped-query attention; on the two-relation task, 2 "
            f"query heads sharing 1 key/value head: both letters right {acc:.3f} "
            f"(one head, same seed and steps: {one:.3f})")
