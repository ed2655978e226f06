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

__all__ = ["Verdict", "check"]


class Verdict:
    """What :func:`check` returns: truthy when the answer matched.  It shows nothing
    when it ends a notebook cell (the ✓/✗ line is already printed), so a cell that ends
    with ``d2l.check(...)`` does not also print True or False."""

    __slots__ = ("ok",)

    def __init__(self, ok: bool):
        self.ok = bool(ok)

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return f"Verdict({self.ok})"

    def _ipython_display_(self) -> None:
        pass


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
    if got is None or got is Ellipsis or (
            isinstance(got, (list, tuple)) and any(g is Ellipsis for g in got)):
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


def check(what: str, got, expected, rtol: float = 1e-4, atol: float = 1e-6,
          show: bool = True) -> Verdict:
    """Print ``✓ what`` when ``got`` matches ``expected``, else ``✗ what: <why>``.

    ``expected`` may be a bool, str, shape (tuple of ints), number, list, array or
    tensor; numbers are compared with ``rtol``/``atol``.  ``got`` may also be a
    function of no arguments that computes the answer from the reader's variables:
    if it fails (say because a variable still holds ``...``) the line says so
    instead of raising.  ``show=False`` leaves the value out of the ✓ line (for
    values whose last digits differ between machines).  Returns a :class:`Verdict`,
    truthy on a match.
    """
    if not isinstance(what, str) or not what:
        raise ValueError(f"what must be a non-empty description, got {what!r}")
    if callable(got) and not isinstance(got, (torch.Tensor, np.ndarray)):
        try:
            got = got()
        except Exception as err:  # the reader's code, not ours: report, never raise
            if "ellipsis" in str(err).lower():
                print(f"✗ {what}: no answer yet (replace the ... with your code)")
            else:
                print(f"✗ {what}: your code raised {type(err).__name__}: {err}")
            return Verdict(False)
    why = _mismatch(got, expected, rtol, atol)
    if why is None:
        print(f"✓ {what}: {_describe(got)}" if show else f"✓ {what}")
        return Verdict(True)
    print(f"✗ {what}: {why}")
    return Verdict(False)
