"""Chapter 4 (attention): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`.
"""
from __future__ import annotations

import contextlib
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from .core import Wrong, call, expect, forbid, forbid_loops, register
from .core import fresh_generator as _gen


@contextlib.contextmanager
def _one_thread():
    """Tiny tensors train faster on one thread (and do not fight other programs)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)

# ops that only look at a tensor differently: they create no new numbers
_VIEWS = {"transpose", "t", "permute", "view", "_unsafe_view", "reshape", "expand",
          "slice", "select", "alias", "detach", "unsqueeze", "squeeze", "as_strided",
          "split", "split_with_sizes", "unbind", "narrow", "clone", "_to_copy",
          "lift_fresh", "empty_like", "zeros_like", "ones_like", "full_like", "copy_"}


class _Shapes(TorchDispatchMode):
    """Records the shape of every tensor that an operation computes (views aside)."""

    def __init__(self):
        super().__init__()
        self.shapes: list[tuple[str, tuple]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.__name__.split(".")[0]
        if name not in _VIEWS:
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor):
                    self.shapes.append((name, tuple(t.shape)))
        return out


def _run_recording(fn, *args, case=""):
    """call(fn, *args) while recording the shapes it computes -> (output, shapes)."""
    rec = _Shapes()
    with rec:
        out = call(fn, *args, case=case)
    return out, rec.shapes


# ------------------------------------------------------------------ the lookup task
def _lookup_batch(n, generator, n_pairs=8, vocab=16):
    """The lookup task of section 4.7: 8 (key, value) pairs, a query key, its value."""
    keys = torch.rand(n, vocab, generator=generator).argsort(-1)[:, :n_pairs]
    values = torch.rand(n, vocab, generator=generator).argsort(-1)[:, :n_pairs]
    pick = torch.randint(n_pairs, (n, 1), generator=generator)
    return keys, values, keys.gather(1, pick)[:, 0], values.gather(1, pick)[:, 0]


class _Lookup(nn.Module):
    """Section 4.7's model: embed pairs and query, attend once, read out the value."""

    def __init__(self, attention, d=16, vocab=16):
        super().__init__()
        self.attention = attention
        self.key_emb, self.value_emb = nn.Embedding(vocab, d), nn.Embedding(vocab, d)
        self.W_q, self.W_k, self.W_v = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.out = nn.Linear(d, vocab)

    def forward(self, keys, values, query):
        pairs = self.key_emb(keys) + self.value_emb(values)
        q = self.key_emb(query)[:, None]
        o = self.attention(self.W_q(q), self.W_k(pairs), self.W_v(pairs))
        return self.out(o[:, 0])


def _train_lookup(attention, seed=0, steps=60):
    """Train section 4.7's lookup model with ``attention``; -> held-out accuracy."""
    with torch.random.fork_rng(), _one_thread():
        torch.manual_seed(seed)
        model = _Lookup(attention)
        opt = torch.optim.Adam(model.parameters(), lr=0.03)
        batches = torch.Generator().manual_seed(seed)
        for _ in range(steps):
            keys, values, query, answer = _lookup_batch(64, batches)
            loss = F.cross_entropy(model(keys, values, query), answer)
            if not torch.isfinite(loss):
                raise Wrong("the loss became NaN or inf while training the lookup "
                            "model with your attention")
            opt.zero_grad()
            loss.backward()
            opt.step()
        keys, values, query, answer = _lookup_batch(
            1000, torch.Generator().manual_seed(10_000))
        with torch.no_grad():
            right = model(keys, values, query).argmax(-1) == answer
            return right.float().mean().item()


# ------------------------------------------------------------------ 1. blocked
@register("ch4_attention_blocked", "blocked attention, running softmax",
          chapter=4, build=True, project=True)
