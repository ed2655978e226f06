"""Chapter 13 (GPT-2 for real): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`.
"""
from __future__ import annotations

import torch

from ..bpe import _merge
from .core import Wrong, call, expect, register
from .core import fresh_generator as _gen


def _randint(lo: int, hi: int, g: torch.Generator) -> int:
    """An int in lo..hi (inclusive)."""
    return int(torch.randint(lo, hi + 1, (1,), generator=g))


# ------------------------------------------------------------------ one BPE merge
@register("ch13_bpe_merge", "merge (one BPE merge step)", chapter=13, build=True)
def _bpe_merge(answer):
    g = _gen()
    cases = [([], (1, 2)), ([7], (7, 7)), ([5, 5, 5], (5, 5)), ([5, 5, 5, 5], (5, 5))]
    for _ in range(6):                     # small alphabets: many repeats and overlaps
        n, k = _randint(2, 40, g), _randint(2, 4, g)
        ids = torch.randint(0, k, (n,), generator=g).tolist()
        cases.append((ids, (ids[0], ids[1])))
    for i, (ids, pair) in enumerate(cases):
        new = _randint(256, 999, g)
        case = f"case {i}: ids={ids}, pair={pair}, new id {new}"
        out = call(answer, list(ids), pair, new, case=case)
        if out is not None and not isinstance(out, list):
            try:
                out = list(out)
            except TypeError:
                raise Wrong(f"{case}: expected a list of ints, "
                            f"got {type(out).__name__}") from None
        want = _merge(ids, pair, new)
        if [int(x) for x in out] != want:
            raise Wrong(f"{case}: got {list(out)} (merge left to right; a merged "
                        f"pair's second id cannot start the next pair)")
    return f"{len(cases)} cases: empty, one id, runs like 5 5 5, random lists"


# ------------------------------------------------------------------ GPT-2's c_attn
@register("ch13_split_c_attn", "split_c_attn into W_q, W_k, W_v",
          chapter=13, build=True)
def _split_c_attn(answer):
    g = _gen()
    cases = [1, 4, _randint(2, 12, g), _randint(13, 40, g)]
    for i, d in enumerate(cases):
        dtype = torch.float64 if i == 3 else torch.float32
        w = torch.randn(d, 3 * d, generator=g).to(dtype)      # Conv1D: (in, out)
        b = torch.randn(3 * d, generator=g).to(dtype)
        case = f"case {i}: d={d}, {dtype}"
        out = call(answer, w.clone(), b.clone(), case=case)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise Wrong(f"{case}: return two tensors (W (3, d, d), b (3, d)), got "
                        f"{type(out).__name__}")
        W, bias = out
        want_W = torch.stack([w[:, j * d:(j + 1) * d].t()
                              for j in range(3)])  # (3, d, d)
        want_b = b.view(3, d)
        if isinstance(W, torch.Tensor) and W.shape == want_W.shape and d > 1 and \
                torch.allclose(W.float(), want_W.transpose(1, 2).float()):
            raise Wrong(f"{case}: each matrix is transposed: "
                        f"nn.Linear keeps (out, in), Conv1D (in, out)")
        expect(W, want_W, case=f"{case}, W", rtol=0, atol=0)
        expect(bias, want_b, case=f"{case}, b", rtol=0, atol=0)
    return f"{len(cases)} random weights: d = 1, 4, two random; float64 too"


# ------------------------------------------------------------------ counting parameters
def _gpt2_params(V: int, n_ctx: int, d: int, L: int) -> int:
    from ..gpt2 import _gpt2_kwargs, gpt_param_count
    return gpt_param_count(_gpt2_kwargs(V, d, 1, L, n_ctx))


@register("ch13_param_count", "gpt2_params (GPT-2 size)", chapter=13,
          build=True)
def _param_count(answer):
    g = _gen()
    cases = [(_randint(10, 60000, g), _randint(8, 4096, g), 8 * _randint(1, 300, g),
              _randint(1, 60, g)) for _ in range(5)]
    for i, (V, n_ctx, d, L) in enumerate(cases):
        case = f"case {i}: vocab_size={V}, n_ctx={n_ctx}, d_model={d}, num_layers={L}"
        out = call(answer, V, n_ctx, d, L, case=case)
        want = _gpt2_params(V, n_ctx, d, L)
        try:
            got = int(out)
        except (TypeError, ValueError):
            raise Wrong(f"{case}: expected an int, got {type(out).__name__}") from None
        if got != out or got != want:
            diff = got - want
            raise Wrong(f"{case}: got {got:,}, off by {diff:+,} (count every table, "
                        f"matrix, bias and LayerNorm once; the head is tied)")
    return f"{len(cases)} random configs, up to 2400 wide and 60 layers deep"
