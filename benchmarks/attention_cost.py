"""Forward + backward time and peak memory of four attention implementations.

    python benchmarks/attention_cost.py                # B=4, d_model=256, h=8; T up to 512 on a CPU
    python benchmarks/attention_cost.py --T 128 512    # other sequence lengths
    python benchmarks/attention_cost.py --threads 1    # one CPU thread (steadier on a busy machine)

Rows: d2lmini.MultiHeadAttention from scratch (keeps the (B, h, T, T) weights),
its fast path (fast=True: torch's fused scaled_dot_product_attention),
torch.nn.MultiheadAttention, and the bare F.scaled_dot_product_attention (no
projections: a floor).  Ratios are to torch.nn.MultiheadAttention in the same run.
On CUDA the same script adds bfloat16 rows and T up to 2048.  The fast path projects
q, k and v with one matrix product, as torch.nn.MultiheadAttention does.
Peak memory: on GPU, CUDA's allocator peak above what was allocated before the step;
on CPU, the size of the tensors saved for backward (torch.autograd.graph saved-tensor
hooks), which is where the O(T^2) weights of the from-scratch path live.
"""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch import nn

import d2lmini as d2l
from _machine import add_device_args, setup


class SDPA(nn.Module):
    """Bare fused attention over pre-split heads: no projections, a lower bound."""

    def __init__(self, h):
        super().__init__()
        self.h = h

    def forward(self, x):
        B, T, D = x.shape
        q = x.view(B, T, self.h, D // self.h).transpose(1, 2)
        return F.scaled_dot_product_attention(q, q, q, is_causal=False).transpose(1, 2).reshape(B, T, D)


def models(d, h):
    ours = d2l.MultiHeadAttention(d, h)
    fast = d2l.MultiHeadAttention(d, h, fast=True)
    ref = nn.MultiheadAttention(d, h, batch_first=True)
    for m in (ours, fast):
        m.load_state_dict(d2l.mha_state_dict_from_torch(ref.state_dict()))
    return {"d2lmini from scratch": lambda x: ours(x, x, x),
            "d2lmini fast=True": lambda x: fast(x, x, x),
            "torch.nn.MultiheadAttention": lambda x: ref(x, x, x, need_weights=False)[0],
            "F.scaled_dot_product_attention (no proj.)": SDPA(h)}, [ours, fast, ref]


def saved_bytes(fn, x) -> int:
    total = 0

    def pack(t):
        nonlocal total
        total += t.numel() * t.element_size()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(x).sum()
    return total


def measure(fn, x, reps):
    def step():
        x.grad = None
        fn(x).sum().backward()
    step()  # warm-up
    sync = {"cuda": torch.cuda.synchronize, "mps": getattr(torch, "mps", None) and torch.mps.synchronize
            }.get(x.device.type) or (lambda: None)
    sync()
    if x.is_cuda:
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    mem = torch.cuda.max_memory_allocated() - base if x.is_cuda else saved_bytes(fn, x)
    return sorted(times)[len(times) // 2], mem


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--T", type=int, nargs="*", default=None,
                    help="sequence lengths (default: 128 256 512, and 1024 2048 on a GPU)")
    ap.add_argument("--B", type=int, default=4)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--reps", type=int, default=5)
    add_device_args(ap)
    args = ap.parse_args()
    dev, where = setup(args)
    if args.T is None:
        args.T = [128, 256, 512] + ([1024, 2048] if dev.type != "cpu" else [])
    dtypes = [torch.float32] + ([torch.bfloat16] if dev.type == "cuda" else [])
    print(f"{where}; B={args.B}, d_model={args.d}, heads={args.heads}, forward+backward, median of {args.reps}")
    print("| dtype | T | implementation | ms | x torch MHA | memory MiB |\n|---|---:|---|---:|---:|---:|")
    for dtype in dtypes:
        fns, mods = models(args.d, args.heads)
        for m in mods:
            m.to(dev, dtype)
        for T in args.T:
            x = torch.randn(args.B, T, args.d, device=dev, dtype=dtype, requires_grad=True)
            res = {k: measure(f, x, args.reps) for k, f in fns.items()}
            base = res["torch.nn.MultiheadAttention"][0]
            for k, (t, mem) in res.items():
                print(f"| {str(dtype)[6:]} | {T} | {k} | {t * 1e3:.1f} | {t / base:.2f} | {mem / 2**20:.1f} |",
                      flush=True)


if __name__ == "__main__":
    main()
