"""Claims with their numbers: what a chapter measured, the bound it is held to, a
verdict.

    >>> claim("max |ours − torch|", 2.4e-07, "<=", 1e-05)
    max |ours − torch| = 2.4e-07 ≤ 1e-05 ✓

A claim prints one line: the quantity, the measured value (and an optional ``note``),
the comparison and the bound, then ✓ or ✗.  The reader sees the number and its margin,
not a bare True.  The measured digits differ from machine to machine; the label, the
bound and the verdict do not: the book's notebook comparison masks the value between
the last " = " and an inequality (< > ≤ ≥ ≠ ∈), and compares the rest.  An ``==``
claim is printed with "=" and compared whole (use it for exact counts).
"""
from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from .exercises import Verdict

__all__ = ["claim", "fmt_value"]

_OPS = {"<": ("<", lambda v, b: v < b), "<=": ("≤", lambda v, b: v <= b),
        ">": (">", lambda v, b: v > b), ">=": ("≥", lambda v, b: v >= b),
        "==": ("=", lambda v, b: v == b), "!=": ("≠", lambda v, b: v != b),
        "in": ("∈", lambda v, b: b[0] <= v <= b[1])}


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


def claim(what: str, value, op: str, bound, *, fmt: str | None = None, unit: str = "",
          note: str = "") -> Verdict:
    """Print ``what = value op bound ✓`` (or ✗) and return the :class:`Verdict`.

    ``op``: one of ``< <= > >= == !=``, or ``"in"`` with ``bound = (lo, hi)``
    (inclusive).  ``fmt``: a format spec for the value and bound (default:
    :func:`fmt_value`); ``unit`` is printed after the value and the bound (e.g.
    ``" s"``, ``"×"``); ``note`` right after the value (e.g. ``" (999/1000)"``).  A NaN
    value never passes.
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
        b, shown = (lo, hi), f"[{fmt_value(lo, fmt)}{unit}, {fmt_value(hi, fmt)}{unit}]"
    else:
        b = _scalar(bound, "bound")
        shown = f"{fmt_value(b, fmt)}{unit}"
    symbol, test = _OPS[op]
    ok = not (isinstance(v, float) and math.isnan(v)) and bool(test(v, b))
    print(f"{what} = {fmt_value(v, fmt)}{unit}{note} {symbol} {shown} "
          f"{'✓' if ok else '✗'}")
    return Verdict(ok)
