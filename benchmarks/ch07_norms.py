"""Chapter 7: the sorting-task experiments over five seeds, too long to run live.

    OMP_NUM_THREADS=1 python benchmarks/ch07_norms.py              # every part, ~15 min
    OMP_NUM_THREADS=1 python benchmarks/ch07_norms.py --parts act  # one part

Every run is chapter 7's sorting task (8 tokens drawn from 8 values, output: the same
tokens sorted) and its model (embedding x sqrt(d) + sinusoidal PE, encoder blocks with
d_model 32, 4 heads, d_ff 64, a linear read-out).  Seed s initialises the model with
``d2l.set_seed(s)`` and draws the training batches from generator seed 1 + s, so every
variant of one seed starts from the same weights (where the shapes agree) and sees the
same batches; seed 0 is the run the chapter trains live.  The metric is the held-out
loss on 2,000 fixed test sequences (generator seed 12345), in eval mode.

Parts (``--parts``, comma-separated; results of other parts already in the file stay):
  depth  post-norm vs pre-norm, with and without a 20-step warm-up, 2/6/12 blocks,
         80 steps at lr 1e-2 (the chapter's stress test), and 300 steps for 6 and 12
         blocks (does post-norm leave the input-blind floor when given longer?)
  act    the FFN's activation: ReLU, GELU, tanh, sigmoid (2 pre-norm blocks, 300 steps
         at lr 3e-3, 20 warm-up steps), plus the FFN pre-activations of the trained
         models (how often would tanh or sigmoid saturate?)
  gen    note 003's "normalisation improves generalisation": 256 fixed training
         sequences, 2 pre-norm blocks with and without LayerNorm, 600 steps at lr 3e-3,
         20 warm-up steps: held-out loss, training loss and their gap
  pad    LayerNorm vs BatchNorm vs BatchNorm whose statistics skip the pads, trained on
         padded batches of sequences of 2..8 tokens (2 post-norm blocks, 300 steps at
         lr 3e-3, 20 warm-up steps), tested unpadded in eval mode
Writes ``d2lmini/results/ch07_norms.json``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time

import torch
import torch.nn.functional as F
from torch import nn

import d2lmini as d2l
from d2lmini.checkpoints import machine
from d2lmini.io import RESULTS, save_results

V, T_LEN, B, D = 8, 8, 32, 32
SEEDS = 5


class SortNet(nn.Module):
    """Chapter 7's model; ``activation``, ``norm`` ("layer", "none") are the ablations'
    switches (the defaults are the chapter's)."""

    def __init__(self, num_blocks, norm_first, d_model=D, activation="relu",
                 norm="layer"):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(V, d_model)
        self.pos = d2l.PositionalEncoding(d_model, max_len=T_LEN)
        self.blocks = nn.ModuleList(
            d2l.EncoderBlock(d_model, 4, 2 * d_model, 0.0, norm_first)
            for _ in range(num_blocks))
        self.norm = d2l.LayerNorm(d_model) if norm_first else nn.Identity()
        self.out = nn.Linear(d_model, V)
        for blk in self.blocks:
            if activation != "relu":
                ffn = d2l.PositionWiseFFN(d_model, 2 * d_model, activation=activation)
                ffn.load_state_dict(blk.ffn.state_dict())   # same initial weights
                blk.ffn = ffn
            if norm == "none":
                blk.norm1, blk.norm2 = nn.Identity(), nn.Identity()
        if norm == "none":
            self.norm = nn.Identity()

    def forward(self, tokens):
        h = self.pos(self.embedding(tokens) * math.sqrt(self.d_model))
        for block in self.blocks:
            h = block(h)
        return self.out(self.norm(h))


def sort_batches(steps, seed=1):
    g = torch.Generator().manual_seed(seed)
    xs = [torch.randint(0, V, (B, T_LEN), generator=g) for _ in range(steps)]
    return [(x, x.sort(dim=1).values) for x in xs]


def seq_loss(logits, y):
    return F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))


