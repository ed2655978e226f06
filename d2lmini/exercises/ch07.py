"""Chapter 7 (LayerNorm vs BatchNorm): the exercises' judges."""
from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from .core import NotYet, Wrong, call, expect, register
from .core import fresh_generator as _gen, as_number as _number


def _rint(lo: int, hi: int, g: torch.Generator) -> int:
    return int(torch.randint(lo, hi, (1,), generator=g))


# ------------------------------------------------------------------ 1. padded BN
@register("ch7_padded_bn", "BatchNorm of a padded sentence", chapter=7, build=True)
def _padded_bn(answer):
    from ..norms import BatchNorm
    g = _gen()
    cases = [(5, 20, 2.0), (3, 12, -1.5)]
    for i in range(5):
        T = _rint(3, 60, g)
        n = _rint(1, T, g)
        a = float(torch.empty(1).uniform_(0.5, 9, generator=g))
        cases.append((n, T, -a if i % 2 else a))            # both signs of a
    for n, T, a in cases:
        x = torch.zeros(1, T, 3, dtype=torch.float64)
        x[0, :n] = a
        y = BatchNorm(3, eps=1e-12).double()(x)[0, :, 0]
        want = (y[0].item(), y[-1].item())                  # a real token, a pad
        case = f"n={n}, T={T}, a={a:.3g}"
        got = call(answer, n, T, a, case=case)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise Wrong(f"expected a pair (real token's value, pad's value) ({case}), "
                        f"got {type(got).__name__}")
        real, pad = (_number(v, case) for v in got)
        for name, v, w in (("real token", real, want[0]), ("pad", pad, want[1])):
            if math.isclose(v, -w, rel_tol=1e-4) and a < 0:
                raise Wrong(f"the {name}'s value has the wrong sign for a < 0 "
                            f"({case}): a negative a moves the mean below 0")
            if not math.isclose(v, w, rel_tol=1e-4, abs_tol=1e-9):
                raise Wrong(f"wrong value for the {name} ({case})")
    return f"{len(cases)} random (n, T, a), a of both signs"


# ------------------------------------------------------------------ 2. LN backward
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


# ------------------------------------------------------------------ 3. fold BN
@register("ch7_fold_bn", "BatchNorm folded into a Linear", chapter=7, build=True)
def _fold_bn(answer):
    g = _gen()
    cases = [(6, 4, True, 1e-5), (3, 7, False, 1e-5), (5, 5, True, 1e-2),
             (8, 3, True, 0.1)]
    for i, (d_in, d_out, bias, eps) in enumerate(cases):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
        lin = nn.Linear(d_in, d_out, bias=bias).double()
        bn = nn.BatchNorm1d(d_out, eps=eps).double()
        with torch.no_grad():
            bn.weight.normal_(1, 0.5), bn.bias.normal_(0, 0.5)
            for _ in range(5):                      # running statistics from data
                bn(lin(torch.randn(16, d_in, dtype=torch.float64) * 2 + 1))
        bn.eval()
        lin0, bn0 = copy.deepcopy(lin), copy.deepcopy(bn)
        case = (f"case {i}: Linear({d_in}, {d_out}, bias={bias}), BatchNorm1d "
                f"eps={eps:g}")
        got = call(answer, lin, bn, case=case)
        if not isinstance(got, nn.Linear):
            raise Wrong(f"expected an nn.Linear ({case}), got {type(got).__name__}")
        if (got.in_features, got.out_features) != (d_in, d_out):
            raise Wrong(f"your Linear maps {got.in_features} -> {got.out_features}, "
                        f"expected {d_in} -> {d_out} ({case})")
        if not all(torch.equal(a, b) for a, b in zip(
                [*lin.state_dict().values(), *bn.state_dict().values()],
                [*lin0.state_dict().values(), *bn0.state_dict().values()])):
            raise Wrong(f"your code changed the Linear or the BatchNorm it was given "
                        f"({case}): return a new layer")
        x = torch.randn(10, d_in, dtype=torch.float64) * 3
        with torch.no_grad():
            want = bn0(lin0(x))
            out = got.double()(x)
            var_unb = bn0.running_var
            if not torch.allclose(out, want, rtol=1e-5, atol=1e-6):
                s_out = (bn0.weight / (torch.sqrt(var_unb) + eps))
                near = lin0(x) - bn0.running_mean
                if torch.allclose(out, near * s_out + bn0.bias, atol=1e-8):
                    raise Wrong(f"eps belongs inside the square root ({case}), as "
                                f"BatchNorm computes (x - mean) / sqrt(var + eps)")
        expect(out, want, case=case, rtol=1e-5, atol=1e-6, dtype=False)
    return f"{len(cases)} random Linear + BatchNorm pairs, with and without a bias"