def _attention_blocked(answer):
    forbid(answer, ["scaled_dot_product_attention", "MultiheadAttention",
                    "multi_head_attention_forward", "masked_softmax"],
           "write the running softmax yourself")
    g = _gen()
    # (leading dims, T_q, T_k, d_k, d_v, block): T_k is never a multiple of block, and
    # no other size equals T_k, so a (..., T_q, T_k) tensor is recognisable
    cases = [((), 5, 11, 8, 4, 4), ((2,), 3, 13, 6, 5, 5), ((2, 3), 7, 17, 16, 3, 4),
             ((1,), 1, 9, 64, 2, 2), ((), 4, 7, 8, 8, 16)]
    for i, (lead, tq, tk, dk, dv, block) in enumerate(cases):
        q = torch.randn(*lead, tq, dk, generator=g, dtype=torch.float64)
        k = torch.randn(*lead, tk, dk, generator=g, dtype=torch.float64)
        v = torch.randn(*lead, tk, dv, generator=g, dtype=torch.float64)
        case = (f"case {i}: Q {tuple(q.shape)}, K {tuple(k.shape)}, "
                f"V {tuple(v.shape)}, block {block}")
        qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
        got, shapes = _run_recording(answer, qg, kg, vg, block, case=case)
        if block < tk:
            full = [s for _, s in shapes
                    if len(s) >= 2 and s[-2:] in ((tq, tk), (tk, tq))]
            if full:
                raise Wrong(f"your code computes a tensor of shape {full[0]} ({case}): "
                            f"that is all T_q × T_k scores at once; compute at most "
                            f"{block} keys' scores at a time")
        qr, kr, vr = (t.clone().requires_grad_() for t in (q, k, v))
        want = F.scaled_dot_product_attention(qr, kr, vr)
        expect(got, want.detach(), case=case, rtol=1e-7, atol=1e-9)
        g_up = torch.randn(want.shape, generator=g, dtype=torch.float64)
        try:
            grads = torch.autograd.grad(got, (qg, kg, vg), g_up, allow_unused=True)
        except RuntimeError as err:
            raise Wrong(f"no gradient flows through your output ({case}): {err}") \
                from None
        ref = torch.autograd.grad(want, (qr, kr, vr), g_up)
        for name, a, b in zip("QKV", grads, ref):
            if a is None:
                raise Wrong(f"no gradient reaches {name} ({case})")
            expect(a, b, case=f"gradient of {name}, {case}", rtol=1e-6, atol=1e-8)
    # scores in the thousands: exp overflows unless taken relative to a maximum
    q = 60 * torch.randn(2, 6, 8, generator=g)
    k = 60 * torch.randn(2, 10, 8, generator=g)
    v = torch.randn(2, 10, 3, generator=g)
    case = "float32 scores in the thousands, block 3"
    got = call(answer, q.clone(), k.clone(), v.clone(), 3, case=case)
    if isinstance(got, torch.Tensor) and not torch.isfinite(got).all():
        raise Wrong(f"your output has inf or NaN ({case}): take every exponential "
                    "relative to the running maximum")
    expect(got, F.scaled_dot_product_attention(q, k, v), case=case, rtol=1e-4,
           atol=1e-5)
    # the project: the chapter's lookup model, trained with the reader's attention
    acc = _train_lookup(lambda q_, k_, v_: answer(q_, k_, v_, 3))
    if acc < 0.9:
        raise Wrong(f"trained in the lookup model of section 4.7 with block 3, your "
                    f"attention reaches a held-out accuracy of {acc:.3f} (a random "
                    f"pair gives 0.125): does the gradient flow through every block?")
    return (f"{len(cases)} cases equal F.scaled_dot_product_attention with their "
            f"gradients, scores in the thousands, no T_q × T_k tensor; in the lookup "
            f"model: held-out accuracy {acc:.3f} (random pair 0.125, chance 0.0625)")


