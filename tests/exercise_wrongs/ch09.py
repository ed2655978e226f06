"""Chapter 9: answers each exercise's check must reject (WRONG) and accept (RIGHT)."""
import math
import statistics

import torch
import torch.nn.functional as F

from d2lmini.stats import t_quantile


# ---------------------------------------------------------------- paired interval
def _diffs(a, b):
    return [x - y for x, y in zip(a, b)]


def _interval(d, q, sd=statistics.stdev, root=True):
    m = statistics.fmean(d)
    half = q * sd(d) / (math.sqrt(len(d)) if root else 1)
    return m, m - half, m + half


def _unpaired(a, b):
    """mean difference with the spread of each variant (Welch), not of the pairs"""
    m = statistics.fmean(a) - statistics.fmean(b)
    se = math.sqrt(statistics.variance(a) / len(a) + statistics.variance(b) / len(b))
    half = t_quantile(len(a) - 1) * se
    return m, m - half, m + half


def _right_interval(variant, baseline):
    diffs = torch.tensor(variant, dtype=torch.float64) - torch.tensor(baseline)
    n = diffs.numel()
    half = t_quantile(n - 1) * diffs.std(unbiased=True).item() / n ** 0.5
    return diffs.mean().item(), diffs.mean().item() - half, diffs.mean().item() + half


# ---------------------------------------------------------------- smoothed CE
def _smoothed(logits, target, eps, over_others=False, naive_log=False):
    logp = logits.softmax(-1).log() if naive_log else logits.log_softmax(-1)
    V = logits.shape[-1]
    nll = -logp.gather(-1, target[..., None]).squeeze(-1)
    if over_others:                         # eps spread over the V - 1 wrong classes only
        rest = -logp.sum(-1) - nll              # -sum of log p over the wrong classes
        return ((1 - eps) * nll + eps * rest / (V - 1)).mean()
    return ((1 - eps) * nll - eps * logp.mean(-1)).mean()


def _with_torch(logits, target, eps):
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), target.reshape(-1),
                           label_smoothing=eps)


def _smoothed_other(logits, target, eps):
    V = logits.shape[-1]
    logp = logits.log_softmax(-1)
    q = torch.full_like(logp, eps / V).scatter_add(
        -1, target[..., None], torch.full_like(logp[..., :1], 1 - eps))
    return -(q * logp).sum(-1).mean()


# ---------------------------------------------------------------- AUROC
def _auroc_strict(conf, correct):
    right, wrong = conf[correct], conf[~correct]
    return (right[:, None] > wrong[None, :]).double().mean().item()       # no ties


def _auroc_reversed(conf, correct):
    right, wrong = conf[correct], conf[~correct]
    return ((right[:, None] < wrong[None, :]).double()
            + 0.5 * (right[:, None] == wrong[None, :]).double()).mean().item()


def _auroc_ge(conf, correct):
    right, wrong = conf[correct], conf[~correct]
    return (right[:, None] >= wrong[None, :]).double().mean().item()      # ties = 1


def _auroc_looped(conf, correct):
    total = 0.0
    right, wrong = conf[correct].tolist(), conf[~correct].tolist()
    for r in right:
        for w in wrong:
            total += 1.0 if r > w else 0.5 if r == w else 0.0
    return total / (len(right) * len(wrong))


def _auroc_ranks(conf, correct):
    c = conf.double()
    less = (c[:, None] > c[None, :]).double().sum(1)           # how many below
    equal = (c[:, None] == c[None, :]).double().sum(1)         # itself included
    rank = less + (equal + 1) / 2                               # average rank, 1-based
    n1, n0 = int(correct.sum()), int((~correct).sum())
    return ((rank[correct].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)).item()


def _accuracy(conf, correct):
    return (conf.round() == correct).float().mean()                   # not an AUROC


