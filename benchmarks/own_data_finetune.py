"""Fine-tuning the book's Shakespeare GPT on your own text against training the same
model from scratch: the held-out loss after 20 steps, paired over 5 seeds (the appendix
"Use d2lmini on your own data" loads these results and re-runs seed 0 live).

    OMP_NUM_THREADS=1 python benchmarks/own_data_finetune.py   # about 20 CPU-seconds
    ... --to-stop        # also train every run to its early-stopping point (~8 CPU-min)
    ... --to-stop --cache runs.jsonl   # keep each finished run; a rerun skips them
    ... --to-stop --cache runs.jsonl --seeds 3 4   # some seeds (two processes at once)

The text and its split are the appendix's: the first 30,000 characters of the book's
prose (``d2l.load_corpus("book.txt")``), the last tenth held out, characters the
Shakespeare model cannot read dropped; windows of 64 characters, batches of 8
(``d2l.random_batches``, the seed fixing the batches and the from-scratch start),
AdamW (``lr`` 1e-3 fine-tuned, 3e-3 from scratch, weight decay 0.01), warm-up of 5
steps and cosine decay to 0.1 over the 20 steps.  With ``--to-stop`` each run also
trains again from its start in rounds of ``ROUND`` steps, measures the held-out loss
after each and stops when ``PATIENCE`` rounds in a row have not improved it by
``MIN_GAIN``; it reports the best held-out loss and its step.  Writes
``d2lmini/results/own_data_finetune.json``.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import d2lmini as d2l  # noqa: E402
from d2lmini.checkpoints import machine  # noqa: E402

SEEDS = range(5)
LIVE_STEPS = 20                      # the appendix's live budget
ROUND, PATIENCE, MIN_GAIN, MAX_STEPS = 25, 3, 0.005, 3000
LR = {"fine-tuned": 1e-3, "from scratch": 3e-3}


def data():
    text = d2l.load_corpus("book.txt")[:30_000]
    train_text, held_text = d2l.split_heldout(text, 0.1)
    shakespeare, sv = d2l.load_pretrained("shakespeare")
    known = set(sv.chars)
    keep = lambda s: "".join(c for c in s if c in known)  # noqa: E731
    fx, fy = d2l.lm_windows(sv.encode(keep(train_text)), block_size=64, stride=16)
    hx, hy = d2l.lm_windows(sv.encode(keep(held_text)), block_size=64)
    return shakespeare, fx, fy, hx, hy


@torch.no_grad()
def mean_loss(model, x, y):
    was = model.training
    model.eval()
    loss = d2l.sequence_loss(model(x).float(), y).item()
    model.train(was)
    return loss


def start(shakespeare, seed, variant):
    """The seeded starting model and its optimizer (as the appendix's `tune`)."""
    torch.manual_seed(seed)
    model = (copy.deepcopy(shakespeare) if variant == "fine-tuned"
             else d2l.GPT(**shakespeare.config))
    return model, torch.optim.AdamW(model.parameters(), lr=LR[variant],
                                    weight_decay=0.01)


def run(shakespeare, fx, fy, hx, hy, seed, variant, to_stop):
    """-> {"live_loss": held-out loss after LIVE_STEPS, and with to_stop
    "best_loss", "best_step", "steps_run"}."""
    model, opt = start(shakespeare, seed, variant)
    d2l.train(model, d2l.sequence_loss, opt,
              lambda: d2l.random_batches(8, fx, fy, seed=seed), max_steps=LIVE_STEPS,
              scheduler=d2l.warmup_cosine_schedule(5, LIVE_STEPS, final=0.1),
              progress=False)
    row = {"live_loss": mean_loss(model, hx, hy)}
    if not to_stop:
        return row
    model, opt = start(shakespeare, seed, variant)   # from the start again
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, d2l.warmup_cosine_schedule(5, MAX_STEPS, final=0.1))
    best, best_step, waited, done = mean_loss(model, hx, hy), 0, 0, 0
    while done < MAX_STEPS and waited < PATIENCE:
        d2l.train(model, d2l.sequence_loss, opt,
                  lambda: d2l.random_batches(8, fx, fy, seed=seed, start=done),
                  max_steps=ROUND, scheduler=sched, progress=False)
        done += ROUND
        loss = mean_loss(model, hx, hy)
        if loss < best - MIN_GAIN:
            best, best_step, waited = loss, done, 0
        else:
            waited += 1
    return dict(row, best_loss=best, best_step=best_step, steps_run=done)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--to-stop", action="store_true",
                        help="also train each run to its early-stopping point")
    parser.add_argument("--cache", help="a .jsonl file keeping each finished run")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS),
                        help="run only these seeds (the results file needs all)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    shakespeare, fx, fy, hx, hy = data()
    cached = {}
    if args.cache and os.path.exists(args.cache):
        with open(args.cache) as f:
            for line in f:
                r = json.loads(line)
                if r.get("to_stop") == args.to_stop:
                    cached[(r["seed"], r["variant"])] = r
    rows = {v: [] for v in LR}
    for seed in args.seeds:
        for variant in LR:
            if (seed, variant) in cached:
                row = {k: v for k, v in cached[(seed, variant)].items()
                       if k not in ("variant", "to_stop")}
            else:
                wall, cpu = time.perf_counter(), time.process_time()
                row = dict(seed=seed, **run(shakespeare, fx, fy, hx, hy, seed,
                                            variant, args.to_stop))
                row.update(seconds=round(time.perf_counter() - wall, 1),
                           cpu_seconds=round(time.process_time() - cpu, 1))
                if args.cache:
                    with open(args.cache, "a") as f:
                        f.write(json.dumps(dict(row, variant=variant,
                                                to_stop=args.to_stop)) + "\n")
            rows[variant].append(row)
            print(f"seed {seed} {variant:>12}: " + ", ".join(
                f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                for k, v in row.items() if k != "seed"), flush=True)
    if sorted(args.seeds) != list(SEEDS):
        print("seeds", args.seeds, "done; rerun with all seeds to write the results")
        return
    runs = [r for v in rows.values() for r in v]
    path = d2l.io.save_results("own_data_finetune", {
        "what": "held-out loss (nats per character) of the Shakespeare GPT fine-tuned "
                "on the book's prose vs the same model from scratch"
                + (", also each trained to its early-stopping point"
                   if args.to_stop else ""),
        "settings": {"text": "book.txt[:30000], last 10 % held out, unknown "
                             "characters dropped", "block_size": 64, "batch_size": 8,
                     "lr": LR, "weight_decay": 0.01, "live_steps": LIVE_STEPS,
                     "live_schedule": "warm-up 5 steps, cosine to 0.1 at 20 steps",
                     "to_stop": args.to_stop, "seeds": list(SEEDS)}
        | ({"round": ROUND, "patience": PATIENCE, "min_gain": MIN_GAIN,
            "max_steps": MAX_STEPS,
            "schedule_to_stop": "warm-up 5 steps, cosine to 0.1 at max_steps"}
           if args.to_stop else {}),
        "runs": rows, "machine": machine(), "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        # summed over the runs (which may come from a --cache of earlier calls)
        "seconds": round(sum(r["seconds"] for r in runs), 1),
        "cpu_seconds": round(sum(r["cpu_seconds"] for r in runs), 1)})
    print("wrote", path)


if __name__ == "__main__":
    main()
