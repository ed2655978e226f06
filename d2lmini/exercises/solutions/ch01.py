"""Worked solutions of chapter 1's exercises (1. Linear algebra):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import itertools
import math

import torch

from ..core import solution


@solution("ch1_rotation")
def rotation(phi):
    c, s = math.cos(phi), math.sin(phi)
    return torch.tensor([[c, -s],      # column 0: R e1 = (cos phi, sin phi)
                         [s, c]])      # column 1: R e2 = (-sin phi, cos phi)


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


@solution("ch1_cos_std")
def predicted_std(d):
    return 1 / math.sqrt(d)   # std(u.v) / (|u| |v|) = sqrt(d) / (sqrt(d) sqrt(d))


@solution("ch1_frobenius")
def frobenius(X):
    return (X ** 2).sum(dim=(-2, -1)).sqrt()   # reduce the two matrix axes only
