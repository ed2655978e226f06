"""d2lmini against the libraries the field uses, on one device, interleaved in one run.

    python benchmarks/peers.py                 # 1 CPU thread, the sizes below
    python benchmarks/peers.py --device cuda --threads 0

Three ratios of median times (d2lmini / peer; below 1 is faster), each measured by
alternating the two implementations round after round so that a busy machine slows both
alike:
  training step  d2l.Transformer vs torch.nn.Transformer of the same size (embeddings,
                 positional encoding and output layer alike), forward + backward + Adam,
                 at d_model 64 and 256, with d2lmini's attention from scratch (keeps
                 the weights) and on the fused kernel;
  greedy decode  d2l.generate with the KV cache vs Hugging Face GPT2LMHeadModel.generate
                 on the same random small GPT-2 (gpt2_from_hf: the same weights), at
                 batch 1 and 8;
  attention      d2l.MultiHeadAttention vs nn.MultiheadAttention, forward + backward.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch
from torch import nn

import d2lmini as d2l
from _machine import add_device_args, setup

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from train_throughput import TorchTransformer  # noqa: E402


def interleaved(fns: dict, rounds: int, sync) -> dict:
    """Median seconds of each function, called in turn round after round."""
    times = {k: [] for k in fns}
    for fn in fns.values():          # warm-up
        fn()
    for _ in range(rounds):
        for k, fn in fns.items():
            sync()
            t = time.perf_counter()
            fn()
            sync()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def training_step(d_model: int, dev, batch=64, S=24, T=12, V=40, layers=2,
                  fused=False):
    """``fused``: d2lmini's attention on the fused kernel (d2l.set_fused_attention),
    as the book's training runs use it; else the from-scratch path that keeps the
    attention weights."""
    heads, d_ff = 4, 4 * d_model
    g = torch.Generator().manual_seed(0)
    src = torch.randint(1, V, (batch, S), generator=g).to(dev)
    tgt = torch.randint(1, V, (batch, T + 1), generator=g).to(dev)
    ours = d2l.Transformer(V, V, d_model=d_model, num_heads=heads, num_layers=layers,
                           d_ff=d_ff, dropout=0.0).to(dev)
    d2l.set_fused_attention(ours, fused)
    theirs = TorchTransformer(V, V, d_model, heads, layers, d_ff).to(dev)

    def step(model, opt):
        def run():
            logits = model(src, tgt[:, :-1])
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return run
    return {"d2lmini": step(ours, torch.optim.Adam(ours.parameters(), 1e-4)),
            "torch": step(theirs, torch.optim.Adam(theirs.parameters(), 1e-4))}


def greedy_decode(batch: int, dev, new=64, prompt=8):
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=512, n_positions=256, n_embd=128, n_layer=4, n_head=4,
                     bos_token_id=0, eos_token_id=0)
    hf = GPT2LMHeadModel(cfg).eval().to(dev)
    ours = d2l.gpt2_from_hf(hf).eval().to(dev)
    ids = torch.randint(0, 512, (batch, prompt), generator=torch.Generator()
                        .manual_seed(1)).to(dev)
    mask = torch.ones_like(ids)
    same = torch.equal(d2l.generate(ours, ids, new),
                       hf.generate(ids, attention_mask=mask, max_new_tokens=new,
                                   min_new_tokens=new, do_sample=False,
                                   pad_token_id=0))

    def run_ours():
        with torch.no_grad():
            d2l.generate(ours, ids, new)

    def run_hf():
        with torch.no_grad():
            hf.generate(ids, attention_mask=mask, max_new_tokens=new,
                        min_new_tokens=new, do_sample=False, pad_token_id=0)
    return {"d2lmini": run_ours, "torch": run_hf}, same


def attention(dev, batch=32, T=32, d_model=64, heads=4):
    ours = d2l.MultiHeadAttention(d_model, heads).to(dev)
    theirs = nn.MultiheadAttention(d_model, heads, batch_first=True).to(dev)
    x = torch.randn(batch, T, d_model, device=dev, requires_grad=True)

    def run(f):
        def go():
            f(x).sum().backward()
        return go
    return {"d2lmini": run(lambda x: ours(x, x, x)),
            "torch": run(lambda x: theirs(x, x, x, need_weights=False)[0])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=30)
    add_device_args(ap, threads=1)
    args = ap.parse_args()
    dev, where = setup(args)
    print(where)
    sync = (torch.cuda.synchronize if dev.type == "cuda" else (lambda: None))
    print("| what | d2lmini (ms) | peer (ms) | d2lmini / peer |")
    print("|---|---:|---:|---:|")

    def row(name, fns, peer):
        t = interleaved(fns, args.rounds, sync)
        print(f"| {name} vs {peer} | {t['d2lmini'] * 1e3:.2f} | {t['torch'] * 1e3:.2f} | "
              f"{t['d2lmini'] / t['torch']:.2f} |", flush=True)

    for d in (64, 256):
        for fused in (False, True):
            row(f"training step, d_model {d}, "
                f"{'fused' if fused else 'from-scratch'} attention",
                training_step(d, dev, fused=fused), "nn.Transformer")
    for b in (1, 8):
        fns, same = greedy_decode(b, dev)
        row(f"greedy decode, 64 tokens, batch {b} (same ids: {same})", fns,
            "HF GPT-2")
    row("multi-head attention fwd+bwd", attention(dev), "nn.MultiheadAttention")


if __name__ == "__main__":
    main()
