"""Checks for the exercises at the end of every chapter.

``check(what, got, expected)`` compares a reader's answer with the expected one and
prints, in one line, what is right or what is wrong (never a bare ``AssertionError``):

    >>> check("shape of Q @ K^T", (2, 5, 5), (2, 5, 5))
    ✓ shape of Q @ K^T: (2, 5, 5)
    True
"""
from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["check"]


def _as_array(x):
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _describe(x) -> str:
    if isinstance(x, (torch.Tensor, np.ndarray)):
        a = _as_array(x)
        if a.size <= 8:
            return np.array2string(a, precision=4, separator=", ").replace("\n", "")
        return f"array of shape {tuple(a.shape)}"
    return repr(x)


def _mismatch(got, expected, rtol: float, atol: float) -> str | None:
    """None when ``got`` matches ``expected``; otherwise why not, in words."""
    if got is None or got is Ellipsis:
        return "no answer yet (replace the ... with your code)"
    if isinstance(expected, (bool, str)) or expected is None:
        return None if got == expected else f"expected {expected!r}, got {got!r}"
    if isinstance(expected, (tuple, list, torch.Size)) and all(
            isinstance(e, int) for e in expected):
        got_t = tuple(got) if isinstance(got, (tuple, list, torch.Size)) else got
        return None if got_t == tuple(expected) else f"expected {tuple(expected)}, got {got!r}"
    try:
        g, e = _as_array(got).astype(float), _as_array(expected).astype(float)
    except (TypeError, ValueError):
        return f"expected a number or array like {_describe(expected)}, got {type(got).__name__}"
    if g.shape != e.shape:
        return f"expected shape {tuple(e.shape)}, got shape {tuple(g.shape)}"
    if not np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=False):
        worst = float(np.max(np.abs(g - e))) if g.size else math.nan
        return (f"expected {_describe(expected)}, got {_describe(got)} "
                f"(largest difference {worst:.3g}, allowed {atol:g} + {rtol:g}·|expected|)")
    return None


def check(what: str, got, expected, rtol: float = 1e-4, atol: float = 1e-6) -> bool:
    """Print ``✓ what`` when ``got`` matches ``expected``, else ``✗ what: <why>``.

    ``expected`` may be a bool, str, shape (tuple of ints), number, list, array or
    tensor; numbers are compared with ``rtol``/``atol``.  Returns True on a match.
    """
    if not isinstance(what, str) or not what:
        raise ValueError(f"what must be a non-empty description, got {what!r}")
    why = _mismatch(got, expected, rtol, atol)
    if why is None:
        print(f"✓ {what}: {_describe(got)}")
        return True
    print(f"✗ {what}: {why}")
    return False