def test_set():
    g = torch.Generator().manual_seed(12345)
    x = torch.randint(0, V, (2000, T_LEN), generator=g)
    return x, x.sort(dim=1).values


@torch.no_grad()
def heldout(net, x, y):
    net.eval()
    loss = seq_loss(net(x), y).item()
    net.train()
    return loss


def fit(net, data, lr, warmup):
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    ramp = lambda s: min(1.0, (s + 1) / warmup)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, ramp) if warmup else None
    return d2l.train(net, seq_loss, opt, data, scheduler=sched, progress=False)


def part_depth(out):
    x_test, y_test = test_set()
    res = {}
    for steps, depths in ((80, (2, 6, 12)), (300, (6, 12))):
        for n in depths:
            for norm in ("post", "pre"):
                for warm in (0, 20):
                    key = f"{steps} steps, {n} blocks, {norm}-norm, warm-up {warm}"
                    runs = []
                    for s in range(SEEDS):
                        d2l.set_seed(s)
                        net = SortNet(n, norm == "pre")
                        hist = fit(net, sort_batches(steps, 1 + s), 1e-2, warm)
                        runs.append({"heldout": heldout(net, x_test, y_test),
                                     "train_last10": sum(hist.step_loss[-10:]) / 10,
                                     "curve": [round(v, 4) for v in hist.step_loss]})
                    res[key] = runs
                    print(key, [round(r["heldout"], 3) for r in runs], flush=True)
    out["depth"] = res


def part_act(out):
    x_test, y_test = test_set()
    res, pre = {}, {}
    for act in ("relu", "gelu", "tanh", "sigmoid"):
        runs = []
        for s in range(SEEDS):
            d2l.set_seed(s)
            net = SortNet(2, True, activation=act)
            fit(net, sort_batches(300, 1 + s), 3e-3, 20)
            runs.append(heldout(net, x_test, y_test))
            if act == "relu":
                zs = []
                hook = lambda m, i, o: zs.append(o.detach().flatten())
                hs = [b.ffn.linear1.register_forward_hook(hook) for b in net.blocks]
                heldout(net, x_test, y_test)
                for h in hs:
                    h.remove()
                z = torch.cat(zs)
                pre.setdefault("std", []).append(z.std().item())
                pre.setdefault("frac_abs_gt_2", []).append((z.abs() > 2).float().mean().item())
                pre.setdefault("mean_tanh_grad", []).append((1 - z.tanh() ** 2).mean().item())
                sig = torch.sigmoid(z)
                pre.setdefault("mean_sigmoid_grad", []).append((sig * (1 - sig)).mean().item())
        res[act] = runs
        print(act, [round(v, 3) for v in runs], flush=True)
    out["act"] = {"heldout": res, "relu_preactivations": pre}


def part_gen(out):
    x_test, y_test = test_set()
    res = {}
    for norm in ("layer", "none"):
        runs = []
        for s in range(SEEDS):
            g = torch.Generator().manual_seed(1000 + s)
            x = torch.randint(0, V, (256, T_LEN), generator=g)
            train = list(zip(x.split(B), x.sort(dim=1).values.split(B)))
            d2l.set_seed(s)
            net = SortNet(2, True, norm=norm)
            fit(net, train * 75, 3e-3, 20)                   # 600 steps, 75 epochs
            xt, yt = x, x.sort(dim=1).values
            runs.append({"heldout": heldout(net, x_test, y_test),
                         "train": heldout(net, xt, yt)})
        res[norm] = runs
        print(norm, runs, flush=True)
    out["gen"] = res


