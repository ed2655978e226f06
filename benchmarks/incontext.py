"""Chapter 15: learning from the prompt, over seeds: induction heads and few-shot
learning of functions never seen in training.

Run from the repository root, on one thread (about 5 CPU-minutes; it resumes):

    OMP_NUM_THREADS=1 nohup python benchmarks/incontext.py > incontext.log 2>&1 &

1. induction: a 2-layer attention-only model (2 heads in layer 1, 1 in layer 2) on
   repeated random sequences, seeds 0-4: the training log (in-context score, best
   previous-token and induction scores every 20 steps), every head's scores at the
   end, and the early / late losses with each head zeroed in turn; the same with 2
   heads in layer 2 (``induction_2x2``), to see what redundancy does;
2. few-shot: a 2-layer GPT trained on prompts x1 f(x1) ... x9 f(x9) of random
   permutations f of 8 letters, seeds 0-4, and its accuracy after k examples on
   2,000 permutations held out of training, with the accuracy an ideal learner that
   knows the class but not f reaches on the same prompts.

Writes ``d2lmini/results/incontext.json`` with the settings, the machine, the torch
version and the seconds, and the few-shot model of seed 0 to
``d2lmini/results/few_shot_gpt.pt`` (``d2l.load`` reads it).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import d2lmini as d2l  # noqa: E402
from d2lmini import incontext as ic  # noqa: E402
from d2lmini.checkpoints import machine  # noqa: E402
from d2lmini.io import RESULTS, save_results  # noqa: E402

INDUCTION = dict(steps=600, length=32, vocab_size=32, d_model=32, lr=1e-2,
                 batch_size=32, every=20)
FEW_SHOT = dict(steps=1500, m=8, pairs=9, d_model=64, num_heads=4, num_layers=2,
                batch_size=64, lr=3e-3, test_functions=2000)


def induction_run(seed: int, heads) -> dict:
    c0 = time.process_time()
    r = ic.train_induction(seed=seed, num_heads=heads, **INDUCTION)
    model, held = r["model"], r["eval"]
    weights = model.attention(held[:32])
    scores = [[t.tolist() for t in ic.head_scores(w, held[:32])] for w in weights]
    early, late = ic.in_context_losses(model, held)
    ablations = []
    for layer, h in enumerate(model.heads):
        for head in range(h):
            model.head_mask.fill_(1.0)
            model.head_mask[layer, head] = 0.0
            e, l_ = ic.in_context_losses(model, held)
            ablations.append({"layer": layer, "head": head, "early": e, "late": l_})
    model.head_mask.fill_(1.0)
    return {"seed": seed, "heads": list(heads), "log": r["log"], "scores": scores,
            "early": early, "late": late, "ablations": ablations,
            "cpu_seconds": round(time.process_time() - c0, 2)}


def few_shot_run(seed: int) -> dict:
    c0 = time.process_time()
    r = ic.train_few_shot(seed=seed, **FEW_SHOT)
    tokens, xs, ys = r["test"]
    if seed == 0:          # chapter 15 re-measures this model on fresh prompts
        d2l.save(os.path.join(RESULTS, "few_shot_gpt.pt"), r["model"])
    acc = ic.few_shot_accuracy(r["model"], tokens, ys, r["m"], xs)
    return {"seed": seed, "accuracy": acc["all"].tolist(),
            "seen": acc["seen"].tolist(), "unseen": acc["unseen"].tolist(),
            "ideal": ic.ideal_accuracy(xs, ys, r["m"]).tolist(),
            "cpu_seconds": round(time.process_time() - c0, 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", default="incontext")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    settings = {"induction": INDUCTION, "induction_heads": [2, 1],
                "few_shot": FEW_SHOT, "seeds": args.seeds}
    path = os.path.join(RESULTS, f"{args.name}.json")
    res = d2l.load_results(args.name) if os.path.exists(path) else {}
    old = res.get("settings", {})
    for key, part in (("induction", "induction"), ("induction_2x2", "induction"),
                      ("few_shot", "few_shot")):     # keep what the settings still fit
        if old.get(part) != settings[part] or old.get("seeds") != args.seeds:
            res[key] = []
    res["settings"] = settings
    res.update(machine=machine(), torch=str(torch.__version__))

    def save():
        res["cpu_seconds"] = round(sum(r["cpu_seconds"] for k in
                                       ("induction", "induction_2x2", "few_shot")
                                       for r in res[k]), 1)
        save_results(args.name, res)

    t0 = time.time()
    for key, job in (("induction", lambda s: induction_run(s, (2, 1))),
                     ("few_shot", few_shot_run),
                     ("induction_2x2", lambda s: induction_run(s, (2, 2)))):
        for seed in range(args.seeds):
            if any(r["seed"] == seed for r in res[key]):
                continue
            res[key].append(job(seed))
            save()
            print(f"{key} seed {seed}: {res[key][-1]['cpu_seconds']:.0f} CPU-s "
                  f"({time.time() - t0:.0f} s)", flush=True)
    res["complete"] = True
    save()


if __name__ == "__main__":
    main()
