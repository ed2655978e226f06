"""d2lmini.scaling: the fits recover known laws; one tiny run trains and is
reproducible."""
import math

import pytest
import torch

from d2lmini import scaling


def test_power_law_fit_recovers_a_known_law():
    N = torch.tensor([3e3, 7e3, 1.5e4, 2.5e4, 6e4, 1.5e5])
    L = scaling.power_law(N, 30.0, 0.45, 1.4)
    f = scaling.fit_power_law(N, L)
    assert abs(f["alpha"] - 0.45) < 1e-3 and abs(f["L_inf"] - 1.4) < 1e-3
    assert abs(f["a"] / 30.0 - 1) < 1e-2 and f["rmse"] < 1e-6


def test_power_law_fit_with_noise_and_repeated_seeds():
    g = torch.Generator().manual_seed(0)
    N = torch.tensor([3e3, 7e3, 1.5e4, 2.5e4, 6e4, 1.5e5]).repeat(3)
    L = scaling.power_law(N, 12.0, 0.3, 1.5) + 0.002 * torch.randn(18, generator=g,
                                                                   dtype=torch.float64)
    f = scaling.fit_power_law(N, L)
    assert abs(f["alpha"] - 0.3) < 0.05 and abs(f["L_inf"] - 1.5) < 0.05


def test_power_law_fit_errors():
    with pytest.raises(ValueError, match="at least 3 different N"):
        scaling.fit_power_law([1e3, 1e3, 2e3], [2.0, 2.1, 1.9])
    with pytest.raises(ValueError, match="same length"):
        scaling.fit_power_law([1e3, 2e3, 3e3], [2.0, 1.9])
    with pytest.raises(ValueError, match="finite"):
        scaling.fit_power_law([1e3, 2e3, float("nan")], [2.0, 1.9, 1.8])


def test_loss_surface_fit_and_compute_optimal():
    N = torch.tensor([3e3, 7e3, 1.5e4, 2.5e4, 6e4, 1.5e5]).repeat_interleave(4)
    D = torch.tensor([2.5e5, 5e5, 1e6, 2e6]).repeat(6)
    true = dict(E=1.3, A=40.0, alpha=0.5, B=300.0, beta=0.4)
    L = scaling.loss_surface(N, D, **true)
    f = scaling.fit_loss_surface(N, D, L)
    assert abs(f["alpha"] - 0.5) < 0.01 and abs(f["beta"] - 0.4) < 0.01
    assert abs(f["E"] - 1.3) < 0.01
    C = 1e12
    opt = scaling.compute_optimal(f, C)
    # brute force over N at fixed C
    Ns = torch.logspace(2, 8, 20001, dtype=torch.float64)
    Ls = scaling.loss_surface(Ns, C / (6 * Ns), **true)
    best = Ns[Ls.argmin()].item()
    assert abs(math.log(opt["N"] / best)) < 0.02
    assert math.isclose(opt["tokens_per_param"], opt["D"] / opt["N"])


def test_bootstrap_resamples_seeds_within_each_size():
    runs = [{"shape": [1, 16, 2], "tokens": 10, "seed": s, "v": s} for s in range(3)]
    runs += [{"shape": [2, 16, 2], "tokens": 10, "seed": s, "v": 10 + s}
             for s in range(3)]
    fits = scaling.bootstrap_over_seeds(runs, lambda rs: sorted(r["v"] for r in rs),
                                        draws=50)
    assert len(fits) == 50
    for f in fits:
        assert len(f) == 6 and all(v < 3 for v in f[:3]) and all(v >= 10 for v in f[3:])


def test_non_embedding_params_of_the_shapes():
    counts = {s: scaling.non_embedding_params(scaling.gpt_for(s, 66, 64))
              for s in scaling.SHAPES}
    d = 64
    assert counts["S6"] == 3 * (12 * d * d + 13 * d) + 2 * d    # blocks + final norm
    fit = [counts[s] for s in ["S1", "S2", "S3", "S4", "S5", "S6"]]
    assert fit == sorted(fit) and fit[-1] / fit[0] > 30 and counts["XL"] > fit[-1]


def test_train_lm_is_reproducible_and_learns():
    train, held, vocab = scaling.char_data()
    data = (train, held[:3000], vocab)
    a = scaling.train_lm("S1", 2048 * 4, 0, 0.02, data=data)
    b = scaling.train_lm("S1", 2048 * 4, 0, 0.02, data=data)
    assert a["heldout"] == b["heldout"] and a["steps"] == 4
    assert a["heldout"] < math.log(len(vocab) - 1)          # below a uniform guess
    assert a["flops"] == 6 * a["non_embedding"] * a["tokens"]
    with pytest.raises(ValueError, match="tokens must be an int"):
        scaling.train_lm("S1", 10, 0, 0.01, data=data)
    with pytest.raises(ValueError, match="unknown size"):
        scaling.gpt_for("S9", 66, 64)


def test_isoflop_finds_the_optimum_of_a_known_surface():
    true = dict(E=1.3, A=40.0, alpha=0.5, B=300.0, beta=0.4)
    runs = []
    for n in [3e3, 6e3, 1.2e4, 2.5e4, 5e4, 1e5, 2e5]:
        for d in [1.25e5, 2.5e5, 5e5, 1e6, 2e6, 4e6, 8e6]:
            runs.append({"non_embedding": n, "tokens_asked": d, "tokens": d,
                         "heldout": float(scaling.loss_surface(n, d, **true))})
    C = 6 * 2.5e4 * 1e6
    o = scaling.isoflop(runs, C)
    want = scaling.compute_optimal(true, C)
    assert len(o["points"]) >= 5
    assert abs(math.log(o["N"] / want["N"])) < 0.3      # a parabola through 7 sizes
    assert o["tokens_per_param"] == pytest.approx(o["D"] / o["N"])
    # an edge optimum (the smallest size wins) is no optimum
    edge = [r for r in runs if r["non_embedding"] >= want["N"] * 1.5]
    assert scaling.isoflop(edge, C)["N"] is None
    with pytest.raises(ValueError, match="C must be a positive"):
        scaling.isoflop(runs, -1)
