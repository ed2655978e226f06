"""Greedy generation with and without the KV cache: seconds vs number of new tokens.

    python benchmarks/kv_cache.py                          # d2l.device(), 32..512 tokens
    python benchmarks/kv_cache.py --lengths 64 256 1024 --batch 8 --device cpu --threads 1

The model is an untrained ``d2l.GPT(96, d_model=128, num_heads=4, num_layers=4,
d_ff=512)`` (the speed of generation does not depend on the weights).  Without the cache
every step re-reads the whole sequence (cost ~ n^2 over n steps); with it every step
feeds one token and attends to the stored keys and values (~ n).  The cache's memory is
2 (keys and values) * layers * batch * tokens * d_model * bytes per number.
"""
from __future__ import annotations

import argparse

import d2lmini as d2l
from _machine import add_device_args, setup


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--lengths", type=int, nargs="+", default=[32, 64, 128, 256, 512])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=8, help="prompt length")
    ap.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    add_device_args(ap)
    args = ap.parse_args()
    dev, where = setup(args)
    print(where)
    rows = d2l.kv_cache_benchmark(args.lengths, batch_size=args.batch, prompt_len=args.prompt,
                                  repeats=args.repeats, device=dev)
    print("| new tokens | with cache (s) | recompute (s) | speed-up | cache (KiB) | same output |")
    print("|---:|---:|---:|---:|---:|:---:|")
    for r in rows:
        print(f"| {r['new_tokens']} | {r['cached_s']:.3f} | {r['recompute_s']:.3f} | "
              f"{r['speedup']:.1f}x | {r['cache_bytes'] / 1024:.0f} | {r['same_output']} |")


if __name__ == "__main__":
    main()
