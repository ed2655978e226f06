"""How much memory a computation holds at its peak (chapter 2: reverse mode vs depth).

``peak_memory(fn)`` runs ``fn()`` and watches every tensor an operation allocates: its
bytes count from the moment the operation returns it until its storage is freed, and
the largest total at any moment is the peak.  Tensors that existed before ``fn`` ran
(weights, inputs) are not counted, nor are views (they share a storage).  It works the
same on every device, CPU included, where PyTorch has no allocator statistics.
"""
from __future__ import annotations

import weakref
from typing import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

__all__ = ["peak_memory"]


class _LiveBytes(TorchDispatchMode):
    """Counts the storages the operations inside it allocate while they are alive."""

    def __init__(self):
        super().__init__()
        self.live = self.peak = 0
        self.owned: set[int] = set()

    def _freed(self, key: int, nbytes: int) -> None:
        self.owned.discard(key)
        self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if any(r.alias_info is not None for r in func._schema.returns):
            return out                    # a view or an in-place op: nothing new
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            try:
                storage = t.untyped_storage()
                key = storage.data_ptr()
            except (RuntimeError, NotImplementedError):   # no real storage
                continue
            if key in self.owned or storage.nbytes() == 0:
                continue
            self.owned.add(key)
            self.live += storage.nbytes()
            self.peak = max(self.peak, self.live)
            weakref.finalize(storage, self._freed, key, storage.nbytes())
        return out


def peak_memory(fn: Callable[[], object]) -> int:
    """Run ``fn()`` (no arguments) and return the largest number of bytes that the
    tensors it created held at the same time.

    Counts every storage an operation allocates, until it is freed: the activations
    autograd saves for ``backward()``, temporaries, gradients.  What ``fn`` returns
    and what it leaves behind (say ``.grad``) stays counted until it is freed, so the
    peak includes it.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function of no arguments, e.g. "
                        f"lambda: loss(w).backward(), got {type(fn).__name__}")
    mode = _LiveBytes()
    with mode:
        fn()
    return mode.peak
