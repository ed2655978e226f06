"""Ablations on the date task (chapter 9): train one configuration for a fixed number
of steps and measure it on held-out dates.

    data = DateData()                                  # 20,000 train / 1,000 test dates
    r = train_dates(data, steps=300, seed=0, d_ff=0)   # a model without FFN
    r["exact_match"], r["loss"], r["ece"]

Exact match is computed from one teacher-forced pass: greedy decoding writes the target
exactly when the argmax is right at every position (the first wrong argmax would be
met with a correct prefix), so no decoding loop is needed.
"""
from __future__ import annotations

import random
import statistics
import time

import torch

from .attention import set_fused_attention
from .schedules import warmup_cosine_schedule
from .text import DateTranslation, bucket_batches, pad_batch
from .transformer import Transformer, label_smoothing_cross_entropy
from .utils import check_positive_int, set_seed

__all__ = ["DateData", "train_dates", "evaluate", "predictions",
           "expected_calibration_error", "auroc", "reliability", "input_blind_baseline",
           "by_field", "by_format", "date_format", "summarize", "paired", "table",
           "spread_plot"]


class DateData:
    """Train and held-out date tensors, optionally shifted right by leading spaces.

    ``DateData(n_train, n_test, seed, shift=(lo, hi))``: every training source gets
    ``k`` leading spaces, ``k`` drawn uniformly from ``lo..hi``; the test set is not
    shifted.  ``shifted("test", lo, hi)`` gives the test set with leading spaces: the
    same dates, written further to the right.
    ``lengths=(lo, hi)`` instead pads every source, training and held-out, with
    leading spaces to a total length drawn uniformly from ``max(lo, len)..hi``: the
    date sits at any offset inside a window of ``hi`` characters.
    ``at_lengths("test", lo, hi)`` gives held-out sources of ``lo..hi`` characters
    (strictly longer than every training source when ``lo > hi`` of training).
    Attributes ``src_vocab``, ``tgt_vocab``, ``train`` and ``test``: tuples
    (src (n, S), tgt_in (n, 11), tgt_out (n, 11)); ``sources[split]``: the source
    strings as the model reads them.
    """

    def __init__(self, n_train: int = 20000, n_test: int = 1000, seed: int = 0,
                 shift: tuple[int, int] = (0, 0),
                 lengths: tuple[int, int] | None = None):
        train = DateTranslation(n_train, seed=seed)
        test = DateTranslation(n_test, seed=seed + 1, exclude=train)
        self.src_vocab, self.tgt_vocab = train.src_vocab, train.tgt_vocab
        self.pairs = {"train": train.pairs, "test": test.pairs}
        self.sources = {}
        if lengths is not None:
            if tuple(shift) != (0, 0):
                raise ValueError("pass shift or lengths, not both")
            self.train = self.at_lengths("train", *lengths, seed=seed)
            self.test = self.at_lengths("test", *lengths, seed=seed + 1)
        else:
            self.train = self.shifted("train", *shift, seed=seed)
            self.test = self.shifted("test", 0, 0)

    def _tensors(self, split: str, sources: list[str]):
        self.sources.setdefault(split, sources)
        src = pad_batch([self.src_vocab.encode(s) for s in sources])
        tgt = pad_batch([self.tgt_vocab.encode(t, bos=True, eos=True)
                         for _, t in self.pairs[split]])
        return src, tgt[:, :-1], tgt[:, 1:]

    def at_lengths(self, split: str, lo: int, hi: int, seed: int = 0):
        """(src, tgt_in, tgt_out) of ``split``, each source padded on the left with
        spaces to a length drawn uniformly from ``max(lo, len(source))..hi``."""
        if split not in self.pairs:
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        longest = max(len(s) for s, _ in self.pairs[split])
        if not 0 <= lo <= hi or hi < longest:
            raise ValueError(f"lengths must be 0 <= lo <= hi with hi >= the longest "
                             f"source ({longest}), got lo={lo}, hi={hi}")
        rng = random.Random(seed)
        return self._tensors(split, [" " * (rng.randint(max(lo, len(s)), hi) - len(s))
                                     + s for s, _ in self.pairs[split]])

    def shifted(self, split: str, lo: int, hi: int, seed: int = 0):
        """(src, tgt_in, tgt_out) of ``split`` with lo..hi leading spaces per source"""
        if not 0 <= lo <= hi:
            raise ValueError(f"a shift range must be 0 <= lo <= hi, "
                             f"got lo={lo}, hi={hi}")
        if split not in self.pairs:
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        rng = random.Random(seed)
        return self._tensors(split, [" " * rng.randint(lo, hi) + s
                                     for s, _ in self.pairs[split]])

    def source_lengths(self, split: str = "train") -> torch.Tensor:
        """(n,) number of real (non-pad) characters of each source"""
        return (getattr(self, split)[0] != self.src_vocab.pad_id).sum(1)


