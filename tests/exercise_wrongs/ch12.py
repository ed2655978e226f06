"""Answers chapter 12's exercise checks must reject (WRONG) and accept (RIGHT)."""
import math

import torch
import torch.nn.functional as F

import d2lmini as d2l


# ------------------------------------------------------------------ top-p
def _top_p(z, p, strict=False, ascending=False):
    probs = z.float().softmax(-1)
    s, order = probs.sort(-1, descending=not ascending)
    cum = s.cumsum(-1)
    keep = cum < p if strict else cum - s < p
    keep = torch.zeros_like(keep).scatter(-1, order, keep)
    return z.masked_fill(~keep, float("-inf"))


def _top_p_right(z, p):
    """Sorted ascending, as Hugging Face's TopPLogitsWarper: drop the least likely
    tokens while their total stays at most 1 - p."""
    s, order = z.sort(-1)
    drop = s.float().softmax(-1).cumsum(-1) <= 1 - p
    drop[..., -1] = False
    return z.masked_fill(drop.scatter(-1, order, drop), float("-inf"))


def _top_p_loop(z, p):
    out = torch.full_like(z, float("-inf"))
    for r in range(z.shape[0]):
        probs = F.softmax(z[r].float(), dim=-1)
        total = 0.0
        for i in probs.argsort(descending=True).tolist():
            out[r, i] = z[r, i]
            total += probs[i].item()
            if total >= p:
                break
    return out


# ------------------------------------------------------------------ repetition penalty
def _penalty(z, prev, theta, mode="ctrl"):
    seen = torch.zeros(z.shape, dtype=torch.bool).scatter(-1, prev, True)
    if mode == "divide":
        new = z / theta
    elif mode == "subtract":
        new = z - theta
    else:
        new = torch.where(z > 0, z / theta, z * theta)
    return torch.where(seen, new, z)


def _penalty_per_occurrence(z, prev, theta):
    z = z.clone()
    for r in range(z.shape[0]):
        for i in prev[r].tolist():
            z[r, i] = z[r, i] / theta if z[r, i] > 0 else z[r, i] * theta
    return z


def _penalty_right(z, prev, theta):
    picked = z.gather(-1, prev)                                   # (B, n)
    picked = torch.where(picked < 0, picked * theta, picked / theta)
    return z.scatter(-1, prev, picked)


# ------------------------------------------------------------------ bits per character
def _nats(logits, targets, ignore=0):
    return F.cross_entropy(logits.float().transpose(1, 2), targets, ignore_index=ignore)


def _bits_loop(logits, targets):
    total, count = 0.0, 0
    for b in range(targets.shape[0]):
        for t in range(targets.shape[1]):
            if targets[b, t] != 0:
                p = logits[b, t].double().softmax(-1)[targets[b, t]]
                total -= math.log2(p.item())
                count += 1
    return total / count


WRONG = {
    "ch12_top_p": [
        lambda z, p: _top_p(z, p, strict=True),               # drops the token that crosses p
        lambda z, p: _top_p(z, p, ascending=True),            # keeps the least likely
        lambda z, p: z.masked_fill(z < z.topk(3, -1).values[:, -1:], float("-inf")),  # top-3
        lambda z, p: _top_p(z, p).softmax(-1),                # probabilities, not logits
        lambda z, p: _top_p(z.float(), p),                    # float16 lost
        lambda z, p: z,                                       # keeps everything
    ],
    "ch12_repetition_penalty": [
        lambda z, prev, theta: _penalty(z, prev, theta, "divide"),    # negatives get likelier
        lambda z, prev, theta: _penalty(z, prev, theta, "subtract"),
        _penalty_per_occurrence,                                      # once per repeat
        lambda z, prev, theta: torch.where(z > 0, z / theta, z * theta),  # every token
        lambda z, prev, theta: z,
    ],
    "ch12_bits_per_char": [
        lambda z, y: _nats(z, y),                              # nats, not bits
        lambda z, y: _nats(z, y, ignore=-100) / math.log(2),   # pad targets counted
        lambda z, y: F.cross_entropy(z.float().transpose(1, 2), y, ignore_index=0,
                                     reduction="none").sum(1) / math.log(2),  # per row
        lambda z, y: -(z.float().log_softmax(-1).mean()) / math.log(2),  # every token
        lambda z, y: 1.0,
    ],
}

RIGHT = {
    "ch12_top_p": [_top_p_right, _top_p_loop],
    "ch12_repetition_penalty": [_penalty_right],
    "ch12_bits_per_char": [
        _bits_loop,
        lambda z, y: d2l.sequence_loss(z.float(), y, pad_id=0) / math.log(2),
    ],
}
