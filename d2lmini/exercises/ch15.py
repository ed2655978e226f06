"""Chapter 15 (GPT-3: what scale buys): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`; the projects then run the
answer on the chapter's task: the scaling law's held-out prediction, the induction
head of a freshly trained model, the character GPT with a strided layer.
"""
from __future__ import annotations

import math

import torch

from .core import Wrong, call, expect, forbid, forbid_loops, register
from .core import fresh_generator as _gen


# ------------------------------------------------------------------ the scaling fit
def _triple(out, case: str):
    if not (isinstance(out, (tuple, list)) and len(out) == 3):
        raise Wrong(f"expected the triple (a, alpha, L_inf) ({case}), got "
                    f"{type(out).__name__}")
    vals = []
    for name, v in zip(("a", "alpha", "L_inf"), out):
        if isinstance(v, torch.Tensor) and v.numel() == 1:
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, (int, float)) \
                or not math.isfinite(v):
            raise Wrong(f"{name} must be a finite number ({case}), got {v!r}")
        vals.append(float(v))
    return vals


@register("ch15_power_law_fit", "fit_power_law (scaling law)",
          chapter=15, build=True, project=True)
def _power_law_fit(answer):
    from .. import scaling
    from ..io import load_results
    forbid(answer, ["fit_power_law", "fit_loss_surface", "scipy", "curve_fit",
                    "bootstrap_over_seeds"],
           "the exercise builds the fit itself")
    g = _gen()
    N = torch.tensor([3e3, 7e3, 1.5e4, 2.5e4, 6e4, 1.5e5], dtype=torch.float64)
    for i in range(2):
        alpha = 0.2 + 0.6 * torch.rand((), generator=g, dtype=torch.float64).item()
        L_inf = 1.0 + torch.rand((), generator=g, dtype=torch.float64).item()
        a = (0.5 + torch.rand((), generator=g, dtype=torch.float64).item()) \
            * 3e3 ** alpha
        L = scaling.power_law(N, a, alpha, L_inf)
        case = f"case {i}: 6 points on an exact law"
        got_a, got_alpha, got_inf = _triple(call(answer, N.clone(), L.clone(),
                                                 case=case), case)
        if abs(got_inf) < 1e-9 and abs(got_alpha - alpha) > 0.01:
            raise Wrong(f"L_inf came out 0 ({case}): a straight line in log-log has no "
                        f"floor; the law has one, L_inf, fitted with a and alpha")
        pred = scaling.power_law(N, got_a, got_alpha, got_inf)
        worst = (pred - L).abs().max().item()
        if abs(got_alpha - alpha) > 0.01 or abs(got_inf - L_inf) > 0.01 or worst > 1e-3:
            raise Wrong(f"the fit misses an exact law ({case}): it is off the points "
                        f"by up to {worst:.3g} nats (minimise the squared error in L "
                        f"itself; for a fixed alpha, a and L_inf follow by least "
                        f"squares)")
    # seeds: 3 noisy points per size; the fit's prediction 3x beyond the largest N
    Nr = N.repeat(3)
    L = scaling.power_law(Nr, 20.0, 0.35, 1.5) \
        + 0.003 * torch.randn(18, generator=g, dtype=torch.float64)
    ref = scaling.fit_power_law(Nr, L)
    got = _triple(call(answer, Nr.clone(), L.clone(), case="18 noisy points"),
                  "18 noisy points")
    far = 3 * N[-1].item()
    p_ref = float(scaling.power_law(far, ref["a"], ref["alpha"], ref["L_inf"]))
    p_got = float(scaling.power_law(far, *got))
    if abs(p_got - p_ref) > 0.01:
        raise Wrong(f"on 18 noisy points (3 seeds per size) your fit predicts N = "
                    f"{far:,.0f} off the least-squares fit by {p_got - p_ref:+.3f} "
                    f"nats: fit every point, not one seed or the means of a subset")
    # the chapter's task: the shipped runs of S1..S6 predict XL, trained afterwards
    runs = load_results("scaling_law")["runs"]
    fixed = [r for r in runs if r["phase"] == "fixed"]
    xl = [r["heldout"] for r in runs if r["phase"] == "xl"]
    s6 = [r["heldout"] for r in fixed if r["size"] == "S6"]
    Nf = torch.tensor([r["non_embedding"] for r in fixed], dtype=torch.float64)
    Lf = torch.tensor([r["heldout"] for r in fixed], dtype=torch.float64)
    got = _triple(call(answer, Nf.clone(), Lf.clone(), case="the shipped runs"),
                  "the shipped runs")
    n_xl = next(r["non_embedding"] for r in runs if r["phase"] == "xl")
    pred, actual = float(scaling.power_law(n_xl, *got)), sum(xl) / len(xl)
    naive = sum(s6) / len(s6)                  # "no scaling": XL does as S6 did
    if abs(pred - actual) >= abs(naive - actual):
        raise Wrong(f"fitted on the shipped S1..S6, your law predicts XL at "
                    f"{pred:.3f} nats, no closer to its measured loss than S6's own "
                    f"loss is")
    return (f"2 exact laws, 18 noisy points; fitted on the shipped S1..S6 it predicts "
            f"XL at {pred:.3f} nats, measured {actual:.3f} (S6's loss: {naive:.3f})")


