"""Chapter 8: the date model's recipe, five seeds per variant, too long to run live.

    OMP_NUM_THREADS=1 python benchmarks/ch08_recipe.py            # ~20-30 min on 1 core
    OMP_NUM_THREADS=1 python benchmarks/ch08_recipe.py --variants base,dropout

Every run is chapter 8's date model and recipe (1 encoder + 1 decoder layer, d_model
64, 4 heads, d_ff 256, post-norm; Adam lr 5e-3, betas (0.9, 0.98), eps 1e-9; linear
warm-up then cosine decay over 1,200 steps; label smoothing 0.1; length-bucketed
batches of 64; 20,000 training dates, 1,000 held-out dates).  Seed s initialises the
model with ``d2l.set_seed(s)`` and shuffles the batches with generator seed s, so the
variants of one seed start from the same weights and see the same batches; seed 0 is
the run the chapter trains live.  Metrics: the held-out loss (cross-entropy per target
character, teacher forcing, no smoothing), the held-out exact match (greedy decoding)
and the exact match on the first 1,000 training dates.

Variants (``--variants``; results of the others already in the file stay):
  base          the chapter's recipe (50 warm-up steps); also records, every 100 steps,
                the share of cross-attention the rows writing year, month and day put
                on their field of the probe "3 March 1998"
  no_warmup     warm-up of 1 step (the full learning rate from the first step)
  dropout       dropout 0.1 everywhere the paper puts it (embeddings + PE, every
                sub-layer's output, attention weights, the FFN's hidden layer)
  biased        note 004's case for warm-up: the first 150 steps see only dates written
                dd.mm.yyyy or dd/mm/yy (digits only), then the usual shuffled batches;
                with the 50-step warm-up
  biased_no_warmup   the same with a 1-step warm-up
Writes ``d2lmini/results/ch08_recipe.json``.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import time

import torch
import torch.nn.functional as F

import d2lmini as d2l
from d2lmini.checkpoints import machine
from d2lmini.io import RESULTS, save_results

SEEDS, STEPS, PEAK_LR, BIASED_STEPS = 5, 1200, 5e-3, 150
NUMERIC = re.compile(r"^\d\d[./]\d\d[./]\d+$")


def field_share(att):
    """att (11, 12) cross-attention on '3 March 1998' -> share of each field's rows on
    its field (as chapter 8 prints it)."""
    return {"year": att[0:4, 8:12].sum(-1).mean().item(),
            "month": att[5:7, 2:7].sum(-1).mean().item(),
            "day": att[8:10, 0].mean().item()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--variants", default="base,no_warmup,dropout,biased,"
                                          "biased_no_warmup")
    ap.add_argument("--seeds", type=int, default=SEEDS)
    args = ap.parse_args()
    torch.set_num_threads(1)
    train_set = d2l.DateTranslation(20000, seed=0)
    test_set = d2l.DateTranslation(1000, seed=1, exclude=train_set)
    src_vocab, tgt_vocab = train_set.src_vocab, train_set.tgt_vocab
    src_train, tgt_in_train, tgt_out_train = train_set.tensors()
    src_test, tgt_in_test, tgt_out_test = test_set.tensors()
    numeric = torch.tensor([bool(NUMERIC.match(s)) for s, _ in train_set.pairs])
    probe_src = d2l.pad_batch([src_vocab.encode("3 March 1998")])
    probe_tgt = d2l.pad_batch([tgt_vocab.encode("1998-03-03", bos=True)])
    smoothed_ce = lambda logits, y: d2l.label_smoothing_cross_entropy(
        logits, y, 0.1, ignore_index=tgt_vocab.pad_id)

    @torch.no_grad()
    def measure(model):
        model.eval()
        logits = model(src_test, tgt_in_test)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               tgt_out_test.reshape(-1),
                               ignore_index=tgt_vocab.pad_id).item()
        out = {"heldout_loss": loss}
        for name, src, tgt in (("exact", src_test, tgt_out_test),
                               ("train_exact", src_train[:1000], tgt_out_train[:1000])):
            pred = d2l.greedy_decode(model, src, 11, tgt_vocab.bos_id, tgt_vocab.eos_id)
            pred = F.pad(pred, (0, 11 - pred.shape[1]), value=tgt_vocab.pad_id)
            out[name] = (pred == tgt).all(1).float().mean().item()
        model.train()
        return out

    path = os.path.join(RESULTS, "ch08_recipe.json")
    data = json.load(open(path)) if os.path.exists(path) else {"runs": {},
                                                               "seconds": {}}
    for variant in args.variants.split(","):
        warmup = 1 if variant in ("no_warmup", "biased_no_warmup") else 50
        dropout = 0.1 if variant == "dropout" else 0.0
        runs, start = [], time.perf_counter()
        for seed in range(args.seeds):
            d2l.set_seed(seed)
            model = d2l.Transformer(len(src_vocab), len(tgt_vocab), d_model=64,
                                    num_heads=4, num_layers=1, d_ff=256,
                                    dropout=dropout)
            opt = torch.optim.Adam(model.parameters(), lr=PEAK_LR, betas=(0.9, 0.98),
                                   eps=1e-9)
            sched = torch.optim.lr_scheduler.LambdaLR(
                opt, d2l.warmup_cosine_schedule(warmup, STEPS))
            gen = torch.Generator().manual_seed(seed)
            first = [variant.startswith("biased")]

            def batches():
                if first[0]:
                    first[0] = False
                    idx = numeric.nonzero().flatten()
                    sub = itertools.chain.from_iterable(   # epochs of the subset
                        d2l.bucket_batches(src_train[idx], tgt_in_train[idx],
                                           tgt_out_train[idx], 64, generator=gen)
                        for _ in range(3))
                    return (b for _, b in zip(range(BIASED_STEPS), sub))
                return d2l.bucket_batches(src_train, tgt_in_train, tgt_out_train, 64,
                                          generator=gen)

            shares = []

            def watch(net, hist):
                if variant == "base" and (hist.steps == 1 or hist.steps % 100 == 0):
                    net.eval()
                    with torch.no_grad():
                        net(probe_src, probe_tgt)
                    att = net.decoder.blocks[-1].cross_attn.attention_weights
                    shares.append({"step": hist.steps,
                                   **field_share(att[0].float().mean(0))})
                    net.train()

            t0 = time.perf_counter()
            hist = d2l.train(model, smoothed_ce, opt, batches, num_epochs=100,
                             scheduler=sched, max_steps=STEPS, amp=True,
                             callbacks=[watch], progress=False)
            run = {"seed": seed, "seconds": round(time.perf_counter() - t0, 1),
                   **measure(model), "final_train_loss": hist.step_loss[-1]}
            if shares:
                run["shares"] = shares
            runs.append(run)
            print(variant, {k: (round(v, 4) if isinstance(v, float) else v)
                            for k, v in run.items() if k != "shares"}, flush=True)
        data["runs"][variant] = runs
        data["seconds"][variant] = round(time.perf_counter() - start, 1)
        data.update(machine=machine(), torch=torch.__version__,
                    settings=__doc__.split("Variants")[0].split("\n\n", 1)[1].strip())
        save_results("ch08_recipe", data)


if __name__ == "__main__":
    main()
