"""Worked solutions of chapter 11's exercises (11. RNN, CNN and attention, measured):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch
from torch import nn

from ..core import solution


@solution("ch11_bidirectional")
def bidirectional_gru(fwd, bwd, x):
    left_to_right = fwd(x)[0]                          # (B, T, H): h_t from x_0..x_t
    right_to_left = bwd(x.flip(1))[0].flip(1)          # (B, T, H): from x_t..x_{T-1}
    return torch.cat([left_to_right, right_to_left], dim=-1)


@solution("ch11_truncated_bptt")
def truncated_gru(rnn, x, k):
    outputs, state = [], None
    for start in range(0, x.shape[1], k):
        out, state = rnn(x[:, start:start + k], state)
        outputs.append(out)
        state = state.detach()          # keep the value, cut the gradient's path
    return torch.cat(outputs, dim=1)


@solution("ch11_relative_bias")
class RelativeBias(nn.Module):
    def __init__(self, num_heads, max_distance):
        super().__init__()
        self.max_distance = max_distance
        # one number per head and offset -D..D, zero at the start
        self.weight = nn.Parameter(torch.zeros(num_heads, 2 * max_distance + 1))

    def forward(self, T):
        i = torch.arange(T, device=self.weight.device)
        offset = (i[None, :] - i[:, None]).clamp(-self.max_distance,
                                                 self.max_distance)  # j - i (T, T)
        return self.weight[:, offset + self.max_distance]            # (h, T, T)
