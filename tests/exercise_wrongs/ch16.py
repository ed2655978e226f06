"""Answers chapter 16's exercise checks must reject (WRONG) and accept (RIGHT)."""
import math

import torch
import torch.nn.functional as F
from torch import nn


# ------------------------------------------------------------------ optimal policy
def _opt_right(ref_probs, rewards, beta):
    """Written differently: log space by hand, with logsumexp."""
    z = ref_probs.log() + rewards / beta
    return (z - torch.logsumexp(z, dim=-1, keepdim=True)).exp()


def _opt_naive(ref_probs, rewards, beta):            # exp overflows for large r/beta
    w = ref_probs * torch.exp(rewards / beta)
    return w / w.sum(-1, keepdim=True)


def _opt_times_beta(ref_probs, rewards, beta):       # exp(beta r), not exp(r / beta)
    return torch.softmax(ref_probs.log() + beta * rewards, dim=-1)


def _opt_no_ref(ref_probs, rewards, beta):           # forgets the reference
    return torch.softmax(rewards / beta, dim=-1)


def _opt_unnormalised(ref_probs, rewards, beta):     # no partition function Z
    return ref_probs * torch.exp(rewards / beta - (rewards / beta).amax(-1, True))


# ------------------------------------------------------------------ chat targets
def _turns_text(turns, sep="\n"):
    from d2lmini.align import END, chat_prompt
    return sep.join(chat_prompt(q) + a + END for q, a in turns)


def _targets_right(vocab, turns):
    """Written differently: find each answer in the text by its offsets."""
    from d2lmini.align import END, chat_prompt
    text, learn = "", []
    for k, (q, a) in enumerate(turns):
        if k:
            text += "\n"
        text += chat_prompt(q)
        start = len(text)
        text += a + END
        learn += list(range(start, len(text)))
    ids = torch.tensor(vocab.encode(text))
    y = torch.zeros(len(ids) - 1, dtype=torch.long)
    pos = torch.tensor(learn) - 1
    y[pos] = ids[pos + 1]
    return ids[:-1], y


def _targets_last_only(vocab, turns):              # the loss on the last answer only
    from d2lmini.align import chat_prompt
    x, y = _targets_right(vocab, turns)
    before = _turns_text(turns[:-1]) + "\n" if len(turns) > 1 else ""
    start = len(before) + len(chat_prompt(turns[-1][0]))  # the last answer's index
    y = y.clone()
    y[:start - 1] = 0
    return x, y


def _targets_with_marker(vocab, turns):            # "ASSISTANT:\n" learned too
    x, y = _targets_right(vocab, turns)
    text, marker = _turns_text(turns), "ASSISTANT:\n"
    ids = torch.tensor(vocab.encode(text))
    y, i = y.clone(), text.find(marker)
    while i != -1:
        y[i - 1:i + len(marker) - 1] = ids[i:i + len(marker)]
        i = text.find(marker, i + 1)
    return x, y


def _targets_no_end(vocab, turns):                 # END not learned
    x, y = _targets_right(vocab, turns)
    nl = vocab.encode("\n")[0]
    y = y.masked_fill(y == nl, 0)
    return x, y


def _targets_unshifted(vocab, turns):              # the mask on x's positions, y = x
    x, y = _targets_right(vocab, turns)
    keep = torch.cat([y[1:] != 0, torch.tensor([True])])
    return x, x.masked_fill(~keep, 0)


def _targets_no_blank_line(vocab, turns):          # turns glued without a blank line
    from d2lmini.align import END, chat_prompt
    ids, learn = [], []
    for q, a in turns:
        p, r = vocab.encode(chat_prompt(q)), vocab.encode(a + END)
        ids += p + r
        learn += [False] * len(p) + [True] * len(r)
    ids, learn = torch.tensor(ids), torch.tensor(learn)
    return ids[:-1], ids[1:].masked_fill(~learn[1:], 0)


def _targets_minus100(vocab, turns):               # HF's -100 instead of the pad id 0
    x, y = _targets_right(vocab, turns)
    return x, y.masked_fill(y == 0, -100)


# ------------------------------------------------------------------ LoRA layer
class _LoRABase(nn.Module):
    scale_rule = staticmethod(lambda alpha, rank: alpha / rank)
    init_b = "zeros"
    init_a = "kaiming"
    freeze = True
    merge_scale = True

    def __init__(self, base, rank, alpha):
        super().__init__()
        self.base, self.scale = base, self.scale_rule(alpha, rank)
        if self.freeze:
            for p in base.parameters():
                p.requires_grad_(False)
        w = base.weight
        self.A = nn.Parameter(torch.empty(rank, base.in_features, dtype=w.dtype))
        self.B = nn.Parameter(torch.zeros(base.out_features, rank, dtype=w.dtype))
        if self.init_a == "kaiming":
            nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))
        elif self.init_a == "normal":
            nn.init.kaiming_normal_(self.A, a=math.sqrt(5))
        elif self.init_a == "small":
            nn.init.normal_(self.A, std=0.01)
        if self.init_b == "normal":
            nn.init.normal_(self.B, std=0.02)

    def forward(self, x):
        return self.base(x) + self.scale * (x @ self.A.T) @ self.B.T

    @torch.no_grad()
    def merge(self):
        out = nn.Linear(self.base.in_features, self.base.out_features,
                        bias=self.base.bias is not None, dtype=self.base.weight.dtype)
        s = self.scale if self.merge_scale else 1.0
        out.weight.copy_(self.base.weight + s * self.B @ self.A)
        if self.base.bias is not None:
            out.bias.copy_(self.base.bias)
        return out


