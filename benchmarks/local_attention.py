"""Chapter 15: what GPT-3's locally banded attention costs the character model.

Run from the repository root, on one thread (about 10 CPU-minutes; it resumes where
it stopped):

    OMP_NUM_THREADS=1 nohup python benchmarks/local_attention.py > local.log 2>&1 &

A 4-layer character GPT (d_model 32, 4 heads, context 128) on tiny Shakespeare
(chapter 12's split), trained three ways from the same seeds (same initial weights,
same batches), seeds 0-4:

- dense: every layer causal (chapter 12's GPT);
- alternating: layers 1 and 3 dense, 2 and 4 banded to the last ``window`` keys
  (GPT-3's pattern);
- all local: every layer banded.

Writes ``d2lmini/results/local_attention.json``: held-out loss of every run, the
settings, the machine, the torch version and the seconds.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import d2lmini as d2l  # noqa: E402
from d2lmini import gpt3, scaling  # noqa: E402
from d2lmini.checkpoints import machine  # noqa: E402
from d2lmini.io import RESULTS, save_results  # noqa: E402

SHAPE = (4, 32, 4)


def variants(window: int) -> dict:
    return {"dense": [None] * 4, "alternating": gpt3.alternating_windows(4, window),
            "all local": [window] * 4}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", default="local_attention")
    ap.add_argument("--tokens", type=int, default=400_000)
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--window", type=int, default=8)
    ap.add_argument("--lr", type=float, default=0.023)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    settings = {"shape": list(SHAPE), "tokens": args.tokens, "context": args.context,
                "window": args.window, "lr": args.lr, "seeds": args.seeds,
                "batch_size": 16, "threads": args.threads,
                "variants": variants(args.window),
                "model": "d2lmini.gpt3.SparseGPT: d2l.GPT, chapter 12's defaults, "
                         "d_ff = 4 d_model",
                "split": "tiny Shakespeare, first 90 % train, last 10 % held out"}
    path = os.path.join(RESULTS, f"{args.name}.json")
    res = d2l.load_results(args.name) if os.path.exists(path) else {}
    if res.get("settings") != settings:
        res = {"settings": settings, "runs": []}
    res.update(machine=machine(), torch=str(torch.__version__))
    data = scaling.char_data()
    done = {(r["variant"], r["seed"]) for r in res["runs"]}
    for seed in range(args.seeds):
        for name, windows in variants(args.window).items():
            if (name, seed) in done:
                continue
            c0 = time.process_time()
            r = scaling.train_lm(SHAPE, args.tokens, seed, args.lr,
                                 context=args.context, batch_size=16, data=data,
                                 gpt_class=gpt3.SparseGPT,
                                 options={"windows": windows})
            r.pop("model")
            r.update(variant=name, cpu_seconds=round(time.process_time() - c0, 2),
                     heldout=round(r["heldout"], 5))
            res["runs"].append(r)
            res["seconds"] = round(sum(x["seconds"] for x in res["runs"]), 1)
            res["cpu_seconds"] = round(sum(x["cpu_seconds"] for x in res["runs"]), 1)
            save_results(args.name, res)
            print(f"{name:12} seed {seed}: held-out {r['heldout']:.4f} "
                  f"({r['seconds']:.0f} s)", flush=True)
    res["complete"] = True
    save_results(args.name, res)


if __name__ == "__main__":
    main()
