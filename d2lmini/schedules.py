"""Learning-rate schedules with warm-up (chapter 8).

Each schedule is a plain function of the step number that returns a *multiplier*
of the optimizer's base learning rate, so it plugs into
``torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)``, which calls it with
step = 0, 1, 2, ... (call the scheduler's ``.step()`` once per training step).
``d2l.train(..., scheduler=schedule)`` takes the function itself and does that wrapping.
"""
from __future__ import annotations

import math
import numbers
from typing import Callable

from .utils import check_positive_int


def _check_steps(**kw) -> None:
    for name, v in kw.items():
        check_positive_int(v, name)


def _step(step) -> int:
    """The step a schedule is called with: an int >= 0 (LambdaLR counts from 0)."""
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
        raise ValueError(f"a schedule takes the step number, an int >= 0, got {step!r}")
    return step


def noam_schedule(d_model: int, warmup: int,
                  factor: float = 1.0) -> Callable[[int], float]:
    """The paper's schedule: lr = factor * d_model^-0.5 * min(s^-0.5, s * warmup^-1.5).

    Linear warm-up for ``warmup`` steps, then decay as 1/sqrt(s); the peak,
    factor / sqrt(d_model * warmup), is reached at s = warmup.  ``s`` counts from 1
    (LambdaLR's step 0 is s = 1), so 0^-0.5 never happens.  Use it with base lr 1.0.
    """
    _check_steps(d_model=d_model, warmup=warmup)
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not (
            math.isfinite(factor) and factor > 0):
        raise ValueError(f"factor must be a finite number > 0, got {factor!r}")

    def lr(step: int) -> float:
        s = _step(step) + 1
        return factor * d_model ** -0.5 * min(s ** -0.5, s * warmup ** -1.5)
    return lr


def warmup_cosine_schedule(warmup: int, total: int,
                           final: float = 0.0) -> Callable[[int], float]:
    """Multiplier: linear warm-up 1/warmup .. 1 over ``warmup`` steps, then a cosine
    from 1 down to ``final`` at step ``total`` (and ``final`` after it).

    For a fixed, short budget of steps this ends at a small lr, where the
    last steps polish the solution; 1/sqrt(s) decays too slowly for that.
    """
    _check_steps(warmup=warmup, total=total)
    if warmup > total:
        raise ValueError(f"warmup ({warmup}) must not exceed total ({total})")
    if (isinstance(final, bool) or not isinstance(final, (int, float))
            or not 0 <= final <= 1):
        raise ValueError(f"final must be a multiplier in [0, 1], got {final!r}")

    def lr(step: int) -> float:
        s = _step(step) + 1
        if s <= warmup:
            return s / warmup
        t = min(1.0, (s - warmup) / max(1, total - warmup))
        return final + (1 - final) * 0.5 * (1 + math.cos(math.pi * t))
    return lr

