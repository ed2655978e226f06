"""Chapter 9 (what each piece buys): the exercises' judges."""
from __future__ import annotations

import contextlib
import io
import math
import statistics

import torch
import torch.nn.functional as F

from .core import Wrong, call, expect, forbid, forbid_loops, register
from .core import fresh_generator as _gen, as_number as _number


def _t975(df: int) -> float:
    from ..stats import t_quantile
    return t_quantile(df)


@register("ch9_paired_interval", "paired differences, 95 % interval",
          chapter=9, build=True)
def _paired_interval(answer):
    forbid(answer, ["compare", "interval", "scipy", "ttest_rel"],
           "compute the differences, their mean and their spread yourself "
           "(t_quantile is allowed)")
    g = _gen()
    for n in (5, 7, 10):
        # a large effect of the seed, shared by both variants, and a small difference
        shared = torch.rand(n, generator=g, dtype=torch.float64)
        base = (0.3 + shared).tolist()
        var = (0.3 + shared + 0.02 + 0.01 * torch.randn(n, generator=g,
                                                        dtype=torch.float64)).tolist()
        d = [a - b for a, b in zip(var, base)]
        m, s = statistics.fmean(d), statistics.stdev(d)
        half = _t975(n - 1) * s / math.sqrt(n)
        case = f"{n} seeds"
        got = call(answer, list(var), list(base), case=case)
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            raise Wrong(f"expected (mean, low, high), three numbers ({case}), got "
                        f"{type(got).__name__}")
        mean, low, high = (_number(x, case) for x in got)
        if abs(mean + m) < 1e-9 and m != 0:
            raise Wrong(f"the sign is reversed ({case}): the difference is variant "
                        f"− baseline")
        expect(mean, m, case=f"the mean difference, {case}", rtol=1e-5, atol=1e-6)
        if abs((high - low) / 2 - half) > 1e-6 * (1 + half):
            got_half = (high - low) / 2
            if abs(got_half - half * math.sqrt(n)) < 1e-6 * (1 + half * n):
                hint = ("divide the standard deviation by √n: the interval is of "
                        "the mean")
            elif abs(got_half - half * 1.959964 / _t975(n - 1)) < 1e-6:
                hint = ("1.96 is the normal distribution's quantile; with few seeds "
                        "use Student's t with n − 1 degrees of freedom")
            elif abs(got_half - half * _t975(n) / _t975(n - 1)) < 1e-6:
                hint = "t has n − 1 degrees of freedom, not n"
            elif abs(got_half - half * math.sqrt((n - 1) / n)) < 1e-6:
                hint = ("use the sample standard deviation (divide by n − 1, "
                        "statistics.stdev or torch.std's default)")
            elif got_half > 5 * half:
                hint = ("the interval is far too wide: pair the seeds, take the "
                        "spread of the per-seed differences, not of each variant")
            else:
                hint = "the half-width should be t(0.975, n − 1) · sd / √n"
            raise Wrong(f"wrong interval ({case}): {hint}")
        expect(low, m - half, case=f"low end, {case}", rtol=1e-5, atol=1e-6)
        expect(high, m + half, case=f"high end, {case}", rtol=1e-5, atol=1e-6)
    return "3 random paired experiments, 5 to 10 seeds"


def _reference_smoothed(logits, target, eps):
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), target.reshape(-1),
                           label_smoothing=eps)


@register("ch9_smoothed_ce", "label-smoothed cross-entropy", chapter=9,
          build=True)
def _smoothed_ce(answer):
    forbid(answer, ["cross_entropy", "nll_loss", "CrossEntropyLoss", "NLLLoss",
                    "label_smoothing_cross_entropy", "sequence_loss",
                    "kl_div"],
           "the exercise asks for log_softmax and the smoothed target, written out")
    g = _gen()
    cases = [((6, 5), 0.1, 2.0), ((2, 7, 11), 0.2, 2.0), ((3, 4, 9), 0.0, 2.0),
             ((8, 15), 0.3, 2.0), ((4, 6), 0.1, 300.0)]          # last: huge logits
    for shape, eps, scale in cases:
        logits = torch.randn(shape, generator=g, dtype=torch.float64) * scale
        if scale > 100:                      # one row whose other classes underflow
            logits[0, 0] = logits[0].max() + 800
        target = torch.randint(shape[-1], shape[:-1], generator=g)
        want = _reference_smoothed(logits, target, eps)
        case = f"logits {tuple(shape)}, eps={eps}" + (
            ", logits of size 300 (a probability underflows to 0)" if scale > 100
            else "")
        got = call(answer, logits.clone(), target.clone(), eps, case=case)
        if isinstance(got, torch.Tensor) and got.numel() != 1:
            raise Wrong(f"expected one number, the mean over every position ({case}), "
                        f"got a tensor of shape {tuple(got.shape)}")
        value = _number(got, case)
        if not math.isfinite(value):
            raise Wrong(f"got {value} ({case}): log(softmax(x)) is log(0) = -inf where "
                        f"a probability underflows; log_softmax stays finite")
        expect(value, want.item(), case=case, rtol=1e-6, atol=1e-9)
    return f"{len(cases)} random cases, (N, V) and (B, T, V), eps 0 to 0.3, huge logits"


def _reference_auroc(conf, correct):
    from ..ablation import auroc
    return auroc(conf, correct)


@register("ch9_auroc", "AUROC of confidence, right vs wrong", chapter=9,
          build=True)
