"""Chapter 16's preference-tuning experiment: DPO against more SFT on the chosen
answers alone, from the instruction-tuned character GPT, over seeds.

The behaviour: asked "Finish the line in three words: <two words of a line>", the
rater (``align.LengthJudge(3)``) prefers the answer whose word count is closer to
three.  Each seed samples two answers from the SFT model for 320 training prompts
and keeps the pairs the rater tells apart; both arms tune a copy of the SFT model on
the same pairs, in the same order, for the same steps: DPO (beta 0.1, reference =
the SFT model) and SFT on the chosen answers.  Every 25 steps both are measured on
200 held-out prompts: one sampled answer each (temperature 1), the win rate against
the SFT model's sampled answers to the same prompts, and KL(tuned || SFT) per answer
(the mean of log pi - log ref over the samples).

    python benchmarks/ch16_dpo.py --pilot            # learning rates, seed 100, valid
    python benchmarks/ch16_dpo.py --pilot --lrs 1e-3 --methods sft   # a wider grid
    python benchmarks/ch16_dpo.py --seeds 0-4        # the experiment (--methods: one arm)
    python benchmarks/ch16_dpo.py --collect          # -> d2lmini/results/ch16_dpo.json

One CPU thread.
"""
from __future__ import annotations

import argparse
import copy
import glob
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import d2lmini as d2l  # noqa: E402
from d2lmini import align  # noqa: E402
from d2lmini.checkpoints import machine, split_text  # noqa: E402

PHRASING = "Finish the line in three words: {w}"
WORDS, N_PAIR_PROMPTS, N_EVAL, STEPS, EVAL_EVERY, BATCH = 3, 320, 200, 100, 25, 16
BETA = 0.1
METHODS = ("dpo", "sft")
PILOT_LRS = (3e-5, 1e-4, 3e-4)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "d2lmini")
RUNS = os.environ.get("CH16_RUNS", "/tmp/ch16_dpo_runs")


def prompts(tasks, split: str, n: int, seed: int) -> list[str]:
    g = torch.Generator().manual_seed(seed)
    lines = tasks.lines[split]
    idx = torch.randperm(len(lines), generator=g)[:n].tolist()
    return [tasks.make("continue", PHRASING, lines[i]).instruction for i in idx]


def measure(policy, sft, vocab, judge, instructions, sft_answers, seed) -> dict:
    kl, got = align.sampled_kl(policy, sft, vocab, instructions,
                               torch.Generator().manual_seed(seed))
    ended = [a for a in got if a is not None]
    return {"win_rate": align.win_rate(got, sft_answers, judge), "kl": kl,
            "mean_words": sum(align.word_count(a) for a in ended) / max(1, len(ended)),
            "exactly": sum(align.word_count(a) == WORDS for a in got) / len(got),
            "ended": len(ended) / len(got)}


def arm(method, lr, sft, vocab, judge, pairs, instructions, sft_answers, seed) -> dict:
    policy = copy.deepcopy(sft)
    evals = lambda: measure(policy, sft, vocab, judge, instructions, sft_answers,
                            3000 + seed)
    log = align.preference_tune(policy, sft, vocab, pairs, STEPS, lr, BETA, BATCH,
                                seed, method, eval_every=EVAL_EVERY, eval_fn=evals)
    return log


def one_seed(seed: int, tasks, sft, vocab, lrs: dict, split="heldout") -> dict:
    judge = align.LengthJudge(WORDS)
    train_prompts = prompts(tasks, "train", N_PAIR_PROMPTS, seed)
    pairs = align.preference_pairs(sft, vocab, train_prompts,
                                   torch.Generator().manual_seed(seed), judge)
    instructions = prompts(tasks, split, N_EVAL, 1 if split == "heldout" else 2)
    sft_answers = align.answers(sft, vocab, instructions, 40, 1.0,
                                torch.Generator().manual_seed(1000 + seed))
    res = {"seed": seed, "pairs": len(pairs), "prompts": len(train_prompts),
           "pairs_all": [list(p) for p in pairs] if seed == 0 else None,
           "examples": [list(p) for p in pairs[:8]],
           "reference": measure(sft, sft, vocab, judge, instructions, sft_answers,
                                3000 + seed)}
    for method, lr in lrs.items():
        log = arm(method, lr, sft, vocab, judge, pairs, instructions, sft_answers, seed)
        res[method] = {"lr": lr, "loss": [round(x, 4) for x in log["loss"]],
                       "margin": [round(x, 4) for x in log["margin"]],
                       "evals": log["evals"], "seconds": log["seconds"]}
        print(seed, method, lr, json.dumps(log["evals"][-1]), flush=True)
    return res


