"""Chapter 15's scaling law: GPTs of 7 sizes trained on tiny Shakespeare, and a
prediction of the largest one made before it is trained.

Run from the repository root, one thread per process (about 40 CPU-minutes on an AMD
EPYC; it resumes where it stopped when run again):

    OMP_NUM_THREADS=1 nohup python benchmarks/scaling_law.py --jobs 2 > log 2>&1 &
    python benchmarks/scaling_law.py --quick --name scaling_quick     # a pipeline try

What it does, in order, writing ``d2lmini/results/<name>.json`` after every run:

1. learning rate: sizes S1, S4, S6 on 500,000 tokens, seed 0, four rates (and one
   more, 2.5x beyond, while the best sits at an edge of the grid); the best rate of
   each, fitted as lr = c N^(-g) (a line in log-log), gives every size its rate (the
   held-out size XL included), before any other run;
2. fixed budget: sizes S1..S6 (non-embedding N from 3.3 thousand to 150 thousand),
   seeds 0, 1, 2, each trained on D_max = 1,000,000 tokens with its own full
   schedule;
3. the fit L(N) = a N^(-alpha) + L_inf on those 18 runs, with a bootstrap over
   seeds, and from it the **prediction** of XL's held-out loss (N = 448 thousand,
   3x the largest fitted size), written to the file before XL trains;
4. XL at D_max, seed 0; the compute grid: S1..S6 at D_max / 8, / 4, / 2, and the
   small sizes at 2 D_max (S1..S4) and 4 D_max (S1..S3), seeds 0, 1, 2, each with
   its own schedule (so that no point is read off an unfinished cosine); S1 on
   2 D_max and S2 on D_max (equal compute) also at seeds 3 and 4, phase "pair", and
   XL seeds 1 and 2, before the longest grid runs; then the compute frontier from
   the grid and the fixed runs (Hoffmann et al.'s approach 2, isoFLOP profiles, with
   a bootstrap over seeds) and the fit L(N, D) = E + A N^(-alpha) + B D^(-beta)
   (their approach 3).
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import d2lmini as d2l  # noqa: E402
from d2lmini import scaling  # noqa: E402
from d2lmini.checkpoints import machine  # noqa: E402
from d2lmini.io import RESULTS, save_results  # noqa: E402

FIT_SIZES = ["S1", "S2", "S3", "S4", "S5", "S6"]
SWEEP_SIZES = ["S1", "S4", "S6"]
LRS = [1e-3, 2.5e-3, 6e-3, 1.5e-2]
SEEDS = [0, 1, 2]
# the small sizes also train longer, so that at a fixed compute the frontier has sizes
# on both sides of its best one
LONG_SIZES = {2: ["S1", "S2", "S3", "S4"], 4: ["S1", "S2", "S3"]}
# an equal-compute pair (6 N D within 0.6 %) that also trains seeds 3 and 4
PAIR = [("S1", 2), ("S2", 1)]
PAIR_SEEDS = [3, 4]


def _train(task, context, batch_size, eval_windows, data=None):
    phase, size, tokens, seed, lr = task
    torch.set_num_threads(1)
    c0 = time.process_time()
    r = scaling.train_lm(size, tokens, seed, lr, context=context,
                         batch_size=batch_size, data=data or _DATA.get("data"),
                         eval_windows=eval_windows)
    r.pop("model")
    r.update(phase=phase, size=size, tokens_asked=tokens,
             cpu_seconds=round(time.process_time() - c0, 2),
             heldout=round(r["heldout"], 5))
    return r


_DATA = {}


class _Job:
    """One training run in a worker process (picklable)."""

    def __init__(self, context, batch_size, eval_windows):
        self.args = (context, batch_size, eval_windows)

    def __call__(self, task):
        if "data" not in _DATA:
            _DATA["data"] = scaling.char_data()
        return _train(task, *self.args)


def frontier(res: dict, draws: int = 1000) -> dict:
    """The compute frontier of the fixed and grid runs: isoFLOP optima (Hoffmann et
    al.'s approach 2) at 8 computes per decade from the smallest to the largest
    trained, each with a 95 % bootstrap interval over seeds (seeds drawn with
    replacement per size and budget); and the surface L(N, D) of their approach 3."""
    grid = [r for r in res["runs"] if r["phase"] in ("fixed", "grid")]
    lo, hi = min(r["flops"] for r in grid), max(r["flops"] for r in grid)
    Cs = [10 ** (k / 8) for k in range(int(8 * math.log10(lo)),
                                        int(8 * math.log10(hi)) + 2)]
    boot = scaling.bootstrap_over_seeds(grid, lambda rs: rs, draws=draws,
                                        group=("size", "tokens_asked"))
    q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]
    rows = []
    for C in Cs:
        o = scaling.isoflop(grid, C)
        if o["N"] is None:
            continue
        tpp = [b["tokens_per_param"] for b in (scaling.isoflop(rs, C) for rs in boot)
               if b["N"] is not None]
        rows.append({"C": C, "N": o["N"], "D": o["D"],
                     "tokens_per_param": o["tokens_per_param"], "loss": o["loss"],
                     "sizes": len(o["points"]), "interior_draws": len(tpp),
                     "tokens_per_param_interval": [q(tpp, 0.025), q(tpp, 0.975)]})
    surface = scaling.fit_loss_surface([r["non_embedding"] for r in grid],
                                       [r["tokens"] for r in grid],
                                       [r["heldout"] for r in grid])
    return {"isoflop": rows, "draws": draws, "surface": surface}


def _train(task, context, batch_size, eval_windows, data=None):
    phase, size, tokens, seed, lr = task
    torch.set_num_threads(1)
    c0 = time.process_time()
    r = scaling.train_lm(size, tokens, seed, lr, context=context,
                         batch_size=batch_size, data=data or _DATA.get("data"),
                         eval_windows=eval_windows)
    r.pop("model")
    r.update(phase=phase, size=size, tokens_asked=tokens,
             cpu_seconds=round(time.process_time() - c0, 2),
             heldout=round(r["heldout"], 5))
    return r


_DATA = {}


class _Job:
    """One training run in a worker process (picklable)."""

    def __init__(self, context, batch_size, eval_windows):
        self.args = (context, batch_size, eval_windows)

    def __call__(self, task):
        if "data" not in _DATA:
            _DATA["data"] = scaling.char_data()
        return _train(task, *self.args)


def surface_fit(res: dict, n_of: dict, draws: int = 300) -> dict:
    """L(N, D) = E + A N^-alpha + B D^-beta on the fixed and grid runs, the
    compute-optimal tokens per parameter at the compute of S6 on D_max, and 95 %
    bootstrap intervals over seeds."""
    grid = [r for r in res["runs"] if r["phase"] in ("fixed", "grid")]

    def fit(rs):
        return scaling.fit_loss_surface([n_of[r["size"]] for r in rs],
                                        [r["tokens"] for r in rs],
                                        [r["heldout"] for r in rs])
    C = 6 * n_of["S6"] * res["settings"]["D_max"]
    f = fit(grid)
    boot = scaling.bootstrap_over_seeds(grid, fit, draws=draws)
    q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]
    tpp = [scaling.compute_optimal(b, C)["tokens_per_param"] for b in boot
           if b["A"] > 0 and b["B"] > 0]
    out = {**f, "C": C, "draws": len(boot), "optimal": scaling.compute_optimal(f, C)}
    for k in ("alpha", "beta", "E"):
        out[f"{k}_interval"] = [q([b[k] for b in boot], 0.025),
                                q([b[k] for b in boot], 0.975)]
    out["tokens_per_param_interval"] = [q(tpp, 0.025), q(tpp, 0.975)]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", default="scaling_law")
    ap.add_argument("--tokens", type=int, default=1_000_000, help="D_max")
    ap.add_argument("--sweep-tokens", type=int, default=500_000)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1,
                    help="training runs at once, one process (and thread) each")
    ap.add_argument("--fit-only", action="store_true",
                    help="no training: the frontier of the runs shipped")
    ap.add_argument("--quick", action="store_true",
                    help="a pipeline check: D_max = 40 000 tokens, a sweep at 20 000, "
                         "eval on 32 windows")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    D_max = 40_000 if args.quick else args.tokens
    eval_windows = 32 if args.quick else None
    sweep_tokens = 20_000 if args.quick else args.sweep_tokens
    settings = {"D_max": D_max, "sweep_tokens": sweep_tokens,
                "context": args.context, "batch_size": args.batch_size,
                "threads": args.threads, "shapes": {k: list(v) for k, v in
                                                    scaling.SHAPES.items()},
                "fit_sizes": FIT_SIZES, "sweep_sizes": SWEEP_SIZES, "lrs": LRS,
                "lr_grid": "x 2.5 beyond an edge while the best is there",
                "seeds": SEEDS, "warmup_frac": 0.1, "final_lr": 0.1,
                "weight_decay": 0.1, "optimizer": "AdamW(0.9, 0.99), clip 1.0",
                "model": "d2l.GPT, chapter 12's defaults, d_ff = 4 d_model",
                "split": "tiny Shakespeare, first 90 % train, last 10 % held out",
                "heldout": "every held-out window" if eval_windows is None
                else f"first {eval_windows} held-out windows",
                "N": "non-embedding parameters (blocks + final LayerNorm)"}
    path = os.path.join(RESULTS, f"{args.name}.json")
    res = d2l.load_results(args.name) if os.path.exists(path) else {}
    old = res.get("settings", {})
    if old != settings:           # keep the learning-rate sweep if only D_max changed
        rest = lambda d: {k: v for k, v in d.items()
                          if k not in ("D_max", "sweep_tokens")}
        same_sweep = rest(old) == rest(settings)
        res = {"settings": settings,
               "runs": [r for r in res.get("runs", []) if same_sweep
                        and r["phase"] == "lr" and r["tokens_asked"] == sweep_tokens]}
    res.update(machine=machine(), torch=str(torch.__version__))
    n_of = {s: scaling.non_embedding_params(scaling.gpt_for(s, 66, args.context))
            for s in scaling.SHAPES}
    if args.fit_only:
        res["frontier"] = frontier(res)
        save_results(args.name, res)
        print("frontier:", res["frontier"], flush=True)
        return
    data = scaling.char_data()
    done = {(r["phase"], r["size"], r["tokens_asked"], r["seed"], r["lr"])
            for r in res["runs"]}

    def save():
        res["seconds"] = round(sum(r["seconds"] for r in res["runs"]), 1)
        res["cpu_seconds"] = round(sum(r["cpu_seconds"] for r in res["runs"]), 1)
        save_results(args.name, res)

    def record(r):
        res["runs"].append(r)
        done.add((r["phase"], r["size"], r["tokens_asked"], r["seed"], r["lr"]))
        save()
        print(f"{r['phase']:6} {r['size']} D={r['tokens']:>9,} seed {r['seed']} lr "
              f"{r['lr']:.2g}: held-out {r['heldout']:.4f}  ({r['seconds']:.0f} s)",
              flush=True)

    def run(phase, size, tokens, seed, lr):
        runs([(phase, size, tokens, seed, lr)])

    def runs(tasks):
        """Train the tasks not done yet, on --jobs processes, saving each result."""
        todo = [t for t in tasks if t not in done]
        if args.jobs == 1 or len(todo) < 2:
            for t in todo:
                record(_train(t, args.context, args.batch_size, eval_windows, data))
            return
        import multiprocessing as mp
        with mp.get_context("fork").Pool(args.jobs) as pool:
            for r in pool.imap_unordered(_Job(args.context, args.batch_size,
                                              eval_windows), todo):
                record(r)

    # 1. learning rates: the grid grows by a factor 2.5 while the best is at its edge
    for size in SWEEP_SIZES:
        lrs = list(LRS)
        while True:
            for lr in lrs:
                run("lr", size, sweep_tokens, 0, lr)
            got = {r["lr"]: r["heldout"] for r in res["runs"]
                   if r["phase"] == "lr" and r["size"] == size}
            top = min(got, key=got.get)
            if top == max(got) and top < 0.1:
                lrs = [float(f"{top * 2.5:.3g}")]
            elif top == min(got) and top > 1e-4:
                lrs = [float(f"{top / 2.5:.3g}")]
            else:
                break
    sweep = [r for r in res["runs"] if r["phase"] == "lr"]
    best = {s: min((r for r in sweep if r["size"] == s), key=lambda r: r["heldout"])
            for s in SWEEP_SIZES}
    x = torch.tensor([math.log(best[s]["non_embedding"]) for s in SWEEP_SIZES],
                     dtype=torch.float64)
    y = torch.tensor([math.log(best[s]["lr"]) for s in SWEEP_SIZES],
                     dtype=torch.float64)
    slope = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
    inter = float(y.mean() - slope * x.mean())
    lr_of = {s: float(f"{math.exp(inter + slope * math.log(n)):.3g}")
             for s, n in n_of.items()}
    res["lr_rule"] = {"best": {s: best[s]["lr"] for s in SWEEP_SIZES},
                      "c": math.exp(inter), "g": -slope, "lr": lr_of}
    save()
    print("learning rates:", lr_of, flush=True)

    # 2. fixed budget
    runs([("fixed", size, D_max, seed, lr_of[size]) for seed in SEEDS
          for size in FIT_SIZES])

    # 3. the prediction, before XL trains
    fixed = [r for r in res["runs"] if r["phase"] == "fixed"]

    def fit(rs):
        return scaling.fit_power_law([r["non_embedding"] for r in rs],
                                     [r["heldout"] for r in rs])
    if "prediction" not in res:
        f = fit(fixed)
        boot = scaling.bootstrap_over_seeds(fixed, fit, draws=1000)
        preds = sorted(float(scaling.power_law(n_of["XL"], b["a"], b["alpha"],
                                               b["L_inf"])) for b in boot)
        alphas = sorted(b["alpha"] for b in boot)
        q = lambda xs, p: xs[min(len(xs) - 1, int(p * len(xs)))]
        res["fit"] = {**f, "alpha_interval": [q(alphas, 0.025), q(alphas, 0.975)],
                      "L_inf_interval": [q(sorted(b["L_inf"] for b in boot), 0.025),
                                         q(sorted(b["L_inf"] for b in boot), 0.975)],
                      "draws": len(boot)}
        res["prediction"] = {
            "size": "XL", "non_embedding": n_of["XL"],
            "heldout": float(scaling.power_law(n_of["XL"], f["a"], f["alpha"],
                                               f["L_inf"])),
            "interval": [q(preds, 0.025), q(preds, 0.975)],
            "written": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"),
            "runs_before": len(res["runs"])}
        save()
        print("prediction for XL:", res["prediction"], flush=True)

    # 4. the held-out size (seed 0 first), 5. the compute grid, interleaved so that
    # an interrupted run leaves a usable part of each
    # 6. an equal-compute pair at five seeds (chapter 15's comparison): S1 on 2 D_max
    # and S2 on D_max differ in compute by 0.6 %; seeds 0..2 are grid and fixed runs
    runs([("xl", "XL", D_max, SEEDS[0], lr_of["XL"])]
         + [("grid", size, D_max // div, seed, lr_of[size]) for div in (8, 4, 2)
            for seed in SEEDS for size in FIT_SIZES]
         + [("pair", size, int(D_max * mul), seed, lr_of[size]) for seed in PAIR_SEEDS
            for size, mul in PAIR]
         + [("xl", "XL", D_max, seed, lr_of["XL"]) for seed in SEEDS[1:]]
         + [("grid", size, D_max * mul, seed, lr_of[size]) for mul in (2, 4)
            for seed in SEEDS for size in LONG_SIZES[mul]])
    res["long_sizes"] = LONG_SIZES
    res["frontier"] = frontier(res)
    res["complete"] = True
    save()
    print(f"done: {res['seconds'] / 3600:.2f} h of training, "
          f"{res['cpu_seconds'] / 3600:.2f} CPU-hours", flush=True)


if __name__ == "__main__":
    main()
