"""Training throughput of chapter 8's date translator: tokens per second.

    python benchmarks/train_throughput.py             # the chapter's model on d2l.device()
    python benchmarks/train_throughput.py --steps 300 --batch 256 --d-model 256

Tokens are source + target positions (padding included) per optimizer step.  On CUDA
it also reports model FLOP utilisation: 6 * parameters * tokens (forward + backward of
every weight, attention scores ignored) over the GPU's bf16 peak (``--peak-tflops``,
default H100 SXM dense bf16, 989).
"""
from __future__ import annotations

import argparse
import platform
import time

import torch

import d2lmini as d2l


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--device", default=None, help="default: d2lmini.device()")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device(args.device) if args.device else d2l.device()
    d2l.set_seed(0)
    data = d2l.DateTranslation(20000, seed=0)
    src, tgt_in, tgt_out = data.tensors()
    model = d2l.Transformer(len(data.src_vocab), len(data.tgt_vocab), d_model=args.d_model,
                            num_heads=args.heads, num_layers=args.layers, d_ff=4 * args.d_model,
                            dropout=0.0).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ce = torch.nn.CrossEntropyLoss(ignore_index=0)
    loss = lambda logits, y: ce(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    g = torch.Generator().manual_seed(0)

    def batches():
        while True:
            idx = torch.randint(len(data), (args.batch,), generator=g)
            yield src[idx], tgt_in[idx], tgt_out[idx]

    tokens_per_step = args.batch * (src.shape[1] + tgt_in.shape[1])
    d2l.train(model, loss, opt, batches, device=dev, max_steps=10, amp=True, progress=False)  # warm-up
    if dev.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    d2l.train(model, loss, opt, batches, device=dev, max_steps=args.steps, amp=True, progress=False)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    sec = time.perf_counter() - t0
    n_params = sum(p.numel() for p in model.parameters())
    tok_s = tokens_per_step * args.steps / sec
    name = torch.cuda.get_device_name() if dev.type == "cuda" else platform.machine()
    print(f"device: {dev} ({name}), torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print("| model | params | batch | threads | steps/s | tokens/s | MFU |\n|---|---:|---:|---:|---:|---:|---:|")
    mfu = (f"{6 * n_params * tok_s / (args.peak_tflops * 1e12):.2%}" if dev.type == "cuda" else "n/a")
    print(f"| d_model={args.d_model}, {args.layers} layer(s), {args.heads} heads | {n_params:,} | "
          f"{args.batch} | {torch.get_num_threads()} | {args.steps / sec:.1f} | {tok_s:,.0f} | {mfu} |")


if __name__ == "__main__":
    main()
