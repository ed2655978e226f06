"""Chapter 16's instruction-tuning experiments: SFT with the loss on the answer or on
everything, from the pre-trained character GPT or from scratch, LoRA against full
fine-tuning, and a rank sweep.  Each run writes one JSON file; ``--collect`` merges
them into ``d2lmini/results/ch16_tuning.json``, which the chapter loads.

    python benchmarks/ch16_tuning.py --runs masked:0-4 unmasked:0-4   # one process
    python benchmarks/ch16_tuning.py --runs select                     # the lrs
    python benchmarks/ch16_tuning.py --runs lora8:0-4 lora1:0-1 ...
    python benchmarks/ch16_tuning.py --collect
    python benchmarks/ch16_tuning.py --steps 20 --batch 8 --quick --name ch16_mask \
        --runs masked:0-4 unmasked:0-4 && python benchmarks/ch16_tuning.py \
        --steps 20 --batch 8 --quick --name ch16_mask --collect

Run names: ``masked`` (the recipe: full fine-tuning, loss on the answer),
``unmasked`` (loss on the whole conversation), ``scratch`` (the recipe from random
weights), ``lora<r>`` (LoRA of rank r, alpha = 2r, on all six linear layers of every
block), ``loraqv8`` (rank 8 on W_q, W_v only), ``select`` (LoRA rank 8 and full fine-tuning at several
learning rates, seed 100, the runs' steps and batch, judged on validation data).  Every run (by
default; ``--steps``, ``--batch``, ``--lr`` change it, ``--quick`` measures the held-out
answer loss only, ``--name`` keeps the runs apart): 120 steps of 16 examples, lr 1e-3,
AdamW, warm-up 10 steps, cosine to a tenth; the same seed
draws the same batches (and the same LoRA A) in every variant.  One CPU thread.
With ``--checkpoint`` the run ``masked:0`` also writes the tuned model to
``d2lmini/checkpoints/ch16_sft.pt`` (float16), the model chapter 16 loads:

    python benchmarks/ch16_tuning.py --checkpoint --runs masked:0 && \
        python benchmarks/ch16_tuning.py --collect     # -> results/ch16_tuning.json
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import d2lmini as d2l  # noqa: E402
from d2lmini import align  # noqa: E402
from d2lmini.checkpoints import CONFIG, machine, split_text  # noqa: E402

STEPS, BATCH, LR, WARMUP = 120, 16, 1e-3, 10
LORA_LRS = (2e-3, 5e-3, 1e-2, 2e-2, 5e-2)
FULL_LRS = (3e-4, 1e-3, 3e-3)
ALL_LINEAR = d2l.lora.ALL_LINEAR
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "d2lmini")
RUNS = os.environ.get("CH16_RUNS", "/tmp/ch16_runs")
WRITE_CHECKPOINT = False
QUICK = False                                  # --quick: evaluate the answer loss only


def setup():
    text = d2l.load_corpus("tinyshakespeare.txt")
    tasks = align.InstructionTasks(split_text(text)[0])
    sets = {
        "exact_seen": tasks.eval_set(50, "heldout", "train"),
        "exact_new": tasks.eval_set(50, "heldout", "heldout"),
        "loss": tasks.eval_set(25 if QUICK else 50, "heldout", "train",
                               tasks=tasks.tasks),
        "valid": tasks.eval_set(25, "valid", "train", tasks=tasks.tasks, seed=2),
    }
    return tasks, sets


def evaluate(model, vocab, sets) -> dict:
    per_task = {t: align.answer_loss(model, vocab, [e for e in sets["loss"]
                                                    if e.task == t])
                for t in align.PHRASINGS}
    valid = {t: align.answer_loss(model, vocab, [e for e in sets["valid"]
                                                 if e.task == t])
             for t in align.PHRASINGS}
    losses = {"answer_loss": sum(per_task.values()) / len(per_task),
              "answer_loss_per_task": per_task,
              "valid_loss": sum(valid.values()) / len(valid)}
    if QUICK:                                  # the answer losses only
        return losses
    return {**losses,
            "exact_seen": align.exact_match(model, vocab, sets["exact_seen"],
                                            per_task=True),
            "exact_new": align.exact_match(model, vocab, sets["exact_new"],
                                           per_task=True)}


def build(variant: str, seed: int):
    """-> (model, vocab, settings) for a run name."""
    model, vocab = d2l.load_pretrained("shakespeare")
    cfg = {"init": "pre-trained", "mask_prompt": True, "lr": LR, "lora": None}
    if variant == "unmasked":
        cfg["mask_prompt"] = False
    elif variant == "scratch":
        torch.manual_seed(seed)
        model = d2l.GPT(len(vocab), **CONFIG)
        cfg["init"] = "random"
    elif variant.startswith("lora"):
        qv = variant.startswith("loraqv")
        rank = int(variant[6:] if qv else variant[4:])
        torch.manual_seed(seed)
        d2l.add_lora(model, rank=rank, alpha=2 * rank,
                     targets=("W_q", "W_v") if qv else ALL_LINEAR)
        cfg["lora"] = {"rank": rank, "alpha": 2 * rank,
                       "targets": ["W_q", "W_v"] if qv else list(ALL_LINEAR)}
        cfg["lr"] = chosen_lora_lr()
    elif variant != "masked":
        raise ValueError(f"unknown run {variant!r}")
    return model, vocab, cfg


def chosen_lora_lr() -> float:
    files = sorted(glob.glob(os.path.join(RUNS, "select_lora_*.json")))
    if len(files) < len(LORA_LRS):
        raise SystemExit("run --runs select first (LoRA's learning rate)")
    runs = [json.load(open(f)) for f in files]
    return min(runs, key=lambda r: r["eval"]["valid_loss"])["lr"]


def run(variant: str, seed: int, tasks, sets) -> dict:
    model, vocab, cfg = build(variant, seed)
    trainable, total = d2l.lora.count_parameters(model)
    log = align.finetune(model, vocab, tasks, STEPS, cfg["lr"], BATCH, seed,
                         cfg["mask_prompt"], WARMUP)
    if variant.startswith("lora"):
        d2l.merge_lora(model)
    if variant == "masked" and seed == 0 and WRITE_CHECKPOINT:
        path = os.path.join(OUT, "checkpoints", "ch16_sft.pt")
        torch.save({"config": model.config, "chars": vocab.chars,
                    "state_dict": {k: v.half() for k, v in
                                   model.state_dict().items()}}, path)
        model, _ = align.load_tuned("sft")         # what the chapter loads
    res = {"variant": variant, "seed": seed, **cfg, "steps": STEPS, "batch": BATCH,
           "trainable": trainable, "total": total, "seconds": log["seconds"],
           "loss": [round(x, 4) for x in log["loss"]], "eval": evaluate(model, vocab,
                                                                         sets)}
    return res


def select(tasks, sets) -> None:
    """Each method's learning rate: seed 100, judged on the validation answer loss."""
    for kind, lrs in (("lora", LORA_LRS), ("full", FULL_LRS)):
        for lr in lrs:
            if os.path.exists(os.path.join(RUNS, f"select_{kind}_{lr:g}.json")):
                continue
            model, vocab = d2l.load_pretrained("shakespeare")
            torch.manual_seed(100)
            if kind == "lora":
                d2l.add_lora(model, rank=8, alpha=16, targets=ALL_LINEAR)
            log = align.finetune(model, vocab, tasks, STEPS, lr, BATCH, 100, True,
                                 WARMUP)
            res = {"variant": f"select_{kind}", "lr": lr, "seed": 100, "steps": STEPS,
                   "seconds": log["seconds"], "eval": evaluate(model, vocab, sets)}
            write(f"select_{kind}_{lr:g}", res)


