"""The verdicts of the exercises: ``check`` for a value, ``exercise`` for something the
reader builds.

``check(what, got, expected)`` compares one answer with an expected one and prints one
line, ✓ or ✗ with why (never a bare ``AssertionError``, never an exception of its
own):

    >>> check("shape of Q @ K^T", (2, 5, 5), (2, 5, 5))
    ✓ shape of Q @ K^T: (2, 5, 5)

``exercise(name, answer)`` runs the reader's function or module on fresh random inputs
against a reference that is not on the page, and prints ✓ with what was tried, or ✗
with a hint (which case, shape, dtype, off by a factor).  Exercises are registered in
the chapter modules of this package (``ch05.py``, ...) with :func:`register`; a judge
uses :func:`call` to run the reader's code and :func:`expect` to compare, and raises
:class:`Wrong` with a hint.
"""
from __future__ import annotations

import contextlib
import importlib
import io
import math
import numbers
import os
import pkgutil
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

__all__ = ["Verdict", "check", "exercise", "register", "Wrong", "NotYet", "call",
           "expect", "registry", "fresh_generator", "as_number", "solution",
           "reference_solution", "loops_in", "names_used", "forbid", "forbid_loops"]


class Verdict:
    """What :func:`check`, :func:`exercise` and :func:`d2lmini.claim` return: truthy
    when the answer matched.  It shows nothing when it ends a notebook cell (the ✓/✗
    line is already printed), so a cell that ends with ``d2l.check(...)`` prints no
    True/False."""

    __slots__ = ("ok",)

    def __init__(self, ok: bool):
        self.ok = bool(ok)

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return f"Verdict({self.ok})"

    def _ipython_display_(self) -> None:
        pass


# ------------------------------------------------------------------ check(): one value
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


def _is_placeholder(x) -> bool:
    return x is None or x is Ellipsis or (
        isinstance(x, (list, tuple)) and any(g is Ellipsis for g in x))


def _is_shape(x) -> bool:
    return isinstance(x, (tuple, list, torch.Size)) and all(
        isinstance(e, int) and not isinstance(e, bool) for e in x)


def _mismatch(got, expected, rtol: float, atol: float) -> str | None:
    """None when ``got`` matches ``expected``; otherwise why not, in words."""
    if _is_placeholder(got):
        return "no answer yet (replace the ... with your code)"
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"expected a dict, got {type(got).__name__}"
        if set(got) != set(expected):
            return (f"expected the keys {sorted(map(str, expected))}, "
                    f"got {sorted(map(str, got))}")
        for k in expected:
            why = _mismatch(got[k], expected[k], rtol, atol)
            if why is not None:
                return f"at key {k!r}: {why}"
        return None
    if isinstance(expected, (bool, np.bool_, str)) or expected is None:
        if isinstance(got, (torch.Tensor, np.ndarray)) and _as_array(got).size == 1:
            got = _as_array(got).item()
        same = (type(got) in (bool, np.bool_) if isinstance(expected, (bool, np.bool_))
                else True)
        return (None if same and got == expected
                else f"expected {expected!r}, got {got!r}")
    if _is_shape(expected) and isinstance(got, (tuple, list, torch.Size)):
        return None if tuple(got) == tuple(expected) else \
            f"expected {tuple(expected)}, got {tuple(got)!r}"
    if isinstance(got, (str, bytes)):                   # "1" is not the number 1
        return f"expected a number or array like {_describe(expected)}, got str {got!r}"
    try:
        g, e = _as_array(got).astype(float), _as_array(expected).astype(float)
    except (TypeError, ValueError):
        return (f"expected a number or array like {_describe(expected)}, "
                f"got {type(got).__name__}")
    if g.shape != e.shape:
        return f"expected shape {tuple(e.shape)}, got shape {tuple(g.shape)}"
    if not np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=False):
        worst = float(np.nanmax(np.abs(g - e))) if g.size else math.nan
        return (f"expected {_describe(expected)}, got {_describe(got)} "
                f"(largest difference {worst:.3g}, "
                f"allowed {atol:g} + {rtol:g}·|expected|)")
    return None


