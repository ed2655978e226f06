"""Answers chapter 4's exercise checks must reject (WRONG) and accept (RIGHT)."""
import math

import torch
import torch.nn.functional as F


# ---------------------------------------------------------------- 1. blocked attention
def _full_matrix(Q, K, V, block):             # right numbers, but all scores at once
    w = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return w @ V


def _calls_sdpa(Q, K, V, block):              # a ready-made attention
    return F.scaled_dot_product_attention(Q, K, V)


def _no_rescale(Q, K, V, block):              # forgets to rescale the old sums
    m = torch.full(Q.shape[:-1] + (1,), -math.inf, dtype=Q.dtype)
    total = torch.zeros(Q.shape[:-1] + (1,), dtype=Q.dtype)
    acc = torch.zeros(Q.shape[:-1] + (V.shape[-1],), dtype=Q.dtype)
    for start in range(0, K.shape[-2], block):
        s = Q @ K[..., start:start + block, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
        m = torch.maximum(m, s.amax(-1, keepdim=True))
        e = torch.exp(s - m)
        total = total + e.sum(-1, keepdim=True)
        acc = acc + e @ V[..., start:start + block, :]
    return acc / total


def _no_max(Q, K, V, block):                  # exact in theory, overflows in practice
    total = torch.zeros(Q.shape[:-1] + (1,), dtype=Q.dtype)
    acc = torch.zeros(Q.shape[:-1] + (V.shape[-1],), dtype=Q.dtype)
    for start in range(0, K.shape[-2], block):
        s = Q @ K[..., start:start + block, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
        e = torch.exp(s)
        total = total + e.sum(-1, keepdim=True)
        acc = acc + e @ V[..., start:start + block, :]
    return acc / total


def _softmax_per_block(Q, K, V, block):       # averages the blocks' outputs equally
    outs = []
    for start in range(0, K.shape[-2], block):
        s = Q @ K[..., start:start + block, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
        outs.append(torch.softmax(s, -1) @ V[..., start:start + block, :])
    return torch.stack(outs).mean(0)


def _drops_last_block(Q, K, V, block):        # forgets the shorter last block
    n = K.shape[-2] // block * block
    return _right_blocked(Q, K[..., :n, :], V[..., :n, :], block)


def _right_blocked(Q, K, V, block):
    """Merges per-block softmaxes by their log-sum-exp (written differently)."""
    lse, out = None, None
    for start in range(0, K.shape[-2], block):
        s = Q @ K[..., start:start + block, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
        lse_b = torch.logsumexp(s, dim=-1, keepdim=True)
        out_b = torch.exp(s - lse_b) @ V[..., start:start + block, :]
        if lse is None:
            lse, out = lse_b, out_b
            continue
        new = torch.logaddexp(lse, lse_b)
        out = out * torch.exp(lse - new) + out_b * torch.exp(lse_b - new)
        lse = new
    return out


# ---------------------------------------------------------------- 2. Pearson
def _cosine(Q, K):
    Qn, Kn = Q / Q.norm(dim=1, keepdim=True), K / K.norm(dim=1, keepdim=True)
    return Qn @ Kn.T


def _centre_columns(Q, K):
    Qc, Kc = Q - Q.mean(0), K - K.mean(0)
    return (Qc / Qc.norm(dim=1, keepdim=True)) @ (Kc / Kc.norm(dim=1, keepdim=True)).T


def _pearson_loop(Q, K):                      # right numbers, but a loop and corrcoef
    return torch.stack([torch.stack([torch.corrcoef(torch.stack([q, k]))[0, 1]
                                     for k in K]) for q in Q])


def _centre_only(Q, K):                       # forgets to divide by the lengths
    return (Q - Q.mean(1, keepdim=True)) @ (K - K.mean(1, keepdim=True)).T


def _pearson_std(Q, K):                       # divides by std with different ddof
    Qc, Kc = Q - Q.mean(1, keepdim=True), K - K.mean(1, keepdim=True)
    return (Qc @ Kc.T) / (Q.std(1, keepdim=True) * K.std(1, keepdim=True).T)


# ---------------------------------------------------------------- 4. softmax backward
def _only_diag(p, g):                         # forgets the -p p^T part
    return p * g


def _no_p_factor(p, g):
    return g - (p * g).sum(-1, keepdim=True)


def _diag_of_jacobian(p, g):                  # p(1 - p) g: the diagonal only
    return p * (1 - p) * g


def _builds_jacobian(p, g):                   # right numbers, with the T x T matrix
    J = torch.diag_embed(p) - p[..., :, None] * p[..., None, :]
    return (J @ g[..., :, None])[..., 0]


def _wrong_axis(p, g):
    return p * (g - (p * g).sum(0, keepdim=True))


WRONG = {
    "ch4_attention_blocked": [_full_matrix, _calls_sdpa, _no_rescale, _no_max,
                              _softmax_per_block, _drops_last_block],
    "ch4_pearson": [
        _cosine,
        lambda Q, K: Q @ K.T,
        _centre_columns,
        _pearson_loop,
        _centre_only,
        _pearson_std,
    ],
    "ch4_not_self": [
        torch.tensor([[1.0, 0.0], [3.0, 1.0], [0.0, 1.0]]),       # the old (3, 2) answer
        torch.tensor([[1.0, 0.0], [3.0, 1.0], [0.0, 1.0], [-1.0, 0.0]]),  # only one
        torch.tensor([[1.0, 0.0], [2.0, 0.0], [4.0, 0.0], [8.0, 0.0]]),   # cosine ties
        torch.tensor([[0.0, 0.0], [1.0, 0.2], [2.0, 0.8], [4.0, 2.0]]),   # a zero row
        torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]]),  # none
        [[1.0, 0.0], [2.0, 0.7], [4.0, 2.9], [8.0, 8.0]],                  # a list
    ],
    "ch4_softmax_backward": [_only_diag, _no_p_factor, _diag_of_jacobian,
                             _builds_jacobian, _wrong_axis],
}


def _chain():
    # lengths 1, 1.5, 2.25, 3.4 at 10° steps: each beats its own length² with the next
    angles = torch.tensor([0.1, 0.3, 0.5, 0.7])
    lengths = torch.tensor([1.0, 1.5, 2.25, 3.4])
    return lengths[:, None] * torch.stack([angles.cos(), angles.sin()], dim=1)


RIGHT = {
    "ch4_attention_blocked": [_right_blocked],
    "ch4_pearson": [
        lambda Q, K: F.normalize(Q - Q.mean(-1, keepdim=True), dim=-1)
        @ F.normalize(K - K.mean(-1, keepdim=True), dim=-1).mT,
    ],
    "ch4_not_self": [_chain()],
    "ch4_softmax_backward": [
        lambda p, g: p * g - p * torch.sum(p * g, dim=-1, keepdim=True),
    ],
}