def write(name: str, res: dict) -> None:
    os.makedirs(RUNS, exist_ok=True)
    with open(os.path.join(RUNS, f"{name}.json"), "w") as f:
        json.dump(res, f)
    print(name, f"answer loss {res['eval']['answer_loss']:.4f}",
          f"{res['seconds']:.0f} s", flush=True)


def collect(name: str = "ch16_tuning") -> None:
    runs = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(RUNS, "*.json")))]
    data = {"settings": {"steps": STEPS, "batch": BATCH, "lr": LR, "warmup": WARMUP,
                         "lora_lrs": list(LORA_LRS), "full_lrs": list(FULL_LRS),
                         "lora_targets": list(ALL_LINEAR),
                         "optimizer": "AdamW, no weight decay, cosine to 0.1",
                         "eval": f"{25 if QUICK else 50} held-out examples per task",
                         "primary": "answer loss, mean over the four tasks"},
            "machine": machine(), "torch": torch.__version__, "threads": 1,
            "seconds": sum(r["seconds"] for r in runs),
            "runs": {f"{r['variant']}:{r['seed']}" if "select" not in r["variant"]
                     else f"{r['variant']}:{r['lr']:g}": r for r in runs}}
    print(d2l.io.save_results(name, data))


def main():
    global STEPS, RUNS, LR, WRITE_CHECKPOINT, BATCH, QUICK
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", nargs="*", default=[])
    ap.add_argument("--collect", action="store_true")
    ap.add_argument("--steps", type=int, default=STEPS, help="steps per run")
    ap.add_argument("--batch", type=int, default=BATCH, help="examples per step")
    ap.add_argument("--quick", action="store_true", help="answer loss only")
    ap.add_argument("--lr", type=float, default=LR, help="full fine-tuning's lr")
    ap.add_argument("--checkpoint", action="store_true",
                    help="write masked:0's model to checkpoints/ch16_sft.pt")
    ap.add_argument("--name", default="ch16_tuning",
                    help="results name (its runs go to RUNS/<name>)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    STEPS, LR, WRITE_CHECKPOINT = args.steps, args.lr, args.checkpoint
    BATCH, QUICK = args.batch, args.quick
    if args.name != "ch16_tuning":
        RUNS = os.path.join(RUNS, args.name)
    if args.collect:
        return collect(args.name)
    tasks, sets = setup()
    for spec in args.runs:
        if spec == "select":
            select(tasks, sets)
            continue
        variant, seeds = spec.split(":")
        lo, _, hi = seeds.partition("-")
        for seed in range(int(lo), int(hi or lo) + 1):
            name = f"{variant}_{seed}"
            if os.path.exists(os.path.join(RUNS, f"{name}.json")):
                continue
            t = time.time()
            write(name, run(variant, seed, tasks, sets))


if __name__ == "__main__":
    main()