class _LoRAAlphaOnly(_LoRABase):          # scales by alpha, not alpha / rank
    scale_rule = staticmethod(lambda alpha, rank: alpha)


class _LoRARankOverAlpha(_LoRABase):      # rank / alpha
    scale_rule = staticmethod(lambda alpha, rank: rank / alpha)


class _LoRABRandom(_LoRABase):            # B random: not the base layer at start
    init_b = "normal"


class _LoRANormalA(_LoRABase):            # Kaiming-normal, not uniform
    init_a = "normal"


class _LoRASmallA(_LoRABase):             # a tiny A: learns almost nothing
    init_a = "small"


class _LoRANotFrozen(_LoRABase):          # the base layer trains as well
    freeze = False


class _LoRAMergeNoScale(_LoRABase):       # merge forgets alpha / rank
    merge_scale = False


class _LoRARight(nn.Module):
    """Written differently: one low-rank product, the update as a matrix."""

    def __init__(self, base, rank, alpha):
        super().__init__()
        base.requires_grad_(False)
        self.base = base
        self.rank, self.alpha = rank, alpha
        bound = 1 / math.sqrt(base.in_features)
        self.A = nn.Parameter((torch.rand(rank, base.in_features) * 2 - 1)
                              .to(base.weight.dtype) * bound)
        self.B = nn.Parameter(base.weight.new_zeros(base.out_features, rank))

    def delta(self):
        return self.alpha / self.rank * self.B @ self.A

    def forward(self, x):
        return self.base(x) + F.linear(x, self.delta())

    def merge(self):
        lin = nn.Linear(self.base.in_features, self.base.out_features,
                        bias=self.base.bias is not None).to(self.base.weight.dtype)
        lin.load_state_dict({"weight": (self.base.weight + self.delta()).detach(),
                             **({"bias": self.base.bias.detach()}
                                if self.base.bias is not None else {})})
        return lin


# ------------------------------------------------------------------ DPO loss
def _dpo_right(pc, pr, rc, rr, beta):
    """Written differently: softplus(-z) = -log sigmoid(z)."""
    z = beta * ((pc - pr) - (rc - rr))
    return F.softplus(-z).mean(), beta * (pc - rc), beta * (pr - rr)


def _dpo_swapped(pc, pr, rc, rr, beta):            # pushes toward the rejected answer
    z = beta * ((pr - rr) - (pc - rc))
    return -F.logsigmoid(z).mean(), beta * (pc - rc), beta * (pr - rr)


def _dpo_unstable(pc, pr, rc, rr, beta):           # log(sigmoid) underflows
    z = beta * ((pc - rc) - (pr - rr))
    return -torch.log(torch.sigmoid(z)).mean(), beta * (pc - rc), beta * (pr - rr)


def _dpo_no_ref(pc, pr, rc, rr, beta):             # forgets the reference
    z = beta * (pc - pr)
    return -F.logsigmoid(z).mean(), beta * pc, beta * pr


def _dpo_beta_outside(pc, pr, rc, rr, beta):       # beta outside the log-sigmoid
    z = (pc - rc) - (pr - rr)
    return -beta * F.logsigmoid(z).mean(), beta * (pc - rc), beta * (pr - rr)


def _dpo_sum(pc, pr, rc, rr, beta):                # sum over pairs, not the mean
    z = beta * ((pc - rc) - (pr - rr))
    return -F.logsigmoid(z).sum(), beta * (pc - rc), beta * (pr - rr)


def _dpo_rewards_no_beta(pc, pr, rc, rr, beta):    # rewards without beta
    z = beta * ((pc - rc) - (pr - rr))
    return -F.logsigmoid(z).mean(), pc - rc, pr - rr


WRONG = {
    "ch16_optimal_policy": [_opt_naive, _opt_times_beta, _opt_no_ref, _opt_unnormalised],
    "ch16_chat_targets": [_targets_last_only, _targets_with_marker, _targets_no_end,
                          _targets_unshifted, _targets_no_blank_line, _targets_minus100],
    "ch16_lora": [_LoRAAlphaOnly, _LoRARankOverAlpha, _LoRABRandom, _LoRANormalA,
                  _LoRASmallA, _LoRANotFrozen, _LoRAMergeNoScale],
    "ch16_dpo_loss": [_dpo_swapped, _dpo_unstable, _dpo_no_ref, _dpo_beta_outside,
                      _dpo_sum, _dpo_rewards_no_beta],
}
RIGHT = {
    "ch16_optimal_policy": [_opt_right],
    "ch16_chat_targets": [_targets_right],
    "ch16_lora": [_LoRARight],
    "ch16_dpo_loss": [_dpo_right],
}
