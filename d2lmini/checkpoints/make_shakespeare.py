"""Reproduce the shipped character-level GPT trained on tiny Shakespeare.

Run from the repository root:

    python d2lmini/checkpoints/make_shakespeare.py           # 2,400 steps, 1 CPU thread
    python d2lmini/checkpoints/make_shakespeare.py --steps 50 --out /tmp/try.pt
                                                             # a quick try

The text is ``d2lmini/corpus/tinyshakespeare.txt`` (1,115,394 characters); the last
10 % is held out and never trained on.  The model is ``d2l.GPT`` with the defaults of
chapter 12 except its size (below); it trains with AdamW, a linear warm-up and a cosine
decay, on random windows of ``context + 1`` characters.  The checkpoint stores the
config, the weights in float16, the characters of the vocabulary (id 0 is the pad id,
never a character) and the training log, in the layout of ``d2l.save`` (so ``d2l.load``
reads the model too), readable with ``torch.load(weights_only=True)``; load it with
``d2lmini.checkpoints.load_shakespeare()``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F

import d2lmini as d2l
from d2lmini.checkpoints import CONFIG, CharVocab, heldout_loss, machine, split_text

HERE = Path(__file__).resolve().parent


def batches(ids: torch.Tensor, batch_size: int, context: int,
            generator: torch.Generator):
    """Endless random windows: (B, context) inputs and (B, context) next characters."""
    while True:
        start = torch.randint(0, len(ids) - context - 1, (batch_size,),
                              generator=generator)
        win = torch.stack([ids[s:s + context + 1]
                           for s in start.tolist()])               # (B, context + 1)
        yield win[:, :-1], win[:, 1:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=2400)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=150)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--out", default=str(HERE / "shakespeare_char.pt"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    d2l.set_seed(args.seed)

    text = d2l.load_corpus("tinyshakespeare.txt")
    train_text, held_text = split_text(text)
    vocab = CharVocab(text)
    train_ids = torch.tensor(vocab.encode(train_text))
    model = d2l.GPT(len(vocab), **CONFIG)
    d2l.set_fused_attention(model, True)  # faster; nobody reads the weights here
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() > 1]
    no_decay = [p for p in model.parameters() if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.99))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, d2l.warmup_cosine_schedule(args.warmup, args.steps, final=0.05))
    gen = torch.Generator().manual_seed(args.seed)
    data = batches(train_ids, args.batch_size, CONFIG["max_len"], gen)
    print(f"{n_params:,} parameters, {len(train_text):,} train / {len(held_text):,} "
          f"held-out characters, {args.steps} steps of {args.batch_size} x "
          f"{CONFIG['max_len']}", flush=True)
    log, t0, run = [], time.time(), 0.0
    for step in range(1, args.steps + 1):
        model.train()
        x, y = next(data)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(), sched.step()
        run = loss.item() if step == 1 else 0.98 * run + 0.02 * loss.item()
        if step % args.eval_every == 0 or step == args.steps:
            held = heldout_loss(model, vocab, held_text, max_windows=64)
            log.append({"step": step, "train": round(run, 4), "heldout": round(held, 4),
                        "seconds": round(time.time() - t0, 1)})
            print(json.dumps(log[-1]), flush=True)
    seconds = time.time() - t0
    held = heldout_loss(model, vocab, held_text)   # every held-out window
    # d2l.save's layout (d2l.load reads it too), plus the characters and the log
    ckpt = {
        "format": "d2lmini-checkpoint", "version": 1, "class": "GPT",
        "config": dict(model.config), "vocab": None, "chars": vocab.chars,
        "state_dict": {k: v.half() if v.is_floating_point() else v
                       for k, v in model.state_dict().items()},
        "train": {"steps": args.steps, "batch_size": args.batch_size, "lr": args.lr,
                  "warmup": args.warmup, "weight_decay": args.weight_decay,
                  "seed": args.seed, "threads": args.threads,
                  "seconds": round(seconds), "heldout_loss": round(held, 4),
                  "machine": machine(),
                  "torch": str(torch.__version__), "log": json.dumps(log)},
    }
    torch.save(ckpt, args.out)
    print(f"held-out loss {held:.4f} nats/char ({held / math.log(2):.3f} bits/char) "
          f"after {seconds / 60:.1f} min; saved {args.out} "
          f"({os.path.getsize(args.out) / 1e6:.2f} MB)", flush=True)


if __name__ == "__main__":
    main()
