"""Chapter 13 (GPT-2 for real): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with it, raising :class:`Wrong` with a hint.
"""
from __future__ import annotations

import functools
import json
import time
from collections import Counter, defaultdict
from collections.abc import Mapping

import torch

from ..bpe import BPE, _merge, gpt2_tokenizer_files
from .core import Wrong, call, forbid, register
from .core import fresh_generator as _gen


def _randint(lo: int, hi: int, g: torch.Generator) -> int:
    """An int in lo..hi (inclusive)."""
    return int(torch.randint(lo, hi + 1, (1,), generator=g))


@functools.lru_cache(maxsize=1)
def _gpt2() -> BPE:
    return BPE.from_gpt2()


@functools.lru_cache(maxsize=1)
def _encoder() -> dict:
    with open(gpt2_tokenizer_files()[0], encoding="utf-8") as f:
        return json.load(f)


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


# ------------------------------------------------------------------ GPT-2's ids -> text
_POOLS = ["abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789",
          "  \n\t.,;:!?'\"-()", "éèàüöñçßøå", "\x00\x07\x1b\x7f\xa0\xad"]


def _random_text(g: torch.Generator, n: int = 80) -> str:
    out = []
    for _ in range(n):
        kind = _randint(0, 7, g)
        if kind < len(_POOLS):
            pool = _POOLS[kind]
            out.append(pool[_randint(0, len(pool) - 1, g)])
        elif kind == 5:
            out.append(chr(_randint(0x4E00, 0x9FA5, g)))          # Chinese
        elif kind == 6:
            out.append(chr(_randint(0x1F600, 0x1F64F, g)))        # emoji
        else:
            out.append(" the")
    return "".join(out)


@register("ch13_gpt2_decode", "gpt2_decode (GPT-2's ids to text)", chapter=13,
          build=True)
def _gpt2_decode(answer):
    forbid(answer, ["bytes_to_unicode", "from_gpt2", "BPE", "GPT2Tokenizer",
                    "GPT2TokenizerFast", "tiktoken", "convert_tokens_to_string"],
           "build the byte table yourself from section 13.7's rule")
    tok, encoder = _gpt2(), _encoder()
    g = _gen()
    cases = []
    for _ in range(4):
        text = _random_text(g)
        cases.append((tok.encode(text), text))
    chinese = "".join(chr(_randint(0x4E00, 0x9FA5, g)) for _ in range(6))
    ids = tok.encode(chinese)
    cases.append((ids[:-1], tok.decode(ids[:-1])))            # cut inside a character
    cases.append((tok.encode("end.<|endoftext|>Next"), "end.<|endoftext|>Next"))
    for i, (ids, want) in enumerate(cases):
        case = f"case {i}: {len(ids)} ids"
        out = call(answer, list(ids), encoder, case=case)
        if not isinstance(out, str):
            raise Wrong(f"{case}: expected a str, got {type(out).__name__}")
        if out == want:
            continue
        if any(c in out for c in "ĠĊĉ") and not any(c in want for c in "ĠĊĉ"):
            raise Wrong(f"{case}: your text still holds the files' stand-ins ('Ġ' for "
                        f"a space): map each character back to the byte it stands "
                        f"for, then decode the bytes")
        if out.count("\ufffd") > want.count("\ufffd"):
            raise Wrong(f"{case}: got {out.count(chr(0xfffd))} U+FFFD where the text "
                        f"has {want.count(chr(0xfffd))}: a character's bytes can sit "
                        f"in two tokens; join all the bytes first, then decode once")
        raise Wrong(f"{case}: got {out!r:.70}, expected a different text; check which "
                    f"byte each character stands for (the 188 printable bytes keep "
                    f"their character; the other 68 get U+0100, U+0101, ... in byte "
                    f"order)")
    return (f"{len(cases)} id lists: random text with Chinese, emoji and control "
            f"bytes, one cut inside a character, <|endoftext|>")


# ------------------------------------------------------------------ d2l.GPT -> GPT-2
def _to_hf_reference(model) -> dict:
    """What GPT2LMHeadModel's state_dict holds for a d2l.GPT with GPT-2's options."""
    sd = {"transformer.wte.weight": model.embedding.weight,
          "transformer.wpe.weight": model.pos_encoding.weight,
          "transformer.ln_f.weight": model.norm.weight,
          "transformer.ln_f.bias": model.norm.bias}
    for i, blk in enumerate(model.blocks):
        p, a = f"transformer.h.{i}.", blk.self_attn
        qkv = (a.W_q, a.W_k, a.W_v)
        sd[p + "attn.c_attn.weight"] = torch.cat([lin.weight for lin in qkv]).T
        sd[p + "attn.c_attn.bias"] = torch.cat([lin.bias for lin in qkv])
        for theirs, lin in (("attn.c_proj", a.W_o), ("mlp.c_fc", blk.ffn.linear1),
                            ("mlp.c_proj", blk.ffn.linear2)):
            sd[p + theirs + ".weight"] = lin.weight.T
            sd[p + theirs + ".bias"] = lin.bias
        for theirs, ln in (("ln_1", blk.norm1), ("ln_2", blk.norm2)):
            sd[p + theirs + ".weight"], sd[p + theirs + ".bias"] = ln.weight, ln.bias
    return {k: v.detach().clone() for k, v in sd.items()}


