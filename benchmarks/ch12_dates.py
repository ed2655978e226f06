"""Chapter 12's date comparison over five seeds, with the variants that test why the
decoder-only model writes malformed dates; ships ``d2lmini/results/ch12_dates.json``,
which the chapter reads with ``d2l.load_results("ch12_dates")`` (its seed 0 is the
chapter's own run).

    python benchmarks/ch12_dates.py --workers 2

Variants (``seqtasks.dates_decoder_run``): chapter 8's encoder-decoder; the
decoder-only model; the same with the answer's positions counted from the "="
(positions from =, the answer always sits at the same positions); and a prefix LM
(the prompt read both ways).  500 steps of 32 dates each, every variant at every seed
from the same batches (and the three decoder-only ones from the same weights).
Every run uses one CPU thread; ``--workers`` runs that many at a time.
"""
from __future__ import annotations

import argparse
import time

import torch

from d2lmini import experiments, seqtasks
from d2lmini.checkpoints import machine
from d2lmini.io import save_results

SEEDS = list(range(5))
SETTINGS = dict(steps=500, batch_size=32, lr=5e-3, warmup=50, smoothing=0.1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.time()
    runner = experiments.Runner(workers=args.workers)
    for v in seqtasks.DATE_VARIANTS:
        runner.submit(v, seqtasks.dates_decoder_run,
                      [dict(SETTINGS, variant=v, seed=s) for s in SEEDS])
    out = {"name": "ch12_dates", "machine": machine(), "torch": torch.__version__,
           "threads per run": 1, "seeds": SEEDS, "settings": SETTINGS,
           "runs": {v: runner[v] for v in seqtasks.DATE_VARIANTS}}
    runner.close()
    out["seconds"] = round(time.time() - t0)
    print("wrote", save_results("ch12_dates", out), flush=True)


if __name__ == "__main__":
    main()
