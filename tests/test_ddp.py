"""d2l.train under torch.distributed: two gloo processes launched by torchrun train the
same model as one process on the full batches (float64), with and without gradient
accumulation; the CLI's checkpoint loads on one process; two "nodes" on 127.0.0.1."""
import os
import pathlib
import socket
import subprocess
import sys

import pytest
import torch

import d2lmini as d2l
from d2lmini.train import _shard

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORKER = str(pathlib.Path(__file__).with_name("ddp_worker.py"))
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(cmd, timeout=240):
    out = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


def _load(path):
    return torch.load(path, weights_only=True)


def _max_diff(a: dict, b: dict) -> float:
    return max((a[k] - b[k]).abs().max().item() for k in a)


@pytest.mark.parametrize("accumulate", [1, 2])
def test_two_processes_train_what_one_process_trains(tmp_path, accumulate):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    _run([sys.executable, WORKER, str(one), str(accumulate)])
    _run(TORCHRUN + ["--standalone", "--nproc_per_node=2", WORKER, str(two),
                     str(accumulate)])
    ref, r0, r1 = (_load(p) for p in (one / "rank0.pt", two / "rank0.pt",
                                       two / "rank1.pt"))
    assert (ref["world"], r0["world"]) == (1, 2)
    assert ref["steps"] == r0["steps"] == 6
    assert _max_diff(ref["state"], r0["state"]) <= 1e-9
    assert _max_diff(r0["state"], r1["state"]) == 0          # DDP keeps ranks in step
    # the logged loss is the mean over the ranks: the full batch's loss, on every rank
    assert r0["loss"] == r1["loss"]
    assert torch.allclose(torch.tensor(r0["loss"]), torch.tensor(ref["loss"]),
                          atol=1e-12)


def test_the_cli_trains_under_torchrun_and_saves_a_model_one_process_loads(tmp_path):
    flags = ["--steps", "4", "--d-model", "16", "--layers", "1", "--block-size", "16",
             "--chars", "5000", "--batch-size", "8", "--dtype", "float64",
             "--device", "cpu"]
    _run([sys.executable, "-m", "d2lmini.ddp", *flags, "--checkpoint",
          str(tmp_path / "one.pt")])
    out = _run(TORCHRUN + ["--standalone", "--nproc_per_node=2", "-m", "d2lmini.ddp",
                           *flags, "--checkpoint", str(tmp_path / "two.pt")])
    assert out.stdout.count("processes: 2, steps: 4") == 1          # rank 0 only
    model, vocab = d2l.load(tmp_path / "two.pt")
    ref, _ = d2l.load(tmp_path / "one.pt")
    assert isinstance(model, d2l.GPT) and len(vocab) == model.vocab_size
    assert _max_diff(ref.state_dict(), model.state_dict()) <= 1e-9


def test_two_nodes_on_localhost(tmp_path):
    port = _port()
    procs = [subprocess.Popen(
        TORCHRUN + ["--nnodes=2", "--nproc_per_node=1", f"--node_rank={r}",
                    "--master_addr=127.0.0.1", f"--master_port={port}", WORKER,
                    str(tmp_path), "1"], env=ENV, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True) for r in (0, 1)]
    for p in procs:
        out, _ = p.communicate(timeout=240)
        assert p.returncode == 0, out[-3000:]
    r0, r1 = _load(tmp_path / "rank0.pt"), _load(tmp_path / "rank1.pt")
    assert r0["world"] == r1["world"] == 2
    assert _max_diff(r0["state"], r1["state"]) == 0 and r0["loss"] == r1["loss"]


# ------------------------------------------------------------------ one process
def _fit(batches, accumulate, steps=None):
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 1).double()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    hist = d2l.train(net, torch.nn.MSELoss(), opt, batches, accumulate=accumulate,
                     max_steps=steps, progress=False)
    return net, hist


def test_accumulation_equals_the_big_batch():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(32, 3, generator=g, dtype=torch.float64)
    y = X @ torch.tensor([[1.0], [-2.0], [0.5]], dtype=torch.float64)
    small = list(zip(X.split(4), y.split(4)))                 # 8 batches of 4
    big = list(zip(X.split(8), y.split(8)))                   # 4 batches of 8
    a, ha = _fit(small, accumulate=2)
    b, hb = _fit(big, accumulate=1)
    assert ha.steps == hb.steps == 4
    assert torch.allclose(a.weight, b.weight, atol=1e-12)
    assert torch.allclose(torch.tensor(ha.step_loss), torch.tensor(hb.step_loss),
                          atol=1e-12)
    # a short last group (3 batches of 4 with accumulate=2) steps on its mean
    c, hc = _fit(small[:3], accumulate=2)
    d, _ = _fit([(X[:8], y[:8]), (X[8:12], y[8:12])], accumulate=1)
    assert hc.steps == 2 and torch.allclose(c.weight, d.weight, atol=1e-12)


def test_bad_settings_are_named():
    net = torch.nn.Linear(3, 1)
    data = [(torch.randn(4, 3), torch.randn(4, 1))]
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="accumulate must be a positive int"):
        d2l.train(net, torch.nn.MSELoss(), opt, data, accumulate=0, progress=False)
    with pytest.raises(TypeError, match="checkpoint needs a d2lmini model"):
        d2l.train(net, torch.nn.MSELoss(), opt, data, checkpoint="x.pt", progress=False)
    with pytest.raises(ValueError, match="do not divide among 2 processes"):
        _shard((torch.zeros(5, 3), torch.zeros(5)), 0, 2, 0)
    a, b = (_shard((torch.arange(6), torch.arange(6) * 10), r, 2, 0) for r in (0, 1))
    assert a[0].tolist() == [0, 1, 2] and b[1].tolist() == [30, 40, 50]