# ---------------------------------------------------------------- the project
def _gelu(src_vocab_size, tgt_vocab_size, **kw):
    from d2lmini import experiments
    return experiments.build_transformer(src_vocab_size, tgt_vocab_size,
                                         activation="gelu", **kw)


def _no_ffn(src_vocab_size, tgt_vocab_size, **kw):
    import d2lmini as d2l
    kw["d_ff"] = 0
    return d2l.Transformer(src_vocab_size, tgt_vocab_size, **kw)


def _full(src_vocab_size, tgt_vocab_size, **kw):
    import d2lmini as d2l
    return d2l.Transformer(src_vocab_size, tgt_vocab_size, **kw)


def _runner(metric="loss", shift=0, swap=False, n=None, fixed=False):
    def paired_ablation(build, seeds, **recipe):
        import d2lmini as d2l
        from d2lmini import experiments
        seeds = list(seeds)[:n] if n else list(seeds)
        v = [experiments.date_run(build=build, seed=s, keep_model=False,
                                  **recipe)[metric] for s in seeds]
        b = [experiments.date_run(seed=s + shift, keep_model=False,
                                  **recipe)[metric] for s in seeds]
        if swap:
            v, b = b, v
        if fixed:
            return d2l.compare(v, sum(b) / len(b), metric="held-out loss")
        return d2l.compare(v, b, metric="held-out loss")
    return paired_ablation


def _right_runner(build, seeds, **recipe):
    import d2lmini as d2l
    from d2lmini import experiments
    pairs = [(experiments.date_run(seed=s, build=build, keep_model=False, **recipe),
              experiments.date_run(seed=s, keep_model=False, **recipe)) for s in seeds]
    return d2l.compare([v["loss"] for v, _ in pairs], [b["loss"] for _, b in pairs],
                       metric="held-out loss", names=("no FFN", "full model"))


WRONG = {
    "ch9_paired_interval": [
        _unpaired,                                                    # ignores pairing
        lambda a, b: _interval(_diffs(a, b), 1.959964),               # z, not t
        lambda a, b: _interval(_diffs(a, b), t_quantile(len(a) - 1),
                               root=False),                           # no sqrt(n)
        lambda a, b: _interval(_diffs(a, b), t_quantile(len(a) - 1),
                               sd=statistics.pstdev),                 # divides by n
        lambda a, b: _interval(_diffs(b, a), t_quantile(len(a) - 1)),  # baseline - var
        lambda a, b: _interval(_diffs(a, b), t_quantile(len(a))),     # df = n
    ],
    "ch9_smoothed_ce": [
        lambda logits, target, eps: _smoothed(logits, target, 0.0),   # no smoothing
        lambda logits, target, eps: _smoothed(logits, target, eps, over_others=True),
        lambda logits, target, eps: -(1 - eps) * logits.log_softmax(-1).gather(
            -1, target[..., None]).mean(),                            # no eps/V term
        lambda logits, target, eps: _smoothed(logits, target, eps,
                                              naive_log=True),        # log(softmax)
        _with_torch,                                                  # the forbidden call
    ],
    "ch9_auroc": [_auroc_strict, _auroc_reversed, _auroc_ge, _auroc_looped,
                  _accuracy],
    "ch9_ablation": [
        (_full, _right_runner),                                       # no change
        (_gelu, _runner(shift=1)),                                    # unpaired seeds
        (_gelu, _runner(metric="exact_match")),                       # another metric
        (_gelu, _runner(metric="final_train_loss")),                  # training loss
        (_gelu, _runner(swap=True)),                                  # full − variant
        (_gelu, _runner(n=3)),                                        # 3 seeds
        (_gelu, _runner(fixed=True)),                                 # unpaired mean
    ],
}

RIGHT = {
    "ch9_paired_interval": [_right_interval],
    "ch9_smoothed_ce": [_smoothed, _smoothed_other],
    "ch9_auroc": [_auroc_ranks],
    "ch9_ablation": [(_no_ffn, _right_runner)],
}
