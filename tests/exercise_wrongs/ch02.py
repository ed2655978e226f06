"""Answers chapter 2's exercise checks must reject (WRONG) and accept (RIGHT)."""
import torch


def _p(x):
    return torch.softmax(x, dim=0)


WRONG = {
    "ch2_softmax_jacobian": [
        lambda x: torch.diag(_p(x)),                               # the diagonal only
        lambda x: torch.outer(_p(x), _p(x)) - torch.diag(_p(x)),   # sign flipped
        lambda x: _p(x) * (1 - _p(x)),                             # a vector, not (n, n)
        lambda x: torch.zeros(len(x), len(x), dtype=x.dtype),      # a constant
        lambda x: (torch.diag(_p(x)) - torch.outer(_p(x), _p(x))).float(),  # dtype lost
    ],
    "ch2_linreg_grads": [
        lambda X, y, w, b: (X.T @ (X @ w + b - y), (X @ w + b - y).sum()),      # no 2
        lambda X, y, w, b: (2 * X.T @ (X @ w + b - y), 2 * (X @ w + b - y).mean()),
        lambda X, y, w, b: (2 * X.T @ (X @ w - y), 2 * (X @ w - y).sum()),      # b left out
        lambda X, y, w, b: 2 * X.T @ (X @ w + b - y),                           # no pair
        lambda X, y, w, b: (2 * (X @ w + b - y) @ X.T, 2 * (X @ w + b - y).sum()),
    ],
    "ch2_predict_grad": [
        lambda x: 3 * x ** 2 + x,            # accumulation forgotten
        lambda x: 6 * x ** 2 + 2 * x,        # detach ignored
        lambda x: 6 * x ** 2,                # last backward forgotten
        lambda x: torch.tensor([7.0, 26.0, 57.0]),   # one x only
    ],
}

RIGHT = {
    "ch2_softmax_jacobian": [
        lambda x: _p(x)[:, None] * (torch.eye(len(x), dtype=x.dtype) - _p(x)[None, :]),
    ],
    "ch2_linreg_grads": [
        lambda X, y, w, b: (2 * torch.einsum("ni,n->i", X, X @ w + b - y),
                            float(2 * (X @ w + b - y).sum())),
    ],
    "ch2_predict_grad": [lambda x: x * (6 * x + 1)],
}
