"""A small, general training loop with a progress bar and a loss history."""
from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Any, Callable, Iterable

import torch
from tqdm.auto import tqdm


class History:
    """What :func:`train` records: one loss per step and per epoch, plus metrics.

    ``step_loss`` and ``epoch_loss`` are lists of floats.  While training runs on a
    GPU, the newest step losses wait on the device (reading a number from a GPU makes
    the CPU wait for all queued work): they are copied in one transfer when someone
    reads ``step_loss`` or ``epoch_loss``, and by ``train`` every ``sync_every``
    steps and at the end.
    """

    def __init__(self):
        self.metrics: dict[str, list[float]] = {}
        self.steps, self.seconds = 0, 0.0
        self._losses: list[float] = []          # step losses read so far
        self._pending: list[torch.Tensor] = []  # step losses not read yet (0-d tensors)
        self._epoch_ends: list[int] = []        # number of steps at the end of each epoch
        self._epoch_loss: list[float] = []

    def add_step(self, loss: torch.Tensor) -> None:
        """Record one step's (scalar) loss without reading it."""
        self.steps += 1
        self._pending.append(loss.detach())

    def end_epoch(self) -> None:
        self._epoch_ends.append(self.steps)

    def sync(self) -> None:
        """Read the waiting step losses: one device -> host copy for all of them (on a
        GPU the CPU waits here for the queued work to finish)."""
        if self._pending:
            try:
                self._losses += torch.stack(self._pending).tolist()
            except RuntimeError:  # on different devices: one at a time
                self._losses += [t.item() for t in self._pending]
            self._pending = []

    @property
    def step_loss(self) -> list[float]:
        self.sync()
        return self._losses

    @property
    def epoch_loss(self) -> list[float]:
        """The mean step loss of each finished epoch."""
        losses = self.step_loss
        while len(self._epoch_loss) < len(self._epoch_ends):
            i = len(self._epoch_loss)
            lo, hi = (self._epoch_ends[i - 1] if i else 0), self._epoch_ends[i]
            total = 0.0
            for v in losses[lo:hi]:
                total += v
            self._epoch_loss.append(total / (hi - lo))
        return self._epoch_loss

    def __repr__(self) -> str:
        return (f"History(steps={self.steps}, epochs={len(self._epoch_ends)}, "
                f"metrics={list(self.metrics)}, seconds={self.seconds:.1f})")


def _to(batch, dev):
    nb = dev.type == "cuda"  # copy while the GPU works on the previous step
    return tuple(t.to(dev, non_blocking=nb) if isinstance(t, torch.Tensor) else t for t in batch)


def _on_cpu(batch) -> bool:
    return all(t.device.type == "cpu" for t in batch if isinstance(t, torch.Tensor))


def train(net: Callable[..., torch.Tensor], loss: Callable[[Any, Any], torch.Tensor],
          updater: torch.optim.Optimizer | Callable[[], None],
          data: Iterable | Callable[[], Iterable], num_epochs: int = 1, *,
          device: torch.device | str | None = None, scheduler=None,
          max_steps: int | None = None, max_seconds: float | None = None,
          grad_clip: float | None = None, amp: bool = False, compile: bool | dict = False,
          eval_fn: Callable[[], dict[str, float]] | None = None,
          callbacks: Iterable[Callable[[Any, History], None]] = (),
          progress: bool = True, desc: str = "train", sync_every: int = 50) -> History:
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
    ``history.metrics[name]``; ``callbacks(net, history)`` run after each step.
    ``amp=True`` uses bfloat16 autocast on CUDA (no-op on CPU); ``compile=True`` runs
    ``torch.compile(net)`` (or pass a dict of its options, e.g. ``{"mode": "max-autotune"}``).

    The losses stay on the device and are read every ``sync_every`` steps (progress
    bar) and at the end, so the CPU does not wait for the GPU in between (see
    :class:`History`).  A net with a ``check_inputs(*inputs)`` method (e.g.
    ``Transformer``) has each batch checked on the CPU before it moves to the device.
    """
    if num_epochs < 1:
        raise ValueError(f"num_epochs must be >= 1, got {num_epochs}")
    if not (hasattr(updater, "step") or callable(updater)):
        raise TypeError(f"updater must be an optimizer or a function, got {type(updater).__name__}")
    if not isinstance(sync_every, int) or sync_every < 1:
        raise ValueError(f"sync_every must be a positive int, got {sync_every!r}")
    is_optim = hasattr(updater, "step") and hasattr(updater, "zero_grad")
    dev = torch.device(device) if device is not None else None
    autocast = (torch.autocast("cuda", dtype=torch.bfloat16)
                if amp and dev is not None and dev.type == "cuda" else nullcontext())
    check = getattr(net, "check_inputs", None) if dev is not None and dev.type != "cpu" else None
    options = compile if isinstance(compile, dict) else {}
    forward = torch.compile(net, **options) if compile else net
    hist, start, stop = History(), time.perf_counter(), False
    total = max_steps if max_steps is not None else num_epochs
    bar = tqdm(total=total, desc=desc, disable=not progress, leave=True)
    for epoch in range(num_epochs):
        if isinstance(net, torch.nn.Module):
            net.train()
        n = 0
        for batch in (data() if callable(data) else data):
            batch = tuple(batch)
            if check is not None and _on_cpu(batch):
                check(*batch[:-1])  # bad ids: a clear error here, not a device-side assert
            batch = _to(batch, dev) if dev is not None else batch
            *inputs, target = batch
            if is_optim:
                updater.zero_grad(set_to_none=True)
            with autocast:
                l = loss(forward(*inputs), target)
            if l.dim() > 0:
                l = l.mean()
            l.backward()
            if grad_clip is not None:
                params = net.parameters() if isinstance(net, torch.nn.Module) else []
                torch.nn.utils.clip_grad_norm_(params, grad_clip)
            updater.step() if is_optim else updater()
            if scheduler is not None:
                scheduler.step()
            hist.add_step(l)  # no .item(): the loss stays where it is
            n += 1
            for cb in callbacks:
                cb(net, hist)
            if hist.steps % sync_every == 0:
                hist.sync()  # read the waiting losses: here the CPU waits for the device
                if max_steps is not None and progress:
                    bar.set_postfix(loss=f"{hist.step_loss[-1]:.4f}", refresh=False)
            if max_steps is not None:
                bar.update(1)
            if (max_steps is not None and hist.steps >= max_steps) or (
                    max_seconds is not None and time.perf_counter() - start >= max_seconds):
                stop = True
                break
        if n == 0:
            raise ValueError(f"epoch {epoch + 1} of {num_epochs} got no batches from data "
                             f"(empty, or a one-shot iterator used up by an earlier epoch?): "
                             f"pass a non-empty list, a DataLoader, or a function that "
                             f"returns a fresh iterator")
        hist.end_epoch()
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
            if progress:
                bar.set_postfix(loss=f"{hist.epoch_loss[-1]:.4f}", refresh=False)
        if stop:
            break
    if max_steps is not None and progress:
        bar.set_postfix(loss=f"{hist.step_loss[-1]:.4f}", refresh=False)
    bar.close()
    hist.sync()  # the last losses: waits for the device to finish
    hist.seconds = time.perf_counter() - start
    return hist