# ------------------------------------------------------------------ 4. project
class _SortNet(nn.Module):
    """Section 7.6's sorting model, pre-norm, with a given norm class."""

    def __init__(self, make_norm, num_blocks=2, d_model=32, vocab=8, T=8):
        super().__init__()
        from ..transformer import EncoderBlock, PositionalEncoding
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab, d_model)
        self.pos = PositionalEncoding(d_model, max_len=T)
        self.blocks = nn.ModuleList(EncoderBlock(d_model, 4, 2 * d_model, 0.0, True)
                                    for _ in range(num_blocks))
        for blk in self.blocks:
            blk.norm1, blk.norm2 = make_norm(d_model), make_norm(d_model)
        self.norm = make_norm(d_model)
        self.out = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        h = self.pos(self.embedding(tokens) * math.sqrt(self.d_model))
        for block in self.blocks:
            h = block(h)
        return self.out(self.norm(h))


def _sort_loss(logits, y):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def _train_sort(net, g_data, steps=150):
    batches = [torch.randint(0, 8, (32, 8), generator=g_data) for _ in range(steps)]
    x_test = torch.randint(0, 8, (1000, 8), generator=g_data)
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for s, x in enumerate(batches):
            for grp in opt.param_groups:
                grp["lr"] = 3e-3 * min(1.0, (s + 1) / 20)
            opt.zero_grad()
            _sort_loss(net(x), x.sort(1).values).backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    with torch.no_grad():
        return _sort_loss(net(x_test), x_test.sort(1).values).item()


def _uses_own_backward(y, mod):
    fn = y.grad_fn
    if not isinstance(fn, torch.autograd.function.BackwardCFunction):
        return False
    leaves = {id(getattr(f, "variable", None)) for f, _ in fn.next_functions
              if f is not None}
    return id(mod.weight) in leaves and id(mod.bias) in leaves


@register("ch7_my_layernorm", "MyLayerNorm, own backward", chapter=7,
          build=True, project=True)
def _my_layernorm(answer):
    from ..norms import LayerNorm
    g = _gen()
    for shape in [(4, 8), (2, 5, 16), (3, 1, 7)]:
        d = shape[-1]
        case = f"MyLayerNorm({d}) on x of shape {shape}"
        mod = call(answer, d, case=case)
        if isinstance(mod, nn.Module) and not list(mod.parameters()):
            raise NotYet()                          # the placeholder: nothing built yet
        if not isinstance(mod, nn.Module):
            raise Wrong(f"expected an nn.Module, got {type(mod).__name__}")
        ref = nn.LayerNorm(d).double()
        with torch.no_grad():
            ref.weight.normal_(1, 0.5, generator=g)
            ref.bias.normal_(0, 0.5, generator=g)
        mod.double()
        try:
            mod.load_state_dict(ref.state_dict())
        except RuntimeError as err:
            raise Wrong(f"nn.LayerNorm's state dict (weight, bias) does not load into "
                        f"yours: {err}") from None
        x = (torch.randn(shape, generator=g, dtype=torch.float64) * 3 + 1)
        dy = torch.randn(shape, generator=g, dtype=torch.float64)
        xg = x.clone().requires_grad_()
        y = call(mod, xg, case=case)
        if not _uses_own_backward(y, mod):
            raise Wrong(f"the output's gradient does not come from your backward "
                        f"({case}): return the output of your torch.autograd.Function "
                        f"applied to x, weight and bias")
        try:
            grads = torch.autograd.grad(y, (xg, mod.weight, mod.bias), dy,
                                        allow_unused=True)
        except RuntimeError as err:
            raise Wrong(f"your backward failed ({case}): {err}") from None
        xr = x.clone().requires_grad_()
        yr = ref(xr)
        want = torch.autograd.grad(yr, (xr, ref.weight, ref.bias), dy)
        expect(y.detach(), yr.detach(), case=f"output, {case}", rtol=1e-7, atol=1e-9)
        for name, a, b in zip(("x", "weight", "bias"), grads, want):
            if a is None:
                raise Wrong(f"your backward returns no gradient for {name} ({case})")
            expect(a, b, case=f"gradient of {name}, {case}", rtol=1e-7, atol=1e-9)
    # the project: the sorting model trained with the reader's LayerNorm
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=g))
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        ref_net = _SortNet(LayerNorm)
        theirs = _SortNet(lambda d: answer(d))
        theirs.load_state_dict(ref_net.state_dict())
        loss = _train_sort(theirs, torch.Generator().manual_seed(seed))
        ref_loss = _train_sort(ref_net, torch.Generator().manual_seed(seed))
    finally:
        torch.random.set_rng_state(state)
    floor = 1.4019                    # input-blind, position-aware (section 7.6)
    if not abs(loss - ref_loss) < 0.05 or not loss < floor - 0.3:
        raise Wrong(f"trained in the sorting model for 150 steps, your LayerNorm ends "
                    f"at a held-out loss of {loss:.3f}; with d2l.LayerNorm, same start "
                    f"and batches: {ref_loss:.3f} (input-blind floor {floor:.2f})")
    return (f"output and gradients equal nn.LayerNorm's (3 shapes, float64); in the "
            f"sorting model, 150 steps: held-out loss {loss:.3f}, with d2l.LayerNorm "
            f"{ref_loss:.3f}, input-blind floor {floor:.2f}")
