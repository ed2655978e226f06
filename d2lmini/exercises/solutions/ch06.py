"""Worked solutions of chapter 6's exercises (6. Multi-head attention):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import math

import torch
from torch import nn

from ..core import solution


@solution("ch6_mha_params")
def mha_params(E, h, kdim, vdim):
    # W_q (E x E), W_k (E x kdim), W_v (E x vdim), a bias of E for each, then
    # W_o (E x E) with its bias; h only groups the E output columns: it adds nothing
    return E * E + E * kdim + E * vdim + 3 * E + E * E + E


@solution("ch6_split_heads_tbd")
def split_heads_tbd(x, h):
    T, B, D = x.shape
    # memory holds (t, b) rows: cut each row's D features into h heads first, then
    # move the batch to the front and the heads before time
    return x.view(T, B, h, D // h).permute(1, 2, 0, 3)   # (B, h, T, D // h)
    # x.view(B, h, T, D // h) or x.reshape(B, T, h, -1).transpose(1, 2) have the right
    # shape but mix up sentences and time steps


@solution("ch6_grouped_attention")
def grouped_attention(q, k, v):
    B, h, T_q, d_k = q.shape
    g = k.shape[1]
    # query head i uses key/value head i // (h // g): give each key/value head h // g
    # consecutive copies (repeat_interleave; repeat would tile them 0, 1, 0, 1, ...)
    k = k.repeat_interleave(h // g, dim=1)                 # (B, h, T_k, d_k)
    v = v.repeat_interleave(h // g, dim=1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)      # (B, h, T_q, T_k)
    return torch.softmax(scores, dim=-1) @ v               # (B, h, T_q, d_k)


@solution("ch6_my_mha")
class MyMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.g, self.d_k = num_heads, num_kv_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_k)   # g heads only
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_k)
        self.W_o = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask=None):
        B, T_q, d_model = query.shape
        T_k = key.shape[1]
        q = self.W_q(query).view(B, T_q, self.h, self.d_k).transpose(1, 2)
        k = self.W_k(key).view(B, T_k, self.g, self.d_k).transpose(1, 2)
        v = self.W_v(value).view(B, T_k, self.g, self.d_k).transpose(1, 2)
        k = k.repeat_interleave(self.h // self.g, dim=1)   # (B, h, T_k, d_k)
        v = v.repeat_interleave(self.h // self.g, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v            # (B, h, T_q, d_k)
        return self.W_o(out.transpose(1, 2).reshape(B, T_q, d_model))
