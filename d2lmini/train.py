"""A small, general training loop with a progress bar and a loss history."""
from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch
from tqdm.auto import tqdm


@dataclass
class History:
    """What :func:`train` records: one loss per step and per epoch, plus metrics."""
    step_loss: list[float] = field(default_factory=list)
    epoch_loss: list[float] = field(default_factory=list)
    metrics: dict[str, list[float]] = field(default_factory=dict)
    steps: int = 0
    seconds: float = 0.0


def _to(batch, dev):
    return tuple(t.to(dev) if isinstance(t, torch.Tensor) else t for t in batch)


def train(net: Callable[..., torch.Tensor], loss: Callable[[Any, Any], torch.Tensor],
          updater: torch.optim.Optimizer | Callable[[], None],
          data: Iterable | Callable[[], Iterable], num_epochs: int = 1, *,
          device: torch.device | str | None = None, scheduler=None,
          max_steps: int | None = None, max_seconds: float | None = None,
          grad_clip: float | None = None, amp: bool = False,
          eval_fn: Callable[[], dict[str, float]] | None = None,
          callbacks: Iterable[Callable[[Any, History], None]] = (),
          progress: bool = True, desc: str = "train") -> History:
    """Train ``net`` and return its :class:`History`.

    Each batch is a tuple ``(*inputs, target)``: the loop computes
    ``loss(net(*inputs), target)`` (averaged if it is per-example), back-propagates
    and steps ``updater``: a ``torch.optim`` optimizer, or a function called after
    ``backward()`` that updates the parameters and zeroes their gradients
    (e.g. ``lambda: sgd([w, b], lr)``).  ``data`` is re-iterable (a DataLoader, a
    list) or a function returning a fresh iterator per epoch (e.g. ``data_iter``).

    Training stops after ``num_epochs``, ``max_steps`` or ``max_seconds``, whichever
    comes first.  ``eval_fn()`` runs after each epoch, with ``net.eval()`` and under
    ``torch.no_grad()``, and returns ``{name: value}`` appended to
    ``history.metrics[name]``; ``callbacks(net, history)`` run after each step.  ``amp=True`` uses bfloat16 autocast on CUDA (no-op on CPU).
    """
    if num_epochs < 1:
        raise ValueError(f"num_epochs must be >= 1, got {num_epochs}")
    if not (hasattr(updater, "step") or callable(updater)):
        raise TypeError(f"updater must be an optimizer or a function, got {type(updater).__name__}")
    is_optim = hasattr(updater, "step") and hasattr(updater, "zero_grad")
    dev = torch.device(device) if device is not None else None
    autocast = (torch.autocast("cuda", dtype=torch.bfloat16)
                if amp and dev is not None and dev.type == "cuda" else nullcontext())
    hist, start, stop = History(), time.perf_counter(), False
    total = max_steps if max_steps is not None else num_epochs
    bar = tqdm(total=total, desc=desc, disable=not progress, leave=True)
    for epoch in range(num_epochs):
        if isinstance(net, torch.nn.Module):
            net.train()
        total_loss, n = 0.0, 0
        for batch in (data() if callable(data) else data):
            batch = _to(batch, dev) if dev is not None else tuple(batch)
            *inputs, target = batch
            if is_optim:
                updater.zero_grad(set_to_none=True)
            with autocast:
                l = loss(net(*inputs), target)
            if l.dim() > 0:
                l = l.mean()
            l.backward()
            if grad_clip is not None:
                params = net.parameters() if isinstance(net, torch.nn.Module) else []
                torch.nn.utils.clip_grad_norm_(params, grad_clip)
            updater.step() if is_optim else updater()
            if scheduler is not None:
                scheduler.step()
            hist.steps += 1
            hist.step_loss.append(l.item())
            total_loss, n = total_loss + hist.step_loss[-1], n + 1
            for cb in callbacks:
                cb(net, hist)
            if max_steps is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{hist.step_loss[-1]:.4f}", refresh=False)
            if (max_steps is not None and hist.steps >= max_steps) or (
                    max_seconds is not None and time.perf_counter() - start >= max_seconds):
                stop = True
                break
        hist.epoch_loss.append(total_loss / max(n, 1))
        if eval_fn is not None:  # in eval mode (no dropout) and without a graph
            was_training = getattr(net, "training", None)
            if isinstance(net, torch.nn.Module):
                net.eval()
            with torch.no_grad():
                metrics = eval_fn()
            if isinstance(net, torch.nn.Module):
                net.train(was_training)
            for k, v in metrics.items():
                hist.metrics.setdefault(k, []).append(float(v))
        if max_steps is None:
            bar.update(1)
            bar.set_postfix(loss=f"{hist.epoch_loss[-1]:.4f}", refresh=False)
        if stop:
            break
    bar.close()
    hist.seconds = time.perf_counter() - start
    return hist
