"""The long runs behind chapters 9 and 10: every variant trained until the full model
writes the held-out dates right, five seeds each, paired (same seed: same initial
weights where the shapes agree, same batches).

    OMP_NUM_THREADS=1 python benchmarks/ablations.py                # everything
    OMP_NUM_THREADS=1 python benchmarks/ablations.py --only ch9 --workers 2

Writes ``d2lmini/results/ablations_ch9.json`` and ``ablations_ch10.json`` (after each
variant, so a stopped run keeps what it finished): per variant, per seed, the held-out
metrics (``d2lmini.ablation.evaluate``), the held-out learning curve, the training loss
(means of 10 steps) and the analyses the chapters read; plus the machine, the versions,
the exact settings and the seconds each run took.  The chapters load them with
``d2l.load_results`` and retrain a slice live.  On a 2-core laptop CPU with two
workers the whole script takes a few hours.
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
import time

import torch

import d2lmini as d2l
from d2lmini import experiments, seqtasks
from d2lmini.checkpoints import machine
from d2lmini.io import save_results

SEEDS = list(range(5))
# The chapters' recipe: small model, trained until the full model solves the task.
RECIPE = dict(steps=1000, batch_size=64, lr=5e-3, warmup=100, smoothing=0.0,
              d_model=32, num_heads=4, num_layers=1, d_ff=128, max_len=64,
              eval_at=(25, 50, 100, 200, 300, 400, 600, 800, 1000))
SMALL = dict(data=dict(n_train=500), train_metrics=True)

CH9 = {
    "full model": {},
    "no FFN": dict(d_ff=0),
    "linear FFN": dict(activation="identity"),
    "GELU": dict(activation="gelu"),
    "ReLU+dropout": dict(ffn_dropout=0.1),
    "tanh": dict(activation="tanh"),
    "sigmoid": dict(activation="sigmoid"),
    "concat PE": dict(pos_encoding="concat"),
    "growing PE": dict(pe_growth=True),
    "no sqrt(d)": dict(scale_embedding=False),
    "no sqrt(d), init x sqrt(d)": dict(scale_embedding=False, embed_init="scaled"),
    "no sqrt(d), init N(0,1)": dict(scale_embedding=False, embed_init="normal"),
    "smoothing 0.1": dict(smoothing=0.1),
    "500 dates": dict(SMALL),
    "500 dates, smoothing 0.1": dict(SMALL, smoothing=0.1),
}
CH9_ANALYSES = ("fields", "formats", "reliability")

LENGTHS = dict(data=dict(lengths=(0, 32)), max_len=80,
               test_lengths=[(33, 40), (41, 48), (49, 64)])
DEEP = dict(num_layers=6, analyses=("lesion",))
CH10 = {
    "1 head": dict(num_heads=1),
    "2 heads": dict(num_heads=2),
    "8 heads": dict(num_heads=8),
    "16 heads": dict(num_heads=16),
    "sinusoidal (lengths)": dict(LENGTHS),
    "learned (lengths)": dict(LENGTHS, pos_encoding="learned"),
    "ALiBi (lengths)": dict(LENGTHS, relative="alibi"),
    "RoPE (lengths)": dict(LENGTHS, relative="rope"),
    "6 layers, post, warm-up": dict(DEEP),
    "6 layers, pre, warm-up": dict(DEEP, norm_first=True),
    "6 layers, post, no warm-up": dict(DEEP, warmup=0, steps=500,
                                       eval_at=(25, 50, 100, 200, 300, 400, 500)),
    "6 layers, pre, no warm-up": dict(DEEP, norm_first=True, warmup=0, steps=500,
                                      eval_at=(25, 50, 100, 200, 300, 400, 500)),
}
ATTENTION_MAPS = ("full model",)          # seed 0: one source's weights
DEPTH = dict(steps=3000, lrs=(1e-3, 3e-4), depths=[(2, False), (16, False), (16, True)])


def date_job(name: str, seed: int, change: dict, analyses=(), models: str = "",
             smoke: bool = False) -> dict:
    """One run of the date task, as JSON-ready numbers (the model saved to ``models``
    when given).  ``smoke``: 20 steps, to try the script."""
    kw = dict(RECIPE, seed=seed)
    kw.update(change)
    if smoke:
        kw.update(steps=20, warmup=min(kw["warmup"], 5), eval_at=(10, 20))
    kw["analyses"] = tuple(kw.get("analyses", ())) + tuple(analyses)
    cpu = time.process_time()
    r = experiments.date_run(keep_model=True, **kw)
    model = r.pop("model")
    enc = model.encoder
    r["token_norm"] = (enc.embedding.weight[4:].norm(dim=1).mean() * enc.scale).item()
    if name in ATTENTION_MAPS and seed == 0:
        d = experiments.dates(**kw.get("data", {}))
        model.eval()
        with torch.no_grad():
            model(d.test[0][:1], d.test[1][:1])
        r["attention"] = {"source": d.sources["test"][0],
                          "weights": enc.blocks[0].self_attn.attention_weights[0]
                          .round(decimals=4).tolist()}
    losses = torch.tensor(r.pop("step_loss"))
    n = len(losses) // 10 * 10
    r["step_loss_10"] = losses[:n].view(-1, 10).mean(1).tolist()
    if models:
        path = os.path.join(models, name.replace(" ", "_").replace("/", "_"))
        os.makedirs(path, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(path, f"seed{seed}.pt"))
    r["cpu_seconds"] = time.process_time() - cpu
    return r


_TRAINING = {"data", "train_metrics", "smoothing", "steps", "warmup", "lr", "batch_size",
             "eval_at", "analyses", "test_lengths", "seed", "device"}


def rebuild(change: dict, state_dict: dict):
    """The model of one run, from its variant's settings and its saved weights."""
    from d2lmini.transformer import Transformer
    kw = dict(RECIPE)
    kw.update(change)
    model_kw = {k: v for k, v in kw.items() if k not in _TRAINING}
    d = experiments.dates(**kw.get("data", {}))
    build = (experiments.build_transformer
             if any(k in model_kw for k in experiments._VARIANT_KEYS) else Transformer)
    model = build(len(d.src_vocab), len(d.tgt_vocab), dropout=0.0, **model_kw)
    model.load_state_dict(state_dict)
    return model.eval(), d


