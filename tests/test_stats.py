"""d2l.compare: the book's one rule for experiments (paired differences over seeds, the
mean and its 95 % t interval, a conclusion only when the interval allows it)."""
import math
import statistics

import pytest
import torch

import d2lmini as d2l
from d2lmini.stats import t_quantile


def test_t_quantiles_match_the_tables():
    # Student's t, 0.975 quantile (e.g. any statistics table)
    assert t_quantile(1) == pytest.approx(12.706, abs=1e-3)
    assert t_quantile(4) == pytest.approx(2.776, abs=1e-3)
    assert t_quantile(40) == pytest.approx(2.021, abs=2e-3)
    assert t_quantile(120) == pytest.approx(1.980, abs=2e-3)
    assert t_quantile(10**6) == pytest.approx(1.960, abs=1e-3)
    with pytest.raises(ValueError, match="positive integer"):
        t_quantile(0)


def test_interval_is_the_t_interval_of_the_mean():
    xs = [0.1, 0.4, 0.35, 0.2, 0.3]
    m, lo, hi = d2l.interval(xs)
    half = 2.776 * statistics.stdev(xs) / math.sqrt(5)
    assert m == pytest.approx(0.27) and lo == pytest.approx(m - half, abs=1e-4)
    assert hi == pytest.approx(m + half, abs=1e-4)
    with pytest.raises(ValueError, match="at least 2"):
        d2l.interval([1.0])


def test_paired_differences_cancel_what_the_seeds_share(capsys):
    seed_noise = [0.0, 0.3, -0.2, 0.5, 0.1]           # large, shared by both variants
    a = [0.5 + s + 0.02 * (i % 2) for i, s in enumerate(seed_noise)]
    b = [0.4 + s for s in seed_noise]
    c = d2l.compare(a, b, metric="loss", names=("A", "B"), better="lower")
    assert c.conclusion == "higher" and c.real and c.n == 5
    assert c.diffs == pytest.approx([0.1, 0.12, 0.1, 0.12, 0.1])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "loss: A − B, paired over 5 seeds"
    assert out[3].split()[0] == "B" and out[4].split()[1:] == [
        "+0.100", "+0.120", "+0.100", "+0.120", "+0.100"]
    assert out[-1].endswith("A is higher (worse)") and "95 % interval" in out[-1]
    assert all(len(l) <= 88 for l in out)


def test_conclusions_follow_the_interval_and_the_margin():
    noisy = [0.01, -0.02, 0.015, -0.01, 0.0]
    zeros = [0.0] * 5
    assert d2l.compare(noisy, zeros, metric="m", show=False).conclusion == "unclear"
    assert d2l.compare(noisy, zeros, metric="m", margin=0.05,
                       show=False).conclusion == "same"
    # a margin narrower than the interval does not make "the same"
    assert d2l.compare(noisy, zeros, metric="m", margin=0.005,
                       show=False).conclusion == "unclear"
    low = [-0.1, -0.12, -0.09, -0.11, -0.1]
    assert d2l.compare(low, zeros, metric="m", show=False).conclusion == "lower"


def test_a_fixed_reference_and_result_dicts(capsys):
    runs = [{"exact_match": v} for v in (0.9, 0.95, 0.97, 0.99, 0.93)]
    c = d2l.compare(runs, 0.506, metric="exact match", key="exact_match",
                    names=("model", "input-blind"), better="higher")
    assert c.conclusion == "higher" and c.baseline == 0.506
    out = capsys.readouterr().out
    assert "model − input-blind (0.506), 5 seeds" in out and "(better)" in out


def test_expect_guards_the_text_and_raises_when_the_finding_changes():
    noisy = [0.01, -0.02, 0.015, -0.01, 0.0]
    d2l.compare(noisy, [0.0] * 5, metric="m", expect=("unclear", "same"), show=False)
    with pytest.raises(d2l.ClaimError, match="expected lower, got unclear"):
        d2l.compare(noisy, [0.0] * 5, metric="m", expect="lower", show=False)
    with pytest.raises(ValueError, match="expect must be among"):
        d2l.compare(noisy, [0.0] * 5, metric="m", expect="worse", show=False)


