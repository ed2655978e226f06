"""Worked solutions of chapter 15's exercises (15. GPT-3: what scale buys):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch

from ..core import solution


@solution("ch15_power_law_fit")
def fit_power_law(N, L):
    N = torch.as_tensor(N, dtype=torch.float64)
    L = torch.as_tensor(L, dtype=torch.float64)
    ones = torch.ones_like(N)

    def solve(alpha):          # for a fixed alpha, L = a N^-alpha + L_inf is linear
        X = torch.stack([N ** -alpha, ones], 1)
        coef = torch.linalg.lstsq(X, L[:, None]).solution[:, 0]
        return ((X @ coef - L) ** 2).sum().item(), coef

    alphas = torch.linspace(0.01, 2.0, 400, dtype=torch.float64)
    best = min(alphas.tolist(), key=lambda a: solve(a)[0])
    step = 0.005
    for _ in range(30):        # refine around the best alpha
        grid = torch.linspace(best - step, best + step, 11, dtype=torch.float64)
        best = min(grid.tolist(), key=lambda a: solve(a)[0])
        step /= 4
    a, L_inf = solve(best)[1].tolist()
    return a, best, L_inf


@solution("ch15_head_scores")
def head_scores(weights, tokens):
    B, h, T, _ = weights.shape
    t = torch.arange(1, T)
    prev = weights[:, :, t, t - 1].mean((0, 2))                       # (h,)
    # key j follows an earlier occurrence of query t's token: tokens[j - 1] == tokens[t]
    follows = torch.zeros(B, T, T, dtype=torch.bool)
    follows[:, :, 1:] = tokens[:, :, None] == tokens[:, None, :-1]
    follows &= torch.ones(T, T, dtype=torch.bool).tril()              # j <= t
    has = follows.any(-1)                                             # (B, T)
    mass = (weights * follows[:, None]).sum(-1)                       # (B, h, T)
    induction = (mass * has[:, None]).sum((0, 2)) / has.sum().clamp(min=1)
    return prev, induction


@solution("ch15_strided_mask")
def strided_causal_mask(T, stride):
    i = torch.arange(T)
    lag = i[:, None] - i[None, :]                                     # i - j
    return ((lag >= 0) & (lag % stride == 0))[None, None]