def _auroc(answer):
    forbid(answer, ["sklearn", "roc_auc_score", "auroc", "torchmetrics"],
           "compute it from the confidences yourself")
    forbid_loops(answer, "compare every right token with every wrong one at once "
                         "(broadcasting), with no Python loop")
    g = _gen()
    for n, levels in ((200, 0), (500, 10), (50, 3)):
        correct = torch.rand(n, generator=g) < 0.7
        conf = (torch.rand(n, generator=g) * 0.5 + 0.45 * correct).clamp(0, 1)
        if levels:                                    # rounded: many equal confidences
            conf = (conf * levels).round() / levels
        want = _reference_auroc(conf, correct)
        case = f"{n} tokens" + (f", confidences rounded to {levels} levels (ties)"
                                if levels else "")
        got = _number(call(answer, conf.clone(), correct.clone(), case=case), case)
        if abs(got - (1 - want)) < 1e-6 and abs(want - 0.5) > 1e-3:
            raise Wrong(f"reversed ({case}): the AUROC is the chance that a RIGHT "
                        f"token has the higher confidence")
        if levels and abs(got - want) > 1e-6:
            raise Wrong(f"wrong value with ties ({case}): a right and a wrong token of "
                        f"equal confidence count one half")
        expect(got, want, case=case, rtol=1e-6, atol=1e-9)
    return "3 random sets of tokens, with and without ties"


_PROJECT_RECIPE = dict(steps=30, batch_size=32, lr=5e-3, warmup=5, smoothing=0.0,
                       data=dict(n_train=2000, n_test=200))


def _quiet(fn, *args, **kwargs):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        return fn(*args, **kwargs)


@register("ch9_ablation", "a paired ablation of your own", chapter=9, build=True,
          project=True)
def _ablation(answer):
    from .. import experiments
    from ..stats import Comparison
    from ..transformer import Transformer
    from ..utils import set_seed
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
        raise Wrong("expected the pair (my_build, paired_ablation)")
    build, run = answer
    if not callable(build) or not callable(run):
        raise Wrong("expected two functions: (my_build, paired_ablation)")
    # 1. the variant is a model of the date task, and not the full model
    d = experiments.dates(**_PROJECT_RECIPE["data"])
    kw = dict(d_model=32, num_heads=4, num_layers=1, d_ff=128, dropout=0.0,
              max_len=64)
    set_seed(0)
    model = call(build, len(d.src_vocab), len(d.tgt_vocab), case="my_build", **kw)
    if not isinstance(model, torch.nn.Module):
        raise Wrong(f"my_build should return a model (an nn.Module), got "
                    f"{type(model).__name__}")
    src, tgt_in, _ = (t[:8] for t in d.test)
    model.eval()
    with torch.no_grad():
        out = call(model, src, tgt_in, case="your model on 8 held-out dates")
    if not isinstance(out, torch.Tensor) or out.shape != (8, tgt_in.shape[1],
                                                          len(d.tgt_vocab)):
        raise Wrong(f"your model should give logits (B, T, V) = (8, "
                    f"{tgt_in.shape[1]}, {len(d.tgt_vocab)}) for (src, tgt_in), got "
                    f"{getattr(out, 'shape', type(out).__name__)}")
    set_seed(0)
    full = Transformer(len(d.src_vocab), len(d.tgt_vocab), **kw).eval()
    with torch.no_grad():
        same = full(src, tgt_in)
    if torch.allclose(out, same, atol=1e-6):
        raise Wrong("my_build gives the full model itself: change one piece")
    # 2. the comparison: paired seeds, held-out loss, variant − full model
    g = _gen()
    seeds = [int(s) for s in torch.randperm(1000, generator=g)[:5]]
    res = _quiet(call, run, build, seeds, case="paired_ablation", **_PROJECT_RECIPE)
    if not isinstance(res, Comparison):
        raise Wrong(f"paired_ablation should return what d2l.compare returns, got "
                    f"{type(res).__name__}")
    if res.n != len(seeds):
        raise Wrong(f"expected one pair per seed ({len(seeds)} seeds), got {res.n}")
    if not isinstance(res.baseline, list):
        raise Wrong("compare with the full model's run of each seed (a list, one "
                    "value per seed), not with one fixed number")
    i = int(torch.randint(len(seeds), (1,), generator=g))
    mine = _quiet(experiments.date_run, build=build, seed=seeds[i],
                  keep_model=False, **_PROJECT_RECIPE)
    ref = _quiet(experiments.date_run, seed=seeds[i], keep_model=False,
                 **_PROJECT_RECIPE)
    got_v, got_b = res.variant[i], res.baseline[i]
    if abs(got_v - ref["loss"]) < 1e-5 and abs(got_b - mine["loss"]) < 1e-5:
        raise Wrong("the variant and the full model are swapped: compare(variant, "
                    "full model) gives variant − full")
    for key, what in (("exact_match", "exact match"),
                      ("final_train_loss", "the training loss"),
                      ("token_accuracy", "token accuracy")):
        if abs(got_v - mine[key]) < 1e-6 and abs(mine[key] - mine["loss"]) > 1e-4:
            raise Wrong(f"you compare {what}: the primary metric is the held-out "
                        f"loss (the 'loss' of each run)")
    if abs(got_v - mine["loss"]) > 1e-4:
        raise Wrong(f"seed {seeds[i]}: your variant's value {got_v:.4f} is not the "
                    f"held-out loss of experiments.date_run(build=my_build, "
                    f"seed={seeds[i]}, **recipe): train each seed with the seed "
                    f"you were given and the recipe passed in")
    if abs(got_b - ref["loss"]) > 1e-4:
        raise Wrong(f"seed {seeds[i]}: the full model's value {got_b:.4f} is not "
                    f"the held-out loss of the full model trained with the same seed "
                    f"{seeds[i]}: each pair must share its seed (same start, same "
                    f"batches)")
    return (f"5 seeds paired, held-out loss; seed {seeds[i]} reproduced (variant "
            f"{mine['loss']:.3f}, full {ref['loss']:.3f} after 30 steps)")
