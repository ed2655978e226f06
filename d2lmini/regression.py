"""Linear and softmax regression from scratch (chapter 3): models, losses, SGD step."""
from __future__ import annotations

import math
import numbers
from typing import Iterable

import torch

from .transformer import check_token_ids
from .utils import check_positive_int, check_tensor


def linreg(X: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The linear model ``X w + b``.  X: (n, d), w: (d, 1), b: (1,) -> (n, 1)."""
    check_tensor(X, "X", ndim=2, floating=True)
    check_tensor(w, "w", ndim=2, floating=True)
    if X.dtype != w.dtype:
        raise TypeError(f"X is {X.dtype} but w is {w.dtype}: convert one "
                        f"(X.to({w.dtype}))")
    if X.shape[1] != w.shape[0]:
        raise ValueError(f"X has {X.shape[1]} features but w has shape "
                         f"{tuple(w.shape)}; expected w of shape ({X.shape[1]}, 1)")
    if isinstance(b, torch.Tensor) and b.numel() != 1:  # (3,) would broadcast to (n, 3)
        raise ValueError("b must be one number (shape (1,)), got shape "
                         f"{tuple(b.shape)}")
    return X @ w + b


def _check_same_shape(y_hat: torch.Tensor, y: torch.Tensor) -> None:
    """y_hat and y hold the same numbers of the same layout, up to axes of size 1:
    (4, 1) against (2, 2) would reshape silently."""
    squeezed = lambda t: tuple(n for n in t.shape if n != 1)
    if squeezed(y_hat) != squeezed(y):
        raise ValueError("y_hat and y must have the same shape (up to dims of size "
                         f"1), got y_hat {tuple(y_hat.shape)} and y {tuple(y.shape)}")


def squared_loss(y_hat: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-example loss ``(y_hat - y)^2 / 2``.  (n, 1), (n,) or (n, 1) -> (n, 1)."""
    check_tensor(y_hat, "y_hat")
    check_tensor(y, "y")
    _check_same_shape(y_hat, y)
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def sgd(params: Iterable[torch.Tensor], lr: float, batch_size: int = 1) -> None:
    """One minibatch SGD step in place, then zero the gradients.

    ``p -= lr * p.grad / batch_size``: pass ``batch_size`` when the loss was
    *summed* over the batch, leave it at 1 when the loss was already a mean.
    """
    if (isinstance(lr, bool) or not isinstance(lr, numbers.Real)
            or not math.isfinite(lr)):
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    if lr <= 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    check_positive_int(batch_size, "batch_size")
    # iterating would step its rows, not the tensor
    if isinstance(params, torch.Tensor):
        raise TypeError("params must be a list of tensors, e.g. [w, b], got one "
                        f"tensor of shape {tuple(params.shape)}: pass [w]")
    with torch.no_grad():
        for p in params:
            if p.grad is None:
                raise ValueError("a parameter has no gradient: call backward() first "
                                 "and create parameters with requires_grad=True")
            p -= lr * p.grad / batch_size
            p.grad.zero_()


def softmax(X: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """``exp(X) / sum(exp(X))`` along ``dim``, computed stably.

    Subtracting the row maximum first changes nothing mathematically (it cancels in
    the ratio) but keeps every ``exp`` in (0, 1], so large logits cannot overflow.
    X: (..., q) -> (..., q), each slice along ``dim`` non-negative and summing to 1.
    """
    check_tensor(X, "X", floating=True)
    if not isinstance(dim, int) or not -X.dim() <= dim < max(X.dim(), 1):
        raise ValueError(f"dim must be an int in [{-X.dim()}, {X.dim() - 1}] for X of "
                         f"shape {tuple(X.shape)}, got {dim!r}")
    X_exp = torch.exp(X - X.amax(dim=dim, keepdim=True))
    return X_exp / X_exp.sum(dim=dim, keepdim=True)


def cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-example ``-log softmax(logits)[y]`` via log-sum-exp (no overflow, no log 0).

    logits: (n, q) unnormalised scores, y: (n,) class ids in [0, q)  ->  (n,)
    ``cross_entropy(logits, y).mean()`` equals ``F.cross_entropy(logits, y)``.
    """
    check_tensor(logits, "logits", ndim=2, floating=True)
    check_tensor(y, "y", ndim=1)
    if y.shape[0] != logits.shape[0] or y.is_floating_point() or y.dtype == torch.bool:
        raise ValueError(f"expected integer class ids y of shape ({logits.shape[0]},) "
                         f"for logits {tuple(logits.shape)}, got y {tuple(y.shape)} "
                         f"{y.dtype}")
    check_token_ids(y, logits.shape[1], "class id")
    m = logits.amax(dim=1, keepdim=True)
    log_z = m.squeeze(1) + torch.log(torch.exp(logits - m).sum(dim=1))  # log sum exp
    return log_z - logits.gather(1, y.reshape(-1, 1)).squeeze(1)


def accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of rows whose arg-max class equals ``y``.  (n, q), (n,) -> float."""
    check_tensor(logits, "logits", ndim=2)
    check_tensor(y, "y")
    if y.shape != logits.shape[:1]:
        raise ValueError(f"expected y of shape ({logits.shape[0]},), got "
                         f"{tuple(y.shape)}")
    return (logits.argmax(dim=1) == y).float().mean().item()
