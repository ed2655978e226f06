"""Chapter 11: answers each exercise's check must reject (WRONG) and accept (RIGHT)."""
import torch
from torch import nn


# ------------------------------------------------------------- bidirectional GRU
def _bi_swapped(fwd, bwd, x):
    return torch.cat([bwd(x.flip(1))[0].flip(1), fwd(x)[0]], -1)


def _bi_not_flipped_back(fwd, bwd, x):
    return torch.cat([fwd(x)[0], bwd(x.flip(1))[0]], -1)


def _bi_not_reversed(fwd, bwd, x):
    return torch.cat([fwd(x)[0], bwd(x)[0]], -1)


def _bi_fwd_twice(fwd, bwd, x):
    return torch.cat([fwd(x)[0], fwd(x.flip(1))[0].flip(1)], -1)


def _bi_builtin(fwd, bwd, x):
    both = nn.GRU(fwd.input_size, fwd.hidden_size, batch_first=True,
                  bidirectional=True)
    return both(x)[0]


def _bi_right(fwd, bwd, x):
    T = x.shape[1]
    back = torch.stack([bwd(x[:, t:].flip(1))[0][:, -1] for t in range(T)], 1)
    return torch.cat([fwd(x)[0], back], -1)


# ------------------------------------------------------------- truncated BPTT
def _tr_no_detach(rnn, x, k):
    outs, h = [], None
    for s in range(0, x.shape[1], k):
        o, h = rnn(x[:, s:s + k], h)
        outs.append(o)
    return torch.cat(outs, 1)


def _tr_reset_state(rnn, x, k):
    return torch.cat([rnn(x[:, s:s + k])[0] for s in range(0, x.shape[1], k)], 1)


def _tr_every_step(rnn, x, k):
    outs, h = [], None
    for t in range(x.shape[1]):
        o, h = rnn(x[:, t:t + 1], h)
        outs.append(o)
        h = h.detach()
    return torch.cat(outs, 1)


def _tr_chunk_k_plus_1(rnn, x, k):
    outs, h = [], None
    for s in range(0, x.shape[1], k + 1):
        o, h = rnn(x[:, s:s + k + 1], h)
        outs.append(o)
        h = h.detach()
    return torch.cat(outs, 1)


def _tr_no_grad(rnn, x, k):
    with torch.no_grad():
        return rnn(x)[0]


def _tr_right(rnn, x, k):
    chunks, h, outs = x.split(k, dim=1), None, []
    for c in chunks:
        o, h = rnn(c, None if h is None else h.detach())
        outs.append(o)
    return torch.cat(outs, 1)


# ------------------------------------------------------------- relative bias
class _RelSymmetric(nn.Module):            # |j - i|: cannot tell before from after
    def __init__(self, h, D):
        super().__init__()
        self.D = D
        self.w = nn.Parameter(torch.zeros(h, D + 1))

    def forward(self, T):
        i = torch.arange(T)
        return self.w[:, (i[None] - i[:, None]).abs().clamp(max=self.D)]


class _RelNoClip(nn.Module):               # a table as long as the sequence
    def __init__(self, h, D):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(h, 2 * D + 1))
        self.D = D

    def forward(self, T):
        i = torch.arange(T)
        off = (i[None] - i[:, None]) + self.D
        return self.w[:, off.clamp(0, 2 * self.D)] * ((i[None] - i[:, None]).abs()
                                                     <= self.D)


class _RelRandomInit(nn.Module):
    def __init__(self, h, D):
        super().__init__()
        self.D = D
        self.w = nn.Parameter(torch.randn(h, 2 * D + 1))

    def forward(self, T):
        i = torch.arange(T)
        return self.w[:, (i[None] - i[:, None]).clamp(-self.D, self.D) + self.D]


class _RelSharedHeads(nn.Module):
    def __init__(self, h, D):
        super().__init__()
        self.h, self.D = h, D
        self.w = nn.Parameter(torch.zeros(2 * D + 1))
        self.pad = nn.Parameter(torch.zeros((h - 1) * (2 * D + 1)))  # unused

    def forward(self, T):
        i = torch.arange(T)
        b = self.w[(i[None] - i[:, None]).clamp(-self.D, self.D) + self.D]
        return b.expand(self.h, T, T) + 0 * self.pad.sum()


class _RelAbsolute(nn.Module):             # by absolute key position, not offset
    def __init__(self, h, D):
        super().__init__()
        self.D = D
        self.w = nn.Parameter(torch.zeros(h, 2 * D + 1))

    def forward(self, T):
        j = torch.arange(T).clamp(max=2 * self.D)
        return self.w[:, j][:, None, :].expand(-1, T, T)


class _RelRight(nn.Module):                # an embedding table, offsets i - j
    def __init__(self, h, D):
        super().__init__()
        self.D = D
        self.table = nn.Embedding(2 * D + 1, h)
        nn.init.zeros_(self.table.weight)

    def forward(self, T):
        pos = torch.arange(T)
        rel = (pos[:, None] - pos[None, :]).clamp(-self.D, self.D) + self.D
        return self.table(rel).permute(2, 0, 1)


WRONG = {
    "ch11_bidirectional": [_bi_swapped, _bi_not_flipped_back, _bi_not_reversed,
                           _bi_fwd_twice, _bi_builtin],
    "ch11_truncated_bptt": [_tr_no_detach, _tr_reset_state, _tr_every_step,
                            _tr_chunk_k_plus_1, _tr_no_grad],
    "ch11_relative_bias": [_RelSymmetric, _RelNoClip, _RelRandomInit, _RelSharedHeads,
                           _RelAbsolute],
}

RIGHT = {
    "ch11_bidirectional": [_bi_right],
    "ch11_truncated_bptt": [_tr_right],
    "ch11_relative_bias": [_RelRight],
}
