"""Answers chapter 12's exercise checks must reject (WRONG) and accept (RIGHT)."""
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


# ------------------------------------------------------------------ prefix-LM mask
def _mask(tokens, sep, pad, prompt="with", causal=True, pads=True, shape4=True):
    T = tokens.shape[1]
    e = (tokens == sep).int().argmax(1)
    j = torch.arange(T)
    allowed = torch.zeros(tokens.shape[0], T, T, dtype=torch.bool)
    if causal:
        allowed |= (j[:, None] >= j[None, :])[None]
    if prompt == "with":
        allowed |= (j[None, :] <= e[:, None])[:, None, :]
    elif prompt == "without sep":
        allowed |= (j[None, :] < e[:, None])[:, None, :]
    elif prompt == "everything":
        allowed |= True
    if pads:
        allowed &= (tokens != pad)[:, None, :]
    return allowed[:, None] if shape4 else allowed


def _mask_queries_too(tokens, sep, pad):     # pad queries see nothing: also right
    m = _mask(tokens, sep, pad)
    return m & (tokens != pad)[:, None, :, None]


def _mask_right(tokens, sep, pad):
    B, T = tokens.shape
    out = torch.zeros(B, 1, T, T, dtype=torch.bool)
    for b in range(B):
        e = tokens[b].tolist().index(sep)
        for i in range(T):
            for j in range(T):
                if tokens[b, j] != pad and (j <= i or j <= e):
                    out[b, 0, i, j] = True
    return out


# ------------------------------------------------------------------ encoder-decoder cache
@torch.no_grad()
def _cache_cross_every_step(model, src, n, bos, eos):
    """keeps the self-attention keys but re-projects the memory every step"""
    ref = d2l.exercises.reference_solution("ch12_encdec_cache")
    memory, mask = model.encode(src)
    orig = model.encode
    model.encode = lambda s: (memory, mask)
    try:
        out = ref(model, src, n, bos, eos)
        for blk in model.decoder.blocks:          # the wasted work: one more each step
            for _ in range(out.shape[1]):
                blk.cross_attn.W_k(memory)
    finally:
        model.encode = orig
    return out


@torch.no_grad()
def _cache_recompute(model, src, n, bos, eos):
    """no cache at all: greedy_decode itself"""
    return d2l.greedy_decode(model, src, n, bos, eos)


@torch.no_grad()
def _cache_no_pad_after_eos(model, src, n, bos, eos):
    memory, mask = model.encode(src)
    ys = torch.full((src.shape[0], 1), bos)
    for _ in range(n):
        logits = model.decode(ys, memory, mask)[:, -1]
        logits[:, model.pad_id] = float("-inf")
        ys = torch.cat([ys, logits.argmax(-1, keepdim=True)], 1)
    return ys[:, 1:]


@torch.no_grad()
def _cache_wrong_position(model, src, n, bos, eos):
    """the newest token embedded at position 0 every step"""
    ref = d2l.exercises.reference_solution("ch12_encdec_cache")
    dec = model.decoder
    orig = dec.embed
    dec.embed = lambda ys: orig(ys[:, -1:])
    try:
        return ref(model, src, n, bos, eos)
    finally:
        dec.embed = orig


@torch.no_grad()
def _cache_right(model, src, n, bos, eos):
    """a cache that grows by writing into preallocated tensors"""
    memory, src_mask = model.encode(src)
    dec, B = model.decoder, src.shape[0]
    split = lambda a, y: a.split_heads(y)
    crossKV = [(split(b.cross_attn, b.cross_attn.W_k(memory)),
                split(b.cross_attn, b.cross_attn.W_v(memory))) for b in dec.blocks]
    h = dec.blocks[0].self_attn.num_heads
    d_k = dec.d_model // h
    Ks = torch.zeros(len(dec.blocks), B, h, n, d_k)
    Vs = torch.zeros_like(Ks)
    ys = torch.full((B, 1), bos)
    done = torch.zeros(B, dtype=torch.bool)
    for t in range(n):
        x = dec.embed(ys)[:, t:t + 1]
        for l, blk in enumerate(dec.blocks):
            def sa(y):
                Ks[l, :, :, t:t + 1] = split(blk.self_attn, blk.self_attn.W_k(y))
                Vs[l, :, :, t:t + 1] = split(blk.self_attn, blk.self_attn.W_v(y))
                q = split(blk.self_attn, blk.self_attn.W_q(y))
                o, _ = d2l.scaled_dot_product_attention(q, Ks[l, :, :, :t + 1],
                                                        Vs[l, :, :, :t + 1])
                return blk.self_attn.W_o(blk.self_attn.combine_heads(o))

            def ca(y):
                q = split(blk.cross_attn, blk.cross_attn.W_q(y))
                o, _ = d2l.scaled_dot_product_attention(q, *crossKV[l], src_mask)
                return blk.cross_attn.W_o(blk.cross_attn.combine_heads(o))
            if blk.norm_first:
                x = x + sa(blk.norm1(x))
                x = x + ca(blk.norm2(x))
                if blk.ffn is not None:
                    x = x + blk.ffn(blk.norm3(x))
            else:
                x = blk.norm1(x + sa(x))
                x = blk.norm2(x + ca(x))
                if blk.ffn is not None:
                    x = blk.norm3(x + blk.ffn(x))
        logits = model.generator(dec.norm(x))[:, -1]
        logits[:, model.pad_id] = float("-inf")
        nxt = torch.where(done, torch.full_like(done, model.pad_id, dtype=torch.long),
                          logits.argmax(-1))
        ys = torch.cat([ys, nxt[:, None]], 1)
        done = done | (nxt == eos)
        if bool(done.all()):
            break
    return ys[:, 1:]


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
    "ch12_prefix_mask": [
        lambda t, sep, pad: _mask(t, sep, pad, prompt="none"),        # causal only
        lambda t, sep, pad: _mask(t, sep, pad, prompt="everything"),  # sees the answer
        lambda t, sep, pad: _mask(t, sep, pad, prompt="without sep"),
        lambda t, sep, pad: _mask(t, sep, pad, pads=False),           # pads visible
        lambda t, sep, pad: _mask(t, sep, pad, shape4=False),         # (B, T, T)
        lambda t, sep, pad: _mask(t, sep, pad).float(),               # not bool
    ],
    "ch12_encdec_cache": [_cache_cross_every_step, _cache_recompute,
                          _cache_no_pad_after_eos, _cache_wrong_position],
}

RIGHT = {
    "ch12_top_p": [_top_p_right, _top_p_loop],
    "ch12_repetition_penalty": [_penalty_right],
    "ch12_prefix_mask": [_mask_right, _mask_queries_too],
    "ch12_encdec_cache": [_cache_right],
}
