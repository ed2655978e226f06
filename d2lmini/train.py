"""A small, general training loop with a progress bar and a loss history."""
from __future__ import annotations

import math
import numbers
import os
import time
import warnings
from collections.abc import Iterable
from contextlib import nullcontext
from typing import Any, Callable

import torch
from tqdm.auto import tqdm

from .regression import squared_loss


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
        self._epoch_ends: list[int] = []  # number of steps at the end of each epoch
        self._epoch_loss: list[float] = []
        self._reduce = None   # under DDP: the mean over the ranks of the waiting losses

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
                waiting = torch.stack(self._pending)
            except RuntimeError:  # on different devices: one at a time
                waiting = torch.tensor([t.item() for t in self._pending])
            if self._reduce is not None:
                waiting = self._reduce(waiting)
            self._losses += waiting.tolist()
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


def _ranks() -> tuple[int, int]:
    """(rank, world size) of an initialised torch.distributed process group, else
    (0, 1): one process."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _mean_over_ranks(world: int):
    def reduce(t: torch.Tensor) -> torch.Tensor:
        t = t.detach().clone()
        torch.distributed.all_reduce(t)          # a sum: gloo has no average
        return t / world
    return reduce


def _shard(batch: tuple, rank: int, world: int, step: int) -> tuple:
    """This rank's contiguous 1/world slice of every tensor of the batch (dim 0)."""
    out = []
    for t in batch:
        if isinstance(t, torch.Tensor) and t.dim() > 0:
            if t.shape[0] % world:
                raise ValueError(f"batch {step + 1} has {t.shape[0]} rows, which do "
                                 f"not divide among {world} processes: use a batch "
                                 f"size that is a multiple of {world}")
            n = t.shape[0] // world
            t = t[rank * n:(rank + 1) * n]
        out.append(t)
    return tuple(out)


def _with_last(iterable):
    """Yield (item, is_last): the loop must know the last micro-batch of an epoch (it
    is the one whose gradients the processes exchange)."""
    it = iter(iterable)
    try:
        item = next(it)
    except StopIteration:
        return
    for nxt in it:
        yield item, False
        item = nxt
    yield item, True


def _to(batch, dev):
    nb = dev.type == "cuda"  # copy while the GPU works on the previous step
    return tuple(t.to(dev, non_blocking=nb) if isinstance(t, torch.Tensor) else t
                 for t in batch)


def _on_cpu(batch) -> bool:
    return all(t.device.type == "cpu" for t in batch if isinstance(t, torch.Tensor))


def _positive_number(value, name: str, allow_zero: bool = False) -> float:
    ok = (isinstance(value, numbers.Real) and not isinstance(value, bool)
          and math.isfinite(value))
    if not ok or value < 0 or (value == 0 and not allow_zero):
        want = "a finite number >= 0" if allow_zero else "a finite number > 0"
        raise ValueError(f"{name} must be {want}, got {value!r}")
    return float(value)


def _check_lrs(optimizer) -> None:
    for i, group in enumerate(getattr(optimizer, "param_groups", [])):
        lr = group.get("lr")
        if isinstance(lr, torch.Tensor):
            lr = lr.item() if lr.numel() == 1 else None
        if isinstance(lr, numbers.Real) and not (math.isfinite(lr) and lr >= 0):
            raise ValueError("the optimizer's learning rate must be a finite number "
                             f">= 0, got lr={lr!r} in param group {i}")


def _as_batch(batch, k: int) -> tuple:
    if isinstance(batch, torch.Tensor) or not isinstance(batch, (tuple, list)):
        what = (f"a tensor of shape {tuple(batch.shape)}"
                if isinstance(batch, torch.Tensor) else type(batch).__name__)
        raise TypeError("each batch must be a tuple (*inputs, target), e.g. (X, y), "
                        f"got {what} as batch {k}: pair inputs and targets, e.g. "
                        "list(zip(X.split(32), y.split(32))) or "
                        "d2l.data_iter(32, X, y)")
    if len(batch) < 2:
        raise ValueError("each batch must be a tuple (*inputs, target) with at least "
                         f"2 items, got {len(batch)} item(s) as batch {k}")
    return tuple(batch)


