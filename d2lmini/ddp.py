"""Train the book's character GPT on one process or many: the same command, the same
flags, under ``torchrun``.

    python -m d2lmini.ddp --steps 200 --checkpoint gpt.pt                # one process
    torchrun --standalone --nproc_per_node=2 -m d2lmini.ddp --steps 200 \\
        --checkpoint gpt.pt                                              # two
    torchrun --nnodes=2 --nproc_per_node=1 --node_rank=0 \\
        --master_addr=10.0.0.1 --master_port=29500 -m d2lmini.ddp ...    # node 0 of 2

``torchrun`` starts one process per device and tells each its rank in environment
variables; :func:`setup` reads them and joins the process group (``nccl`` on CUDA,
``gloo`` on the CPU).  ``d2l.train`` then does the rest: DistributedDataParallel, a
slice of every batch per process, progress and the checkpoint on rank 0 only.  Every
process draws the same batches from the same seed, so one process and many see the
same data; the checkpoint loads on one process with ``d2l.load``.
"""
from __future__ import annotations

import argparse
import os

import torch

__all__ = ["setup", "teardown", "main", "average_gradients", "gradient_demo"]


def setup(device: str | None = None) -> tuple[int, int, torch.device]:
    """Join the process group ``torchrun`` describes in the environment (RANK,
    WORLD_SIZE, MASTER_ADDR, ...) and return (rank, world size, this process's
    device).  Without those variables: (0, 1, device), no process group."""
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        dev = torch.device(device) if device else _best_device()
        return 0, 1, dev
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", 0))
    want_cuda = (device or ("cuda" if torch.cuda.is_available() else "cpu")) == "cuda"
    if want_cuda:
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
    else:
        dev = torch.device("cpu")
    if not dist.is_initialized():
        dist.init_process_group("nccl" if want_cuda else "gloo")
    return dist.get_rank(), dist.get_world_size(), dev


def teardown() -> None:
    """Leave the process group (if any)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def average_gradients(model: torch.nn.Module) -> None:
    """Data parallelism by hand: replace every gradient by its mean over the
    processes (what DistributedDataParallel does, bucketed and overlapped with the
    backward pass)."""
    import torch.distributed as dist

    world = dist.get_world_size()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)       # the sum over the processes, in place
            p.grad /= world


def gradient_demo() -> None:
    """Under torchrun: each process computes the gradient of a float64 linear model on
    its slice of one batch and averages it over the processes twice, by hand with
    :func:`average_gradients` and with DistributedDataParallel.  Rank 0 prints the
    largest difference of each from the gradient of the whole batch on one process."""
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank, world, _ = setup("cpu")
    try:
        g = torch.Generator().manual_seed(0)
        X = torch.randn(64, 10, generator=g, dtype=torch.float64)
        y = torch.randn(64, 1, generator=g, dtype=torch.float64)
        torch.manual_seed(0)
        model = torch.nn.Linear(10, 1).double()
        full = torch.autograd.grad(F.mse_loss(model(X), y), list(model.parameters()))
        n = len(X) // world
        mine = slice(rank * n, (rank + 1) * n)        # this process's rows
        if rank == 0:
            print(f"{world} processes, {n} of the batch's {len(X)} rows each; largest "
                  f"gradient entry {max(f.abs().max().item() for f in full):.2f}")
        for how in ("by hand", "DDP"):
            model.zero_grad()
            net = DDP(model) if how == "DDP" else model
            F.mse_loss(net(X[mine]), y[mine]).backward()
            if how == "by hand":
                average_gradients(model)
            diff = max((p.grad - f).abs().max().item()
                       for p, f in zip(model.parameters(), full))
            if rank == 0:
                print(f"{how + ':':<9} max |averaged gradient − whole-batch gradient| "
                      f"= {diff:.1e}")
    finally:
        teardown()


def _best_device() -> torch.device:
    from .utils import device
    return device()


def _args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m d2lmini.ddp", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200, help="optimizer steps")
    ap.add_argument("--batch-size", type=int, default=32,
                    help="windows per step, over all processes together")
    ap.add_argument("--accumulate", type=int, default=1,
                    help="micro-batches per optimizer step")
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--chars", type=int, default=200_000,
                    help="characters of tiny Shakespeare to train on")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--device", choices=["cpu", "cuda"], default=None)
    ap.add_argument("--checkpoint", default=None, help="save the model here (rank 0)")
    ap.add_argument("--demo", action="store_true",
                    help="instead of training: average one batch's gradient over the "
                         "processes (by hand, then with DDP) and compare it with one "
                         "process")
    return ap.parse_args(argv)


def main(argv=None) -> None:
    from .gpt import GPT, load_corpus
    from .text import Vocab, lm_windows
    from .train import train
    from .transformer import sequence_loss

    args = _args(argv)
    if args.demo:
        return gradient_demo()
    rank, world, dev = setup(args.device)
    try:
        text = load_corpus("tinyshakespeare.txt")[:args.chars]
        vocab = Vocab(sorted(set(text)))
        x, y = lm_windows(vocab.encode(text), block_size=args.block_size)
        torch.manual_seed(args.seed)              # the same weights on every process
        model = GPT(len(vocab), d_model=args.d_model, num_heads=args.heads,
                    num_layers=args.layers, d_ff=4 * args.d_model,
                    max_len=args.block_size, pad_id=0)
        model = model.to(device=dev, dtype=getattr(torch, args.dtype))
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
        gen = torch.Generator().manual_seed(args.seed)   # the same batches everywhere

        def batches():
            while True:
                i = torch.randint(len(x), (args.batch_size,), generator=gen)
                yield x[i], y[i]

        hist = train(model, sequence_loss, opt, batches, max_steps=args.steps,
                     device=dev, accumulate=args.accumulate, progress=rank == 0,
                     checkpoint=args.checkpoint, vocab=vocab, desc=f"{world} process"
                     + ("es" if world > 1 else ""))
        if rank == 0:
            print(f"processes: {world}, steps: {hist.steps}, "
                  f"last loss: {hist.step_loss[-1]:.4f}, seconds: {hist.seconds:.1f}")
    finally:
        teardown()


if __name__ == "__main__":
    main()
