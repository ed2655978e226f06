"""Answers chapter 14's exercise checks must reject (WRONG) and accept (RIGHT)."""
import torch
import torch.nn.functional as F


# ------------------------------------------------------------------ mask_tokens
def _mask(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None, *,
          include_special=False, split=(0.8, 0.9), random_special=False, p_scale=1.0,
          labels_everywhere=False):
    special = torch.tensor(list(special_ids))
    eligible = torch.ones_like(tokens, dtype=torch.bool) if include_special \
        else ~torch.isin(tokens, special)
    selected = eligible & (torch.rand(tokens.shape) < p * p_scale)
    u = torch.rand(tokens.shape)
    pool = torch.arange(vocab_size) if random_special else torch.tensor(
        [t for t in range(vocab_size) if t not in special_ids])
    rand_ids = pool[torch.randint(len(pool), tokens.shape)]
    inputs = torch.where(selected & (u < split[0]), mask_id, tokens)
    inputs = torch.where(selected & (u >= split[0]) & (u < split[1]), rand_ids, inputs)
    labels = tokens.clone() if labels_everywhere else torch.where(selected, tokens, -100)
    return inputs, labels


def _mask_right(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    """Written differently: pick the selected positions first, then split them."""
    normal = torch.tensor([t for t in range(vocab_size) if t not in set(special_ids)])
    inputs, labels = tokens.clone(), torch.full_like(tokens, -100)
    ok = ~torch.isin(tokens, torch.tensor(list(special_ids)))
    where = (ok & (torch.rand(tokens.shape) < p)).nonzero(as_tuple=True)
    labels[where] = tokens[where]
    r = torch.rand(len(where[0]))
    new = tokens[where].clone()
    new[r < 0.8] = mask_id
    swap = (r >= 0.8) & (r < 0.9)
    new[swap] = normal[torch.randint(len(normal), (int(swap.sum()),))]
    inputs[where] = new
    return inputs, labels


# ------------------------------------------------------------------ segment ids
def _seg_right(tokens, sep_id):
    out = torch.zeros_like(tokens)
    for r in range(tokens.shape[0]):
        seps = (tokens[r] == sep_id).nonzero().flatten()
        if len(seps):
            out[r, seps[0] + 1:] = 1
    return out


def _seg_cumsum(tokens, sep_id):           # counts every [SEP], and the first one is B
    return (tokens == sep_id).long().cumsum(1)


def _seg_inclusive(tokens, sep_id):        # the first [SEP] itself goes to sentence B
    return (tokens == sep_id).long().cumsum(1).clamp(max=1)


def _seg_float(tokens, sep_id):
    return _seg_right(tokens, sep_id).float()


# ------------------------------------------------------------------ the MLM loss
def _mlm_right(logits, labels):
    sel = labels != -100
    logp = logits.log_softmax(-1)[sel]                            # (n, V)
    return -logp.gather(1, labels[sel][:, None]).mean()


def _mlm_all_positions(logits, labels):    # counts the unselected positions as class 0
    return F.cross_entropy(logits.transpose(1, 2), labels.clamp(min=0))


def _mlm_sum(logits, labels):
    return F.cross_entropy(logits.transpose(1, 2), labels, reduction="sum")


def _mlm_per_row(logits, labels):          # mean over rows of each row's mean: not the same
    losses = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")
    sel = (labels != -100).float()
    return ((losses * sel).sum(1) / sel.sum(1).clamp(min=1)).mean()


WRONG = {
    "ch14_mask_tokens": [
        lambda *a, **k: _mask(*a, **k, include_special=True),
        lambda *a, **k: _mask(*a, **k, split=(1.0, 1.0)),             # always [MASK]
        lambda *a, **k: _mask(*a, **k, split=(0.8, 0.8)),             # 20 % kept, none random
        lambda *a, **k: _mask(*a, **k, random_special=True),
        lambda *a, **k: _mask(*a, **k, p_scale=0.5),
        lambda *a, **k: _mask(*a, **k, labels_everywhere=True),
    ],
    "ch14_segment_ids": [_seg_cumsum, _seg_inclusive, _seg_float,
                         lambda tokens, sep_id: torch.zeros_like(tokens)],
    "ch14_mlm_loss": [_mlm_all_positions, _mlm_sum, _mlm_per_row,
                      lambda logits, labels: _mlm_right(logits, labels).exp()],
}

RIGHT = {
    "ch14_mask_tokens": [_mask_right],
    "ch14_segment_ids": [_seg_right],
    "ch14_mlm_loss": [_mlm_right],
}