def _check_dtypes(net, inputs) -> None:
    """Floating inputs must have the parameters' dtype (float64 data into a float32
    model would raise deep inside a layer, or silently compute in the wrong
    precision)."""
    if not isinstance(net, torch.nn.Module):
        return
    p = next(net.parameters(), None)
    if p is None or not p.is_floating_point():
        return
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != p.dtype:
            raise TypeError(f"input {i} of the batch is {x.dtype} but the model's "
                            f"parameters are {p.dtype}: convert the data "
                            f"(X.to({p.dtype})) or the model (net.to({x.dtype}))")


def _check_output_target(out, target) -> None:
    """Refuse a float target whose shape broadcasts against the output into a bigger
    shape: (4, 1) against (4,) makes a (4, 4) loss, the mean of the wrong
    differences."""
    if not (isinstance(out, torch.Tensor) and isinstance(target, torch.Tensor)):
        return
    if (not (out.is_floating_point() and target.is_floating_point())
            or out.shape == target.shape):
        return
    try:
        full = torch.broadcast_shapes(out.shape, target.shape)
    except RuntimeError:
        return  # the loss raises its own error
    if full != out.shape or full != target.shape:
        raise ValueError(f"the model's output {tuple(out.shape)} and the target "
                         f"{tuple(target.shape)} have different shapes that broadcast "
                         f"to {tuple(full)}: the loss would compare every output with "
                         "every target; reshape one (e.g. "
                         f"y.reshape({tuple(out.shape)}))")


def _raise_with_shapes(err: RuntimeError, what: str, args, step: int) -> None:
    """Raise a torch error from inside the model or the loss (``mat1 and mat2 shapes
    cannot be multiplied``...) again, with the shapes of what it was given.  Other
    errors (out of memory: a subclass) are left alone (the caller re-raises them)."""
    if type(err) is not RuntimeError:
        return
    shapes = ", ".join(f"{tuple(a.shape)} {str(a.dtype).replace('torch.', '')}"
                       if isinstance(a, torch.Tensor) else type(a).__name__
                       for a in args)
    given = "output and target" if what == "the loss" else "inputs"
    raise RuntimeError(f"{what} failed at step {step + 1} (its {given}: {shapes}): "
                       f"{err}") from err


def _warn_if_not_finite(losses) -> None:
    """A loss that became NaN or inf leaves meaningless weights: say so (once)."""
    bad = next((i for i, v in enumerate(losses) if not math.isfinite(v)), None)
    if bad is not None:
        warnings.warn(f"d2l.train: the loss is {losses[bad]} from step {bad + 1} on "
                      f"(of {len(losses)}): training diverged (learning rate too "
                      "high?) or the data hold NaN/inf; the weights are not "
                      "meaningful", RuntimeWarning, stacklevel=3)