# ------------------------------------------------------------------ 2. Pearson scores
@register("ch4_pearson", "pearson_scores(Q, K)", chapter=4, build=True)
def _pearson(answer):
    forbid_loops(answer, "the exercise asks for tensor operations and one matrix "
                         "product, with no Python loop")
    forbid(answer, ["corrcoef", "cov", "pearsonr", "cosine_similarity"],
           "compute it from centred, normalised rows")
    g = _gen()
    for i, (tq, tk, d) in enumerate([(3, 4, 10), (1, 6, 50), (5, 2, 3), (4, 4, 7)]):
        q = torch.randn(tq, d, generator=g, dtype=torch.float64) + 3 * torch.randn(
            tq, 1, generator=g, dtype=torch.float64)  # each row has its own offset
        k = (torch.randn(tk, d, generator=g, dtype=torch.float64)
             * (1 + 3 * torch.rand(tk, 1, generator=g, dtype=torch.float64))
             + 5 * torch.randn(tk, 1, generator=g, dtype=torch.float64))
        case = f"case {i}: Q {tuple(q.shape)}, K {tuple(k.shape)}"
        got = call(answer, q.clone(), k.clone(), case=case)
        want = torch.corrcoef(torch.cat([q, k]))[:tq, tq:]
        expect(got, want, case=case, rtol=1e-6, atol=1e-9)
    return "4 random cases, rows with their own offsets and scales"


# ------------------------------------------------------------------ 3. not self
@register("ch4_not_self", "three of four tokens prefer another", chapter=4,
          build=False)
def _not_self(answer):
    X = answer
    if not isinstance(X, torch.Tensor):
        raise Wrong(f"expected a torch.Tensor, got {type(X).__name__}")
    if tuple(X.shape) != (4, 2):
        raise Wrong(f"expected shape (4, 2), got {tuple(X.shape)}")
    X = X.detach().double()
    if not torch.isfinite(X).all():
        raise Wrong("every entry must be a finite number")
    if (X.norm(dim=1) < 1e-9).any():
        raise Wrong("a zero row has no direction: its cosine similarity is undefined")
    dots = X @ X.T
    off = dots.clone()
    off.fill_diagonal_(-math.inf)
    prefers_other = off.max(dim=1).values > dots.diagonal() + 1e-9
    n = int(prefers_other.sum())
    if n < 3:
        verb = "prefers" if n == 1 else "prefer"
        raise Wrong(f"by dot product, {n} of the 4 tokens {verb} another token; make "
                    "three do so (a longer vector pointing almost the same way scores "
                    "more than a token's own length²)")
    Xn = X / X.norm(dim=1, keepdim=True)
    cos = Xn @ Xn.T
    cos_off = cos.clone()
    cos_off.fill_diagonal_(-math.inf)
    ties = (cos_off.max(dim=1).values > 1 - 1e-9).nonzero().flatten().tolist()
    if ties:
        raise Wrong(f"with cosine similarity, row(s) {ties} tie with another token: "
                    "two rows point in exactly the same direction")
    return "by dot product three tokens prefer another; by cosine each prefers itself"


# ------------------------------------------------------------------ 4. softmax backward
@register("ch4_softmax_backward", "softmax_backward(p, g)",
          chapter=4, build=True)
def _softmax_backward(answer):
    forbid_loops(answer)
    forbid(answer, ["torch.autograd", "backward", "jacobian", "vjp", "torch.func",
                    "diag_embed", "diag", "softmax", "outer", "einsum"],
           "derive dL/ds from p and g with elementwise operations and a sum, without "
           "autograd and without a T × T matrix")
    g = _gen()
    T = 7
    cases = [((), 1.0), ((3,), 1.0), ((2, 4), 2.0), ((5,), 40.0), ((2, 3), 0.1)]
    for i, (lead, scale) in enumerate(cases):
        s = (scale * torch.randn(*lead, T, generator=g, dtype=torch.float64))
        s.requires_grad_()
        p = torch.softmax(s, dim=-1)
        up = torch.randn(*lead, T, generator=g, dtype=torch.float64)
        (want,) = torch.autograd.grad(p, s, up)
        kind = "saturated rows" if scale > 10 else f"scores × {scale:g}"
        case = f"case {i}: p {tuple(p.shape)}, {kind}"
        got, shapes = _run_recording(answer, p.detach().clone(), up.clone(), case=case)
        square = [s_ for _, s_ in shapes if len(s_) >= 2 and s_[-2:] == (T, T)]
        if square:
            raise Wrong(f"your code builds a {T} × {T} matrix ({case}): the Jacobian "
                        "itself; find dL/ds with elementwise operations and a sum")
        expect(got, want, case=case, rtol=1e-8, atol=1e-12)
    return (f"{len(cases)} cases against autograd, saturated rows included, no T × T "
            "matrix")
