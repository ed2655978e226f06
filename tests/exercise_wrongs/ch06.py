"""Chapter 6: answers each exercise's check must reject (WRONG) and accept (RIGHT)."""
import math

import torch
from torch import nn


def _attend(q, k, v, mask=None, scale=None):
    s = q @ k.transpose(-2, -1) / (scale or math.sqrt(q.shape[-1]))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, -1) @ v


def _mha_class(kv="interleave", scale=None, concat="transpose", causal_ignored=False,
               bias=True):
    """A MyMultiHeadAttention with one chosen mistake."""
    class MHA(nn.Module):
        def __init__(self, d_model, num_heads, num_kv_heads):
            super().__init__()
            self.h, self.g, self.d_k = num_heads, num_kv_heads, d_model // num_heads
            self.W_q = nn.Linear(d_model, d_model, bias=bias)
            self.W_k = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
            self.W_v = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
            self.W_o = nn.Linear(d_model, d_model, bias=bias)

        def forward(self, query, key, value, mask=None):
            B, T_q, D = query.shape
            T_k = key.shape[1]
            q = self.W_q(query).view(B, T_q, self.h, self.d_k).transpose(1, 2)
            k = self.W_k(key).view(B, T_k, self.g, self.d_k).transpose(1, 2)
            v = self.W_v(value).view(B, T_k, self.g, self.d_k).transpose(1, 2)
            r = self.h // self.g
            if kv == "interleave":
                k, v = k.repeat_interleave(r, 1), v.repeat_interleave(r, 1)
            elif kv == "tile":
                k, v = k.repeat(1, r, 1, 1), v.repeat(1, r, 1, 1)
            out = _attend(q, k, v, None if causal_ignored else mask,
                          scale and scale(self))
            if concat == "transpose":
                out = out.transpose(1, 2).reshape(B, T_q, D)
            elif concat == "no_transpose":
                out = out.reshape(B, T_q, D)
            elif concat == "sum":
                out = out.sum(1).repeat(1, 1, self.h)
            return self.W_o(out)
    return MHA


WRONG = {
    "ch6_mha_params": [
        lambda E, h, kdim, vdim: 37248,                               # a constant
        lambda E, h, kdim, vdim: 4 * (E * E + E),                     # ignores kdim, vdim
        lambda E, h, kdim, vdim: h * (E * E + E * kdim + E * vdim + 3 * E + E * E + E),
        lambda E, h, kdim, vdim: E * E + E * kdim + E * vdim + E * E,  # no biases
    ],
    "ch6_split_heads_tbd": [
        lambda x, h: x.view(x.shape[1], h, x.shape[0], x.shape[2] // h),  # one view
        lambda x, h: x.reshape(x.shape[1], x.shape[0], h, -1).transpose(1, 2),  # as BTD
        lambda x, h: x.view(x.shape[0], x.shape[1], h, -1).transpose(1, 2),  # (T, h, B)
        lambda x, h: x.view(*x.shape[:2], h, -1).permute(1, 2, 0, 3).float(),  # dtype
        lambda x, h: x.view(*x.shape[:2], -1, h).permute(1, 3, 0, 2),  # d_k-major cut
    ],
    "ch6_grouped_attention": [
        lambda q, k, v: _attend(q, k.repeat(1, q.shape[1] // k.shape[1], 1, 1),
                                v.repeat(1, q.shape[1] // k.shape[1], 1, 1)),  # tiled
        lambda q, k, v: _attend(q, k.repeat_interleave(q.shape[1] // k.shape[1], 1),
                                v.repeat_interleave(q.shape[1] // k.shape[1], 1),
                                scale=1.0),                                   # no scale
        lambda q, k, v: _attend(q, k.repeat_interleave(q.shape[1] // k.shape[1], 1),
                                v.repeat_interleave(q.shape[1] // k.shape[1], 1),
                                scale=math.sqrt(q.shape[1] * q.shape[-1])),   # sqrt(d)
        lambda q, k, v: torch.cat([_attend(q[:, i:i + 1], k[:, [i * k.shape[1]
                                                               // q.shape[1]]],
                                           v[:, [i * k.shape[1] // q.shape[1]]])
                                   for i in range(q.shape[1])], 1),        # a loop
    ],
    "ch6_my_mha": [
        _mha_class(kv="tile"),                       # kv heads shared the wrong way
        _mha_class(concat="no_transpose"),           # reshape without transpose
        _mha_class(causal_ignored=True),             # the mask is not applied
        _mha_class(scale=lambda m: math.sqrt(m.h * m.d_k)),   # sqrt(d_model)
        _mha_class(bias=False),                      # the state dict does not load
        _mha_class(concat="sum"),                    # heads added, not concatenated
    ],
}


def _tbd_right(x, h):
    T, B, D = x.shape
    return x.transpose(0, 1).reshape(B, T, h, D // h).transpose(1, 2)


def _gqa_right(q, k, v):
    B, h, T_q, d_k = q.shape
    g = k.shape[1]
    qg = q.view(B, g, h // g, T_q, d_k)                  # (B, g, r, T_q, d_k)
    w = torch.softmax(qg @ k[:, :, None].transpose(-2, -1) / d_k ** 0.5, -1)
    return (w @ v[:, :, None]).view(B, h, T_q, d_k)


class _MHAExpand(nn.Module):
    """Right, written differently: expand + reshape instead of repeat_interleave, and
    F.scaled_dot_product_attention."""

    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.h, self.g, self.d_k = num_heads, num_kv_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_k)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_k)
        self.W_o = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask=None):
        B, T_q, D = query.shape
        T_k = key.shape[1]
        r = self.h // self.g
        q = self.W_q(query).unflatten(-1, (self.h, self.d_k)).permute(0, 2, 1, 3)
        kv = [lin(t).unflatten(-1, (self.g, 1, self.d_k)).expand(
                  B, T_k, self.g, r, self.d_k).reshape(B, T_k, self.h, self.d_k)
              .permute(0, 2, 1, 3) for lin, t in ((self.W_k, key), (self.W_v, value))]
        out = torch.nn.functional.scaled_dot_product_attention(q, *kv, attn_mask=mask)
        return self.W_o(out.permute(0, 2, 1, 3).flatten(2))


RIGHT = {
    "ch6_mha_params": [
        lambda E, h, kdim, vdim: E * (E + kdim + vdim) + 3 * E + (E + 1) * E,
    ],
    "ch6_split_heads_tbd": [_tbd_right,
                            lambda x, h: torch.stack(x.chunk(h, -1), 0).permute(2, 0, 1, 3)],
    "ch6_grouped_attention": [_gqa_right],
    "ch6_my_mha": [_MHAExpand],
}