# ------------------------------------------------------------------ induction heads
def _ref_scores(w: torch.Tensor, tokens: torch.Tensor):
    from ..incontext import head_scores
    return head_scores(w, tokens)


def _random_weights(g, B, h, T):
    s = torch.randn(B, h, T, T, generator=g) * 2
    s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    return s.softmax(-1)


def _pair(out, case):
    if not (isinstance(out, (tuple, list)) and len(out) == 2
            and all(isinstance(t, torch.Tensor) for t in out)):
        raise Wrong(f"expected a pair of tensors (prev, induction) ({case}), got "
                    f"{type(out).__name__}")
    return out


@register("ch15_head_scores", "head_scores (induction head)", chapter=15,
          build=True, project=True)
def _head_scores(answer):
    from .. import incontext as ic
    forbid(answer, ["incontext", "head_scores"], "the exercise builds the scores")
    g = _gen()
    cases = []
    tok = ic.repeated_sequences(4, 24, 9, lags=(3, 10), generator=g)
    cases.append(("periodic rows from 8 token ids (many earlier occurrences)", tok))
    tok = torch.randint(1, 6, (3, 12), generator=g)
    tok[0, 4] = tok[0, 3]                                 # a token right after itself
    cases.append(("random rows from 5 ids, a token repeated at once", tok))
    tok = torch.randperm(40, generator=g)[:16].view(2, 8) + 1
    tok[1] = torch.tensor([3, 4, 5, 3, 9, 4, 3, 7]) + 100
    cases.append(("one row without any repeated token", tok))
    cases.append(("no repeated token anywhere", torch.arange(1, 11)[None]))
    for i, (what, tok) in enumerate(cases):
        B, T = tok.shape
        w = _random_weights(g, B, 3, T)
        case = f"case {i}: {what}, weights {tuple(w.shape)}"
        prev, ind = _pair(call(answer, w.clone(), tok.clone(), case=case), case)
        rp, ri = _ref_scores(w, tok)
        if prev.shape != rp.shape or ind.shape != ri.shape:
            raise Wrong(f"expected two tensors of shape {tuple(rp.shape)}, one score "
                        f"per head ({case}), got {tuple(prev.shape)} and "
                        f"{tuple(ind.shape)}")
        if torch.isnan(ind).any():
            raise Wrong(f"NaN induction score ({case}): when no query's token occurred "
                        f"before, the score is 0")
        expect(prev.float(), rp, case=f"{case}, previous-token score", rtol=1e-4,
               atol=1e-5, dtype=False)
        expect(ind.float(), ri, case=f"{case}, induction score", rtol=1e-4, atol=1e-5,
               dtype=False)
    # the chapter's task: a 2-layer attention-only model, trained here from a fresh seed
    seed = int(torch.randint(1000, 10_000, (1,), generator=g))
    r = ic.train_induction(seed=seed, steps=400, num_heads=(2, 1), lr=1e-2,
                           every=400, eval_rows=64)
    model, held = r["model"], r["eval"]
    weights = model.attention(held[:32])
    prev, _ = _pair(call(answer, weights[0], held[:32], case="the trained model, "
                         "layer 1"), "the trained model, layer 1")
    _, ind = _pair(call(answer, weights[1], held[:32], case="the trained model, "
                        "layer 2"), "the trained model, layer 2")
    p = int(prev.argmax())
    gains = {}
    for name, (layer, head) in {"none": (None, None), "induction": (1, 0),
                                "previous-token": (0, p), "other": (0, 1 - p)}.items():
        model.head_mask.fill_(1.0)
        if layer is not None:
            model.head_mask[layer, head] = 0.0
        early, late = ic.in_context_losses(model, held)
        gains[name] = early - late
    model.head_mask.fill_(1.0)
    if not gains["induction"] < 0.5 * gains["none"] < gains["other"]:
        raise Wrong(f"on the trained model: in-context gain {gains['none']:.2f} nats; "
                    f"without the induction head {gains['induction']:.2f}, without "
                    f"the other layer-1 head {gains['other']:.2f}")
    return (f"{len(cases)} random cases, no repeats included; on a model trained from "
            f"seed {seed}: induction score {float(ind[0]):.2f}, previous-token head "
            f"{p} ({float(prev[p]):.2f}); in-context gain {gains['none']:.2f} nats, "
            f"{gains['induction']:.2f} without the induction head, "
            f"{gains['other']:.2f} without the other layer-1 head")


