"""Worked solutions of chapter 3's exercises (3. Linear regression):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch

from ..core import solution


@solution("ch3_lr_max")
def lr_max(X):
    # The error along eigenvector i is multiplied by (1 - lr * lambda_i) per step; it
    # shrinks from every start only if |1 - lr * lambda_i| < 1 for every i, that is
    # 0 < lr < 2 / lambda_i for all i: the largest eigenvalue sets the limit.
    H = 2 / len(X) * X.T @ X
    return 2 / torch.linalg.eigvalsh(H).max().item()


@solution("ch3_sigma_mle")
def sigma_mle(X, y):
    # NLL(w, b, sigma) = n log(sigma) + n/2 log(2 pi) + RSS(w, b) / (2 sigma^2).
    # For every sigma the best (w, b) is least squares (section 3.3); then
    # dNLL/dsigma = n / sigma - RSS / sigma^3 = 0 gives sigma^2 = RSS / n.
    # (The unbiased estimate divides by n - d - 1: not the likelihood's optimum.)
    X1 = torch.cat([X, torch.ones(len(X), 1, dtype=X.dtype)], dim=1)
    w1 = torch.linalg.lstsq(X1, y[:, None]).solution
    rss = ((X1 @ w1 - y[:, None]) ** 2).sum()
    return (rss / len(X)).sqrt().item()


@solution("ch3_bce_with_logits")
def bce_with_logits(z, y):
    # -log sigma(z) = log(1 + e^-z) and -log(1 - sigma(z)) = log(1 + e^z), so
    # loss = y log(1 + e^-z) + (1 - y) log(1 + e^z) = max(z, 0) - y z + log(1 + e^-|z|):
    # the exponent is never positive (nothing overflows), and log1p keeps the tiny
    # values accurate.
    return z.clamp(min=0) - y * z + torch.log1p(torch.exp(-z.abs()))


@solution("ch3_softmax_scratch")
def train_softmax(X, y, num_classes, lr, batch_size, num_epochs, generator):
    from d2lmini import cross_entropy, data_iter, sgd
    W = torch.zeros(X.shape[1], num_classes, requires_grad=True)
    b = torch.zeros(num_classes, requires_grad=True)
    for _ in range(num_epochs):
        for Xb, yb in data_iter(batch_size, X, y, generator=generator):
            loss = cross_entropy(Xb @ W + b, yb).mean()   # log-sum-exp inside: stable
            loss.backward()
            sgd([W, b], lr)                               # step, then zero the grads
    return W.detach(), b.detach()
