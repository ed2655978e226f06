"""Chapter 10 (what each piece buys, part 2): the exercises' judges."""
from __future__ import annotations

import contextlib
import io
import math

import torch

from .core import Wrong, call, expect, register
from .core import fresh_generator as _gen, as_number as _number


@register("ch10_head_costs", "what h heads cost", chapter=10, build=True)
def _head_costs(answer):
    g = _gen()
    cases = []
    for _ in range(5):
        h = int(2 ** torch.randint(0, 6, (1,), generator=g))
        cases.append((int(torch.randint(2, 200, (1,), generator=g)),
                      h * int(torch.randint(1, 17, (1,), generator=g)), h))
    cases.append((50, 64, 1))
    cases.append((50, 64, 16))
    for S, d_model, h in cases:
        case = f"S={S}, d_model={d_model}, h={h}"
        got = call(answer, S, d_model, h, case=case)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise Wrong(f"expected two numbers (multiply-adds, score entries) "
                        f"({case}), got {type(got).__name__}")
        madds, entries = (_number(x, case) for x in got)
        d_k = d_model // h
        want_m, want_e = h * S * S * d_k, h * S * S
        if h > 1 and abs(madds - want_m * h) < 0.5:
            raise Wrong(f"multiply-adds {h}× too many ({case}): each head's dot "
                        f"products have d_k = d_model / h terms, not d_model")
        if h > 1 and abs(madds - want_m / h) < 0.5:
            raise Wrong(f"multiply-adds for one head only ({case}): there are h of "
                        f"them")
        expect(madds, want_m, case=f"multiply-adds, {case}", rtol=0, atol=0.5)
        if h > 1 and abs(entries - S * S) < 0.5:
            raise Wrong(f"score entries ({case}): each head has its own S × S score "
                        f"matrix")
        expect(entries, want_e, case=f"score entries, {case}", rtol=0, atol=0.5)
    return f"{len(cases)} (S, d_model, h), h from 1 to 32"


def _floor(targets: torch.Tensor, pad_id: int) -> tuple[float, float]:
    from ..ablation import input_blind_baseline
    b = input_blind_baseline(targets, pad_id)
    return b["loss"], b["token_accuracy"]


@register("ch10_input_blind", "input-blind loss and accuracy",
          chapter=10, build=True)
def _input_blind(answer):
    g = _gen()
    cases = []
    for _ in range(3):
        n, T, V = (int(torch.randint(30, 200, (1,), generator=g)),
                   int(torch.randint(3, 12, (1,), generator=g)),
                   int(torch.randint(3, 15, (1,), generator=g)))
        # a skewed distribution per position, rows of different lengths (pad id 0)
        logits = torch.randn(T, V, generator=g) * 2
        tg = torch.stack([torch.multinomial(logits[t].softmax(-1), n, replacement=True,
                                            generator=g) for t in range(T)], 1) + 1
        lengths = torch.randint(1, T + 1, (n,), generator=g)
        tg[torch.arange(T)[None, :] >= lengths[:, None]] = 0
        cases.append(tg)
    for tg in cases:
        case = f"targets of shape {tuple(tg.shape)}, pad id 0, rows of unequal length"
        got = call(answer, tg.clone(), 0, case=case)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise Wrong(f"expected (loss, accuracy) ({case}), got "
                        f"{type(got).__name__}")
        loss, acc = (_number(x, case) for x in got)
        want_l, want_a = _floor(tg, 0)
        if abs(loss - want_l / math.log(2)) < 1e-6:
            raise Wrong(f"the loss is in bits ({case}): the model's cross-entropy uses "
                        f"the natural log (nats)")
        real = tg != 0
        per_pos = []
        for t in range(tg.shape[1]):
            col = tg[:, t][real[:, t]]
            if len(col):
                p = torch.bincount(col).double()
                p = p[p > 0] / p.sum()
                per_pos.append(-(p * p.log()).sum().item())
        if abs(loss - sum(per_pos) / len(per_pos)) < 1e-6 and abs(
                loss - want_l) > 1e-6:
            raise Wrong(f"each position counts as much as the tokens it holds "
                        f"({case}): average over the real target tokens, as the "
                        f"held-out loss does, not over the positions")
        expect(loss, want_l, case=f"loss, {case}", rtol=1e-6, atol=1e-8)
        expect(acc, want_a, case=f"accuracy, {case}", rtol=1e-6, atol=1e-8)
    return f"{len(cases)} random target sets, rows of unequal length"


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