def test_bad_input_is_named():
    five = [0.1, 0.2, 0.3, 0.4, 0.5]
    with pytest.raises(ValueError, match="at least 5 seeds, got 3"):
        d2l.compare(five[:3], five[:3], metric="m")
    with pytest.raises(ValueError, match="as many baseline values .* got 5 and 4"):
        d2l.compare(five, five[:4], metric="m")
    with pytest.raises(ValueError, match="pass key="):
        d2l.compare([{"a": 1}] * 5, five, metric="m")
    with pytest.raises(ValueError, match="diverged"):
        d2l.compare(five[:4] + [math.nan], five, metric="m")
    with pytest.raises(TypeError, match="must be a list of numbers"):
        d2l.compare(0.3, five, metric="m")
    with pytest.raises(ValueError, match="metric must name"):
        d2l.compare(five, five, metric="")
    with pytest.raises(ValueError, match="margin must be a positive number"):
        d2l.compare(five, five, metric="m", margin=-1)
    with pytest.raises(ValueError, match="better must be"):
        d2l.compare(five, five, metric="m", better="up")
    assert d2l.compare(torch.tensor(five), five, metric="m", show=False).mean == \
        pytest.approx(0, abs=1e-7)


def test_forest_plot_draws_one_row_per_comparison():
    import matplotlib
    matplotlib.use("Agg")
    cs = [d2l.compare([0.1, 0.12, 0.1, 0.11, 0.1], [0.0] * 5, metric="loss",
                      names=(n, "full"), margin=0.05, show=False) for n in "AB"]
    ax = d2l.forest_plot(cs)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["B − full", "A − full"]
    with pytest.raises(ValueError, match="non-empty list"):
        d2l.forest_plot([])


def test_the_sign_test_of_five_agreeing_seeds_is_not_below_five_percent():
    from d2lmini.stats import sign_test
    assert sign_test([0.1, 0.2, 0.05, 0.3, 0.01]) == pytest.approx(0.0625)
    assert sign_test([-0.1, -0.2, -0.05, -0.3, -0.01]) == pytest.approx(0.0625)
    assert sign_test([0.1, 0.2, 0.05, 0.3, -0.01]) == pytest.approx(0.375)
    assert sign_test([0.1] * 10) == pytest.approx(2 / 2 ** 10)
    assert sign_test([0.0, 0.0, 0.0, 0.0, 0.0]) == 1.0            # no signs: no evidence
    c = d2l.compare([0.1, 0.12, 0.09, 0.11, 0.1], [0.0] * 5, metric="m", show=False)
    assert c.sign_p == pytest.approx(0.0625) and c.same_sign == 5
    # the t interval can exclude 0 where the sign count cannot reach p < 0.05
    assert c.conclusion == "higher"


def test_paired_interval_is_narrower_than_the_spread_it_cancels():
    """Pairing: a shared seed effect far larger than the difference leaves the paired
    interval tight; the same numbers compared unpaired would show nothing."""
    shared = [0.9, 0.1, 0.5, 0.3, 0.7]
    a = [s + 0.05 + 0.001 * i for i, s in enumerate(shared)]
    c = d2l.compare(a, shared, metric="m", show=False)
    assert c.conclusion == "higher" and c.high - c.low < 0.01
    m, lo, hi = d2l.interval(a)
    assert hi - lo > 0.5                               # one variant's seeds alone: wide


def test_margin_gives_same_only_when_the_whole_interval_is_inside():
    diffs = [0.004, -0.003, 0.002, 0.001, -0.002]
    c = d2l.compare(diffs, 0.0, metric="m", margin=0.01, show=False)
    assert c.conclusion == "same" and -0.01 < c.low and c.high < 0.01
    # an interval that pokes out of the margin on one side is not "the same"
    wide = [0.02, -0.015, 0.01, 0.018, -0.012]
    assert d2l.compare(wide, 0.0, metric="m", margin=0.01,
                       show=False).conclusion == "unclear"
    assert "the same within ±0.010" in c.sentence()


def test_printed_format_is_stable(capsys):
    """Every chapter prints comparisons this way: title, seeds, rows, one sentence."""
    d2l.compare([0.49, 0.48, 0.50, 0.49, 0.50], [0.41, 0.41, 0.42, 0.41, 0.42],
                metric="held-out loss", names=("no FFN", "full"), better="lower")
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "held-out loss: no FFN − full, paired over 5 seeds",
        "  seed              0        1        2        3        4",
        "  no FFN        0.490    0.480    0.500    0.490    0.500",
        "  full          0.410    0.410    0.420    0.410    0.420",
        "  difference   +0.080   +0.070   +0.080   +0.080   +0.080",
        "  mean difference +0.078, 95 % interval [+0.072, +0.084]: no FFN is higher "
        "(worse)"]


def test_forest_plot_takes_an_xlabel():
    import matplotlib
    matplotlib.use("Agg")
    c = d2l.compare([0.1, 0.12, 0.1, 0.11, 0.1], [0.0] * 5, metric="loss",
                    show=False)
    assert d2l.forest_plot([c], xlabel="Δ loss").get_xlabel() == "Δ loss"
    assert d2l.forest_plot([c]).get_xlabel() == "paired difference (loss)"