def check(what: str, got, expected, rtol: float = 1e-4, atol: float = 1e-6,
          show: bool = True) -> Verdict:
    """Print ``✓ what`` when ``got`` matches ``expected``, else ``✗ what: <why>``.

    ``expected`` may be a bool, str, shape (tuple of ints), number, list, array, tensor
    or dict of those; numbers are compared with ``rtol``/``atol`` (a tensor matches a
    list of the same numbers).  ``got`` may also be a function of no arguments that
    computes the answer: if it fails (say because a variable still holds ``...``) the
    line says so.  ``show=False`` leaves the value out of the ✓ line.  Never raises on
    the reader's answer; returns a :class:`Verdict`, truthy on a match.
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
    try:
        why = _mismatch(got, expected, rtol, atol)
    except Exception as err:  # anything we did not foresee is reported, not raised
        why = (f"could not compare {type(got).__name__} with "
               f"{type(expected).__name__} ({err})")
    if why is None:
        print(f"✓ {what}: {_describe(got)}" if show else f"✓ {what}")
        return Verdict(True)
    print(f"✗ {what}: {why}")
    return Verdict(False)


# ------------------------------------------------------------------ exercise(): a build
class Wrong(Exception):
    """Raised by a judge: the answer is wrong; the message is the hint shown."""


class NotYet(Exception):
    """Raised by :func:`call` when the reader's code still returns ``...`` or None."""


@dataclass
class Exercise:
    name: str                 # the key a chapter passes to exercise()
    title: str                # what the ✓/✗ line calls it
    judge: Callable           # judge(answer) -> summary of what was tried; raises Wrong
    chapter: int
    build: bool               # the reader writes a function or a module
    project: bool = False     # the reader builds a piece the chapter uses and runs it
                              # on the chapter's task


_REGISTRY: dict[str, Exercise] = {}
_LOADED = False


def register(name: str, title: str, chapter: int, build: bool = True,
             project: bool = False):
    """Decorator: register ``judge(answer) -> str`` as exercise ``name``.

    The judge runs the answer (through :func:`call`) on fresh random inputs, compares
    (with :func:`expect`) against a reference computed inside the judge, raises
    :class:`Wrong` with a hint at the first mismatch, and returns a short summary of
    what it tried ("6 random cases, float16 included, a fully masked row").
    ``project``: the reader builds a piece the chapter uses and runs it on the
    chapter's task; the judge also measures the result there.
    """
    def deco(judge):
        if (name in _REGISTRY
                and _REGISTRY[name].judge.__qualname__ != judge.__qualname__):
            raise ValueError(f"exercise {name!r} is registered twice")
        _REGISTRY[name] = Exercise(name, title, judge, chapter, build or project,
                                   project)
        return judge
    return deco


def registry() -> dict[str, Exercise]:
    """Every registered exercise (the chapter modules are imported on first use)."""
    global _LOADED
    if not _LOADED:
        pkg = importlib.import_module(__package__)
        for mod in pkgutil.iter_modules(pkg.__path__):
            if mod.name.startswith("ch"):
                importlib.import_module(f"{__package__}.{mod.name}")
        _LOADED = True
    return _REGISTRY


# ------------------------------------------------------------------ worked solutions
_SOLUTIONS: dict[str, tuple[Callable, bool]] = {}


def solution(name: str, value: bool = False):
    """Decorator in ``exercises/solutions/chNN.py``: the worked solution of exercise
    ``name``.  ``value=True``: the exercise asks for a value, and the decorated function
    (no arguments) computes it."""
    def deco(fn):
        if name in _SOLUTIONS and _SOLUTIONS[name][0].__qualname__ != fn.__qualname__:
            raise ValueError(f"solution {name!r} is defined twice")
        _SOLUTIONS[name] = (fn, value)
        return fn
    return deco


def _solutions() -> dict[str, tuple[Callable, bool]]:
    registry()
    from . import solutions as pkg
    for mod in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{pkg.__name__}.{mod.name}")
    return _SOLUTIONS


def reference_solution(name: str):
    """The worked solution of exercise ``name`` as an answer (the function or class, or
    the value it asks for), without showing it.  Raises ValueError for an unknown
    name."""
    known = _solutions()
    if name not in known:
        raise ValueError(f"no worked solution for {name!r}; exercises: "
                         f"{sorted(registry())}")
    fn, value = known[name]
    return fn() if value else fn


