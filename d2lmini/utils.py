"""Devices, seeds and the input checks every module shares."""
from __future__ import annotations

import random
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


def show_source(obj) -> None:
    """Show the source of a d2lmini function or class.

    Chapters use it to show the package version of what they just derived.  In IPython
    or Jupyter the source is displayed highlighted; in plain Python (IPython is
    optional) it is printed as text.
    """
    import inspect

    if not (inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj)):
        raise TypeError(f"show_source shows a function, class or module, e.g. "
                        f"d2l.show_source(d2l.linreg), got {type(obj).__name__}")
    source = inspect.getsource(obj)
    try:
        from IPython import get_ipython
        from IPython.display import Code, display
    except ImportError:
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        print(source, end="")
        return
    display(Code(source, language="python"))