# ------------------------------------------------------------------ the strided mask
def _strided(T: int, stride: int) -> torch.Tensor:
    i = torch.arange(T)
    lag = i[:, None] - i[None, :]
    return ((lag >= 0) & (lag % stride == 0))[None, None]


@register("ch15_strided_mask", "strided_causal_mask", chapter=15, build=True,
          project=True)
def _strided_mask(answer):
    from .. import gpt3, scaling
    forbid_loops(answer, "build the mask from tensor operations, with no Python loop "
                         "over positions")
    g = _gen()
    cases = [(1, 1), (6, 1), (7, 7), (5, 9), (12, 3),
             (int(torch.randint(20, 40, (1,), generator=g)),
              int(torch.randint(2, 6, (1,), generator=g)))]
    for T, s in cases:
        case = f"T={T}, stride={s}"
        got = call(answer, T, s, case=case)
        if not isinstance(got, torch.Tensor):
            raise Wrong(f"expected a bool tensor ({case}), got {type(got).__name__}")
        if got.dtype != torch.bool:
            raise Wrong(f"the mask must be bool, True where attention is allowed "
                        f"({case}), got {got.dtype}")
        want = _strided(T, s)
        if tuple(got.shape) != tuple(want.shape):
            raise Wrong(f"wrong shape ({case}): expected {tuple(want.shape)} to "
                        f"broadcast over batch and heads, got {tuple(got.shape)}")
        if not torch.equal(got, want):
            i, j = (int(x) for x in (got != want).nonzero()[0, 2:])
            raise Wrong(f"wrong entry at query {i}, key {j} ({case}): yours says "
                        f"{bool(got[0, 0, i, j])}")
    # the chapter's task: a banded layer and a strided layer in the character GPT
    w, T = 6, 64
    ours = lambda n: answer(n, w)
    torch.manual_seed(int(torch.randint(1 << 30, (1,), generator=g)))
    fact = gpt3.SparseGPT(66, d_model=32, num_heads=4, num_layers=2, d_ff=128,
                          max_len=T, windows=[w, ours]).eval()
    local = gpt3.SparseGPT(66, d_model=32, num_heads=4, num_layers=2, d_ff=128,
                           max_len=T, windows=[w, w]).eval()
    local.load_state_dict(fact.state_dict())
    x = torch.randint(1, 66, (1, T), generator=g)
    y = x.clone()
    y[0, 20] = 1 + x[0, 20] % 65
    with torch.no_grad():
        reach = lambda m: int(((m(x) - m(y)).abs().amax(-1)[0] > 1e-6)
                              .nonzero().max())
        far_f, far_l = reach(fact), reach(local)
    if far_f != T - 1:
        raise Wrong(f"with your strided layer after a banded one, a change at position "
                    f"20 should reach every later position; it reaches {far_f}")
    train, held, vocab = scaling.char_data()
    data = (train, held[:64 * 65 + 1], vocab)
    seed = int(torch.randint(1000, (1,), generator=g))
    r = scaling.train_lm((2, 32, 4), 2048 * 120, seed, 0.02, context=T, data=data,
                         gpt_class=gpt3.SparseGPT, options={"windows": [w, ours]})
    counts = torch.bincount(train, minlength=len(vocab)).double()
    p = counts[counts > 0] / counts.sum()
    unigram = float(-(p * p.log()).sum())                  # an input-blind model
    if not r["heldout"] < unigram:
        raise Wrong(f"trained 120 steps with your strided layer, the character GPT "
                    f"reaches {r['heldout']:.3f} nats, no better than the input-blind "
                    f"{unigram:.3f}")
    return (f"{len(cases)} (T, stride) cases, stride 1 and stride > T included; in the "
            f"character GPT a change at position 20 reaches position {far_f} through "
            f"banded + strided layers and {far_l} through two banded ones; 120 steps: "
            f"held-out {r['heldout']:.3f} nats (input-blind {unigram:.3f})")
