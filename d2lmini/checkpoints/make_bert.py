"""Reproduce the shipped character-level BERT pre-trained on the book's own prose.

Run from the repository root:

    python d2lmini/checkpoints/make_bert.py                  # 4,000 steps, 1 CPU thread
    python d2lmini/checkpoints/make_bert.py --steps 50 --out /tmp/try.pt   # a quick try

The text is ``d2lmini/corpus/book.txt``; its last 10 % is held out and never trained
on.  The recipe is chapter 14's (:func:`d2lmini.bert.book_vocab`, :func:`book_windows`,
:func:`d2lmini.mask_tokens` with BERT's 15 %): ``[CLS]`` and 31 characters per row,
AdamW, a linear warm-up and a cosine decay; only the number of steps is larger than the
chapter can afford.  The checkpoint stores the config, the weights as the book's page
computes with them (``d2lmini.export.page_weights``: int8 rows with a power-of-two
scale, held in float16), the characters and the training log, in the layout of
``d2l.save`` (``d2l.load`` reads the model too), readable with
``torch.load(weights_only=True)``; load it with ``d2l.load_pretrained("bert")`` or
``d2lmini.bert.load_book_bert()``.  The held-out masked accuracy and loss are measured
before and after that storage.

    python d2lmini/checkpoints/make_bert.py --from OLD.pt     # no training: store
                                                              # OLD.pt's weights so
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import torch.nn.functional as F

import d2lmini as d2l
from d2lmini.checkpoints import machine, read_checkpoint
from d2lmini.bert import BOOK_CONFIG, book_vocab, book_windows, mlm_accuracy
from d2lmini.export import page_weights

HERE = Path(__file__).resolve().parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(HERE / "bert_book.pt"))
    ap.add_argument("--from", dest="source", default=None,
                    help="a checkpoint to store in the page's precision (no training)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    vocab, train_ids, held_ids = book_vocab()
    if args.source:
        ckpt = read_checkpoint(None, args.source)
        model = d2l.BERT(**ckpt["config"])
        model.load_state_dict({k: v.float() for k, v in ckpt["state_dict"].items()})
        info = {k: v for k, v in ckpt["train"].items() if not k.startswith("heldout")}
        return save(model, vocab, held_ids, info, args.out)
    d2l.set_seed(args.seed)
    model = d2l.BERT(len(vocab), **BOOK_CONFIG)
    d2l.set_fused_attention(model)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, d2l.warmup_cosine_schedule(args.warmup, args.steps))
    g = torch.Generator().manual_seed(args.seed)
    t0, log = time.time(), []
    for step in range(1, args.steps + 1):
        x, y = d2l.mask_tokens(book_windows(train_ids, args.batch_size, g),
                               vocab.mask_id, len(vocab), vocab.special_ids,
                               generator=g)
        loss = F.cross_entropy(model.mlm_logits(model(x)).transpose(1, 2), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 250 == 0 or step == args.steps:
            acc = mlm_accuracy(model, held_ids, vocab, n=500, seed=1)
            log.append([step, round(loss.item(), 4), round(acc, 4)])
            print(f"step {step:5d}  loss {loss.item():.3f}  held-out masked accuracy "
                  f"{acc:.3f}  {time.time() - t0:.0f} s", flush=True)
    d2l.set_fused_attention(model, False)
    info = {"steps": args.steps, "batch_size": args.batch_size, "lr": args.lr,
            "seconds": round(time.time() - t0), "machine": machine(), "log": log,
            "torch": str(torch.__version__)}
    save(model, vocab, held_ids, info, args.out)


@torch.no_grad()
def heldout(model, held_ids, vocab, n: int = 2000, seed: int = 1) -> dict:
    """Masked accuracy (``mlm_accuracy``) and masked-LM cross-entropy on ``n`` held-out
    windows, the same blanks for every model."""
    g = torch.Generator().manual_seed(seed)
    x, y = d2l.mask_tokens(book_windows(held_ids, n, g, model.max_len), vocab.mask_id,
                           len(vocab), vocab.special_ids, generator=g)
    model.eval()
    loss = F.cross_entropy(model.mlm_logits(model(x)).transpose(1, 2), y).item()
    return {"accuracy": mlm_accuracy(model, held_ids, vocab, n=n, seed=seed),
            "loss": loss}


def save(model, vocab, held_ids, info: dict, out: str) -> None:
    """Store the weights as the page computes with them, measure the held-out masked
    accuracy and loss before and after, and write the checkpoint."""
    before = heldout(model, held_ids, vocab)
    weights = page_weights(model)
    model.load_state_dict(weights)
    after = heldout(model, held_ids, vocab)
    info = {**info, "heldout_accuracy": round(after["accuracy"], 4),
            "heldout_loss": round(after["loss"], 4),
            "heldout_accuracy_trained": round(before["accuracy"], 4),
            "heldout_loss_trained": round(before["loss"], 4),
            "precision": "int8 rows, power-of-two scales (d2lmini.export)"}
    torch.save({"format": "d2lmini-checkpoint", "version": 1, "class": "BERT",
                "config": dict(model.config), "vocab": None, "chars": vocab.chars,
                "state_dict": weights, "train": info}, out)
    print(f"held-out masked accuracy {before['accuracy']:.4f} -> "
          f"{after['accuracy']:.4f}, "
          f"loss {before['loss']:.4f} -> {after['loss']:.4f} as stored; wrote {out}")


if __name__ == "__main__":
    main()
