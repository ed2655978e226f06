"""Launched by tests/test_ddp.py under torchrun (or alone): train a small float64 GPT
with d2l.train on fixed batches and write this rank's history and weights to
``$OUT/rank<r>.pt``."""
import os
import sys

import torch

import d2lmini as d2l
from d2lmini.ddp import setup, teardown


def run(out: str, accumulate: int, steps: int = 6, batch: int = 8) -> None:
    rank, world, dev = setup("cpu")
    try:
        torch.manual_seed(0)
        model = d2l.GPT(13, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=10,
                        pad_id=0).double()
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        g = torch.Generator().manual_seed(1)
        data = [(x, x.roll(-1, 1)) for x in
                (torch.randint(1, 13, (batch, 10), generator=g) for _ in range(steps * accumulate))]
        hist = d2l.train(model, d2l.sequence_loss, opt, data, accumulate=accumulate,
                         progress=False)
        torch.save({"loss": hist.step_loss, "steps": hist.steps, "world": world,
                    "state": model.state_dict()}, os.path.join(out, f"rank{rank}.pt"))
    finally:
        teardown()


if __name__ == "__main__":
    run(sys.argv[1], int(sys.argv[2]))
