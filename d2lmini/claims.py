"""Findings with their numbers: what a chapter measured, beside what gives it meaning.

    >>> claim("max |ours − torch|", 2.4e-07, "<=", 1e-05, ref=("float32 eps", 1.2e-07))
    max |ours − torch| = 2.4e-07 (float32 eps 1.2e-07)

A claim prints one line: the quantity, the measured value, and the reference that gives
it meaning (a baseline, a theoretical value, the other variant, torch's value).  The
bound that guards the finding stays in the code and is never printed: when the measured
value breaks it, :class:`ClaimError` is raised with the bound, so a finding that no
longer holds stops the chapter instead of printing a wrong sentence.
"""
from __future__ import annotations

import math
import numbers

import numpy as np
import torch

__all__ = ["claim", "fmt_value", "ClaimError"]

_OPS = {"<": ("<", lambda v, b: v < b), "<=": ("≤", lambda v, b: v <= b),
        ">": (">", lambda v, b: v > b), ">=": ("≥", lambda v, b: v >= b),
        "==": ("=", lambda v, b: v == b), "!=": ("≠", lambda v, b: v != b),
        "in": ("∈", lambda v, b: b[0] <= v <= b[1])}


class ClaimError(AssertionError):
    """A finding a chapter states no longer holds: the measured value broke its
    bound."""


def fmt_value(x, spec: str | None = None) -> str:
    """A number as a reader wants it: ints with thousands separators, floats with three
    significant digits (``2.4e-07``, ``0.999``, ``1,234``), or ``format(x, spec)``."""
    if spec is not None:
        return format(x, spec)
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, numbers.Integral):
        return f"{int(x):,}"
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if abs(x) >= 1e15:
        return f"{x:.3g}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 1e-3:
        return f"{x:.3g}"
    return f"{x:.2g}"


def _scalar(value, name: str):
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"{name} must be one number, got a tensor of shape "
                             f"{tuple(value.shape)}")
        return value.item()
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ValueError(f"{name} must be one number, got an array of shape "
                             f"{value.shape}")
        return value.item()
    if isinstance(value, (numbers.Real, np.generic)):
        return value.item() if isinstance(value, np.generic) else value
    raise TypeError(f"{name} must be a number, got {type(value).__name__}")


def _reference(ref, fmt: str | None, unit: str) -> str:
    """``ref`` as printed after the value: a string as it is; a (label, number) pair as
    ``label number``; a list of either, joined with "; "."""
    if ref is None:
        return ""
    items = ref if isinstance(ref, list) else [ref]
    parts = []
    for r in items:
        if isinstance(r, str):
            parts.append(r)
        elif isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], str):
            parts.append(f"{r[0]} {fmt_value(_scalar(r[1], 'ref'), fmt)}{unit}")
        else:
            raise TypeError(f"ref must be a string, a (label, number) pair or a "
                            f"list of those, got {r!r}")
    return f" ({'; '.join(parts)})" if parts else ""


def claim(what: str, value, op: str, bound, *, ref=None, fmt: str | None = None,
          unit: str = "", note: str = "") -> None:
    """Print ``what = value (ref)``; raise :class:`ClaimError` unless ``value op
    bound``.

    ``op``: one of ``< <= > >= == !=``, or ``"in"`` with ``bound = (lo, hi)``
    (inclusive); the bound is the guard, never printed.  ``ref``: what gives the value
    its meaning, printed in brackets after it: a string, a ``(label, number)`` pair
    (formatted like the value) or a list of those.  ``fmt``: a format spec for the
    numbers (default: :func:`fmt_value`); ``unit`` is printed after each number (e.g.
    ``" s"``, ``"×"``); ``note`` right after the value (e.g. ``" (999/1000)"``).  A NaN
    value never holds.
    """
    if not isinstance(what, str) or not what.strip():
        raise ValueError(f"what must be a non-empty description, got {what!r}")
    if op not in _OPS:
        raise ValueError(f"op must be one of {list(_OPS)}, got {op!r}")
    v = _scalar(value, "value")
    if op == "in":
        if not (isinstance(bound, (tuple, list)) and len(bound) == 2):
            raise ValueError(f"op 'in' needs bound=(lo, hi), got {bound!r}")
        lo, hi = (_scalar(b, "bound") for b in bound)
        if lo > hi:
            raise ValueError(f"bound=(lo, hi) needs lo <= hi, got {bound!r}")
        b, shown = (lo, hi), f"[{lo:g}, {hi:g}]"
    else:
        b = _scalar(bound, "bound")
        shown = f"{b:g}" if isinstance(b, float) else str(b)
    if any(isinstance(x, float) and math.isnan(x) for x in (b if op == "in" else (b,))):
        raise ValueError(f"bound must be a number, got {bound!r}")
    symbol, test = _OPS[op]
    line = f"{what} = {fmt_value(v, fmt)}{unit}{note}{_reference(ref, fmt, unit)}"
    print(line)
    holds = not (isinstance(v, float) and math.isnan(v)) and bool(test(v, b))
    if not holds:
        raise ClaimError(f"the finding no longer holds: {what} = {v!r}, expected "
                         f"{symbol} {shown}")