class PadSortNet(nn.Module):
    """Sorting with padding: pad id V (its embedding 0), attention masks the pads,
    the norms are LayerNorm, BatchNorm over every position, or BatchNorm over the real
    tokens only."""

    def __init__(self, norm):
        super().__init__()
        self.embedding = nn.Embedding(V + 1, D, padding_idx=V)
        self.pos = d2l.PositionalEncoding(D, max_len=T_LEN)
        self.blocks = nn.ModuleList(d2l.EncoderBlock(D, 4, 2 * D, 0.0, False)
                                    for _ in range(2))
        self.norms = []
        for blk in self.blocks:
            if norm != "layer":
                blk.norm1, blk.norm2 = MaskedBN(D, norm == "bn_masked"), MaskedBN(
                    D, norm == "bn_masked")
                self.norms += [blk.norm1, blk.norm2]
        self.out = nn.Linear(D, V)

    def forward(self, tokens):
        real = tokens != V
        for m in self.norms:
            m.real = real
        h = self.pos(self.embedding(tokens) * math.sqrt(D))
        mask = d2l.padding_mask(tokens, V)
        for block in self.blocks:
            h = block(h, mask)
        return self.out(h)


class MaskedBN(d2l.BatchNorm):
    """d2l.BatchNorm; with ``masked=True`` its training statistics (and so its
    running statistics) use only the positions where ``self.real`` is True."""

    def __init__(self, d, masked):
        super().__init__(d)
        self.masked, self.real = masked, None

    def forward(self, x):
        if not (self.masked and self.training):
            return super().forward(x)
        xs = x[self.real]                                   # (n_real, F)
        mean, var = xs.mean(0), xs.var(0, unbiased=False)
        n = xs.shape[0]
        with torch.no_grad():
            m = self.momentum
            self.running_mean.mul_(1 - m).add_(m * mean)
            self.running_var.mul_(1 - m).add_(m * var * n / (n - 1))
            self.num_batches_tracked += 1
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


def pad_batches(steps, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        lengths = torch.randint(2, T_LEN + 1, (B,), generator=g)
        x = torch.randint(0, V, (B, T_LEN), generator=g)
        y = x.clone()
        for i, n in enumerate(lengths.tolist()):
            x[i, n:] = V
            y[i, :n] = x[i, :n].sort().values
            y[i, n:] = -100
        L = int(lengths.max())
        out.append((x[:, :L], y[:, :L]))
    return out


def part_pad(out):
    g = torch.Generator().manual_seed(12345)
    tests = []
    for n in range(2, T_LEN + 1):                      # 250 sequences of each length
        x = torch.randint(0, V, (250, n), generator=g)
        tests.append((x, x.sort(dim=1).values))
    loss = lambda lg, y: F.cross_entropy(lg.reshape(-1, V), y.reshape(-1),
                                         ignore_index=-100)
    res = {}
    for norm in ("layer", "bn", "bn_masked"):
        runs = []
        for s in range(SEEDS):
            d2l.set_seed(s)
            net = PadSortNet(norm)
            opt = torch.optim.Adam(net.parameters(), lr=3e-3)
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1, (k + 1) / 20))
            d2l.train(net, loss, opt, pad_batches(300, 1 + s), scheduler=sched,
                      progress=False)
            net.eval()
            with torch.no_grad():
                runs.append(sum(loss(net(x), y).item() for x, y in tests) / len(tests))
        res[norm] = runs
        print(norm, [round(v, 3) for v in runs], flush=True)
    out["pad"] = res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--parts", default="depth,act,gen,pad")
    args = ap.parse_args()
    torch.set_num_threads(1)
    path = os.path.join(RESULTS, "ch07_norms.json")
    data = json.load(open(path)) if os.path.exists(path) else {"seconds": {}}
    for part in args.parts.split(","):
        start = time.perf_counter()
        globals()[f"part_{part}"](data)
        data["seconds"][part] = round(time.perf_counter() - start, 1)
    data.update(machine=machine(), torch=torch.__version__, seeds=SEEDS,
                settings=__doc__.split("Parts")[1].strip())
    save_results("ch07_norms", data)


if __name__ == "__main__":
    main()