@register("ch13_to_hugging_face", "to_hugging_face (our GPT to GPT-2's)",
          chapter=13, build=True)
def _to_hugging_face(answer):
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.utils import logging as hf_logging

    from ..gpt2 import gpt_config_from_hf
    from ..gpt import GPT
    hf_logging.set_verbosity_error()
    g = _gen()
    for i in range(2):
        heads = _randint(2, 4, g)
        config = GPT2Config(vocab_size=_randint(50, 120, g),
                            n_positions=_randint(16, 40, g),
                            n_embd=heads * _randint(4, 8, g), n_layer=_randint(1, 3, g),
                            n_head=heads)
        ours = GPT(**gpt_config_from_hf(config)).eval()
        with torch.no_grad():                  # every number distinct, norms included
            for p in ours.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
        case = (f"case {i}: d_model={config.n_embd}, {config.n_layer} blocks, "
                f"{heads} heads")
        sd = call(answer, ours, case=case)
        if not isinstance(sd, Mapping):
            raise Wrong(f"{case}: expected a dict (a state dict), got "
                        f"{type(sd).__name__}")
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
        hf = GPT2LMHeadModel(config).eval()
        known = set(hf.state_dict())
        unexpected = sorted(set(sd) - known)
        if unexpected:
            raise Wrong(f"{case}: Hugging Face's GPT2LMHeadModel has no keys "
                        f"{unexpected[:3]} (its keys look like "
                        f"'transformer.h.0.attn.c_attn.weight')")
        try:
            missing, _ = hf.load_state_dict(dict(sd), strict=False)
        except RuntimeError as err:
            first = str(err).strip().splitlines()[-1].strip()
            raise Wrong(f"{case}: Hugging Face could not load it: {first} (Conv1D "
                        f"keeps its matrix as (in, out))") from None
        missing = sorted(k for k in missing if k != "lm_head.weight"
                         and not k.endswith(("attn.bias", "attn.masked_bias")))
        if missing:
            raise Wrong(f"{case}: keys missing: {missing[:3]}")
        ids = torch.randint(0, config.vocab_size, (2, config.n_positions), generator=g)
        with torch.no_grad():
            gap = (hf(ids).logits - ours(ids)).abs().max().item()
        if gap > 1e-4:
            want, got = _to_hf_reference(ours), hf.state_dict()
            bad = [k for k in want if not torch.allclose(got[k], want[k], atol=1e-6)]
            raise Wrong(f"{case}: the logits differ by up to {gap:.3g}; the first "
                        f"weight Hugging Face does not expect: {bad[0]}" if bad else
                        f"{case}: the logits differ by up to {gap:.3g}")
    return "2 random GPT-2s loaded into Hugging Face's model: the same logits"


# ------------------------------------------------------------------ project: a BPE
def _replay(text: str, merges: dict) -> tuple[int, tuple, int, tuple, int] | None:
    """Replay ``merges`` on ``text``'s chunks; -> None when each merge was a most
    frequent pair at its step, else (step, pair, its count, a best pair, its count)."""
    freq = Counter(BPE().chunks(text))
    words = [list(w.encode("utf-8")) for w in freq]
    counts = list(freq.values())
    pairs, where = Counter(), defaultdict(set)
    for w, (ids, c) in enumerate(zip(words, counts)):
        for p in zip(ids, ids[1:]):
            pairs[p] += c
            where[p].add(w)
    for step, (pair, new) in enumerate(merges.items()):
        best = max(pairs, key=pairs.__getitem__) if pairs else None
        if best is None or pairs.get(pair, 0) < pairs[best]:
            return step, pair, pairs.get(pair, 0), best, pairs[best] if best else 0
        for w in where.pop(pair, set()):
            ids, c = words[w], counts[w]
            for p in zip(ids, ids[1:]):
                pairs[p] -= c
                if pairs[p] <= 0:
                    del pairs[p]
            ids = words[w] = _merge(ids, pair, new)
            for p in zip(ids, ids[1:]):
                pairs[p] += c
                where[p].add(w)
        pairs.pop(pair, None)
    return None


def _show(vocab: dict, pair) -> str:
    return " + ".join(repr(vocab.get(i, b"?").decode("utf-8", "replace")) for i in pair)


