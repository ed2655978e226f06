"""Worked solutions of chapter 16's exercises (16. From GPT to ChatGPT):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..core import solution


@solution("ch16_optimal_policy")
def optimal_policy(ref_probs, rewards, beta):
    # pi*(y|x) = ref(y|x) exp(r(x, y) / beta) / Z(x): a softmax of log ref + r / beta,
    # which never forms exp of a large number
    return torch.softmax(ref_probs.log() + rewards / beta, dim=-1)


@solution("ch16_chat_targets")
def chat_targets(vocab, turns):
    from d2lmini.align import END, chat_prompt
    ids, learn = [], []
    for k, (instruction, answer) in enumerate(turns):
        if k > 0:                                   # a blank line between turns
            ids.append(vocab.encode("\n")[0])
            learn.append(False)
        prompt = vocab.encode(chat_prompt(instruction))
        reply = vocab.encode(answer + END)
        ids += prompt + reply
        learn += [False] * len(prompt) + [True] * len(reply)
    ids, learn = torch.tensor(ids), torch.tensor(learn)
    x, y = ids[:-1], ids[1:].clone()
    y[~learn[1:]] = 0                               # no loss: the pad id
    return x, y


@solution("ch16_lora")
class LoRA(nn.Module):
    def __init__(self, base, rank, alpha):
        super().__init__()
        self.base, self.scale = base, alpha / rank
        for p in base.parameters():
            p.requires_grad_(False)
        w = base.weight
        self.A = nn.Parameter(torch.empty(rank, base.in_features, dtype=w.dtype))
        self.B = nn.Parameter(torch.zeros(base.out_features, rank, dtype=w.dtype))
        nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))

    def forward(self, x):
        return self.base(x) + self.scale * (x @ self.A.T) @ self.B.T

    @torch.no_grad()
    def merge(self):
        out = nn.Linear(self.base.in_features, self.base.out_features,
                        bias=self.base.bias is not None, dtype=self.base.weight.dtype)
        out.weight.copy_(self.base.weight + self.scale * self.B @ self.A)
        if self.base.bias is not None:
            out.bias.copy_(self.base.bias)
        return out


@solution("ch16_dpo_loss")
def my_dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
                ref_rejected_logps, beta):
    chosen = policy_chosen_logps - ref_chosen_logps        # log pi/ref, chosen
    rejected = policy_rejected_logps - ref_rejected_logps  # log pi/ref, rejected
    loss = -F.logsigmoid(beta * (chosen - rejected)).mean()
    return loss, beta * chosen.detach(), beta * rejected.detach()
