"""The book's one rule for experiments: paired differences over seeds, a 95 % interval.

    >>> c = compare([0.49, 0.48, 0.50, 0.49, 0.50], [0.41, 0.41, 0.42, 0.41, 0.42],
    ...             metric="held-out loss", names=("no FFN", "full"))
    held-out loss: no FFN − full, paired over 5 seeds
      seed            0        1        2        3        4
      no FFN      0.490    0.480    0.500    0.490    0.500
      full        0.410    0.410    0.420    0.410    0.420
      difference +0.080   +0.070   +0.080   +0.080   +0.080
      mean difference +0.078, 95 % interval [+0.072, +0.084]: no FFN is higher

Each seed trains both variants from the same start (same initial weights where the
shapes agree, same batches), so the seed-to-seed noise they share cancels in the
difference.  The interval is Student's t interval of the mean difference.  An effect is
real only when the interval excludes 0; "the same" needs a stated ``margin`` that the
whole interval lies inside; anything else is "no difference shown".
"""
from __future__ import annotations

import math
import numbers
import statistics
from dataclasses import dataclass

import torch

from .claims import ClaimError

__all__ = ["compare", "Comparison", "interval", "t_quantile", "sign_test",
           "forest_plot"]

# two-sided 95 %: the 0.975 quantile of Student's t with df degrees of freedom
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
         2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074,
         2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t_quantile(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (table up to
    30, then the Cornish-Fisher expansion around the normal's 1.96)."""
    if not isinstance(df, numbers.Integral) or df < 1:
        raise ValueError(f"df must be a positive integer, got {df!r}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def _numbers(values, name: str, key: str | None) -> list[float]:
    if isinstance(values, torch.Tensor):
        values = values.tolist()
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a list of numbers (one per seed) or of result "
                        f"dicts with key=..., got {type(values).__name__}")
    out = []
    for i, v in enumerate(values):
        if isinstance(v, dict):
            if key is None:
                raise ValueError(f"{name}[{i}] is a dict: pass key= to say which "
                                 f"entry to compare (keys: {sorted(v)})")
            if key not in v:
                raise KeyError(f"{name}[{i}] has no key {key!r} (keys: {sorted(v)})")
            v = v[key]
        if isinstance(v, torch.Tensor) and v.numel() == 1:
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name}[{i}] must be a number, got {type(v).__name__}")
        if not math.isfinite(v):
            raise ValueError(f"{name}[{i}] is {v}: a diverged run cannot be compared; "
                             f"look at it first")
        out.append(float(v))
    return out


def sign_test(diffs) -> float:
    """Two-sided sign test: the probability, if each difference were as likely to be
    positive as negative, of a split of signs at least as lopsided as ``diffs``'
    (zeros dropped).  With 5 seeds that all agree: 2 * (1/2)^5 = 0.0625, never below
    0.05: the sign count alone cannot call 5 seeds real; the t interval also uses
    the sizes of the differences."""
    xs = [x for x in _numbers(diffs, "diffs", None) if x != 0]
    n = len(xs)
    if n == 0:
        return 1.0
    k = max(sum(x > 0 for x in xs), sum(x < 0 for x in xs))
    tail = sum(math.comb(n, j) for j in range(k, n + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def interval(values, key: str | None = None) -> tuple[float, float, float]:
    """(mean, low, high): the mean of ``values`` (one per seed) and its 95 % t
    interval.  Needs at least 2 values."""
    xs = _numbers(values, "values", key)
    if len(xs) < 2:
        raise ValueError(f"an interval needs at least 2 values, got {len(xs)}")
    m = statistics.fmean(xs)
    half = t_quantile(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, m - half, m + half


@dataclass
class Comparison:
    """What :func:`compare` measured: per-seed values, the paired differences, their
    mean and 95 % interval, and the conclusion the rule allows: ``"higher"`` or
    ``"lower"`` (the interval excludes 0), ``"same"`` (inside ±margin) or
    ``"unclear"``."""
    metric: str
    names: tuple[str, str]
    variant: list[float]
    baseline: list[float] | float
    diffs: list[float]
    mean: float
    low: float
    high: float
    margin: float | None
    conclusion: str
    better: str | None = None

    @property
    def n(self) -> int:
        return len(self.diffs)

    @property
    def real(self) -> bool:
        """True when the interval excludes 0."""
        return self.conclusion in ("higher", "lower")

    @property
    def sign_p(self) -> float:
        """The two-sided sign-test p-value of the differences (:func:`sign_test`)."""
        return sign_test(self.diffs)

    @property
    def same_sign(self) -> int:
        """How many seeds' differences have the sign of the mean difference."""
        return sum((d > 0) == (self.mean > 0) and d != 0 for d in self.diffs)

    def sentence(self, fmt: str = ".3f") -> str:
        a = self.names[0]
        said = {"higher": f"{a} is higher", "lower": f"{a} is lower",
                "unclear": "no difference shown"}
        if self.better is not None and self.real:
            good = self.conclusion == self.better
            said[self.conclusion] += " (better)" if good else " (worse)"
        if self.margin is not None:
            said["same"] = f"the same within ±{self.margin:{fmt}}"
        return (f"mean difference {self.mean:+{fmt}}, 95 % interval "
                f"[{self.low:+{fmt}}, {self.high:+{fmt}}]: {said[self.conclusion]}")


def _conclude(low: float, high: float, margin: float | None) -> str:
    if low > 0:
        return "higher"
    if high < 0:
        return "lower"
    if margin is not None and -margin < low and high < margin:
        return "same"
    return "unclear"


def _rows(label_width: int, header: list[str], rows: list[tuple[str, list[str]]],
          per_line: int = 8) -> list[str]:
    lines = []
    for start in range(0, len(header), per_line):
        cols = slice(start, start + per_line)
        lines.append(f"  {'seed':<{label_width}}"
                     + "".join(f"{h:>9}" for h in header[cols]))
        for label, cells in rows:
            lines.append(f"  {label:<{label_width}}"
                         + "".join(f"{c:>9}" for c in cells[cols]))
    return lines


def compare(variant, baseline, *, metric: str,
            names: tuple[str, str] = ("variant", "baseline"), key: str | None = None,
            seeds=None, margin: float | None = None, better: str | None = None,
            fmt: str = ".3f", expect: str | tuple[str, ...] | None = None,
            min_seeds: int = 5, show: bool = True) -> Comparison:
    """Compare ``variant`` with ``baseline`` the book's one way, print it, return it.

    ``variant``: one number per seed (or result dicts and ``key``); ``baseline``: the
    same seeds' numbers in the same order (paired), or one number (a fixed reference
    such as chance or a theoretical value).  Prints the per-seed values and
    differences, then the mean difference, its 95 % t interval and the conclusion:
    "higher"/"lower" only when the interval excludes 0, "the same within ±margin"
    only when a ``margin`` is given and the interval lies inside it, otherwise "no
    difference shown".  ``better``: ``"lower"`` (a loss) or ``"higher"`` (an
    accuracy) adds "better"/"worse" to a real effect.  ``expect``: the conclusion (or
    tuple of conclusions) the surrounding text relies on; any other raises
    :class:`~d2lmini.claims.ClaimError`.
    ``min_seeds`` (the book's rule: 5) refuses fewer pairs.
    """
    if not isinstance(metric, str) or not metric.strip():
        raise ValueError(f"metric must name what is compared, got {metric!r}")
    if (not isinstance(names, (tuple, list)) or len(names) != 2
            or not all(isinstance(n, str) and n for n in names)):
        raise ValueError(f"names must be two non-empty strings, got {names!r}")
    a = _numbers(variant, "variant", key)
    if isinstance(baseline, numbers.Real) and not isinstance(baseline, bool):
        b = float(baseline)
        diffs = [x - b for x in a]
    else:
        b = _numbers(baseline, "baseline", key)
        if len(b) != len(a):
            raise ValueError(f"paired runs need as many baseline values as variant "
                             f"values (one per seed), got {len(a)} and {len(b)}")
        diffs = [x - y for x, y in zip(a, b)]
    if len(a) < max(2, min_seeds):
        raise ValueError(f"the book's rule compares over at least {max(2, min_seeds)} "
                         f"seeds, got {len(a)}")
    if better not in (None, "lower", "higher"):
        raise ValueError(f"better must be 'lower', 'higher' or None, got {better!r}")
    if margin is not None and not (isinstance(margin, numbers.Real) and margin > 0):
        raise ValueError(f"margin must be a positive number, got {margin!r}")
    seeds = list(range(len(a))) if seeds is None else list(seeds)
    if len(seeds) != len(a):
        raise ValueError(f"seeds must name each of the {len(a)} runs, got {len(seeds)}")
    mean, low, high = interval(diffs)
    result = Comparison(metric, tuple(names), a, b, diffs, mean, low, high, margin,
                        _conclude(low, high, margin), better)
    if show:
        fixed = not isinstance(b, list)
        title = (f"{metric}: {names[0]} − {names[1]} ({b:{fmt}}), {len(a)} seeds"
                 if fixed else
                 f"{metric}: {names[0]} − {names[1]}, paired over {len(a)} seeds")
        rows = [(names[0], [f"{x:{fmt}}" for x in a])]
        if not fixed:
            rows.append((names[1], [f"{x:{fmt}}" for x in b]))
        rows.append(("difference", [f"{d:+{fmt}}" for d in diffs]))
        width = max(10, *(len(r[0]) for r in rows))
        said = ["  " + result.sentence(fmt)]
        if len(said[0]) > 88:                     # the page is 88 columns wide
            head, tail = said[0].rsplit("]: ", 1)
            said = [head + "]:", "  " + tail]
        print("\n".join([title] + _rows(width, [str(s) for s in seeds], rows) + said))
    if expect is not None:
        allowed = (expect,) if isinstance(expect, str) else tuple(expect)
        bad = set(allowed) - {"higher", "lower", "same", "unclear"}
        if bad:
            raise ValueError(f"expect must be among 'higher', 'lower', 'same', "
                             f"'unclear', got {sorted(bad)}")
        if result.conclusion not in allowed:
            raise ClaimError(f"the finding no longer holds: {metric}, {names[0]} − "
                             f"{names[1]}: expected {' or '.join(allowed)}, got "
                             f"{result.conclusion} ({result.sentence(fmt)})")
    return result


def forest_plot(comparisons: list[Comparison], ax=None, labels=None, title: str = "",
                xlabel: str | None = None):
    """One row per comparison: its paired differences (dots), mean and 95 % interval
    (bar), against 0 and the margin (shaded) when one was stated.  ``xlabel``
    (default: "paired difference (<metric>)").  Returns the axes."""
    import matplotlib.pyplot as plt

    if not comparisons or not all(isinstance(c, Comparison) for c in comparisons):
        raise ValueError("forest_plot needs a non-empty list of d2l.compare results")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.45 * len(comparisons) + 1.2))
    labels = labels or [f"{c.names[0]} − {c.names[1]}" for c in comparisons]
    if len(labels) != len(comparisons):
        raise ValueError(f"expected {len(comparisons)} labels, got {len(labels)}")
    for i, c in enumerate(comparisons):
        y = len(comparisons) - 1 - i
        color = "tab:blue" if c.real else "tab:gray"
        if c.margin is not None:
            ax.fill_betweenx([y - 0.35, y + 0.35], -c.margin, c.margin,
                             color="tab:green", alpha=0.12, lw=0)
        ax.plot(c.diffs, [y] * c.n, "o", ms=3, color=color, alpha=0.6)
        ax.plot([c.low, c.high], [y, y], "-", lw=3, color=color)
        ax.plot([c.mean], [y], "|", ms=14, mew=2, color="k")
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(range(len(comparisons)), labels[::-1])
    ax.set_xlabel(xlabel if xlabel is not None
                  else f"paired difference ({comparisons[0].metric})")
    if title:
        ax.set_title(title)
    return ax
