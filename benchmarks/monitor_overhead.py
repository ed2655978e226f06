"""How much does d2lmini.TrainingMonitor add to training time?

    python benchmarks/monitor_overhead.py                 # 300 steps, monitor defaults
    python benchmarks/monitor_overhead.py --steps 500 --every 10 --rounds 3

Trains a small d2l.Transformer on d2l.DateTranslation for a fixed number of steps,
without the monitor and with it in three modes: "record" (snapshots only: what a
script or test gets), "live" (a frame is drawn at each snapshot, within the default
5 % time budget: what a notebook gets) and "live, every snapshot" (no budget).
Rounds alternate the modes; the fastest round of each counts (shared machines are
noisy; for the same reason CPU runs use one torch thread unless --threads says
otherwise).  Prints a table with the overhead in percent, then the animation's size.
"""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

import d2lmini as d2l
from _machine import add_device_args, setup as machine_setup


def setup(dev, n=2000, batch_size=64):
    data = d2l.DateTranslation(n, seed=0)
    src, tgt_in, tgt_out = data.tensors(dev)

    def batches():
        perm = torch.randperm(n, device=dev)
        for i in range(0, n, batch_size):
            idx = perm[i: i + batch_size]
            yield src[idx], tgt_in[idx], tgt_out[idx]

    length = int((src[0] != 0).sum())  # the probe: one example, without its padding
    probe = (src[:1, :length], tgt_in[:1])
    tokens = ([list(data.pairs[0][0])], [["<bos>"] + list(data.pairs[0][1])])
    return data, batches, probe, tokens


def run(mode: str, steps: int, every: int, dev):
    d2l.set_seed(0)
    data, batches, probe, (src_tok, tgt_tok) = setup(dev)
    net = d2l.Transformer(len(data.src_vocab), len(data.tgt_vocab), d_model=32, num_heads=4,
                          num_layers=2, d_ff=64, dropout=0.1).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    loss = lambda logits, y: F.cross_entropy(logits.transpose(1, 2), y, ignore_index=0)
    monitor = None
    if mode != "none":
        monitor = d2l.TrainingMonitor(probe, every=every, src_tokens=src_tok, tgt_tokens=tgt_tok,
                                      live=mode != "record",
                                      max_overhead=None if mode == "live, every snapshot" else 0.05)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    hist = d2l.train(net, loss, opt, batches, num_epochs=10**6, max_steps=steps, device=dev,
                     callbacks=[monitor] if monitor else [], progress=False)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, hist, monitor


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--every", type=int, default=20, help="monitor snapshot interval (its default)")
    ap.add_argument("--rounds", type=int, default=2)
    add_device_args(ap, threads=1)  # 1: steadier timings on a shared machine; 0: torch's
    args = ap.parse_args()
    dev, where = machine_setup(args)
    modes = ["none", "record", "live", "live, every snapshot"]
    run("none", 20, args.every, dev)  # warm-up: allocator, kernels, matplotlib import
    best, monitors = {m: float("inf") for m in modes}, {}
    for r in range(args.rounds):
        for m in (modes if r % 2 == 0 else modes[::-1]):
            seconds, hist, monitor = run(m, args.steps, args.every, dev)
            best[m] = min(best[m], seconds)
            monitors[m] = monitor
    print(f"{where}; {args.steps} steps, every={args.every}, best of {args.rounds} rounds, "
          f"final loss {hist.step_loss[-1]:.3f}")
    print("| mode | seconds | overhead % | snapshots | redraws | self-measured % |")
    print("|---|---:|---:|---:|---:|---:|")
    for m in modes:
        mon = monitors[m]
        over = 100 * (best[m] - best["none"]) / best["none"]
        extra = ("-", "-", "-") if mon is None else (
            len(mon.snapshots), mon.redraws, f"{100 * mon.overhead:.1f}")
        print(f"| {m} | {best[m]:.2f} | {over:+.1f} | {extra[0]} | {extra[1]} | {extra[2]} |")
    mon = monitors["live"]
    t = time.perf_counter()
    html = mon.animation_html()
    print(f"animation: {len(mon.frames())} frames, {len(html) / 1e6:.2f} MB of HTML, "
          f"built in {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
