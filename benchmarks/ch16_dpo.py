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
    python benchmarks/ch16_dpo.py --seeds 0-4        # the experiment
    python benchmarks/ch16_dpo.py --collect          # -> d2lmini/results/ch16_dpo.json

Seed 0's DPO model is written to ``d2lmini/checkpoints/ch16_dpo.pt`` (float16).  One
CPU thread.
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
LRS = {"dpo": 1e-4, "sft": 1e-4}          # chosen by --pilot (see the pilot's log)
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


def arm(method, lr, sft, vocab, judge, pairs, instructions, sft_answers, seed) -> tuple:
    policy = copy.deepcopy(sft)
    evals = lambda: measure(policy, sft, vocab, judge, instructions, sft_answers,
                            3000 + seed)
    log = align.preference_tune(policy, sft, vocab, pairs, STEPS, lr, BETA, BATCH,
                                seed, method, eval_every=EVAL_EVERY, eval_fn=evals)
    return log, policy


def one_seed(seed: int, tasks, sft, vocab, split="heldout", lrs=None, steps=None):
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
           "sft": measure(sft, sft, vocab, judge, instructions, sft_answers,
                          3000 + seed)}
    models = {}
    for method, lr in (lrs or LRS).items():
        log, models[method] = arm(method, lr, sft, vocab, judge, pairs, instructions,
                                  sft_answers, seed)
        res[method] = {"lr": lr, "loss": [round(x, 4) for x in log["loss"]],
                       "margin": [round(x, 4) for x in log["margin"]],
                       "evals": log["evals"], "seconds": log["seconds"]}
        print(seed, method, lr, json.dumps(log["evals"][-1]), flush=True)
    return res, models


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="")
    ap.add_argument("--pilot", action="store_true")
    ap.add_argument("--collect", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(RUNS, exist_ok=True)
    if args.collect:
        runs = [json.load(open(f)) for f in sorted(glob.glob(f"{RUNS}/seed_*.json"))]
        pilot = [json.load(open(f)) for f in sorted(glob.glob(f"{RUNS}/pilot_*.json"))]
        data = {"settings": {"phrasing": PHRASING, "words": WORDS, "beta": BETA,
                             "pair_prompts": N_PAIR_PROMPTS, "eval_prompts": N_EVAL,
                             "steps": STEPS, "eval_every": EVAL_EVERY,
                             "batch_pairs": BATCH, "lr": LRS,
                             "pilot_lrs": list(PILOT_LRS), "temperature": 1.0},
                "machine": machine(), "torch": torch.__version__, "threads": 1,
                "seconds": sum(r[m]["seconds"] for r in runs for m in LRS),
                "runs": runs, "pilot": pilot}
        print(d2l.io.save_results("ch16_dpo", data))
        return
    text = d2l.load_corpus("tinyshakespeare.txt")
    tasks = align.InstructionTasks(split_text(text)[0])
    sft, vocab = align.load_tuned("sft")
    if args.pilot:
        for lr in PILOT_LRS:
            res, _ = one_seed(100, tasks, sft, vocab, "valid", {"dpo": lr, "sft": lr})
            json.dump(res, open(f"{RUNS}/pilot_{lr:g}.json", "w"))
        return
    lo, _, hi = args.seeds.partition("-")
    for seed in range(int(lo), int(hi or lo) + 1):
        path = f"{RUNS}/seed_{seed}.json"
        if os.path.exists(path):
            continue
        res, models = one_seed(seed, tasks, sft, vocab)
        if seed == 0:
            m = models["dpo"]
            torch.save({"config": m.config, "chars": vocab.chars,
                        "state_dict": {k: v.half() for k, v in
                                       m.state_dict().items()}},
                       os.path.join(OUT, "checkpoints", "ch16_dpo.pt"))
            shipped, _ = align.load_tuned("dpo")
            judge = align.LengthJudge(WORDS)
            instructions = prompts(tasks, "heldout", N_EVAL, 1)
            sft_answers = align.answers(sft, vocab, instructions, 40, 1.0,
                                        torch.Generator().manual_seed(1000))
            res["shipped"] = measure(shipped, sft, vocab, judge, instructions,
                                     sft_answers, 3000)
        json.dump(res, open(path, "w"))


if __name__ == "__main__":
    main()
