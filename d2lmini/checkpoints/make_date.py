"""Reproduce the shipped date model: chapter 8's Transformer that reads dates.

Run from the repository root:

    python d2lmini/checkpoints/make_date.py                  # 4,000 steps, 1 CPU thread
    python d2lmini/checkpoints/make_date.py --steps 50 --out /tmp/try.pt   # a quick try

The recipe is chapter 8's: ``d2l.DateTranslation(20000, seed=0)`` to train on, 1,000
other dates (``seed=1, exclude=train``) held out; ``d2l.Transformer`` with one encoder
and one decoder block, d_model 64, 4 heads, d_ff 256, post-norm, no dropout; Adam with
beta2 0.98, peak learning rate 5e-3, 50 warm-up steps then a cosine decay, label
smoothing 0.1, bucketed batches of 64.  Only the number of steps is larger than the
chapter can afford, and ``max_len`` is 64 (the longest date is 29 characters; it only
bounds the inputs).  The weights are stored as the book's page computes with them
(:func:`d2lmini.export.page_weights`: int8 rows with a power-of-two scale, held in
float16), in the layout of ``d2l.save`` (``d2l.load`` reads it too); load it with
``d2l.load_pretrained("date")``.  The script prints what the storage precision costs
on the held-out dates.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F

import d2lmini as d2l
from d2lmini.checkpoints import machine
from d2lmini.export import page_weights, use_page_positional_encoding

HERE = Path(__file__).resolve().parent
CONFIG = {"d_model": 64, "num_heads": 4, "num_layers": 1, "d_ff": 256, "dropout": 0.0,
          "max_len": 64}


@torch.no_grad()
def evaluate(model, test_set) -> dict:
    """Held-out exact match (all ten characters and <eos>) and cross-entropy."""
    src, tgt_in, tgt_out = test_set.tensors()
    vocab = test_set.tgt_vocab
    model.eval()
    pred = d2l.greedy_decode(model, src, 11, vocab.bos_id, vocab.eos_id)
    pred = F.pad(pred, (0, 11 - pred.shape[1]), value=vocab.pad_id)
    loss = d2l.sequence_loss(model(src, tgt_in), tgt_out, pad_id=vocab.pad_id)
    return {"exact_match": (pred == tgt_out).all(1).float().mean().item(),
            "loss": loss.item()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(HERE / "date.pt"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    train_set = d2l.DateTranslation(20000, seed=0)
    test_set = d2l.DateTranslation(1000, seed=1, exclude=train_set)
    src_vocab, tgt_vocab = train_set.src_vocab, train_set.tgt_vocab
    src, tgt_in, tgt_out = train_set.tensors()
    d2l.set_seed(args.seed)
    model = d2l.Transformer(len(src_vocab), len(tgt_vocab), **CONFIG)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, d2l.warmup_cosine_schedule(args.warmup, args.steps))
    loss = lambda logits, y: d2l.label_smoothing_cross_entropy(
        logits, y, 0.1, ignore_index=tgt_vocab.pad_id)
    g = torch.Generator().manual_seed(args.seed)
    batches = lambda: d2l.bucket_batches(src, tgt_in, tgt_out, args.batch_size,
                                         generator=g)
    t0 = time.time()
    hist = d2l.train(model, loss, opt, batches, num_epochs=1000, scheduler=sched,
                     max_steps=args.steps, progress=False)
    seconds = time.time() - t0
    trained = evaluate(model, test_set)
    shipped = page_weights(model)
    model.load_state_dict(shipped)
    use_page_positional_encoding(model)          # the table the page computes
    stored = evaluate(model, test_set)
    print(f"{hist.steps} steps in {seconds:.0f} s; held-out exact match "
          f"{trained['exact_match']:.3f} -> {stored['exact_match']:.3f} stored, "
          f"loss {trained['loss']:.4f} -> {stored['loss']:.4f}", flush=True)
    info = {"steps": hist.steps, "batch_size": args.batch_size, "lr": args.lr,
            "warmup": args.warmup, "seed": args.seed, "threads": 1,
            "seconds": round(seconds), "machine": machine(),
            "torch": str(torch.__version__), "train_dates": 20000,
            "heldout_dates": 1000, "final_train_loss": round(hist.step_loss[-1], 4),
            "heldout_exact_match": round(stored["exact_match"], 4),
            "heldout_loss": round(stored["loss"], 4),
            "heldout_exact_match_float32": round(trained["exact_match"], 4),
            "heldout_loss_float32": round(trained["loss"], 4),
            "precision": "int8 rows, power-of-two scales"}
    torch.save({"format": "d2lmini-checkpoint", "version": 1, "class": "Transformer",
                "config": dict(model.config), "state_dict": shipped,
                "vocab": {"kind": "tuple", "items": [
                    {"kind": "Vocab", "idx_to_token": list(src_vocab.idx_to_token)},
                    {"kind": "Vocab", "idx_to_token": list(tgt_vocab.idx_to_token)}]},
                "train": info}, args.out)
    print(f"wrote {args.out} ({os.path.getsize(args.out) / 1e3:.0f} KB)")


if __name__ == "__main__":
    main()