def show_solution(name: str) -> Verdict:
    """Show the worked solution of exercise ``name`` and run its check.

    A learner asks for it explicitly (``d2l.solution("ch5_sliding_window")``): it
    prints a reminder that the exercise is worth trying first, the solution's source,
    and the check's ✓ line.  Raises RuntimeError if the solution fails its own check
    (a bug in the book, never the reader's)."""
    import inspect
    import textwrap

    from ..utils import show_code

    exercises = registry()
    if name not in exercises:
        raise ValueError(f"no exercise named {name!r}; known: {sorted(exercises)}")
    answer = reference_solution(name)
    fn, _ = _solutions()[name]
    print(f"Worked solution of “{exercises[name].title}” (chapter "
          f"{exercises[name].chapter}). Reading it teaches most after your own try.")
    source = textwrap.dedent(inspect.getsource(fn))
    show_code(re.sub(r"\A@solution\([^)]*\)\n", "", source))   # the registration: noise
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ok = exercise(name, answer)
    print(buf.getvalue(), end="")
    if not ok:
        raise RuntimeError(f"the worked solution of {name!r} failed its own check: "
                           f"{buf.getvalue().strip()}")
    return Verdict(True)


# ------------------------------------------------------------------ what the code does
def _tree(fn):
    """The AST of the reader's function or class, or Wrong if its source is not
    readable (a function typed at a prompt, a builtin)."""
    import ast
    import inspect
    import textwrap
    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        raise Wrong("could not read your code's source: define it with def in a "
                    "notebook cell or a file") from None
    try:
        return ast.parse(src)
    except SyntaxError:  # a lambda cut out of a longer line
        return ast.parse(src.strip().rstrip(",)") if src.lstrip().startswith(
            "lambda") else "pass")


def loops_in(fn) -> list[str]:
    """The Python loops in ``fn``'s source: ``["for (line 3)", "list comprehension
    (line 5)"]``."""
    import ast
    kinds = {ast.For: "for", ast.While: "while", ast.ListComp: "list comprehension",
             ast.SetComp: "set comprehension", ast.DictComp: "dict comprehension",
             ast.GeneratorExp: "generator expression", ast.AsyncFor: "for"}
    return [f"{kinds[type(node)]} (line {node.lineno})" for node in ast.walk(_tree(fn))
            if type(node) in kinds]


def names_used(fn) -> set[str]:
    """Every dotted name ``fn``'s source reads or calls: ``{"torch.softmax", "x.sum",
    "F.cross_entropy", ...}`` (also each name alone: ``"softmax"``)."""
    import ast

    def dotted(node):
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            base = dotted(node.value)
            return f"{base}.{node.attr}" if base else node.attr
        return None

    found = set()
    for node in ast.walk(_tree(fn)):
        if isinstance(node, (ast.Name, ast.Attribute)):
            d = dotted(node)
            if d:
                found.add(d)
                found.add(d.rsplit(".", 1)[-1])
    return found


def forbid(fn, names, why: str) -> None:
    """Raise :class:`Wrong` when ``fn`` uses any of ``names`` (a dotted name such as
    ``"torch.linalg"`` also matches everything under it; a bare ``"cross_entropy"``
    matches it under any module)."""
    used = names_used(fn)
    hits = {u for n in names for u in used
            if u == n or u.startswith(n + ".") or u.endswith("." + n)}
    # name each use once, by its longest spelling ("torch.linalg.norm", not "norm")
    shown = sorted(h for h in hits if not any(
        o != h and (o.startswith(h + ".") or o.endswith("." + h)) for o in hits))
    if shown:
        raise Wrong(f"your code uses {', '.join(shown)}: {why}")


def forbid_loops(fn, why: str = "the exercise asks for tensor operations, with no "
                                "Python loop") -> None:
    """Raise :class:`Wrong` when ``fn``'s source has a Python loop or comprehension."""
    loops = loops_in(fn)
    if loops:
        raise Wrong(f"found a Python loop: {', '.join(loops)}; {why}")


def call(fn, *args, case: str = "", **kwargs):
    """Run the reader's ``fn(*args, **kwargs)``: ``...``/None -> :class:`NotYet`; an
    exception from their code -> :class:`Wrong` naming the case."""
    if not callable(fn):
        raise Wrong(f"expected a function or a class, got {type(fn).__name__}")
    try:
        out = fn(*args, **kwargs)
    except (NotYet, Wrong):
        raise
    except Exception as err:
        where = f" on {case}" if case else ""
        if "ellipsis" in str(err).lower():
            raise NotYet() from None
        raise Wrong(f"your code raised {type(err).__name__}{where}: {err}") from None
    if out is None or out is Ellipsis:
        raise NotYet()
    return out


