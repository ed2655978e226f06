"""Answers chapter 14's exercise checks must reject (WRONG) and accept (RIGHT)."""
import torch


# ------------------------------------------------------------------ mask_tokens
def _mask(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None, *,
          include_special=False, split=(0.8, 0.9), random_special=False, p_scale=1.0,
          labels_everywhere=False, labels_from_inputs=False, random_pool=None):
    special = torch.tensor(list(special_ids))
    eligible = torch.ones_like(tokens, dtype=torch.bool) if include_special \
        else ~torch.isin(tokens, special)
    selected = eligible & (torch.rand(tokens.shape) < p * p_scale)
    u = torch.rand(tokens.shape)
    pool = torch.arange(vocab_size) if random_special else torch.tensor(
        [t for t in range(vocab_size) if t not in special_ids])
    if random_pool is not None:
        pool = pool[:random_pool]
    rand_ids = pool[torch.randint(len(pool), tokens.shape)]
    inputs = torch.where(selected & (u < split[0]), mask_id, tokens)
    inputs = torch.where(selected & (u >= split[0]) & (u < split[1]), rand_ids, inputs)
    if labels_everywhere:
        labels = tokens.clone()
    else:
        labels = torch.where(selected, inputs if labels_from_inputs else tokens, -100)
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


# ------------------------------------------------------------------ NSP pairs
def _nsp(ids, n, a_len, b_len, cls_id, sep_id, *, flip=False, gap=0, seg_sep_b=False,
         before=False, fixed_a=False, all_next=False, no_exclusion=False):
    hi = len(ids) - a_len - b_len - gap + 1
    start = torch.zeros(n, dtype=torch.long) if fixed_a else torch.randint(hi, (n,))
    if before:
        start = start.clamp(min=b_len)
    is_next = torch.ones(n, dtype=torch.long) if all_next else torch.randint(2, (n,))
    other = torch.randint(len(ids) - b_len + 1, (n,))
    if before:
        other = start - b_len                             # the piece before A
    elif not no_exclusion:
        other = torch.where(other == start + a_len,
                            (other + b_len) % (len(ids) - b_len), other)
    b_start = torch.where(is_next == 1, start + a_len + gap, other)
    a = torch.stack([ids[s:s + a_len] for s in start.tolist()])
    b = torch.stack([ids[s:s + b_len] for s in b_start.tolist()])
    tokens = torch.cat([torch.full((n, 1), cls_id), a, torch.full((n, 1), sep_id), b,
                        torch.full((n, 1), sep_id)], 1)
    cut = a_len + 1 if seg_sep_b else a_len + 2           # [SEP] after A in B's part
    segments = torch.cat([torch.zeros(n, cut), torch.ones(n, a_len + b_len + 3 - cut)],
                         1).long()
    return tokens, segments, (1 - is_next) if flip else is_next


def _nsp_right(ids, n, a_len, b_len, cls_id, sep_id):     # right, with a Python loop
    rows, segs, labels = [], [], []
    for _ in range(n):
        s = int(torch.randint(len(ids) - a_len - b_len + 1, (1,)))
        nxt = int(torch.rand(()) < 0.5)
        if nxt:
            b = s + a_len
        else:
            b = s + a_len
            while b == s + a_len:
                b = int(torch.randint(len(ids) - b_len + 1, (1,)))
        rows.append(torch.cat([torch.tensor([cls_id]), ids[s:s + a_len],
                               torch.tensor([sep_id]), ids[b:b + b_len],
                               torch.tensor([sep_id])]))
        segs.append(torch.tensor([0] * (a_len + 2) + [1] * (b_len + 1)))
        labels.append(nxt)
    return torch.stack(rows), torch.stack(segs), torch.tensor(labels)


# ------------------------------------------------------------------ span QA
def _span_independent(s, e, max_len):                    # end may come before start
    return torch.stack([s.argmax(1), e.argmax(1)], 1)


