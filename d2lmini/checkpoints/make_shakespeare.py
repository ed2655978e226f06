"""Reproduce the shipped character-level GPT trained on tiny Shakespeare.

Run from the repository root:

    python d2lmini/checkpoints/make_shakespeare.py           # 2,400 steps, 1 CPU thread
    python d2lmini/checkpoints/make_shakespeare.py --steps 50 --out /tmp/try.pt
                                                             # a quick try

The text is ``d2lmini/corpus/tinyshakespeare.txt`` (1,115,394 characters); the last
10 % is held out and never trained on.  The model is ``d2l.GPT`` with the defaults of
chapter 12 except its size (below); it trains with AdamW, a linear warm-up and a cosine
decay, on random windows of ``context + 1`` characters.  The checkpoint stores the
config, the weights as the book's page computes with them (``d2lmini.export.
page_weights``: int8 rows with a power-of-two scale, held in float16), the characters
of the vocabulary (id 0 is the pad id, never a character) and the training log, in the
layout of ``d2l.save`` (so ``d2l.load`` reads the model too), readable with
``torch.load(weights_only=True)``; load it with ``d2l.load_pretrained("shakespeare")``
or ``d2lmini.checkpoints.load_shakespeare()``.  The held-out loss is measured before
and after that storage (``heldout_loss_trained``, ``heldout_loss``).

    python d2lmini/checkpoints/make_shakespeare.py --from OLD.pt   # no training: store
                                                             # OLD.pt's weights so
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
from d2lmini.checkpoints import (CONFIG, CharVocab, heldout_loss, machine,
                                 read_checkpoint, split_text)
from d2lmini.export import page_weights, use_page_positional_encoding

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
    ap.add_argument("--from", dest="source", default=None,
                    help="a checkpoint to store in the page's precision (no training)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.source:
        return restore(args.source, args.out)
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
    info = {"steps": args.steps, "batch_size": args.batch_size, "lr": args.lr,
            "warmup": args.warmup, "weight_decay": args.weight_decay,
            "seed": args.seed, "threads": args.threads, "seconds": round(seconds),
            "machine": machine(), "torch": str(torch.__version__),
            "log": json.dumps(log)}
    save(model, vocab, info, args.out)
    print(f"after {seconds / 60:.1f} min", flush=True)


def save(model, vocab: CharVocab, info: dict, out: str) -> None:
    """Store the weights as the page computes with them, measure the held-out loss
    (every held-out window) before and after, and write the checkpoint."""
    held_text = split_text(d2l.load_corpus("tinyshakespeare.txt"))[1]
    before = heldout_loss(model, vocab, held_text)
    weights = page_weights(model)
    model.load_state_dict(weights)
    use_page_positional_encoding(model)          # the table the page computes
    after = heldout_loss(model, vocab, held_text)
    info = {**info, "heldout_loss": round(after, 4),
            "heldout_loss_trained": round(before, 4),
            "precision": "int8 rows, power-of-two scales (d2lmini.export)"}
    # d2l.save's layout (d2l.load reads it too), plus the characters and the log
    torch.save({"format": "d2lmini-checkpoint", "version": 1, "class": "GPT",
                "config": dict(model.config), "vocab": None, "chars": vocab.chars,
                "state_dict": weights, "train": info}, out)
    print(f"held-out loss {before:.4f} -> {after:.4f} nats/char as stored "
          f"({after / math.log(2):.3f} bits/char); saved {out} "
          f"({os.path.getsize(out) / 1e6:.2f} MB)", flush=True)


def restore(source: str, out: str) -> None:
    """An existing checkpoint's model, stored in the page's precision."""
    ckpt = read_checkpoint(None, source)
    model = d2l.GPT(**ckpt["config"])              # torch's own positional table
    model.load_state_dict({k: v.float() for k, v in ckpt["state_dict"].items()})
    info = dict(ckpt["train"])
    info.pop("heldout_loss_trained", None)
    save(model, CharVocab(chars=ckpt["chars"]), info, out)


if __name__ == "__main__":
    main()