# the project: ALiBi in the date model, scored on inputs longer than any in training
_WINDOW = dict(n_train=20000, n_test=300, lengths=(0, 32))
_STEPS = dict(steps=300, batch_size=64, lr=5e-3, warmup=30, smoothing=0.0,
              max_len=80)


@register("ch10_alibi", "ALiBi in the date model", chapter=10,
          build=True, project=True)
def _alibi(answer):
    from .. import ablation, experiments
    from ..utils import set_seed
    g = _gen()
    # 1. the bias itself, on fresh sizes
    for T, h in ((int(torch.randint(1, 40, (1,), generator=g)), 1), (7, 2), (12, 4),
                 (int(torch.randint(2, 60, (1,), generator=g)), 8), (5, 16)):
        case = f"T={T}, num_heads={h}"
        got = call(answer, T, h, case=case)
        want = experiments.alibi_bias(T, h)
        if isinstance(got, torch.Tensor) and got.shape == want.shape:
            if torch.allclose(got, -want, atol=1e-6) and T > 1:
                raise Wrong(f"the sign ({case}): a far key must get a LOWER score, "
                            f"the bias is -slope · |i - j|")
            if T > 2 and torch.allclose(got.flip(0), want, atol=1e-6) and h > 1:
                raise Wrong(f"the slopes are in the wrong order ({case}): head 1 has "
                            f"the steepest, 2^(-8/h)")
            if T > 2 and torch.allclose(got, want.tril(), atol=1e-6):
                raise Wrong(f"the keys after the query have no bias ({case}): the "
                            f"encoder reads both ways, so use |i - j|")
        expect(got.float() if isinstance(got, torch.Tensor) else got, want,
               case=case, rtol=1e-5, atol=1e-6)
    # 2. plugged into the date model: the same model as the book's ALiBi
    data = experiments.dates(**_WINDOW)
    V_src, V_tgt = len(data.src_vocab), len(data.tgt_vocab)
    kw = dict(d_model=32, num_heads=4, num_layers=1, d_ff=128, dropout=0.0,
              max_len=80, relative="alibi")
    src, tgt_in, _ = (t[:16] for t in data.at_lengths("test", 41, 48, seed=3))
    set_seed(1)
    mine = experiments.build_transformer(V_src, V_tgt, relative_fn=answer, **kw).eval()
    set_seed(1)
    book = experiments.build_transformer(V_src, V_tgt, **kw).eval()
    with torch.no_grad():
        try:
            a = mine(src, tgt_in)
        except Exception as err:
            raise Wrong(f"your bias inside the model raised {type(err).__name__}: "
                        f"{err}") from None
        expect(a, book(src, tgt_in), case="the date model with your bias, 16 "
               "held-out dates of 41-48 characters", rtol=1e-4, atol=1e-5)
    # 3. on the task: trained on sources of at most 32 characters, scored on 41-48
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        r = experiments.date_run(data=_WINDOW, seed=int(torch.randint(100, (1,),
                                                                      generator=g)),
                                 relative="alibi", relative_fn=answer,
                                 test_lengths=[(41, 48)], keep_model=False, **_STEPS)
    floor = ablation.input_blind_baseline(data.train[2])["loss"]
    long = r["by_length"]["41-48"]["loss"]
    if not long < floor:
        raise Wrong(f"after {_STEPS['steps']} steps, the held-out loss on 41-48 "
                    f"characters is {long:.3f}, not below the input-blind floor "
                    f"{floor:.3f}")
    return (f"5 random sizes; in the model; after {_STEPS['steps']} steps on sources "
            f"of at most 32 characters: held-out loss {r['loss']:.3f} there, "
            f"{long:.3f} on 41-48 characters (input-blind floor {floor:.3f})")
