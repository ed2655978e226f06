"""Answers chapter 13's exercise checks must reject (WRONG) and accept (RIGHT)."""
from collections import Counter

import torch

from d2lmini.bpe import BPE


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


# ------------------------------------------------------------------ GPT-2's ids -> text
def _table(order_others_by_value=False):
    """char -> byte; the right table, or the 68 others at chr(256 + byte)."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    table = {chr(b): b for b in printable}
    n = 0
    for b in range(256):
        if b not in printable:
            table[chr(256 + (b if order_others_by_value else n))] = b
            n += 1
    return table


def _decode_with(table, per_token=False, errors="replace"):
    def gpt2_decode(ids, encoder):
        inverse = {i: s for s, i in encoder.items()}
        if per_token:                      # each token alone: breaks split characters
            return "".join(bytes(table[c] for c in inverse[i]).decode("utf-8", errors)
                           for i in ids)
        text = "".join(inverse[i] for i in ids)
        return bytes(table[c] for c in text).decode("utf-8", errors)
    return gpt2_decode


def _decode_no_table(ids, encoder):            # the files' stand-ins left in
    inverse = {i: s for s, i in encoder.items()}
    return "".join(inverse[i] for i in ids)


def _decode_ids_as_bytes(ids, encoder):        # 13.1's trap: ids below 256 are bytes
    inverse = {i: s for s, i in encoder.items()}
    out = b""
    for i in ids:
        out += bytes([i]) if i < 256 else inverse[i].encode("latin-1", "replace")
    return out.decode("utf-8", "replace")


def _decode_right(ids, encoder):               # right, a different way: a bytearray
    printable = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) \
        | set(range(0xAE, 0x100))
    others = iter(range(256, 512))
    byte_of = {}
    for b in range(256):
        byte_of[chr(b) if b in printable else chr(next(others))] = b
    name = {i: s for s, i in encoder.items()}
    buf = bytearray()
    for i in ids:
        buf.extend(byte_of[c] for c in name[i])
    return buf.decode("utf-8", errors="replace")


# ------------------------------------------------------------------ d2l.GPT -> GPT-2
def _to_hf(model, transpose=True, transpose_proj=True, order=(0, 1, 2), prefix=True,
           swap_norms=False):
    p0 = "transformer." if prefix else ""
    sd = {p0 + "wte.weight": model.embedding.weight,
          p0 + "wpe.weight": model.pos_encoding.weight,
          p0 + "ln_f.weight": model.norm.weight, p0 + "ln_f.bias": model.norm.bias}
    for i, blk in enumerate(model.blocks):
        h, a = f"{p0}h.{i}.", blk.self_attn
        qkv = [a.W_q, a.W_k, a.W_v]
        w = torch.cat([qkv[j].weight for j in order])
        sd[h + "attn.c_attn.weight"] = w.T if transpose else w
        sd[h + "attn.c_attn.bias"] = torch.cat([qkv[j].bias for j in order])
        for name, lin in (("attn.c_proj", a.W_o), ("mlp.c_fc", blk.ffn.linear1),
                          ("mlp.c_proj", blk.ffn.linear2)):
            t = transpose and (transpose_proj or name != "attn.c_proj")
            sd[h + name + ".weight"] = lin.weight.T if t else lin.weight
            sd[h + name + ".bias"] = lin.bias
        n1, n2 = (blk.norm2, blk.norm1) if swap_norms else (blk.norm1, blk.norm2)
        for name, ln in (("ln_1", n1), ("ln_2", n2)):
            sd[h + name + ".weight"], sd[h + name + ".bias"] = ln.weight, ln.bias
    return {k: v.detach().clone() for k, v in sd.items()}


def _to_hf_right(model):                       # right, a different way: by name map
    names = {"norm1": "ln_1", "norm2": "ln_2", "self_attn.W_o": "attn.c_proj",
             "ffn.linear1": "mlp.c_fc", "ffn.linear2": "mlp.c_proj"}
    ours = model.state_dict()
    out = {"transformer.wte.weight": ours["embedding.weight"],
           "transformer.wpe.weight": ours["pos_encoding.weight"],
           "transformer.ln_f.weight": ours["norm.weight"],
           "transformer.ln_f.bias": ours["norm.bias"],
           "lm_head.weight": ours["embedding.weight"]}
    for i in range(len(model.blocks)):
        b = f"blocks.{i}."
        for mine, theirs in names.items():
            w = ours[f"{b}{mine}.weight"]
            out[f"transformer.h.{i}.{theirs}.weight"] = w if w.dim() == 1 else w.t()
            out[f"transformer.h.{i}.{theirs}.bias"] = ours[f"{b}{mine}.bias"]
        stacked = torch.stack([ours[f"{b}self_attn.W_{x}.weight"] for x in "qkv"])
        out[f"transformer.h.{i}.attn.c_attn.weight"] = \
            stacked.reshape(-1, stacked.shape[-1]).t().contiguous()
        out[f"transformer.h.{i}.attn.c_attn.bias"] = torch.stack(
            [ours[f"{b}self_attn.W_{x}.bias"] for x in "qkv"]).flatten()
    return out


# ------------------------------------------------------------------ project: a BPE
def _chunks(text):
    return BPE().chunks(text)


def _train(text, vocab_size, use_chunks=True, n_merges=None, stale=False):
    words = [list(c.encode()) for c in _chunks(text)] if use_chunks \
        else [list(text.encode())]
    merges = {}
    n = vocab_size - 256 if n_merges is None else n_merges
    counts = None
    for new in range(256, 256 + n):
        if counts is None or not stale:
            counts = Counter(p for w in words for p in zip(w, w[1:]))
        pair = max(counts, key=counts.get)
        merges[pair] = new
        counts.pop(pair)
        words = [_merge_recursive_iter(w, pair, new) for w in words]
    return merges


def _merge_recursive_iter(ids, pair, new):
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def _encode(text, merges, order="rank", use_chunks=True):
    pieces = _chunks(text) if use_chunks else ([text] if text else [])
    out = []
    items = list(merges.items())
    if order == "reverse":
        items = items[::-1]
    for chunk in pieces:
        ids = list(chunk.encode())
        for pair, new in items:            # each merge once, in the order given
            ids = _merge_recursive_iter(ids, pair, new)
        out += ids
    return out


def _decode(ids, merges, per_token=False):
    vocab = {i: bytes([i]) for i in range(256)}
    for (a, b), new in merges.items():
        vocab[new] = vocab[a] + vocab[b]
    if per_token:
        return "".join(vocab[i].decode("utf-8", "replace") for i in ids)
    return b"".join(vocab[i] for i in ids).decode("utf-8", "replace")


def _project(train=_train, encode=_encode, decode=_decode):
    return (train, encode, decode)


WRONG = {
    "ch13_bpe_merge": [_merge_right_to_left, _merge_overlapping, _merge_first_only,
                       lambda ids, pair, new: [new if x == pair[0] else x for x in ids
                                               if x != pair[1]]],
    "ch13_gpt2_decode": [
        _decode_no_table,                                  # 'Ġ' left in the text
        _decode_ids_as_bytes,                              # ids < 256 read as bytes
        _decode_with(_table(), per_token=True),            # split characters broken
        _decode_with(_table(order_others_by_value=True)),  # the 68 at chr(256 + b)
        _decode_with(_table(), errors="strict"),           # raises on a cut character
    ],
    "ch13_to_hugging_face": [
        lambda m: _to_hf(m, transpose=False),              # nn.Linear's layout kept
        lambda m: _to_hf(m, transpose_proj=False),         # W_o left untransposed
        lambda m: _to_hf(m, order=(1, 0, 2)),              # k before q
        lambda m: _to_hf(m, prefix=False),                 # GPT2Model's keys
        lambda m: _to_hf(m, swap_norms=True),              # ln_1 and ln_2 swapped
    ],
    "ch13_bpe_tokenizer": [
        _project(train=lambda t, v: _train(t, v, use_chunks=False)),  # across chunks
        _project(train=lambda t, v: _train(t, v, n_merges=v - 255)),  # one merge too many
        _project(train=lambda t, v: _train(t, v, stale=True)),        # never recounts
        _project(encode=lambda t, m: _encode(t, m, order="reverse")),
        _project(encode=lambda t, m: _encode(t, m, use_chunks=False)),
        _project(decode=lambda ids, m: _decode(ids, m, per_token=True)),
    ],
}

RIGHT = {
    "ch13_bpe_merge": [_merge_by_strings, _merge_recursive],
    "ch13_gpt2_decode": [_decode_right],
    "ch13_to_hugging_face": [_to_hf_right],
    # merges applied once each, in the order learned (equivalent to lowest rank first)
    "ch13_bpe_tokenizer": [_project()],
}