def _span(s, e, max_len, *, allow_before=False, extra=0, swap=False):
    T = s.shape[1]
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    ok = (j - i < max_len + extra)
    if not allow_before:
        ok = ok & (j >= i)
    best = (s[:, :, None] + e[:, None, :]).masked_fill(~ok, float("-inf")) \
        .flatten(1).argmax(1)
    out = torch.stack([best // T, best % T], 1)
    return out.flip(1) if swap else out


def _span_looped(s, e, max_len):                          # right values, but a loop
    out = []
    for r in range(s.shape[0]):
        best = max(((s[r, i] + e[r, j]).item(), i, j) for i in range(s.shape[1])
                   for j in range(i, min(i + max_len, s.shape[1])))
        out.append([best[1], best[2]])
    return torch.tensor(out)


def _span_right(s, e, max_len):                           # right: log-softmax, triu
    T = s.shape[1]
    ls, le = s.log_softmax(-1), e.log_softmax(-1)
    allowed = torch.ones(T, T, dtype=torch.bool).triu().tril(max_len - 1)
    joint = (ls.unsqueeze(2) + le.unsqueeze(1)).masked_fill(~allowed, -1e9)
    k = joint.reshape(len(s), -1).argmax(-1)
    return torch.stack(torch.unravel_index(k, (T, T)), -1) if hasattr(
        torch, "unravel_index") else torch.stack([k // T, k % T], -1)


WRONG = {
    "ch14_mask_tokens": [
        lambda *a, **k: _mask(*a, **k, include_special=True),
        lambda *a, **k: _mask(*a, **k, split=(1.0, 1.0)),             # always [MASK]
        lambda *a, **k: _mask(*a, **k, split=(0.8, 0.8)),             # 20 % kept
        lambda *a, **k: _mask(*a, **k, split=(0.8, 0.92)),            # 80 / 12 / 8
        lambda *a, **k: _mask(*a, **k, split=(0.8, 0.89)),            # 80 / 9 / 11
        lambda *a, **k: _mask(*a, **k, split=(0.82, 0.92)),           # 82 / 10 / 8
        lambda *a, **k: _mask(*a, **k, random_special=True),
        lambda *a, **k: _mask(*a, **k, random_pool=5),                # a few ids only
        lambda *a, **k: _mask(*a, **k, p_scale=0.5),
        lambda *a, **k: _mask(*a, **k, p_scale=1.1),                  # 16.5 %
        lambda *a, **k: _mask(*a, **k, labels_everywhere=True),
        lambda *a, **k: _mask(*a, **k, labels_from_inputs=True),      # [MASK] as label
    ],
    "ch14_segment_ids": [_seg_cumsum, _seg_inclusive, _seg_float,
                         lambda tokens, sep_id: torch.zeros_like(tokens)],
    "ch14_nsp_pairs": [
        lambda *a: _nsp(*a, flip=True),                     # labels the wrong way round
        lambda *a: _nsp(*a, gap=1),                         # B skips a character
        lambda *a: _nsp(*a, seg_sep_b=True),                # A's [SEP] in segment 1
        lambda *a: _nsp(*a, before=True),                   # NotNext: the piece before A
        lambda *a: _nsp(*a, fixed_a=True),                  # A always from the start
        lambda *a: _nsp(*a, all_next=True),                 # every row IsNext
    ],
    "ch14_best_span": [
        _span_independent,
        lambda s, e, m: _span(s, e, m, allow_before=True),
        lambda s, e, m: _span(s, e, m, extra=1),            # spans of max_len + 1
        lambda s, e, m: _span(s, e, m, swap=True),          # (end, start)
        _span_looped,
    ],
}

RIGHT = {
    "ch14_mask_tokens": [_mask_right],
    "ch14_segment_ids": [_seg_right],
    "ch14_nsp_pairs": [_nsp_right, lambda *a: _nsp(*a, no_exclusion=True)],
    "ch14_best_span": [_span_right],
}
