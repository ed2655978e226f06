"""Training throughput on chapter 8's date task, five ways, on the same batches, in one run.

    python benchmarks/train_throughput.py                      # small CPU defaults
    python benchmarks/train_throughput.py --d-model 512 --layers 6 --heads 8 \\
        --batch 256 2048 --steps 50                            # the GPU setting of issue 13
    python benchmarks/train_throughput.py --compile yes        # compiled row on the CPU too

Rows (each a fresh model from the same seed, Adam, cross-entropy, bf16 autocast on CUDA):
  d2lmini, d2l.train             the chapters' model and loop (from-scratch attention)
  d2lmini, minimal loop          the same model in a bare loop: the cost of d2l.train
  torch.nn.Transformer, minimal  torch's own Transformer of the same size (+ embeddings,
                                 positional encoding and output layer, as d2lmini's)
  d2lmini fused, d2l.train       d2l.set_fused_attention(model): torch's fused kernel
  d2lmini fused + compile        the same with d2l.train(..., compile=True)
The compiled row runs by default only on CUDA: compiling on a small CPU takes minutes.
Tokens per step are source + target positions (padding included).  On CUDA, MFU is
6 * parameters * tokens/s over the GPU's peak (``--peak-tflops``, default 989: the
dense bf16 peak of an H100 / H200 SXM; an H100 PCIe is 756).  The 6 N rule counts every
weight (embeddings and output layer included) and ignores the attention scores.
"""
from __future__ import annotations

import argparse
import math
import time
from contextlib import nullcontext

import torch
import torch.nn.functional as F
from torch import nn

import d2lmini as d2l
from _machine import add_device_args, setup


class TorchTransformer(nn.Module):
    """torch.nn.Transformer with d2lmini's embeddings, positional encoding and output layer."""

    def __init__(self, src_vocab, tgt_vocab, d_model, heads, layers, d_ff, pad_id=0):
        super().__init__()
        self.pad_id, self.scale = pad_id, math.sqrt(d_model)
        self.src_emb, self.tgt_emb = nn.Embedding(src_vocab, d_model), nn.Embedding(tgt_vocab, d_model)
        self.pe = d2l.PositionalEncoding(d_model)
        self.core = nn.Transformer(d_model, heads, layers, layers, d_ff, dropout=0.0, batch_first=True)
        self.generator = nn.Linear(d_model, tgt_vocab)

    def forward(self, src, tgt):
        T = tgt.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=tgt.device).triu(1)  # True = masked
        src_pad, tgt_pad = src == self.pad_id, tgt == self.pad_id
        x = self.core(self.pe(self.src_emb(src) * self.scale), self.pe(self.tgt_emb(tgt) * self.scale),
                      tgt_mask=causal, src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
                      memory_key_padding_mask=src_pad, tgt_is_causal=True)
        return self.generator(x)


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()
    elif dev.type == "mps":
        torch.mps.synchronize()


def loss_fn(logits, y):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1), ignore_index=0)


def run_train(model, batches, warmup, dev, amp, compile):
    """d2l.train over all batches; the clock starts after ``warmup`` steps."""
    t = {}

    def start_clock(net, hist):
        if hist.steps == warmup:
            sync(dev)
            t["start"] = time.perf_counter()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    d2l.train(model, loss_fn, opt, batches, device=dev, amp=amp, compile=compile,
              callbacks=[start_clock], progress=False)
    sync(dev)  # train has read its last loss already: the device is idle
    return time.perf_counter() - t["start"]


def run_minimal(model, batches, warmup, dev, amp):
    """The smallest correct loop: move, forward, loss, backward, step."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if amp else nullcontext()
    for i, (src, tgt_in, tgt_out) in enumerate(batches):
        if i == warmup:
            sync(dev)
            start = time.perf_counter()
        src, tgt_in, tgt_out = (t.to(dev, non_blocking=True) for t in (src, tgt_in, tgt_out))
        with autocast:
            loss = loss_fn(model(src, tgt_in), tgt_out)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    sync(dev)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--steps", type=int, default=60, help="timed steps per row")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first (compiling happens here)")
    ap.add_argument("--batch", type=int, nargs="+", default=[64])
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=1, help="encoder layers = decoder layers")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--compile", choices=["auto", "yes", "no"], default="auto",
                    help="run the compiled row (auto: on CUDA only)")
    add_device_args(ap)
    args = ap.parse_args()
    dev, where = setup(args)
    amp = dev.type == "cuda"
    do_compile = args.compile == "yes" or (args.compile == "auto" and dev.type == "cuda")
    data = d2l.DateTranslation(20000, seed=0)
    src, tgt_in, tgt_out = data.tensors()
    V_src, V_tgt, d = len(data.src_vocab), len(data.tgt_vocab), args.d_model

    def d2lmini_model(fused):
        d2l.set_seed(0)
        model = d2l.Transformer(V_src, V_tgt, d_model=d, num_heads=args.heads, num_layers=args.layers,
                                d_ff=4 * d, dropout=0.0).to(dev)
        return d2l.set_fused_attention(model, fused)

    def torch_model():
        d2l.set_seed(0)
        return TorchTransformer(V_src, V_tgt, d, args.heads, args.layers, 4 * d).to(dev)

    w = args.warmup
    rows = [("d2lmini, d2l.train", lambda b: run_train(d2lmini_model(False), b, w, dev, amp, False)),
            ("d2lmini, minimal loop", lambda b: run_minimal(d2lmini_model(False), b, w, dev, amp)),
            ("torch.nn.Transformer, minimal loop", lambda b: run_minimal(torch_model(), b, w, dev, amp)),
            ("d2lmini fused, d2l.train", lambda b: run_train(d2lmini_model(True), b, w, dev, amp, False)),
            ("d2lmini fused + compile, d2l.train",
             lambda b: run_train(d2lmini_model(True), b, w, dev, amp, True) if do_compile else None)]
    n_params = {"torch": sum(p.numel() for p in torch_model().parameters()),
                "d2lmini": sum(p.numel() for p in d2lmini_model(False).parameters())}

    print(f"{where}, {'bf16 autocast' if amp else 'float32'}")
    print(f"model: d_model={d}, {args.layers}+{args.layers} layers, {args.heads} heads, d_ff={4 * d}; "
          f"params d2lmini {n_params['d2lmini']:,}, torch {n_params['torch']:,}; "
          f"{args.steps} timed steps after {args.warmup}")
    if dev.type == "cuda":
        print(f"MFU = 6 * params * tokens/s / {args.peak_tflops:g} TFLOP/s (--peak-tflops)")
    print("| batch | row | steps/s | tokens/s | MFU |\n|---:|---|---:|---:|---:|")
    for B in args.batch:
        g = torch.Generator().manual_seed(0)
        idx = [torch.randint(len(data), (B,), generator=g) for _ in range(args.warmup + args.steps)]
        batches = [(src[i], tgt_in[i], tgt_out[i]) for i in idx]
        tokens = B * (src.shape[1] + tgt_in.shape[1])
        for label, run in rows:
            sec = run(batches)
            if sec is None:
                print(f"| {B} | {label} | not run (compiling takes minutes on a CPU: --compile yes) | | |")
                continue
            N = n_params["torch" if label.startswith("torch") else "d2lmini"]
            tok_s = tokens * args.steps / sec
            mfu = f"{6 * N * tok_s / (args.peak_tflops * 1e12):.1%}" if dev.type == "cuda" else "n/a"
            print(f"| {B} | {label} | {args.steps / sec:.1f} | {tok_s:,.0f} | {mfu} |", flush=True)


if __name__ == "__main__":
    main()
