"""Worked solutions of chapter 12's exercises (12. From the Transformer to GPT):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import torch

from ...attention import scaled_dot_product_attention
from ..core import solution


@solution("ch12_top_p")
def top_p_filter(logits, p):
    probs = logits.float().softmax(-1)
    sorted_p, order = probs.sort(-1, descending=True)
    keep = sorted_p.cumsum(-1) - sorted_p < p         # the probability above each token
    keep = torch.zeros_like(keep).scatter(-1, order, keep)
    return logits.masked_fill(~keep, float("-inf"))


@solution("ch12_repetition_penalty")
def repetition_penalty(logits, previous, theta):
    seen = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, previous, True)
    penalised = torch.where(logits > 0, logits / theta, logits * theta)
    return torch.where(seen, penalised, logits)


@solution("ch12_prefix_mask")
def prefix_lm_mask(tokens, sep_id, pad_id):
    T = tokens.shape[1]
    e = (tokens == sep_id).int().argmax(1)                    # the separator's column
    j = torch.arange(T)
    causal = j[:, None] >= j[None, :]                         # (T, T): key j <= query i
    prompt = j[None, :] <= e[:, None]                     # (B, T): key j in prompt
    allowed = causal[None] | prompt[:, None, :]               # (B, T, T)
    return (allowed & (tokens != pad_id)[:, None, :])[:, None]


@solution("ch12_encdec_cache")
@torch.no_grad()
def cached_greedy_decode(model, src, max_len, bos_id, eos_id):
    model.eval()
    memory, src_mask = model.encode(src)                        # (B, S, d), once
    dec, B = model.decoder, src.shape[0]
    heads = lambda attn, y: attn.split_heads(y)                 # (B, h, T, d_k)
    # the memory never changes: its keys and values, once per layer
    cross = [(heads(b.cross_attn, b.cross_attn.W_k(memory)),
              heads(b.cross_attn, b.cross_attn.W_v(memory))) for b in dec.blocks]
    cache = [[None, None] for _ in dec.blocks]                  # self-attention K, V

    def attend(attn, y, K, V, mask=None):
        q = heads(attn, attn.W_q(y))                            # (B, h, 1, d_k)
        out, _ = scaled_dot_product_attention(q, K, V, mask)
        return attn.W_o(attn.combine_heads(out))                # (B, 1, d)

    def self_attend(blk, kv, y):
        k, v = (heads(blk.self_attn, W(y)) for W in (blk.self_attn.W_k,
                                                      blk.self_attn.W_v))
        kv[0] = k if kv[0] is None else torch.cat([kv[0], k], 2)
        kv[1] = v if kv[1] is None else torch.cat([kv[1], v], 2)
        return attend(blk.self_attn, y, kv[0], kv[1])

    ys = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        x = dec.embed(ys)[:, -1:]                         # newest token (B, 1, d)
        for blk, (K, V), kv in zip(dec.blocks, cross, cache):
            sa = lambda y: self_attend(blk, kv, y)
            ca = lambda y: attend(blk.cross_attn, y, K, V, src_mask)
            if blk.norm_first:
                x = x + sa(blk.norm1(x))
                x = x + ca(blk.norm2(x))
                x = x if blk.ffn is None else x + blk.ffn(blk.norm3(x))
            else:
                x = blk.norm1(x + sa(x))
                x = blk.norm2(x + ca(x))
                x = x if blk.ffn is None else blk.norm3(x + blk.ffn(x))
        logits = model.generator(dec.norm(x))[:, -1]            # (B, V)
        logits[:, model.pad_id] = float("-inf")
        next_id = logits.argmax(-1).masked_fill(done, model.pad_id)
        ys = torch.cat([ys, next_id[:, None]], 1)
        done |= next_id == eos_id
        if done.all():
            break
    return ys[:, 1:]