def annotate(name: str, models: str) -> None:
    """Add the per-format analysis to the runs of ``name`` (a results file) that lack
    it, from the models a run of this script saved in ``models``: the same numbers the
    run would have computed (``experiments.date_run(analyses=("formats",))``)."""
    from d2lmini import ablation
    from d2lmini.io import load_results
    data = load_results(name)
    for variant, rs in data["runs"].items():
        for seed, r in zip(data["seeds"], rs):
            if "formats" in r:
                continue
            path = os.path.join(models, variant.replace(" ", "_").replace("/", "_"),
                                f"seed{seed}.pt")
            model, d = rebuild(data["variants"][variant], torch.load(path))
            r["formats"] = ablation.by_format(model, *d.test, d.sources["test"],
                                              [t for _, t in d.pairs["test"]])
            assert abs(ablation.evaluate(model, *d.test)["loss"] - r["loss"]) < 1e-5
    save_results(name, _plain(data))


def depth_job(depth: int, residual: bool, seed: int, steps: int, lr: float) -> dict:
    cpu = time.process_time()
    r = seqtasks.depth_run(depth=depth, residual=residual, seed=seed, steps=steps,
                           lr=lr)
    r["cpu_seconds"] = time.process_time() - cpu
    losses = torch.tensor(r.pop("step_loss"))
    r["step_loss_10"] = losses[: len(losses) // 10 * 10].view(-1, 10).mean(1).tolist()
    return r


def _plain(x):
    """JSON: tuples to lists, NaN to None."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def meta(variants: dict, seconds: dict, started: float) -> dict:
    return {"machine": machine(), "torch": torch.__version__,
            "python": platform.python_version(), "d2lmini": d2l.__version__
            if hasattr(d2l, "__version__") else "", "threads_per_run": 1,
            "command": "OMP_NUM_THREADS=1 python " + " ".join(sys.argv),
            "date": datetime.date.today().isoformat(),
            "seeds": SEEDS, "recipe": RECIPE, "variants": variants,
            "seconds": seconds, "wall_seconds": time.time() - started}


def run_dates(out: str, variants: dict, runner, analyses, models, extra=None,
              smoke=False):
    started = time.time()
    for name, change in variants.items():
        runner.submit(name, date_job, [dict(name=name, seed=s, change=change,
                                            analyses=analyses, models=models,
                                            smoke=smoke)
                                       for s in SEEDS])
    results, seconds = {}, {}
    for name in variants:
        results[name] = runner[name]
        seconds[name] = runner.seconds[name]
        data = dict(meta(variants, seconds, started), runs=results)
        if extra:
            data.update(extra)
        save_results(out, _plain(data))
        print(f"{out}: {name:28} loss " + " ".join(f"{r['loss']:.4f}"
                                                   for r in results[name])
              + f"  ({sum(seconds[name]):.0f} s)", flush=True)
    return results, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", choices=["ch9", "ch10"], default=None)
    ap.add_argument("--models", default="",
                    help="folder to save every trained model in (default: none)")
    ap.add_argument("--names", default=None,
                    help="train only these variants ('|' between names)")
    ap.add_argument("--out", default=None,
                    help="results name (default ablations_ch9 / ablations_ch10)")
    ap.add_argument("--no-depth", action="store_true",
                    help="chapter 10 without the residual-depth stacks")
    ap.add_argument("--annotate", default=None,
                    help="add the per-format analysis to this results file from the "
                         "models saved in --models")
    ap.add_argument("--smoke", action="store_true",
                    help="20 steps per run, 2 seeds, results named *_smoke")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.annotate:
        annotate(args.annotate, args.models)
        return
    suffix = "_smoke" if args.smoke else ""
    if args.names:
        keep = args.names.split("|")
        unknown = set(keep) - set(CH9) - set(CH10)
        if unknown:
            raise SystemExit(f"unknown variants {sorted(unknown)}")
        for table in (CH9, CH10):
            for name in list(table):
                if name not in keep:
                    del table[name]
    if args.smoke:
        SEEDS[:] = [0, 1]
        DEPTH["steps"] = 20
    runner = experiments.Runner(workers=args.workers, device="cpu")
    if args.only in (None, "ch9"):
        run_dates((args.out or "ablations_ch9") + suffix, CH9, runner, CH9_ANALYSES,
                  args.models, smoke=args.smoke)
    if args.only in (None, "ch10") and args.no_depth:
        run_dates(args.out or "ablations_ch10", CH10, runner, (), args.models,
                  smoke=args.smoke)
    elif args.only in (None, "ch10"):
        started = time.time()
        for lr in DEPTH["lrs"]:
            for depth, residual in DEPTH["depths"]:
                runner.submit(f"depth {depth} {residual} {lr}", depth_job,
                              [dict(depth=depth, residual=residual, seed=s,
                                    steps=DEPTH["steps"], lr=lr) for s in SEEDS])
        depth = {}
        for lr in DEPTH["lrs"]:
            for d_, residual in DEPTH["depths"]:
                key = f"depth {d_}, {'residual' if residual else 'plain'}, lr {lr:g}"
                depth[key] = runner[f"depth {d_} {residual} {lr}"]
        print(f"depth runs: {time.time() - started:.0f} s", flush=True)
        run_dates("ablations_ch10" + suffix, CH10, runner, (), args.models,
                  extra=dict(depth=depth, depth_settings=DEPTH), smoke=args.smoke)
    runner.close()


if __name__ == "__main__":
    main()