@register("ch13_bpe_tokenizer", "BPE tokenizer: train, encode, decode",
          chapter=13, build=True, project=True)
def _bpe_tokenizer(answer):
    from ..gpt import load_corpus
    if not (isinstance(answer, (tuple, list)) and len(answer) == 3):
        raise Wrong("pass the three functions: (train_bpe, encode, decode)")
    train, enc, dec = answer
    g = _gen()
    book = load_corpus("book.txt")
    cut = int(0.9 * len(book))
    start = _randint(0, cut - 30_000, g)
    text, held = book[start:start + 30_000], book[cut:]
    k = _randint(120, 200, g)
    case = f"train_bpe on 30,000 characters, vocab_size={256 + k}"
    t0 = time.perf_counter()
    merges = call(train, text, 256 + k, case=case)
    seconds = time.perf_counter() - t0
    if not isinstance(merges, Mapping) or not all(
            isinstance(p, tuple) and len(p) == 2 and all(isinstance(i, int) for i in p)
            for p in merges):
        raise Wrong(f"{case}: expected a dict {{(a, b): new id}} of ints, got "
                    f"{type(merges).__name__}")
    merges = dict(merges)
    if len(merges) != k:
        extra = " (vocab_size counts the 256 byte tokens)" if len(merges) == 256 + k \
            else ""
        raise Wrong(f"{case}: {len(merges)} merges, expected {k}{extra}")
    if list(merges.values()) != list(range(256, 256 + k)):
        raise Wrong(f"{case}: the new ids must be 256, 257, ... in the order learned, "
                    f"got {list(merges.values())[:4]}...")
    try:
        ref = BPE(merges)
    except ValueError as err:
        raise Wrong(f"{case}: {err}") from None
    wrong = _replay(text, merges)
    if wrong is not None:
        step, pair, n, best, m = wrong
        raise Wrong(f"{case}: merge {step} ({_show(ref.vocab, pair)}) occurs {n} times "
                    f"inside the chunks, but {_show(ref.vocab, best)} occurs {m} times "
                    f"(count pairs inside BPE().chunks(text) only, and recount after "
                    f"each merge)")
    s = _randint(0, len(held) - 3000, g)
    strings = [held[s:s + 3000], "naïve café  \n\n  two   spaces", "为什么？🙂👍🏽",
               "", "x = 3.14;\ty_2 = x**2  # code\r\n"]
    for i, s in enumerate(strings):
        want = ref.encode(s)
        ids = call(enc, s, dict(merges), case=f"encode, string {i}")
        if not isinstance(ids, (list, tuple)) or [int(x) for x in ids] != want:
            raise Wrong(f"encode, string {i} ({s[:30]!r}): your ids differ from "
                        f"d2l.BPE with your merges (cut the text with BPE().chunks, "
                        f"then apply the merges inside each chunk, earliest-learned "
                        f"first)")
        out = call(dec, list(want), dict(merges), case=f"decode, string {i}")
        if out != s:
            raise Wrong(f"decode, string {i} ({s[:30]!r}): got {str(out)[:40]!r}")
    code = BPE.train("def f(x):\n    return x  # two  spaces\n\n\n    y = 1\n" * 30,
                     300)                                # merges of runs of spaces
    s = "def g(y):\n    return y  # a  b\n\n\n    z = 2\n"
    ids = call(enc, s, dict(code.merges), case="encode with merges learned on code")
    if not isinstance(ids, (list, tuple)) or [int(x) for x in ids] != code.encode(s):
        raise Wrong(f"encode of indented code with merges learned on code: your ids "
                    f"differ from d2l.BPE's (no merge may cross a chunk of "
                    f"BPE().chunks: encode chunk by chunk)")
    part = ref.encode("世界")[:4]                            # cut inside a character
    out = call(dec, part, dict(merges), case="decode of a cut character")
    if out != ref.decode(part):
        raise Wrong(f"decode of ids cut inside a character: got {out!r}, expected "
                    f"{ref.decode(part)!r} (join the bytes, decode once with "
                    f"errors='replace')")
    n_bytes = len(held.encode("utf-8"))
    yours = n_bytes / len(ref.encode(held))
    base = n_bytes / len(BPE.train(text, 256 + k).encode(held))
    if yours < 0.97 * base:
        raise Wrong(f"held-out bytes per token {yours:.3f}, d2l.BPE.train's "
                    f"{base:.3f}")
    return (f"{k} merges in {seconds:.1f} s, each a most frequent pair; ids equal "
            f"d2l.BPE's on {len(strings) + 1} strings; held-out bytes per token: yours "
            f"{yours:.2f}, d2l.BPE.train's {base:.2f}, raw bytes 1.00")
