"""What one sequence layer costs as the length T grows, and how far its information
travels: a GRU, a causal Conv1d and self-attention, side by side (chapter 11).

    rows = cost_table([16, 64, 256, 1024], d_model=64)   # one dict per (layer, T)

``benchmarks/layer_cost.py`` prints the same table from the command line.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, Sequence

import torch
from torch import nn

from .attention import MultiHeadAttention
from .rnn import ConvStack
from .utils import check_positive_int, check_tensor


class GRULayer(nn.Module):
    """One ``nn.GRU`` layer as a sequence-to-sequence map: (B, T, d) -> (B, T, d)."""

    def __init__(self, d_model: int):
        super().__init__()
        self.rnn = nn.GRU(d_model, d_model, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


class SelfAttention(nn.Module):
    """One multi-head self-attention layer (from scratch, keeps its (B, h, T, T)
    weights): (B, T, d) -> (B, T, d)."""

    def __init__(self, d_model: int, num_heads: int = 4):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)

    def forward(self, x):
        return self.attn(x, x, x)


def sequence_layers(d_model: int, kernel_size: int = 3,
                    num_heads: int = 4) -> dict[str, nn.Module]:
    """The three layers of the notes' table, each (B, T, d) -> (B, T, d), same d."""
    return {"GRU": GRULayer(d_model),
            f"Conv1d (k={kernel_size})": ConvStack(d_model, 1, kernel_size),
            "self-attention": SelfAttention(d_model, num_heads)}


class _SavedTensors:
    """Context manager that adds up the distinct storages autograd saves for backward,
    leaving out ``exclude`` (parameters and inputs: they exist whether or not we
    train)."""

    def __init__(self, exclude=()):
        self.skip = {t.untyped_storage().data_ptr() for t in exclude}
        self.seen, self.bytes = set(), 0

    def pack(self, t):
        s = t.untyped_storage()
        # a view or a re-saved weight counts once
        if s.data_ptr() not in self.skip | self.seen:
            self.seen.add(s.data_ptr())
            self.bytes += s.nbytes()
        return t

    def __enter__(self):
        self.hooks = torch.autograd.graph.saved_tensors_hooks(self.pack, lambda t: t)
        self.hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self.hooks.__exit__(*exc)


def saved_bytes(layer: nn.Module, x: torch.Tensor) -> int:
    """Bytes of the distinct tensors autograd keeps for the backward pass of
    ``layer(x).sum()``, parameters and ``x`` left out: the activation memory a layer
    costs during training."""
    with _SavedTensors([x, *layer.parameters()]) as saved:
        layer(x).sum()
    return saved.bytes


def layer_times(layer: nn.Module, T: int, d_model: int, batch_size: int = 4,
                reps: int = 7,
                device: torch.device | str | None = None) -> tuple[list[float], int]:
    """Seconds of ``reps`` runs of forward + backward on x (batch_size, T, d_model),
    after one warm-up run, and the bytes saved for backward.  The layer is moved to
    ``device`` (default: where it is)."""
    check_positive_int(T, "T"), check_positive_int(reps, "reps")
    dev = (torch.device(device) if device is not None
           else next(layer.parameters()).device)
    layer = layer.to(dev)
    x = torch.randn(batch_size, T, d_model, device=dev, requires_grad=True)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)

    def step():
        x.grad = None
        layer.zero_grad(set_to_none=True)
        layer(x).sum().backward()
    with _SavedTensors([x, *layer.parameters()]) as saved:
        step()                                                    # warm-up, and memory
    times = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    return times, saved.bytes


def layer_cost(layer: nn.Module, T: int, d_model: int, batch_size: int = 4,
               reps: int = 7,
               device: torch.device | str | None = None) -> tuple[float, int]:
    """Seconds of forward + backward on x (batch_size, T, d_model), the median of
    ``reps`` runs (:func:`layer_times`), and the bytes saved for backward."""
    times, nbytes = layer_times(layer, T, d_model, batch_size, reps, device)
    return statistics.median(times), nbytes


