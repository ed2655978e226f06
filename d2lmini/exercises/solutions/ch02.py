"""Worked solutions of chapter 2's exercises (2. Autograd):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch

from ..core import solution


@solution("ch2_softmax_jacobian")
def softmax_jacobian(x):
    p = torch.softmax(x, dim=0)
    # i == j: p_i (1 - p_i);  i != j: -p_i p_j;  together p_i (delta_ij - p_j)
    return torch.diag(p) - torch.outer(p, p)


@solution("ch2_linreg_grads")
def linreg_grads(X, y, w, b):
    e = X @ w + b - y                 # residuals, (n,)
    # dL/de_i = 2 e_i;  de_i/dw = x_i;  de_i/db = 1;  summed over the examples
    return 2 * X.T @ e, 2 * e.sum()


@solution("ch2_predict_grad")
def predicted_grad(x):
    # two accumulated 3x^2, plus x: in x * x.detach() the detached factor is a constant
    return 2 * (3 * x ** 2) + x