def expected_calibration_error(confidence: torch.Tensor, correct: torch.Tensor,
                               bins: int = 10) -> float:
    """ECE = sum_b (n_b / n) |accuracy_b - mean confidence_b| over equal-width bins of
    confidence in [0, 1].  confidence (n,) floats, correct (n,) bools."""
    check_positive_int(bins, "bins")
    if (confidence.shape != correct.shape or confidence.dim() != 1
            or len(confidence) == 0):
        raise ValueError(f"expected confidence and correct of the same shape (n,), "
                         f"n > 0, got "
                         f"{tuple(confidence.shape)} and {tuple(correct.shape)}")
    conf, corr = confidence.double(), correct.double()
    which = (conf * bins).long().clamp(0, bins - 1)  # bin of each sample
    n = torch.zeros(bins, dtype=torch.float64).index_add_(0, which,
                                                          torch.ones_like(conf))
    gap = (torch.zeros(bins, dtype=torch.float64).index_add_(0, which,
                                                             corr - conf)).abs()
    return float(gap.sum() / n.sum())


def auroc(score: torch.Tensor, positive: torch.Tensor) -> float:
    """Area under the ROC curve: the chance that a random positive scores higher than
    a random negative (ties count one half), from the ranks (Mann-Whitney U).
    score (n,) floats, positive (n,) bools -> float in [0, 1]; nan without both kinds.
    For error detection, ``auroc(confidence, correct)``: 1 = every mistake is made
    with less confidence than every right answer, 0.5 = confidence does not tell."""
    if score.shape != positive.shape or score.dim() != 1:
        raise ValueError(f"expected score and positive of the same shape (n,), got "
                         f"{tuple(score.shape)} and {tuple(positive.shape)}")
    pos = positive.bool()
    n1, n0 = int(pos.sum()), int((~pos).sum())
    if n1 == 0 or n0 == 0:
        return float("nan")
    _, inverse, counts = torch.unique(score.double(), return_inverse=True,
                                      return_counts=True)
    ends = counts.cumsum(0).double()
    rank = (ends - (counts.double() - 1) / 2)[inverse]  # mean rank of ties, 1-based
    return float((rank[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def reliability(confidence: torch.Tensor, correct: torch.Tensor,
                bins: int = 10) -> dict[str, list]:
    """Per equal-width confidence bin: ``n`` (how many), ``accuracy`` and mean
    ``confidence`` (nan for an empty bin): the points of a reliability diagram."""
    check_positive_int(bins, "bins")
    which = (confidence.double() * bins).long().clamp(0, bins - 1)
    n = torch.bincount(which, minlength=bins).double()
    acc = torch.zeros(bins, dtype=torch.float64).index_add_(0, which,
                                                            correct.double()) / n
    conf = torch.zeros(bins, dtype=torch.float64).index_add_(0, which,
                                                             confidence.double()) / n
    return {"n": n.long().tolist(), "accuracy": acc.tolist(),
            "confidence": conf.tolist()}


def input_blind_baseline(targets: torch.Tensor, pad_id: int = 0) -> dict[str, float]:
    """What a model that never reads its input can reach on ``targets`` (N, T).

    ``loss``: the entropy of the target at each output position, averaged over the
    real (non-pad) target tokens: the lowest cross-entropy of a model that knows the
    position it writes but not the source; ``token_accuracy``: always writing each
    position's most common target.  ``unigram_loss`` / ``unigram_accuracy``: the same
    for a model that knows neither (one distribution for every position)."""
    if targets.dim() != 2 or targets.is_floating_point():
        raise ValueError(f"expected integer targets (N, T), got "
                         f"{targets.dtype} {tuple(targets.shape)}")
    real = targets != pad_id
    V = int(targets.max()) + 1
    counts = torch.zeros(targets.shape[1], V, dtype=torch.float64)       # (T, V)
    counts.scatter_add_(1, targets.T.clamp(min=0),
                        real.T.double())
    per_pos = counts.sum(1)                                           # tokens per t
    p = counts / per_pos.clamp(min=1)[:, None]
    ent = -(p * p.clamp(min=1e-300).log()).sum(1)                     # (T,)
    total = per_pos.sum()
    uni = counts.sum(0) / total
    return {"loss": float((ent * per_pos).sum() / total),
            "token_accuracy": float(counts.max(1).values.sum() / total),
            "unigram_loss": float(-(uni * uni.clamp(min=1e-300).log()).sum()),
            "unigram_accuracy": float(uni.max())}


# The ISO target: characters 0-3 the year, 5-6 the month, 8-9 the day
FIELDS = {"year": slice(0, 4), "month": slice(5, 7), "day": slice(8, 10)}


@torch.no_grad()
def by_field(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor,
             tgt_out: torch.Tensor, sources: list[str]) -> dict:
    """Held-out loss and accuracy per field of the ISO date (year, month, day), for
    the sources that write the month as a word (``March``, ``mar``, ``März``) and
    those that write it as digits.  Returns ``{group: {field: {"loss", "accuracy",
    "n"}}}``: the mean -log p of the field's characters and the share of dates whose
    whole field is the argmax."""
    if len(sources) != len(src):
        raise ValueError(f"expected one source string per row, got {len(sources)} "
                         f"for {len(src)} rows")
    was_training = model.training
    model.eval()
    dev = next(model.parameters()).device
    nll, ok = [], []
    for i in range(0, len(src), 500):
        s, ti, to = (t[i:i + 500].to(dev) for t in (src, tgt_in, tgt_out))
        logp = model(s, ti).float().log_softmax(-1)
        nll.append(-logp.gather(-1, to[..., None]).squeeze(-1).cpu())
        ok.append((logp.argmax(-1) == to).cpu())
    model.train(was_training)
    nll, ok = torch.cat(nll), torch.cat(ok)
    word = torch.tensor([any(c.isascii() and c.isalpha() for c in s)
                         for s in sources])
    out = {}
    for group, rows in (("month as a word", word), ("month as digits", ~word)):
        out[group] = {f: {"loss": nll[rows][:, cols].mean().item() if rows.any()
                          else float("nan"),
                          "accuracy": ok[rows][:, cols].all(1).float().mean().item()
                          if rows.any() else float("nan"),
                          "n": int(rows.sum())}
                      for f, cols in FIELDS.items()}
    return out


def date_format(source: str, iso: str) -> str:
    """The name (a key of ``d2lmini.text.FORMATS``) of the format ``source`` writes the
    date ``iso`` in, leading spaces ignored."""
    import datetime as dt

    from .text import FORMATS
    day = dt.date.fromisoformat(iso)
    for name, fmt in FORMATS.items():
        if fmt(day) == source.strip(" "):
            return name
    raise ValueError(f"{source!r} writes {iso} in none of the formats {list(FORMATS)}")


@torch.no_grad()
def by_format(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor,
              tgt_out: torch.Tensor, sources: list[str], isos: list[str]) -> dict:
    """Like :func:`by_field`, per source format: ``{format: {field: {"loss",
    "accuracy", "n"}}}``; ``isos``: the target date of each row (``YYYY-MM-DD``)."""
    names = [date_format(s, t) for s, t in zip(sources, isos)]
    out = {}
    for name in dict.fromkeys(names):
        rows = torch.tensor([n == name for n in names])
        idx = rows.nonzero().flatten()
        sub = by_field(model, src[idx], tgt_in[idx], tgt_out[idx],
                       [sources[i] for i in idx.tolist()])
        out[name] = next(g for g in sub.values() if g["year"]["n"])
    return out


@torch.no_grad()
def predictions(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor,
                tgt_out: torch.Tensor, batch_size: int = 500):
    """One teacher-forced pass in eval mode over a data set, in batches.

    Returns (confidence (n,), correct (n,) bool, nll (n,), seq_ok (N,) bool) for the n
    real (non-pad) target tokens of the N sequences: the largest probability, whether
    the argmax is the target, -log p(target), and whether every token of a sequence is
    right (= greedy decoding writes it exactly).
    """
    was_training = model.training
    model.eval()
    dev = next(model.parameters()).device
    confs, oks, nlls, seq_ok = [], [], [], []
    for i in range(0, len(src), batch_size):
        s, ti, to = (t[i:i + batch_size].to(dev) for t in (src, tgt_in, tgt_out))
        logp = model(s, ti).float().log_softmax(-1)                   # (b, T, V)
        keep = to != model.pad_id
        conf, pred = logp.exp().max(-1)                                # (b, T)
        ok = pred == to
        seq_ok.append((ok | ~keep).all(1))
        nll = -logp.gather(-1, to[..., None]).squeeze(-1)
        confs.append(conf[keep]), oks.append(ok[keep]), nlls.append(nll[keep])
    model.train(was_training)
    return tuple(torch.cat(v).cpu() for v in (confs, oks, nlls, seq_ok))


def evaluate(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor,
             tgt_out: torch.Tensor) -> dict[str, float]:
    """Held-out metrics of an encoder-decoder model from one teacher-forced pass.

    exact_match: share of sequences whose every target token (with <eos>) is the argmax;
    loss: plain cross-entropy per target token (no smoothing); token_accuracy;
    ece: expected calibration error of the per-token confidence (max probability);
    conf_wrong: mean confidence of the wrong tokens (nan if there are none);
    conf_right: mean confidence of the right ones;
    auroc: how well the confidence tells right tokens from wrong ones
    (:func:`auroc`; nan if all are right).
    """
    conf, ok, nll, seq_ok = predictions(model, src, tgt_in, tgt_out)
    return {"exact_match": seq_ok.float().mean().item(),
            "loss": nll.mean().item(),
            "token_accuracy": ok.float().mean().item(),
            "ece": expected_calibration_error(conf, ok),
            "conf_wrong": conf[~ok].mean().item() if (~ok).any() else float("nan"),
            "conf_right": conf[ok].mean().item() if ok.any() else float("nan"),
            "auroc": auroc(conf, ok)}


def train_dates(data: DateData, steps: int = 300, seed: int = 0,
                smoothing: float = 0.1, lr: float = 5e-3, warmup: int = 30,
                batch_size: int = 64, device=None, d_model: int = 32,
                num_heads: int = 4, num_layers: int = 1, d_ff: int = 128, build=None,
                eval_at=(), **model_kw) -> dict:
    """Train ``Transformer(d_model, num_heads, num_layers, d_ff, **model_kw)`` on
    ``data.train`` for ``steps`` Adam steps (warm-up then cosine decay, label smoothing
    ``smoothing``), then :func:`evaluate` it on ``data.test``.

    Same ``seed``, same initial weights (for the same architecture) and same batches.
    Returns evaluate's metrics plus ``params``, ``seconds``, ``step_loss`` (the training
    loss of every step), ``final_train_loss`` (its mean over the last 10% of steps) and
    the trained ``model``.  ``warmup=0``: full rate at once.  ``build``: a function
    called like ``Transformer`` (vocabulary sizes, then the keywords) that returns
    another encoder-decoder with its interface (default ``Transformer``; chapters 10-11
    use :mod:`d2lmini.experiments`' variants).  ``eval_at``: steps after which the
    model is also scored on ``data.test``: ``curve`` = ``{"step": [...], "loss": [...],
    "exact_match": [...], "token_accuracy": [...]}`` (the held-out learning curve).
    """
    check_positive_int(steps, "steps")
    eval_at = sorted(set(int(e) for e in eval_at))
    if eval_at and not 1 <= eval_at[0] <= eval_at[-1] <= steps:
        raise ValueError(f"eval_at must be steps in 1..{steps}, got {eval_at}")
    if not 0 <= warmup <= steps:
        raise ValueError(f"warmup must be in 0..steps={steps}, got {warmup}")
    dev = torch.device(device) if device is not None else torch.device("cpu")
    set_seed(seed)
    kw = dict(d_model=d_model, num_heads=num_heads, num_layers=num_layers, d_ff=d_ff,
              dropout=0.0, max_len=64)
    kw.update(model_kw)
    model = (build or Transformer)(len(data.src_vocab), len(data.tgt_vocab),
                                   **kw).to(dev)
    # faster; nobody reads the weights while training
    set_fused_attention(model, True)
    # one kernel for all parameters
    fused = True if dev.type in ("cpu", "cuda") else None
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9,
                           fused=fused)
    # warmup 0 or 1: full rate from the first step
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, warmup_cosine_schedule(max(warmup, 1), steps))
    gen = torch.Generator().manual_seed(seed)
    pad = data.tgt_vocab.pad_id
    step, losses = 0, []
    curve = {"step": [], "loss": [], "exact_match": [], "token_accuracy": []}
    start = time.perf_counter()
    model.train()
    while step < steps:
        for src, tgt_in, tgt_out in bucket_batches(*data.train, batch_size,
                                                   generator=gen):
            src, tgt_in, tgt_out = src.to(dev), tgt_in.to(dev), tgt_out.to(dev)
            loss = label_smoothing_cross_entropy(model(src, tgt_in), tgt_out, smoothing,
                                                 ignore_index=pad)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            losses.append(loss.detach())                    # no host sync per step
            if step in eval_at:
                m = evaluate(model, *data.test)
                curve["step"].append(step)
                for k in ("loss", "exact_match", "token_accuracy"):
                    curve[k].append(m[k])
            if step >= steps:
                break
    seconds = time.perf_counter() - start
    # the returned model keeps attention weights again
    set_fused_attention(model, False)
    result = evaluate(model, *data.test)
    step_loss = torch.stack(losses).cpu()
    result.update(params=sum(p.numel() for p in model.parameters()), seconds=seconds,
                  final_train_loss=step_loss[-max(1, steps // 10):].mean().item(),
                  step_loss=step_loss.tolist(), model=model)
    if eval_at:
        result["curve"] = curve
    return result


def summarize(results: list[dict],
              key: str = "exact_match") -> tuple[float, float, float]:
    """(mean, min, max) of ``key`` over runs (e.g. several seeds)."""
    vals = [r[key] for r in results]
    if not vals:
        raise ValueError("no results to summarize")
    return statistics.fmean(vals), min(vals), max(vals)


def paired(variant: list[dict], baseline: list[dict],
           key: str = "exact_match") -> list[float]:
    """Per-seed differences ``variant[i][key] - baseline[i][key]`` (runs of the same
    seeds, in the same order: same initial weights where shapes agree, same batches)."""
    if len(variant) != len(baseline) or not variant:
        raise ValueError(f"expected two equally long, non-empty lists of runs, got "
                         f"{len(variant)} and {len(baseline)}")
    return [v[key] - b[key] for v, b in zip(variant, baseline)]


def table(results: dict[str, list[dict]], names, keys=("exact_match", "loss"),
          width: int = 14, col: int = 21) -> None:
    """Print ``mean [min, max]`` of each key over the runs (seeds) of each name: a
    first column ``width`` wide, then one of ``col`` characters per key."""
    print(f"{'variant':<{width}}" + "".join(f"{k:>{col}}" for k in keys))
    for n in names:
        cells = ["{:.3f} [{:.3f}, {:.3f}]".format(*summarize(results[n], k))
                 for k in keys]
        print(f"{n:<{width}}" + "".join(f"{c:>{col}}" for c in cells))


def spread_plot(ax, results: dict[str, list[dict]], names, key: str = "exact_match",
                highlight: str | None = None) -> None:
    """One dot per run (seed) and a bar from min to max with the mean marked, per
    name: how far apart the variants are, next to how far apart the seeds are."""
    for i, n in enumerate(names):
        vals = [r[key] for r in results[n]]
        color = "tab:blue" if n == highlight else "tab:gray"
        ax.vlines(i, min(vals), max(vals), color=color, lw=6, alpha=0.3)
        ax.plot([i] * len(vals), vals, "o", ms=3.5, color=color)
        ax.plot([i - 0.25, i + 0.25], [statistics.fmean(vals)] * 2, "-", color="k",
                lw=1.5)
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
