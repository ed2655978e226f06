"""Chapter 15's scaling law: GPTs of 7 sizes trained on tiny Shakespeare, and a
prediction of the largest one made before it is trained.

Run from the repository root, on one thread (about 2 CPU-hours on one core of an
AMD EPYC; it resumes where it stopped when run again):

    OMP_NUM_THREADS=1 nohup python benchmarks/scaling_law.py > scaling.log 2>&1 &
    python benchmarks/scaling_law.py --quick --name scaling_quick     # a 2-minute try

What it does, in order, writing ``d2lmini/results/<name>.json`` after every run:

1. learning rate: sizes S1, S4, S6 at D_max / 4 tokens, seed 0, four rates; the
   best rate of each, fitted as lr = c N^(-g) (a line in log-log), gives every
   size its rate (the held-out size XL included), before any other run;
2. fixed budget: sizes S1..S6 (non-embedding N from 3.3 thousand to 448 thousand),
   seeds 0, 1, 2, each trained on D_max tokens with its own full schedule;
3. the fit L(N) = a N^(-alpha) + L_inf on those 18 runs, with a bootstrap over
   seeds, and from it the **prediction** of XL's held-out loss (N = 793 thousand,
   1.8x the largest fitted size), written to the file before XL trains;
4. XL at D_max, seeds 0, 1, 2;
5. the compute grid: S1..S6 at D_max / 8, / 4, / 2, seeds 0, 1, 2 (each with its own
   schedule, so that no point is read off an unfinished cosine), for the fit
   L(N, D) = E + A N^(-alpha) + B D^(-beta) and its compute-optimal allocation.
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", default="scaling_law")
    ap.add_argument("--tokens", type=int, default=2_000_000, help="D_max")
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true",
                    help="a pipeline check: D_max = 40 000 tokens, eval on 32 windows")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    D_max = 40_000 if args.quick else args.tokens
    eval_windows = 32 if args.quick else None
    settings = {"D_max": D_max, "context": args.context, "batch_size": args.batch_size,
                "threads": args.threads, "shapes": {k: list(v) for k, v in
                                                    scaling.SHAPES.items()},
                "fit_sizes": FIT_SIZES, "sweep_sizes": SWEEP_SIZES, "lrs": LRS,
                "seeds": SEEDS, "warmup_frac": 0.1, "final_lr": 0.1,
                "weight_decay": 0.1, "optimizer": "AdamW(0.9, 0.99), clip 1.0",
                "model": "d2l.GPT, chapter 12's defaults, d_ff = 4 d_model",
                "split": "tiny Shakespeare, first 90 % train, last 10 % held out",
                "heldout": "every held-out window" if eval_windows is None
                else f"first {eval_windows} held-out windows",
                "N": "non-embedding parameters (blocks + final LayerNorm)"}
    path = os.path.join(RESULTS, f"{args.name}.json")
    res = d2l.load_results(args.name) if os.path.exists(path) else {}
    if res.get("settings") != settings:
        res = {"settings": settings, "runs": []}
    res.update(machine=machine(), torch=str(torch.__version__))
    data = scaling.char_data()
    done = {(r["phase"], r["size"], r["tokens_asked"], r["seed"], r["lr"])
            for r in res["runs"]}

    def save():
        res["seconds"] = round(sum(r["seconds"] for r in res["runs"]), 1)
        res["cpu_seconds"] = round(sum(r["cpu_seconds"] for r in res["runs"]), 1)
        save_results(args.name, res)

    def run(phase, size, tokens, seed, lr):
        if (phase, size, tokens, seed, lr) in done:
            return
        c0 = time.process_time()
        r = scaling.train_lm(size, tokens, seed, lr, context=args.context,
                             batch_size=args.batch_size, data=data,
                             eval_windows=eval_windows)
        r.pop("model")
        r.update(phase=phase, size=size, tokens_asked=tokens,
                 cpu_seconds=round(time.process_time() - c0, 2),
                 heldout=round(r["heldout"], 5))
        res["runs"].append(r)
        done.add((phase, size, tokens, seed, lr))
        save()
        print(f"{phase:6} {size} D={r['tokens']:>9,} seed {seed} lr {lr:.2g}: "
              f"held-out {r['heldout']:.4f}  ({r['seconds']:.0f} s)", flush=True)

    # 1. learning rates
    for size in SWEEP_SIZES:
        for lr in LRS:
            run("lr", size, D_max // 4, 0, lr)
    sweep = [r for r in res["runs"] if r["phase"] == "lr"]
    best = {s: min((r for r in sweep if r["size"] == s), key=lambda r: r["heldout"])
            for s in SWEEP_SIZES}
    x = torch.tensor([math.log(best[s]["non_embedding"]) for s in SWEEP_SIZES],
                     dtype=torch.float64)
    y = torch.tensor([math.log(best[s]["lr"]) for s in SWEEP_SIZES],
                     dtype=torch.float64)
    slope = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
    inter = float(y.mean() - slope * x.mean())
    n_of = {s: scaling.non_embedding_params(scaling.gpt_for(s, 66, args.context))
            for s in scaling.SHAPES}
    lr_of = {s: float(f"{math.exp(inter + slope * math.log(n)):.3g}")
             for s, n in n_of.items()}
    res["lr_rule"] = {"best": {s: best[s]["lr"] for s in SWEEP_SIZES},
                      "c": math.exp(inter), "g": -slope, "lr": lr_of}
    save()
    print("learning rates:", lr_of, flush=True)

    # 2. fixed budget
    for seed in SEEDS:
        for size in FIT_SIZES:
            run("fixed", size, D_max, seed, lr_of[size])

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

    # 4. the held-out size
    for seed in SEEDS:
        run("xl", "XL", D_max, seed, lr_of["XL"])

    # 5. the compute grid
    for div in (8, 4, 2):
        for seed in SEEDS:
            for size in FIT_SIZES:
                run("grid", size, D_max // div, seed, lr_of[size])
    res["complete"] = True
    save()
    print(f"done: {res['seconds'] / 3600:.2f} h of training, "
          f"{res['cpu_seconds'] / 3600:.2f} CPU-hours", flush=True)


if __name__ == "__main__":
    main()
