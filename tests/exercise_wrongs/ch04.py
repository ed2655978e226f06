"""Answers chapter 4's exercise checks must reject (WRONG) and accept (RIGHT)."""
import math

import torch


def _no_scale(Q, K, V):
    return torch.softmax(Q @ K.transpose(-2, -1), dim=-1) @ V


def _wrong_dim(Q, K, V):
    w = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-2)
    return w @ V


def _scale_dv(Q, K, V):
    return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(V.shape[-1]), dim=-1) @ V


def _cosine(Q, K):
    Qn, Kn = Q / Q.norm(dim=1, keepdim=True), K / K.norm(dim=1, keepdim=True)
    return Qn @ Kn.T


def _centre_columns(Q, K):
    Qc, Kc = Q - Q.mean(0), K - K.mean(0)
    return (Qc / Qc.norm(dim=1, keepdim=True)) @ (Kc / Kc.norm(dim=1, keepdim=True)).T


WRONG = {
    "ch4_attention": [
        _no_scale,
        _wrong_dim,
        _scale_dv,
        lambda Q, K, V: torch.softmax(Q @ Q.mT / math.sqrt(Q.shape[-1]), dim=-1) @ V,
        lambda Q, K, V: V,
    ],
    "ch4_pearson": [
        _cosine,
        lambda Q, K: Q @ K.T,
        _centre_columns,
        lambda Q, K: torch.corrcoef(torch.cat([Q, K])),     # the whole matrix
    ],
    "ch4_not_self": [
        torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]),  # equal lengths: self wins
        torch.tensor([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]]),  # rows 0 and 1 tie in cosine
        torch.tensor([[1.0, 0.0], [3.0, 1.0]]),             # wrong shape
        torch.tensor([[0.0, 0.0], [3.0, 1.0], [0.0, 1.0]]),  # a zero row
        [[1.0, 0.0], [3.0, 1.0], [0.0, 1.0]],               # a list
    ],
}

RIGHT = {
    "ch4_attention": [
        lambda Q, K, V: torch.einsum(
            "...qk,...kv->...qv",
            torch.softmax(torch.einsum("...qd,...kd->...qk", Q, K) * Q.shape[-1] ** -0.5, -1),
            V),
    ],
    "ch4_pearson": [
        lambda Q, K: torch.stack([torch.stack([torch.corrcoef(torch.stack([q, k]))[0, 1]
                                               for k in K]) for q in Q]),
    ],
    "ch4_not_self": [torch.tensor([[1.0, 0.2], [4.0, 2.0], [-1.0, 3.0]])],
}
