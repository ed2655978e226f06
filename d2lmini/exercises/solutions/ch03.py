"""Worked solutions of chapter 3's exercises (3. Linear regression):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import math

import torch

from ..core import solution


@solution("ch3_lr_max")
def lr_max(X):
    H = 2 / len(X) * X.T @ X
    return 2 / torch.linalg.eigvalsh(H).max().item()   # |1 - lr * lambda_max| < 1


@solution("ch3_initial_loss")
def initial_loss(q):
    return math.log(q)   # every class gets 1/q: -log(1/q)


@solution("ch3_logsumexp")
def logsumexp(o):
    m = o.amax(dim=-1, keepdim=True)                   # the largest score of each row
    # log sum e^o = m + log sum e^(o - m): every exponent is <= 0, nothing overflows
    return (m + torch.log(torch.exp(o - m).sum(dim=-1, keepdim=True))).squeeze(-1)


@solution("ch3_normal_equation")
def normal_equation(X, y):
    X1 = torch.cat([X, torch.ones(len(X), 1, dtype=X.dtype)], dim=1)   # (n, d + 1)
    w1 = torch.linalg.solve(X1.T @ X1, X1.T @ y)                        # (d + 1,)
    return w1[:-1], w1[-1].item()