def train(net: Callable[..., torch.Tensor], loss: Callable[[Any, Any], torch.Tensor],
          updater: torch.optim.Optimizer | Callable[[], None],
          data: Iterable | Callable[[], Iterable], num_epochs: int | None = None, *,
          device: torch.device | str | None = None, scheduler=None,
          max_steps: int | None = None, max_seconds: float | None = None,
          grad_clip: float | None = None, amp: bool = False,
          compile: bool | dict = False,
          eval_fn: Callable[[], dict[str, float]] | None = None,
          callbacks: Iterable[Callable[[Any, History], None]] = (),
          progress: bool = True, desc: str = "train", sync_every: int = 50,
          accumulate: int = 1, checkpoint: str | None = None, vocab=None) -> History:
    """Train ``net`` and return its :class:`History`.

    Each batch is a tuple ``(*inputs, target)``: the loop computes
    ``loss(net(*inputs), target)`` (averaged if it is per-example), back-propagates
    and steps ``updater``: a ``torch.optim`` optimizer, or a function called after
    ``backward()`` that updates the parameters and zeroes their gradients
    (e.g. ``lambda: sgd([w, b], lr)``).  ``data`` is re-iterable (a DataLoader, a
    list) or a function returning a fresh iterator per epoch (e.g. ``data_iter``).
    For sequences, ``loss=d2l.sequence_loss`` takes (B, T, V) logits and ignores pads.

    How long: ``num_epochs`` passes over ``data`` (default 1), or ``max_steps``
    optimizer steps exactly (over as many epochs as that takes; if you also pass
    ``num_epochs``, whichever ends first), and at most ``max_seconds``.
    ``scheduler``: an object with ``.step()`` (``torch.optim.lr_scheduler``), called
    after every step, or a function step -> multiplier of the optimizer's lr (e.g.
    ``d2l.warmup_cosine_schedule(100, 1000)``), which is wrapped in ``LambdaLR``.
    ``grad_clip``: clip the gradients' total norm to this positive value.
    ``eval_fn()`` runs after each epoch, with ``net.eval()`` and under
    ``torch.no_grad()``, and returns ``{name: value}`` appended to
    ``history.metrics[name]``; ``callbacks``, a list of functions ``cb(net, history)``,
    run after each step.
    ``amp=True`` uses bfloat16 autocast on CUDA (no-op on CPU); ``compile=True`` runs
    ``torch.compile(net)`` (or pass a dict of its options, e.g.
    ``{"mode": "max-autotune"}``).  The progress bar counts steps (of a known total when
    ``max_steps`` is set or the data has a length).

    ``accumulate=k``: each optimizer step sums the gradients of ``k`` batches (each
    loss divided by ``k``: the step sees the mean over ``k`` times the batch), and the
    step counts, ``max_steps`` and the history count optimizer steps; an epoch that
    ends after ``m < k`` batches steps with what it has, rescaled by ``k / m``.
    ``checkpoint="model.pt"``: ``d2l.save(checkpoint, net, vocab)`` at the end.

    Under ``torchrun`` (a process group initialised with
    ``torch.distributed.init_process_group``): the model is wrapped in
    ``DistributedDataParallel`` (unless it already is), each of the ``world``
    processes takes its contiguous ``1/world`` slice of every batch (a batch that
    does not divide is an error), gradients are averaged over the processes (with
    ``accumulate``, exchanged only on the last micro-batch: ``no_sync`` before), the
    logged loss is the mean over the processes, and only rank 0 draws progress, warns
    and saves; every rank returns the same :class:`History`.  With a loss that is a
    mean over equally many items per slice, this is one process training on the full
    batches.  One process without a process group runs unchanged.

    The losses stay on the device and are read every ``sync_every`` steps (progress
    bar) and at the end, so the CPU does not wait for the GPU in between (see
    :class:`History`).  A net with a ``check_inputs(*inputs)`` method (e.g.
    ``Transformer``) has each batch validated on the CPU before it moves to the device.
    Bad settings raise a ``ValueError``/``TypeError`` that names what was expected.
    """
    for name, v in (("num_epochs", num_epochs), ("max_steps", max_steps)):
        if v is None:
            continue
        if not isinstance(v, numbers.Integral) or isinstance(v, bool):
            raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    epochs = (num_epochs if num_epochs is not None
              else (1 if max_steps is None else None))
    if max_seconds is not None:
        _positive_number(max_seconds, "max_seconds", allow_zero=True)
    if grad_clip is not None:
        _positive_number(grad_clip, "grad_clip")
    if not (hasattr(updater, "step") or callable(updater)):
        raise TypeError("updater must be an optimizer or a function, got "
                        f"{type(updater).__name__}")
    if not callable(loss):
        raise TypeError(f"loss must be a function (output, target) -> loss, got "
                        f"{type(loss).__name__}")
    if not callable(net):
        raise TypeError(f"net must be a module or a function, got {type(net).__name__}")
    if (not isinstance(sync_every, int) or isinstance(sync_every, bool)
            or sync_every < 1):
        raise ValueError(f"sync_every must be a positive int, got {sync_every!r}")
    if (not isinstance(accumulate, int) or isinstance(accumulate, bool)
            or accumulate < 1):
        raise ValueError(f"accumulate must be a positive int, got {accumulate!r}")
    if checkpoint is not None and not isinstance(checkpoint, (str, os.PathLike)):
        raise TypeError(f"checkpoint must be a file path or None, got "
                        f"{type(checkpoint).__name__}")
    if eval_fn is not None and not callable(eval_fn):
        raise TypeError(f"eval_fn must be a function () -> {{name: value}} or None, "
                        f"got {type(eval_fn).__name__}")
    if not isinstance(compile, (bool, dict)):
        raise TypeError("compile must be True, False or a dict of torch.compile "
                        f"options, got {compile!r}")
    if callable(callbacks) or isinstance(callbacks, (str, bytes)) or not isinstance(
            callbacks, Iterable):
        raise TypeError(f"callbacks must be a list of functions cb(net, history), got "
                        f"{type(callbacks).__name__}: wrap one in a list, "
                        "callbacks=[cb]")
    callbacks = list(callbacks)
    for cb in callbacks:
        if not callable(cb):
            raise TypeError(f"each callback must be a function cb(net, history), got "
                            f"{type(cb).__name__}")
    if isinstance(data, torch.Tensor) or not (callable(data)
                                              or isinstance(data, Iterable)):
        raise TypeError("data must be a list of (*inputs, target) batches, a "
                        "DataLoader or a function returning an iterator of them, got "
                        f"{type(data).__name__}")
    is_optim = hasattr(updater, "step") and hasattr(updater, "zero_grad")
    if is_optim:
        _check_lrs(updater)
    if scheduler is not None and not hasattr(scheduler, "step"):
        if not callable(scheduler):
            raise TypeError("scheduler must have a .step() method or be a function "
                            f"step -> lr multiplier, got {type(scheduler).__name__}")
        if not isinstance(updater, torch.optim.Optimizer):
            raise TypeError("a schedule function needs a torch.optim optimizer as "
                            "updater (its lr is what the schedule multiplies)")
        scheduler = torch.optim.lr_scheduler.LambdaLR(updater, scheduler)
    dev = torch.device(device) if device is not None else None
    autocast = (torch.autocast("cuda", dtype=torch.bfloat16)
                if amp and dev is not None and dev.type == "cuda" else nullcontext())
    check = (getattr(getattr(net, "module", net), "check_inputs", None)
             if dev is not None and dev.type != "cpu" else None)
    rank, world = _ranks()
    module, ddp = net, None
    if world > 1 and isinstance(net, torch.nn.Module):
        from torch.nn.parallel import DistributedDataParallel as DDP
        if isinstance(net, DDP):
            ddp, module = net, net.module
        else:
            place = next(net.parameters(), torch.empty(0)).device
            ddp = DDP(net, device_ids=[place.index] if place.type == "cuda" else None)
    progress = progress and rank == 0
    if checkpoint is not None and not hasattr(module, "config"):
        raise TypeError(f"checkpoint needs a d2lmini model with .config (Transformer, "
                        f"GPT, BERT, GRUSeq2Seq), got {type(module).__name__}")
    options = compile if isinstance(compile, dict) else {}
    forward = ddp if ddp is not None else net
    forward = torch.compile(forward, **options) if compile else forward
    hist, start, stop = History(), time.perf_counter(), False
    if world > 1:
        hist._reduce = _mean_over_ranks(world)
    try:
        per_epoch = None if callable(data) else len(data)
    except TypeError:
        per_epoch = None
    per_epoch = None if per_epoch is None else math.ceil(per_epoch / accumulate)
    totals = [t for t in (max_steps, None if per_epoch is None or epochs is None
                          else epochs * per_epoch) if t is not None]
    bar = tqdm(total=min(totals) if totals else None, desc=desc, disable=not progress,
               leave=True, unit="step")
    epoch = 0
    while epochs is None or epoch < epochs:
        if isinstance(net, torch.nn.Module):
            net.train()
        n, micro, micro_loss = 0, 0, 0.0
        for batch, last in _with_last(data() if callable(data) else data):
            batch = _as_batch(batch, hist.steps)
            if hist.steps == 0:
                _check_dtypes(net, batch[:-1])
            if check is not None and _on_cpu(batch):
                # bad ids: a clear error here, not a device-side assert
                check(*batch[:-1])
            if world > 1:
                batch = _shard(batch, rank, world, hist.steps)
            batch = _to(batch, dev) if dev is not None else batch
            *inputs, target = batch
            if is_optim and micro == 0:
                updater.zero_grad(set_to_none=True)
            micro += 1
            step_now = micro == accumulate or last
            with autocast:
                try:
                    out = forward(*inputs)
                except RuntimeError as err:
                    _raise_with_shapes(err, "the model", inputs, hist.steps)
                    raise
                if hist.steps == 0 and loss is not squared_loss:  # it reshapes y itself
                    _check_output_target(out, target)
                try:
                    l = loss(out, target)
                except RuntimeError as err:
                    _raise_with_shapes(err, "the loss", (out, target), hist.steps)
                    raise
            if not isinstance(l, torch.Tensor):
                raise TypeError(f"loss must return a tensor, got {type(l).__name__}")
            if l.dim() > 0:
                l = l.mean()
            quiet = ddp.no_sync() if ddp is not None and not step_now else nullcontext()
            with quiet:              # processes exchange gradients on the last one only
                (l / accumulate if accumulate > 1 else l).backward()
            micro_loss = micro_loss + l.detach()
            if not step_now:
                continue
            if micro < accumulate:   # a short last group: scale to its mean
                for p in (module.parameters() if isinstance(module, torch.nn.Module)
                          else []):
                    if p.grad is not None:
                        p.grad.mul_(accumulate / micro)
            if grad_clip is not None:
                params = net.parameters() if isinstance(net, torch.nn.Module) else []
                torch.nn.utils.clip_grad_norm_(params, grad_clip)
            updater.step() if is_optim else updater()
            if scheduler is not None:
                scheduler.step()
            # no .item(): the loss stays where it is
            hist.add_step(micro_loss / micro if micro > 1 else micro_loss)
            n += 1
            micro, micro_loss = 0, 0.0
            for cb in callbacks:
                cb(net, hist)
            if hist.steps % sync_every == 0:
                # read the waiting losses: here the CPU waits for the device
                hist.sync()
                if progress:
                    bar.set_postfix(epoch=epoch + 1, loss=f"{hist.step_loss[-1]:.4f}",
                                    refresh=False)
            bar.update(1)
            if (max_steps is not None and hist.steps >= max_steps) or (
                    max_seconds is not None
                    and time.perf_counter() - start >= max_seconds):
                stop = True
                break
        if n == 0:
            of = f" of {epochs}" if epochs is not None else ""
            raise ValueError(f"epoch {epoch + 1}{of} got no batches from data "
                             "(empty, or a one-shot iterator used up by an earlier "
                             "epoch?): pass a non-empty list, a DataLoader, or a "
                             f"function that returns a fresh iterator")
        hist.end_epoch()
        if eval_fn is not None:  # in eval mode (no dropout) and without a graph
            was_training = getattr(net, "training", None)
            if isinstance(net, torch.nn.Module):
                net.eval()
            with torch.no_grad():
                metrics = eval_fn()
            if isinstance(net, torch.nn.Module):
                net.train(was_training)
            if not isinstance(metrics, dict):
                raise TypeError(f"eval_fn must return a dict {{name: value}}, got "
                                f"{type(metrics).__name__}")
            for k, v in metrics.items():
                hist.metrics.setdefault(k, []).append(float(v))
        epoch += 1
        if stop:
            break
    hist.sync()  # the last losses (every rank): waits for the device to finish
    if progress and hist.steps:
        bar.set_postfix(epoch=epoch, loss=f"{hist.step_loss[-1]:.4f}", refresh=False)
    bar.close()
    hist.seconds = time.perf_counter() - start
    if rank == 0:
        _warn_if_not_finite(hist.step_loss)
        if checkpoint is not None:
            from .io import save
            save(checkpoint, module, vocab=vocab)
    return hist
