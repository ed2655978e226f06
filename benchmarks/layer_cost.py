"""Time and memory of one GRU, one causal Conv1d and one self-attention layer as T grows.

    python benchmarks/layer_cost.py                    # B=2, d=64, k=3, 4 heads, fp32
    python benchmarks/layer_cost.py --T 64 256 --d 256 --device cuda

Forward + backward of one layer on x (B, T, d), fastest of --reps runs; memory is the size
of the tensors saved for the backward pass (the activation memory training pays).  The
same function, d2lmini.cost.cost_table, makes the table of chapter 10.  Ratios compare
each T with the previous one: with the default T (x4 each time), x4 means linear in T and
x16 quadratic.
"""
from __future__ import annotations

import argparse

from d2lmini.cost import cost_table
from _machine import add_device_args, setup


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--T", type=int, nargs="+", default=[16, 64, 256, 1024])
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--kernel", type=int, default=3)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    add_device_args(ap, threads=1)
    args = ap.parse_args()
    dev, where = setup(args)
    rows = cost_table(args.T, d_model=args.d, batch_size=args.batch, kernel_size=args.kernel,
                      num_heads=args.heads, reps=args.reps, device=dev)
    print(f"# {where}; B={args.batch}, "
          f"d={args.d}, k={args.kernel}, h={args.heads}, float32")
    print("| layer | T | ms | x prev. T | memory MiB | x prev. T |")
    print("|---|---:|---:|---:|---:|---:|")
    prev = {}
    for r in rows:
        p = prev.get(r["layer"])
        rt = f"{r['ms'] / p['ms']:.1f}" if p else ""
        rm = f"{r['MiB'] / p['MiB']:.1f}" if p else ""
        print(f"| {r['layer']} | {r['T']} | {r['ms']:.2f} | {rt} | {r['MiB']:.2f} | {rm} |")
        prev[r["layer"]] = r


if __name__ == "__main__":
    main()
