"""Worked solutions of chapter 1's exercises (1. Linear algebra):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import itertools
import math

import torch

from ..core import solution


@solution("ch1_map_between")
def map_between(P, Q):
    # A P = Q, so A = Q P^-1 (read right to left: undo P, then apply Q).
    # The 2x2 inverse: swap the diagonal, negate the off-diagonal, divide by det P.
    det_p = P[0, 0] * P[1, 1] - P[0, 1] * P[1, 0]
    P_inv = torch.stack([torch.stack([P[1, 1], -P[0, 1]]),
                         torch.stack([-P[1, 0], P[0, 0]])]) / det_p
    det_q = Q[0, 0] * Q[1, 1] - Q[0, 1] * Q[1, 0]
    # det A = det Q / det P: the ratio of the two signed areas (negative when exactly
    # one of the two parallelograms is a mirror image); P = I gives A = Q.
    return Q @ P_inv, (det_q / det_p).item()


@solution("ch1_l1_isometries", value=True)
def answer_ch1_l1_isometries():
    stretch = math.sqrt(2)  # e1 -> (cos 45°, sin 45°): L1 length 2 / sqrt(2) = sqrt(2)
    # The corners (±1, 0), (0, ±1) of the diamond must go to corners:
    # the signed permutations.
    keepers = []
    for a, b in itertools.product((1.0, -1.0), repeat=2):
        keepers += [
            torch.tensor([[a, 0.0], [0.0, b]]),  # keep the axes, maybe flip
            torch.tensor([[0.0, a], [b, 0.0]]),
        ]  # swap the axes, maybe flip
    return stretch, keepers


@solution("ch1_sq_dists")
def sq_dists(X, Y):
    # (..., n, 1, d) - (..., 1, m, d) broadcasts to (..., n, m, d): every pair, then
    # square and sum over the feature axis
    diff = X.unsqueeze(-2) - Y.unsqueeze(-3)
    return (diff ** 2).sum(dim=-1)


@solution("ch1_frobenius")
def frobenius(X):
    return (X ** 2).sum(dim=(-2, -1)).sqrt()   # reduce the two matrix axes only


@solution("ch1_power_iteration")
def top_eigen(S, steps=200):
    # Write the start vector in S's eigenvectors, v = sum c_i v_i. After k products it
    # is sum c_i lambda_i^k v_i: the top term grows fastest, by (lambda_1/lambda_2)^k
    # relative to the next. Rescaling keeps the numbers finite (without it lambda^k
    # overflows or vanishes); a random start has c_1 != 0 with probability 1, a fixed
    # one such as all ones can be orthogonal to the top eigenvector.
    v = torch.randn(S.shape[0], dtype=S.dtype)
    v = v / (v ** 2).sum().sqrt()
    for _ in range(steps):
        v = S @ v
        v = v / (v ** 2).sum().sqrt()
    return (v @ S @ v).item(), v            # Rayleigh quotient v^T S v, |v| = 1