def chosen_lrs(methods=METHODS) -> dict:
    """Each method's learning rate: the pilot's best final win rate on valid prompts
    (a tie goes to the smaller KL), from a grid whose ends it does not touch."""
    pilot = [json.load(open(f)) for f in sorted(glob.glob(f"{RUNS}/pilot_*.json"))]
    chosen = {}
    for m in methods:
        tried = [r[m] for r in pilot if m in r]
        if len(tried) < len(PILOT_LRS):
            raise SystemExit("run --pilot first (the learning rates)")
        best = max(tried, key=lambda a: (a["evals"][-1]["win_rate"], -a["evals"][-1]["kl"]))
        if best["lr"] in (min(a["lr"] for a in tried), max(a["lr"] for a in tried)):
            raise SystemExit(f"{m}: the best learning rate {best['lr']:g} is at the "
                             f"grid's edge; run --pilot --lrs with a wider grid")
        chosen[m] = best["lr"]
    return chosen


def collect() -> None:
    """The per-seed, per-method files -> ``d2lmini/results/ch16_dpo.json``."""
    runs = []
    for path in sorted(glob.glob(f"{RUNS}/seed_*_dpo.json")):
        res = json.load(open(path))
        res.update({m: json.load(open(path.replace("_dpo.", f"_{m}.")))[m]
                    for m in METHODS})
        runs.append(res)
    pilot = [json.load(open(f)) for f in sorted(glob.glob(f"{RUNS}/pilot_*.json"))]
    data = {"settings": {"phrasing": PHRASING, "words": WORDS, "beta": BETA,
                         "pair_prompts": N_PAIR_PROMPTS, "eval_prompts": N_EVAL,
                         "steps": STEPS, "eval_every": EVAL_EVERY,
                         "batch_pairs": BATCH, "lr": chosen_lrs(),
                         "pilot_lrs": sorted({a["lr"] for r in pilot for m in METHODS
                                              if m in r for a in [r[m]]}),
                         "temperature": 1.0},
            "machine": machine(), "torch": torch.__version__, "threads": 1,
            "seconds": sum(r[m]["seconds"] for r in runs for m in METHODS),
            "runs": runs, "pilot": pilot}
    print(d2l.io.save_results("ch16_dpo", data))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="")
    ap.add_argument("--pilot", action="store_true")
    ap.add_argument("--lrs", default="", help="the pilot's learning rates, a,b,...")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help="which arms to run (dpo, sft or both)")
    ap.add_argument("--collect", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(RUNS, exist_ok=True)
    if args.collect:
        return collect()
    methods = args.methods.split(",")
    text = d2l.load_corpus("tinyshakespeare.txt")
    tasks = align.InstructionTasks(split_text(text)[0])
    sft, vocab = align.load_tuned("sft")
    if args.pilot:
        for lr in [float(x) for x in args.lrs.split(",")] if args.lrs else PILOT_LRS:
            path = f"{RUNS}/pilot_{lr:g}_{'_'.join(methods)}.json"
            if os.path.exists(path):
                continue
            res = one_seed(100, tasks, sft, vocab, {m: lr for m in methods}, "valid")
            json.dump(res, open(path, "w"))
        return
    lo, _, hi = args.seeds.partition("-")
    for seed in range(int(lo), int(hi or lo) + 1):
        for m in methods:
            path = f"{RUNS}/seed_{seed}_{m}.json"
            if not os.path.exists(path):
                res = one_seed(seed, tasks, sft, vocab, chosen_lrs([m]))
                json.dump(res, open(path, "w"))


if __name__ == "__main__":
    main()
