"""Worked solutions of chapter 13's exercises (13. GPT-2 for real):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch

from ..core import solution


@solution("ch13_bpe_merge")
def merge(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


@solution("ch13_gpt2_decode")
def gpt2_decode(ids, encoder):
    # GPT-2's byte table: printable Latin-1 bytes stand for themselves, the other 68
    # bytes get U+0100, U+0101, ... in byte order
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    char_to_byte = {chr(b): b for b in printable}
    n = 0
    for b in range(256):
        if b not in printable:
            char_to_byte[chr(256 + n)] = b
            n += 1
    id_to_token = {i: s for s, i in encoder.items()}
    text = "".join(id_to_token[i] for i in ids)          # all tokens, then the bytes
    return bytes(char_to_byte[c] for c in text).decode("utf-8", errors="replace")


@solution("ch13_to_hugging_face")
def to_hugging_face(model):
    sd = {"transformer.wte.weight": model.embedding.weight,
          "transformer.wpe.weight": model.pos_encoding.weight,
          "transformer.ln_f.weight": model.norm.weight,
          "transformer.ln_f.bias": model.norm.bias}
    for i, block in enumerate(model.blocks):
        h, attn = f"transformer.h.{i}.", block.self_attn
        # Conv1D keeps (in, out): stack q, k, v as outputs, then transpose
        sd[h + "attn.c_attn.weight"] = torch.cat(
            [attn.W_q.weight, attn.W_k.weight, attn.W_v.weight]).T
        sd[h + "attn.c_attn.bias"] = torch.cat([attn.W_q.bias, attn.W_k.bias,
                                                attn.W_v.bias])
        for name, linear in (("attn.c_proj", attn.W_o), ("mlp.c_fc", block.ffn.linear1),
                             ("mlp.c_proj", block.ffn.linear2)):
            sd[h + name + ".weight"] = linear.weight.T
            sd[h + name + ".bias"] = linear.bias
        for name, norm in (("ln_1", block.norm1), ("ln_2", block.norm2)):
            sd[h + name + ".weight"] = norm.weight
            sd[h + name + ".bias"] = norm.bias
    return {k: v.detach().clone() for k, v in sd.items()}


@solution("ch13_bpe_tokenizer", value=True)
def bpe_tokenizer():
    from collections import Counter

    from d2lmini.bpe import BPE

    chunks = BPE().chunks                      # GPT-2's pre-tokenizer, no merges

    def train_bpe(text, vocab_size):
        freq = Counter(chunks(text))                   # each distinct chunk once
        words = [list(c.encode("utf-8")) for c in freq]
        merges = {}
        for new_id in range(256, vocab_size):
            counts = Counter()
            for w, n in zip(words, freq.values()):     # pairs inside chunks only
                for pair in zip(w, w[1:]):
                    counts[pair] += n
            if not counts or max(counts.values()) < 2:
                break
            pair = max(counts, key=counts.get)         # first of the most frequent
            merges[pair] = new_id
            words = [merge(w, pair, new_id) for w in words]
        return merges

    def encode(text, merges):
        ids = []
        for chunk in chunks(text):
            piece = list(chunk.encode("utf-8"))
            while len(piece) > 1:                # the earliest-learned merge present
                pair = min(zip(piece, piece[1:]),
                           key=lambda p: merges.get(p, float("inf")))
                if pair not in merges:
                    break
                piece = merge(piece, pair, merges[pair])
            ids += piece
        return ids

    def decode(ids, merges):
        vocab = {i: bytes([i]) for i in range(256)}
        for (a, b), new_id in merges.items():    # in the order learned
            vocab[new_id] = vocab[a] + vocab[b]
        return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")

    return train_bpe, encode, decode
