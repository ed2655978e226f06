"""Answers chapter 3's exercise checks must reject (WRONG) and accept (RIGHT)."""
import math

import torch


def _lam(X):
    return torch.linalg.eigvalsh(2 / len(X) * X.T @ X).max().item()


def _ne_no_bias(X, y):
    return torch.linalg.lstsq(X, y[:, None]).solution[:, 0], 0.0


def _ne_mean_bias(X, y):
    return torch.linalg.solve(X.T @ X, X.T @ y), y.mean().item()


WRONG = {
    "ch3_lr_max": [
        lambda X: 1 / _lam(X),                                   # half the limit
        lambda X: 2 / torch.linalg.eigvalsh(X.T @ X).max().item(),  # 2/n forgotten
        lambda X: 2 / torch.linalg.eigvalsh(2 / len(X) * X.T @ X).min().item(),
        lambda X: 0.25,                                          # the notebook's value
    ],
    "ch3_initial_loss": [
        lambda q: 1 / q,
        lambda q: math.log(10),
        lambda q: -math.log(q),
        lambda q: math.log2(q),
    ],
    "ch3_logsumexp": [
        lambda o: torch.log(torch.exp(o).sum(dim=-1)),           # overflows
        lambda o: o.amax(dim=-1),                                # max only
        lambda o: torch.log(torch.exp(o - o.amax(dim=-1, keepdim=True)).sum(dim=-1)),
        lambda o: torch.logsumexp(o.reshape(-1), dim=0),         # over everything
    ],
    "ch3_normal_equation": [
        _ne_no_bias,
        _ne_mean_bias,
        lambda X, y: (X.T @ y, 0.0),
        lambda X, y: torch.linalg.lstsq(torch.cat([X, torch.ones(len(X), 1, dtype=X.dtype)],
                                                  dim=1), y[:, None]).solution[:, 0],
    ],
}

RIGHT = {
    "ch3_lr_max": [lambda X: len(X) / torch.linalg.matrix_norm(X, ord=2).item() ** 2],
    "ch3_initial_loss": [lambda q: math.log(q), lambda q: -math.log(1 / q)],
    "ch3_logsumexp": [
        lambda o: o.amax(-1) + (o - o.amax(-1, keepdim=True)).exp().sum(-1).log(),
    ],
    "ch3_normal_equation": [
        lambda X, y: (lambda s: (s[:-1], s[-1].item()))(torch.linalg.pinv(
            torch.cat([X, torch.ones(len(X), 1, dtype=X.dtype)], dim=1)) @ y),
    ],
}
