"""Devices, seeds and the input checks every module shares."""
from __future__ import annotations

import ast
import random
import re
from typing import Sequence

import numpy as np
import torch


def device() -> torch.device:
    """The best available device: CUDA, then Apple's MPS, then the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (every device) so a run can be repeated."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not -2**63 <= seed < 2**64:  # what torch.manual_seed takes
        raise ValueError(f"seed must be an int in [-2**63, 2**64), got {seed}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds CUDA and MPS generators


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    """Raise a clear ValueError unless ``value`` is an int (not a bool) >=
    ``minimum``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        want = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise ValueError(f"{name} must be {want}, got {value!r}")
    return value


def check_dropout(p, name: str = "dropout") -> float:
    """Raise a clear ValueError unless ``p`` is a number in [0, 1)."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p < 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1), got {p!r}")
    return float(p)


def check_bool(value, name: str) -> bool:
    """Raise a clear TypeError unless ``value`` is True or False (a string such as "no"
    would otherwise count as True)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def check_generator(generator, name: str = "generator") -> None:
    """Raise a clear TypeError unless ``generator`` is a ``torch.Generator`` or None."""
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator or None, got "
                        f"{type(generator).__name__}")


def check_device(x: torch.Tensor, weight: torch.Tensor, name: str) -> None:
    """Raise a clear ValueError unless ``x`` is on the device of a model's ``weight``
    (a check of metadata: no host sync)."""
    if x.device != weight.device:
        raise ValueError(f"{name} is on {x.device} but the model is on "
                         f"{weight.device}: move one of them, e.g. "
                         f"{name}.to({str(weight.device)!r})")


def check_tensor(x, name: str, ndim: int | Sequence[int] | None = None,
                 floating: bool = False) -> torch.Tensor:
    """Raise a clear error unless ``x`` is a tensor of the expected rank/dtype."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if x.dim() not in allowed:
            want = " or ".join(f"{d}-D" for d in allowed)
            raise ValueError(f"{name} must be {want}, got shape {tuple(x.shape)}")
    if floating and not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    return x


_CHECK_CALL = re.compile(r"^_?check(_|$)")


def _is_check(node) -> bool:
    """A statement that only validates the arguments: a ``check_*(...)`` call, a
    ``raise``, or an ``if``/``for``/``try`` made of nothing else."""
    if isinstance(node, ast.Raise):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        f = node.value.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        return bool(_CHECK_CALL.match(name))
    if isinstance(node, ast.If):
        return all(map(_is_check, node.body)) and all(map(_is_check, node.orelse))
    if isinstance(node, ast.For):
        return all(map(_is_check, node.body)) and not node.orelse
    if isinstance(node, ast.Try):
        return (all(isinstance(b, ast.Expr) for b in node.body) and node.handlers
                and all(all(map(_is_check, h.body)) for h in node.handlers)
                and not node.orelse and not node.finalbody)
    return False


def _teaching_core(source: str) -> str:
    """``source`` without its argument checks: each run of check statements in a
    function becomes one ``# (argument checks omitted)`` line (with the comments just
    above it)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    drop: dict[int, int | None] = {}   # 0-based line -> indent of its marker, or None

    def visit(body):
        run = False
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(node.body)
                run = False
                continue
            check = _is_check(node) and not isinstance(node, ast.Raise)
            if check:
                first = node.lineno - 1
                while first > 0 and lines[first - 1].strip().startswith("#"):
                    first -= 1                     # its comments go with it
                for i in range(first, node.end_lineno):
                    drop[i] = None
                if not run:
                    drop[first] = node.col_offset
                run = True
                continue
            run = False
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(node, field, None)
                if inner and not all(_is_check(n) for n in inner):
                    visit(inner)
            for h in getattr(node, "handlers", []):
                visit(h.body)

    visit(tree.body)
    out = []
    for i, line in enumerate(lines):
        if i not in drop:
            out.append(line)
        elif drop[i] is not None:
            out.append(" " * drop[i] + "# (argument checks omitted)\n")
    return "".join(out)


def show_source(obj, checks: bool = False) -> None:
    """Show the source of a d2lmini function or class.

    Chapters use it to show the package version of what they just derived: by default
    its teaching core, each run of argument checks (``check_*`` calls, ``if ...:
    raise``) replaced by one ``# (argument checks omitted)`` line; ``checks=True``
    shows every line.  In IPython or Jupyter the source is displayed highlighted; in
    plain Python (IPython is optional) it is printed as text.
    """
    import inspect
    import textwrap

    if not (inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj)):
        raise TypeError(f"show_source shows a function, class or module, e.g. "
                        f"d2l.show_source(d2l.linreg), got {type(obj).__name__}")
    check_bool(checks, "checks")
    source = textwrap.dedent(inspect.getsource(obj))
    if not checks:
        source = _teaching_core(source)
    show_code(source)


def show_code(source: str) -> None:
    """Python source text, highlighted in IPython/Jupyter, printed elsewhere."""
    try:
        from IPython import get_ipython
        from IPython.display import Code, display
    except ImportError:
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        print(source, end="")
        return
    display(Code(source, language="python"))