def cost_table(T_values: Sequence[int], d_model: int = 64, batch_size: int = 2,
               kernel_size: int = 3, num_heads: int = 4, reps: int = 7,
               device: torch.device | str | None = None, seed: int = 0) -> list[dict]:
    """Time and memory of one layer of each kind at every T.

    Returns one dict per (layer, T): ``{"layer", "T", "ms", "ms_min", "ms_max",
    "MiB"}``: the median, fastest and slowest of ``reps`` runs of forward + backward,
    and the MiB saved for backward.
    """
    torch.manual_seed(seed)
    layers = sequence_layers(d_model, kernel_size, num_heads)
    rows = []
    for name, layer in layers.items():
        for T in T_values:
            times, mem = layer_times(layer, T, d_model, batch_size, reps,
                                     device or "cpu")
            rows.append({"layer": name, "T": T,
                         "ms": 1e3 * statistics.median(times),
                         "ms_min": 1e3 * min(times), "ms_max": 1e3 * max(times),
                         "MiB": mem / 2**20})
    return rows


@torch.no_grad()
def attention_parts(B: int, T: int, d_model: int = 64, num_heads: int = 4,
                    reps: int = 7, seed: int = 0) -> dict[str, float]:
    """Where the forward time of one self-attention layer goes, on the CPU: the
    median milliseconds of ``reps`` runs of each step on x (B, T, d_model):
    ``"projections"`` (W_q, W_k, W_v and W_o), ``"QK^T"`` (the scores),
    ``"scale + softmax"`` (element-wise over the (B, h, T, T) scores) and
    ``"weights @ V"``; ``"score MiB"``: the size of one (B, h, T, T) float32
    tensor."""
    check_positive_int(B, "B"), check_positive_int(T, "T")
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, d_model, generator=g)
    W = [torch.randn(d_model, d_model, generator=g) / d_model ** 0.5 for _ in range(4)]
    d_k = d_model // num_heads
    split = lambda y: y.view(B, T, num_heads, d_k).transpose(1, 2)
    q, k, v = (split(x @ w) for w in W[:3])
    s = q @ k.transpose(-1, -2)
    a = (s / d_k ** 0.5).softmax(-1)
    o = (a @ v).transpose(1, 2).reshape(B, T, d_model)
    steps = {"projections": lambda: [x @ w for w in W[:3]] + [o @ W[3]],
             "QK^T": lambda: q @ k.transpose(-1, -2),
             "scale + softmax": lambda: (s / d_k ** 0.5).softmax(-1),
             "weights @ V": lambda: a @ v}
    out = {}
    for name, f in steps.items():
        f()                                                          # warm-up
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
        out[name] = 1e3 * statistics.median(times)
    out["score MiB"] = s.numel() * s.element_size() / 2**20
    return out


def path_length(layers: Callable[[torch.Tensor], list[torch.Tensor]],
                x: torch.Tensor) -> int | None:
    """Fewest layers after which the LAST position's output depends on the FIRST
    input.

    ``layers(x)`` returns every layer's output, a list of (B, T, d) tensors.  Measured
    with gradients: layer l counts when d out_l[:, T-1] / d x[:, 0] is not exactly
    zero.
    Returns l (1-based), or None if no layer of the stack reaches that far.
    """
    check_tensor(x, "x", ndim=3, floating=True)
    x = x.detach().requires_grad_(True)
    outs = layers(x)
    for l, out in enumerate(outs, start=1):
        g, = torch.autograd.grad(out[:, -1].sum(), x, retain_graph=True,
                                 allow_unused=True)
        if g is not None and bool((g[:, 0] != 0).any()):
            return l
    return None


def gradient_by_distance(layer: Callable[[torch.Tensor], torch.Tensor],
                         x: torch.Tensor) -> torch.Tensor:
    """How strongly each output position still feels the first input:
    ``g[t] = || d out[:, t] / d x[:, 0] ||`` for t = 0..T-1 (one backward pass per t).
    x (B, T, d) -> (T,)."""
    check_tensor(x, "x", ndim=3, floating=True)
    x = x.detach().requires_grad_(True)
    out = layer(x)
    g = []
    for t in range(x.shape[1]):
        grad, = torch.autograd.grad(out[:, t].sum(), x, retain_graph=True)
        g.append(grad[:, 0].norm())
    return torch.stack(g)
