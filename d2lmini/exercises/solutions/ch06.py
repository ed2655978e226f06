"""Worked solutions of chapter 6's exercises (6. Multi-head attention):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import math


from ..core import solution


@solution("ch6_mha_params")
def mha_params(E, h, kdim, vdim):
    # W_q (E x E), W_k (E x kdim), W_v (E x vdim), a bias of E for each, then
    # W_o (E x E) with its bias; h only groups the E output columns: it adds nothing
    return E * E + E * kdim + E * vdim + 3 * E + E * E + E


@solution("ch6_split_heads")
def split_heads(x, h):
    B, T, D = x.shape
    return x.view(B, T, h, D // h).transpose(1, 2)   # (B, T, h, d_k) -> (B, h, T, d_k)
    # x.view(B, h, T, D // h) has the right shape and the wrong numbers: it cuts the
    # flat memory into h blocks of T tokens, mixing tokens into heads


@solution("ch6_combine_heads")
def combine_heads(x):
    B, h, T, d_k = x.shape
    return x.transpose(1, 2).reshape(B, T, h * d_k)   # heads next to each other, glued
    # x.reshape(B, T, -1) without the transpose glues tokens of one head together


@solution("ch6_self_score")
def self_score(r, d):
    return r * r / math.sqrt(d)   # x_a . x_a = |x_a|^2 = r^2, then the 1/sqrt(d) scale
    # for r = 8, d = 64 that is 8, against scores of order ±1 with other tokens
