"""Answers chapter 13's exercise checks must reject (WRONG) and accept (RIGHT)."""
import torch

import d2lmini as d2l


# ------------------------------------------------------------------ BPE merge
def _merge_right_to_left(ids, pair, new):
    out, i = [], len(ids) - 1
    while i >= 0:
        if i > 0 and (ids[i - 1], ids[i]) == pair:
            out.append(new)
            i -= 2
        else:
            out.append(ids[i])
            i -= 1
    return out[::-1]


def _merge_overlapping(ids, pair, new):       # every position that starts the pair
    out = []
    for i, x in enumerate(ids):
        if i + 1 < len(ids) and (x, ids[i + 1]) == pair:
            out.append(new)
        elif not (i > 0 and (ids[i - 1], x) == pair):
            out.append(x)
    return out


def _merge_first_only(ids, pair, new):
    for i in range(len(ids) - 1):
        if (ids[i], ids[i + 1]) == pair:
            return ids[:i] + [new] + ids[i + 2:]
    return list(ids)


def _merge_by_strings(ids, pair, new):        # right, a different way: join and split
    text = " " + " ".join(map(str, ids)) + " "
    target = f" {pair[0]} {pair[1]} "
    while target in text:
        text = text.replace(target, f" {new} ", 1)
    return [int(t) for t in text.split()]


def _merge_recursive(ids, pair, new):
    if len(ids) < 2:
        return list(ids)
    if (ids[0], ids[1]) == pair:
        return [new] + _merge_recursive(ids[2:], pair, new)
    return [ids[0]] + _merge_recursive(ids[1:], pair, new)


# ------------------------------------------------------------------ c_attn
def _split(w, b, transpose=True, order=(0, 1, 2), interleave=False):
    d = w.shape[0]
    if interleave:
        parts = [w[:, j::3] for j in range(3)]
        bs = [b[j::3] for j in range(3)]
    else:
        parts = [w[:, j * d:(j + 1) * d] for j in range(3)]
        bs = [b[j * d:(j + 1) * d] for j in range(3)]
    W = torch.stack([parts[j].t() if transpose else parts[j] for j in order])
    return W, torch.stack([bs[j] for j in order])


def _split_right(w, b):
    d = w.shape[0]
    W = w.t().reshape(3, d, d)                 # (3d, d) rows: q's outputs, k's, v's
    return W, b.reshape(3, d)


# ------------------------------------------------------------------ parameter count
def _params(V, n, d, L, pos=True, head=False, biases=True, final_ln=True):
    per_block = 12 * d * d + (13 * d if biases else 4 * d)
    return (V * d + (n * d if pos else 0) + L * per_block + (2 * d if final_ln else 0)
            + (V * d if head else 0))


def _params_by_pieces(V, n, d, L):
    linear = lambda i, o: i * o + o
    block = (4 * linear(d, d) + linear(d, 4 * d) + linear(4 * d, d) + 2 * 2 * d)
    return V * d + n * d + L * block + 2 * d


WRONG = {
    "ch13_bpe_merge": [_merge_right_to_left, _merge_overlapping, _merge_first_only,
                       lambda ids, pair, new: [new if x == pair[0] else x for x in ids
                                               if x != pair[1]]],
    "ch13_split_c_attn": [
        lambda w, b: _split(w, b, transpose=False),            # Conv1D layout kept
        lambda w, b: _split(w, b, order=(1, 0, 2)),            # k and q swapped
        lambda w, b: _split(w, b, interleave=True),            # every third column
        lambda w, b: (w.reshape(3, w.shape[0], w.shape[0]), b.reshape(3, -1)),  # a view
    ],
    "ch13_param_count": [
        lambda V, n, d, L: _params(V, n, d, L, pos=False),     # forgets the position table
        lambda V, n, d, L: _params(V, n, d, L, head=True),     # counts the tied head twice
        lambda V, n, d, L: _params(V, n, d, L, biases=False),  # no biases
        lambda V, n, d, L: _params(V, n, d, L, final_ln=False),
        lambda V, n, d, L: 12 * L * d * d,                     # the usual approximation
    ],
}

RIGHT = {
    "ch13_bpe_merge": [_merge_by_strings, _merge_recursive],
    "ch13_split_c_attn": [_split_right],
    "ch13_param_count": [_params_by_pieces,
                         lambda V, n, d, L: d2l.gpt_param_count(dict(
                             vocab_size=V, d_model=d, num_layers=L, d_ff=4 * d, max_len=n,
                             tie_weights=True, pos_encoding="learned"))],
}
