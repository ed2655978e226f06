"""Worked solutions of chapter 9's exercises (9. What each piece buys):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import math

import torch

from ..core import solution


@solution("ch9_paired_interval")
def paired_interval(variant, baseline):
    from d2lmini.stats import t_quantile
    d = torch.tensor(variant, dtype=torch.float64) - torch.tensor(baseline,
                                                                  dtype=torch.float64)
    n = len(d)                                   # one difference per seed: paired
    mean, sd = d.mean(), d.std()                 # std divides by n - 1
    half = t_quantile(n - 1) * sd / math.sqrt(n)  # the interval is of the mean
    return mean.item(), (mean - half).item(), (mean + half).item()


@solution("ch9_smoothed_ce")
def smoothed_ce(logits, target, eps):
    V = logits.shape[-1]
    logp = logits.reshape(-1, V).log_softmax(-1)                 # (N, V), N = B*T
    nll = -logp.gather(1, target.reshape(-1, 1)).squeeze(1)       # -log p(right class)
    uniform = -logp.mean(1)                                       # cross-entropy vs 1/V
    return ((1 - eps) * nll + eps * uniform).mean()


@solution("ch9_auroc")
def auroc(confidence, correct):
    right = confidence[correct.bool()]                            # (n1,)
    wrong = confidence[~correct.bool()]                           # (n0,)
    higher = (right[:, None] > wrong[None, :]).double()           # (n1, n0): all pairs
    ties = (right[:, None] == wrong[None, :]).double()
    return (higher + 0.5 * ties).mean().item()


def _gelu_build(src_vocab_size, tgt_vocab_size, **kw):
    """The variant: every FFN with GELU instead of ReLU, nothing else changed."""
    from d2lmini import experiments
    return experiments.build_transformer(src_vocab_size, tgt_vocab_size,
                                         activation="gelu", **kw)


def _paired_ablation(build, seeds, **recipe):
    import d2lmini as d2l
    from d2lmini import experiments
    variant, full = [], []
    for s in seeds:                     # one pair per seed: same start, same batches
        variant.append(experiments.date_run(build=build, seed=s, keep_model=False,
                                            **recipe)["loss"])
        full.append(experiments.date_run(seed=s, keep_model=False, **recipe)["loss"])
    return d2l.compare(variant, full, metric="held-out loss",
                       names=("my variant", "full model"), seeds=seeds,
                       better="lower")


@solution("ch9_ablation", value=True)
def ablation():
    return _gelu_build, _paired_ablation