def fresh_generator() -> torch.Generator:
    """A generator with a fresh seed for a judge's random cases: different inputs on
    every run, and the reader's global random state is left alone."""
    return torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))


def as_number(out, case: str = "") -> float:
    """The reader's answer as a float (a Python number or a one-element tensor), or
    :class:`Wrong` naming what came instead."""
    if isinstance(out, torch.Tensor) and out.numel() == 1:
        out = out.item()
    if isinstance(out, (bool, np.bool_)) or not isinstance(out, numbers.Real):
        where = f" ({case})" if case else ""
        raise Wrong(f"expected a number{where}, got {type(out).__name__}")
    return float(out)


def _factor(g: np.ndarray, e: np.ndarray) -> float | None:
    """The constant c with g ≈ c·e, if there is one (and it is not 1)."""
    nz = np.abs(e) > 1e-12
    if nz.sum() < 1 or not np.allclose(g[~nz], 0, atol=1e-9):
        return None
    r = g[nz] / e[nz]
    c = float(np.median(r))
    if np.allclose(r, c, rtol=1e-3, atol=1e-9) and abs(c - 1) > 1e-3 and c != 0:
        return c
    return None


def expect(got, want, case: str = "", rtol: float = 1e-5, atol: float = 1e-6,
           dtype: bool = True) -> None:
    """Raise :class:`Wrong` with a hint unless ``got`` matches ``want`` (a tensor, an
    array, a number, a shape or a bool).  ``dtype=True`` also asks a tensor answer for
    ``want``'s dtype (e.g. float16 in, float16 out)."""
    where = f" ({case})" if case else ""
    if isinstance(want, (bool, np.bool_)):
        if got is not want and not (isinstance(got, (bool, np.bool_))
                                    and bool(got) == want):
            raise Wrong(f"not right{where}")
        return
    if _is_shape(want) and isinstance(got, (tuple, list, torch.Size)):
        if tuple(got) != tuple(want):
            raise Wrong(f"wrong shape{where}: expected {tuple(want)}, got {tuple(got)}")
        return
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            raise Wrong(f"expected a torch.Tensor{where}, got {type(got).__name__}")
        if tuple(got.shape) != tuple(want.shape):
            raise Wrong(f"wrong shape{where}: expected {tuple(want.shape)}, "
                        f"got {tuple(got.shape)}")
        if dtype and got.dtype != want.dtype:
            raise Wrong(f"wrong dtype{where}: expected {want.dtype}, got {got.dtype}")
    try:
        g, e = _as_array(got).astype(np.float64), _as_array(want).astype(np.float64)
    except (TypeError, ValueError):
        raise Wrong(f"expected a number or a tensor{where}, "
                    f"got {type(got).__name__}") from None
    if g.shape != e.shape:
        raise Wrong(f"wrong shape{where}: expected {e.shape}, got {g.shape}")
    if np.isnan(g).any() and not np.isnan(e).any():
        raise Wrong(f"your answer has NaN{where}")
    if np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True):
        return
    c = _factor(g, e)
    if c is not None:
        raise Wrong(f"off by a factor of {c:.3g}{where}")
    worst = float(np.nanmax(np.abs(g - e)))
    raise Wrong(f"wrong values{where}: largest difference {worst:.3g} "
                f"(allowed {atol:g} + {rtol:g}·|expected|)")


def exercise(name: str, answer) -> Verdict:
    """Try the reader's ``answer`` on exercise ``name``; print ✓ or ✗ with a hint.

    Never raises on the reader's answer (only on an unknown ``name``).
    """
    exercises = registry()
    if name not in exercises:
        raise ValueError(f"no exercise named {name!r}; known: {sorted(exercises)}")
    ex = exercises[name]
    if _is_placeholder(answer):
        print(f"✗ {ex.title}: no answer yet (replace the ... with your code)")
        return Verdict(False)
    try:
        summary = ex.judge(answer)
    except NotYet:
        print(f"✗ {ex.title}: no answer yet (replace the ... with your code)")
        return Verdict(False)
    except Wrong as why:
        print(f"✗ {ex.title}: {why}")
        return Verdict(False)
    except Exception as err:  # the reader's answer broke the judge: report, never raise
        print(f"✗ {ex.title}: your answer could not be used "
              f"({type(err).__name__}: {err})")
        return Verdict(False)
    print(f"✓ {ex.title}: {summary}" if summary else f"✓ {ex.title}")
    return Verdict(True)
