"""Chapter 11's long experiments: they train more models, for longer, than a chapter
can in a minute, and ship what they measured in ``d2lmini/results/``; the chapter
reads it with ``d2l.load_results(name)`` and re-runs one slice live.

    python benchmarks/ch11_experiments.py priors     # -> results/ch11_priors.json
    python benchmarks/ch11_experiments.py recall     # -> results/ch11_recall.json
    python benchmarks/ch11_experiments.py seq2seq    # -> results/ch11_seq2seq.json
    python benchmarks/ch11_experiments.py all --workers 2

* priors: the motif task ("does the sequence hold the bigram 0 1?") for a
  Transformer, a Transformer with local attention, a GRU, a CNN and the Transformer
  whose token embeddings start sqrt(d) times larger than its positions (the version
  an earlier edition of the chapter trained), on 50 / 200 / 1,000 / 5,000 training
  sequences, five seeds each, each trained until its validation accuracy stops
  improving (``seqtasks.motif_run`` with ``patience``);
* recall: the first token after 1..48 distractors, 1,500 steps instead of 300, for
  a GRU and three attention models (``seqtasks.recall_positions_run``), with the
  trained GRU's gradient and update gate by distance;
* seq2seq: chapter 8's date task and budget (1,200 steps of 64) for a GRU
  encoder-decoder with additive attention and for chapter 8's Transformer, five
  seeds (``seqtasks.dates_seq2seq_run``).

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
PRIORS = dict(sizes=[50, 200, 1000, 5000], steps=3000, patience=600, eval_every=100,
              batch_size=32, lr=3e-3)
GROUPS = {k: dict(kind=k) for k in seqtasks.MotifClassifier.KINDS}
GROUPS["transformer, tokens x sqrt(d)"] = dict(kind="transformer", embed_std=1.0)
RECALL = dict(steps=1500, max_distance=48, eval_distances=[1, 8, 24, 48],
              marked=False)
SEQ2SEQ = dict(steps=1200, batch_size=64, lr=5e-3, warmup=50, smoothing=0.1,
               evals=[50, 100, 200, 400, 800], embed_size=64, num_hiddens=96)


def _header(name: str, settings: dict) -> dict:
    return {"name": name, "machine": machine(), "torch": torch.__version__,
            "threads per run": 1, "seeds": SEEDS, "settings": settings}


def priors(runner) -> None:
    t0 = time.time()
    for name, kw in GROUPS.items():
        for n in PRIORS["sizes"]:
            jobs = [dict(kw, n_train=n, seed=s, steps=PRIORS["steps"],
                         patience=PRIORS["patience"], eval_every=PRIORS["eval_every"],
                         batch_size=PRIORS["batch_size"], lr=PRIORS["lr"])
                    for s in SEEDS]
            runner.submit(f"{name}|{n}", seqtasks.motif_run, jobs)
    out = _header("ch11_priors", dict(PRIORS, groups=GROUPS))
    out["runs"] = {key: runner[key] for key in runner.names() if "|" in key}
    xt, yt = seqtasks.motif_batch(2000, generator=torch.Generator().manual_seed(99_999))
    out["baselines"] = seqtasks.order_blind_accuracy(xt, yt)
    out["seconds"] = round(time.time() - t0)
    print("wrote", save_results("ch11_priors", out), flush=True)


def recall(runner) -> None:
    t0 = time.time()
    for m in seqtasks.RECALL_MODELS:
        runner.submit(f"recall {m}", seqtasks.recall_positions_run,
                      [dict(RECALL, model=m, seed=s, profile=m == "gru")
                       for s in SEEDS])
    out = _header("ch11_recall", RECALL)
    out["runs"] = {m: runner[f"recall {m}"] for m in seqtasks.RECALL_MODELS}
    out["seconds"] = round(time.time() - t0)
    print("wrote", save_results("ch11_recall", out), flush=True)


def seq2seq(runner) -> None:
    t0 = time.time()
    for m in ("gru", "transformer"):
        runner.submit(f"dates {m}", seqtasks.dates_seq2seq_run,
                      [dict(SEQ2SEQ, model=m, seed=s) for s in SEEDS])
    out = _header("ch11_seq2seq", SEQ2SEQ)
    out["probe"] = list(seqtasks.PROBE)
    out["runs"] = {m: runner[f"dates {m}"] for m in ("gru", "transformer")}
    out["seconds"] = round(time.time() - t0)
    print("wrote", save_results("ch11_seq2seq", out), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["priors", "recall", "seq2seq", "all"])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    runner = experiments.Runner(workers=args.workers)
    for what in (["priors", "recall", "seq2seq"] if args.what == "all"
                 else [args.what]):
        globals()[what](runner)
    runner.close()


if __name__ == "__main__":
    main()
