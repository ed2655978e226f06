"""Byte-level byte-pair encoding (BPE), the tokenizer of GPT-2, from scratch.

Text is UTF-8 bytes, so the vocabulary starts with one token for each of the 256 byte
values, and any string (Chinese, emoji, the empty string) can be encoded: nothing is
"unknown".  Training repeats one step: find the most frequent pair of adjacent tokens in
the corpus and give it a new id (a *merge*), until the vocabulary has ``vocab_size``
tokens.  Encoding applies the merges in the order they were learned; decoding
concatenates the bytes of the tokens and decodes them as UTF-8.

As GPT-2, the text is first cut into chunks (words with their leading space, runs of
digits, runs of punctuation, runs of spaces) by the regular expression
:data:`SPLIT_PATTERN`, and no merge crosses a chunk boundary, so "dog" and "dog."
share the token " dog".  The pattern is OpenAI's, written for the third-party ``regex``
module: ``\\p{L}`` (any letter), ``\\p{N}`` (any number: "7", but also "²" and "½")
and ``\\s`` (Unicode's White_Space).  Python's ``re`` knows no ``\\p{...}``, and its
``\\s`` also takes the separators U+001C-U+001F, so :func:`compile_pattern` spells the
three classes out from ``unicodedata``.

GPT-2's own tokenizer is this algorithm with OpenAI's 50,000 merges:
:meth:`BPE.from_gpt2` reads its two files (shipped in ``d2lmini/gpt2_tokenizer``) and
encodes text to GPT-2's ids, token for token.  The files write every byte as a printable
character (:func:`bytes_to_unicode`: byte 32, the space, is "Ġ"), so that a merge fits
on a line of text, and GPT-2's ids 0-255 are the 256 bytes in that table's order, not
in byte order (id 0 is "!", byte 33).  Its one special token, ``<|endoftext|>`` (id
50256), is never split.

    >>> tok = BPE.train(text, vocab_size=512)
    >>> tok.decode(tok.encode("héllo 世界 🙂")) == "héllo 世界 🙂"
    True
    >>> BPE.from_gpt2().encode("Hello world")
    [15496, 995]
"""
from __future__ import annotations

import functools
import json
import numbers
import os
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable
from importlib import resources

import torch

__all__ = ["BPE", "SPLIT_PATTERN", "compile_pattern", "bytes_to_unicode",
           "gpt2_tokenizer_files"]

#: GPT-2's pre-tokenizer (OpenAI's ``encoder.py``): contractions, letters, numbers,
#: other symbols (each with an optional leading space), then whitespace.
SPLIT_PATTERN = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+"
                 r"|\s+(?!\S)|\s+")

# Unicode's White_Space code points: what \s means in GPT-2's pattern
_WHITE_SPACE = [(0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0),
                (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F),
                (0x205F, 0x205F), (0x3000, 0x3000)]


@functools.lru_cache(maxsize=None)
def _class_body(name: str) -> str:
    """The inside of a ``re`` character class for \\p{L}, \\p{N} or \\s."""
    if name == "s":
        ranges = _WHITE_SPACE
    else:
        ranges, start = [], None
        # letters and numbers live in planes 0-3; planes 4-16 hold none
        for cp in range(0x40000 + 1):
            inside = cp < 0x40000 and unicodedata.category(chr(cp))[0] == name
            if inside and start is None:
                start = cp
            elif not inside and start is not None:
                ranges.append((start, cp - 1))
                start = None
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}"
                   for a, b in ranges)


def compile_pattern(pattern: str) -> re.Pattern:
    """Compile a pattern written for the ``regex`` module (``\\p{L}``, ``\\p{N}``,
    ``\\s``, ``\\S`` as Unicode defines them) with Python's own ``re``, by spelling the
    classes out from ``unicodedata``."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, got {type(pattern).__name__}")
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in "pP":
                end = pattern.find("}", i)
                name = pattern[i + 3:end] if pattern[i + 2:i + 3] == "{" else ""
                if nxt == "P" or name not in ("L", "N"):
                    raise ValueError(f"only \\p{{L}} and \\p{{N}} are supported, got "
                                     f"{pattern[i:end + 1]!r}")
                body = _class_body(name)
                out.append(body if in_class else f"[{body}]")
                i = end + 1
                continue
            if nxt in "sS":
                if in_class and nxt == "S":
                    raise ValueError("\\S inside a character class is not supported")
                body = _class_body("s")
                out.append(body if in_class else
                           f"[{body}]" if nxt == "s" else f"[^{body}]")
                i += 2
                continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return re.compile("".join(out))


@functools.lru_cache(maxsize=None)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's table byte -> printable character (OpenAI's ``encoder.py``).

    The 188 bytes that are printable characters of Latin-1 ("!" to "~", "¡" to "¬",
    "®" to "ÿ") stand for themselves; the other 68 (control codes, the space, soft
    hyphen, ...) get U+0100, U+0101, ... in byte order, so byte 32, the space, is "Ġ"
    (U+0120) and byte 10, the newline, is "Ċ".  GPT-2's token ids 0-255 follow this
    table's order: first the 188, then the 68."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    table, n = {b: chr(b) for b in printable}, 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + n)
            n += 1
    others = sorted(set(range(256)) - set(printable))
    return {b: table[b] for b in [*printable, *others]}


def gpt2_tokenizer_files() -> tuple[str, str]:
    """Paths of the shipped ``encoder.json`` and ``vocab.bpe`` (GPT-2's tokenizer,
    see ``d2lmini/gpt2_tokenizer/README.md`` for their source and licence)."""
    folder = resources.files("d2lmini") / "gpt2_tokenizer"
    return str(folder / "encoder.json"), str(folder / "vocab.bpe")


def _merge(ids: list[int], pair: tuple[int, int], new: int) -> list[int]:
    """Replace every (non-overlapping, left to right) occurrence of ``pair`` by
    ``new``."""
    out, i, n = [], 0, len(ids)
    while i < n:
        if i < n - 1 and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


class BPE:
    """A byte-level BPE tokenizer.  ``merges``: {(a, b): new id} in the order learned
    (new ids 256, 257, ...); ``vocab``: {id: bytes}.  Build one with :meth:`train`, or
    load GPT-2's with :meth:`from_gpt2`.

    ``byte_ids``: the id of each byte value 0..255 (a permutation of 0..255; default:
    id = byte); ``special_tokens``: {text: id} for tokens that are never split
    (GPT-2's ``<|endoftext|>``), with ids after the merges'."""

    def __init__(self, merges: dict[tuple[int, int], int] | None = None,
                 pattern: str = SPLIT_PATTERN,
                 special_tokens: dict[str, int] | None = None, byte_ids=None):
        if merges is not None and not isinstance(merges, dict):
            raise TypeError(f"merges must be a dict {{(a, b): new id}} (as BPE.train "
                            f"makes), got {type(merges).__name__}")
        if pattern is not None and not isinstance(pattern, str):
            raise TypeError(f"pattern must be a regular expression string (or '' for "
                            f"no pre-tokenizer), got {type(pattern).__name__}")
        byte_ids = list(range(256)) if byte_ids is None else list(byte_ids)
        if sorted(byte_ids) != list(range(256)) or not all(
                isinstance(i, int) for i in byte_ids):
            raise ValueError("byte_ids must give each of the 256 byte values its own "
                             "id in 0..255 (a permutation of 0..255)")
        self.merges = dict(merges or {})
        self.pattern = pattern
        self._split = compile_pattern(pattern) if pattern else None
        self.byte_ids = byte_ids
        self.vocab = {i: bytes([b]) for b, i in enumerate(byte_ids)}
        self.vocab = dict(sorted(self.vocab.items()))
        for (a, b), new in self.merges.items():
            if new != len(self.vocab) or a not in self.vocab or b not in self.vocab:
                raise ValueError(f"merge {(a, b)} -> {new} is out of order: expected "
                                 f"new id {len(self.vocab)} made of ids already in the "
                                 f"vocabulary")
            self.vocab[new] = self.vocab[a] + self.vocab[b]
        self.special_tokens = dict(special_tokens or {})
        for text, i in self.special_tokens.items():
            if not isinstance(text, str) or not text or not isinstance(i, int) \
                    or isinstance(i, bool) or i in self.vocab or i < 0:
                raise ValueError(f"special token {text!r}: {i!r} must be a new id "
                                 f"(ids 0..{len(self.vocab) - 1} are taken)")
            self.vocab[i] = text.encode("utf-8")
        self._special = (re.compile("(" + "|".join(
            re.escape(s) for s in sorted(self.special_tokens, key=len, reverse=True))
            + ")") if self.special_tokens else None)
        self._cache: dict[str, list[int]] = {}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def __len__(self) -> int:
        return len(self.vocab)

    def __repr__(self) -> str:
        special = (f", special_tokens={list(self.special_tokens)}"
                   if self.special_tokens else "")
        return f"BPE(vocab_size={self.vocab_size}, merges={len(self.merges)}{special})"

    def chunks(self, text: str) -> list[str]:
        """The pre-tokenizer's pieces of ``text`` (they concatenate back to it)."""
        return self._split.findall(text) if self._split else ([text] if text else [])

    # ------------------------------------------------------------------ GPT-2's files
    @classmethod
    def from_gpt2(cls, encoder_json=None, vocab_bpe=None) -> "BPE":
        """GPT-2's own tokenizer from OpenAI's files: ``encoder_json`` (token string
        -> id, strings in :func:`bytes_to_unicode`'s alphabet) and ``vocab_bpe`` (the
        50,000 merges, one "a b" pair a line after a ``#version`` line).  Each is a
        path (default: the copies shipped with the package), or already read: a dict,
        or a list of (a, b) string pairs.  ``encode`` then gives GPT-2's ids token for
        token (``"Hello world"`` -> ``[15496, 995]``), ``<|endoftext|>`` included."""
        default_enc, default_bpe = gpt2_tokenizer_files()
        encoder = _read_encoder(default_enc if encoder_json is None else encoder_json)
        pairs = _read_merges(default_bpe if vocab_bpe is None else vocab_bpe)
        to_char = bytes_to_unicode()
        to_byte = {c: b for b, c in to_char.items()}
        missing = [c for c in to_char.values() if c not in encoder]
        if missing:
            raise ValueError(f"encoder_json lacks single-byte tokens {missing[:5]}: "
                             f"is it GPT-2's encoder.json?")
        merges = {}
        for rank, (a, b) in enumerate(pairs):
            for piece in (a, b, a + b):
                if piece not in encoder:
                    raise ValueError(f"merge {rank} ({a!r} {b!r}): {piece!r} is not in "
                                     f"encoder_json (files from different models?)")
            merges[(encoder[a], encoder[b])] = encoder[a + b]
        taken = set(merges.values()) | {encoder[c] for c in to_char.values()}
        special = {s: i for s, i in encoder.items() if i not in taken}
        tok = cls(merges, SPLIT_PATTERN, special_tokens=special,
                  byte_ids=[encoder[to_char[b]] for b in range(256)])
        spell = to_byte.__getitem__
        for s, i in encoder.items():                 # every entry spells its bytes
            if s not in special and tok.vocab[i] != bytes(map(spell, s)):
                raise ValueError(f"encoder_json entry {s!r} -> {i} does not spell the "
                                 f"bytes its merges make")
        return tok

    # ------------------------------------------------------------------ training
    @classmethod
    def train(cls, text: str, vocab_size: int, pattern: str = SPLIT_PATTERN,
              verbose: bool = False) -> "BPE":
        """Learn ``vocab_size - 256`` merges from ``text``.

        Each chunk is counted once with its frequency; the pair counts are kept up to
        date as merges rewrite the chunks that contain the pair (instead of recounting
        the corpus after every merge).  Ties go to the pair seen first.  Stops early
        when no pair occurs twice.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if (isinstance(vocab_size, bool) or not isinstance(vocab_size, int)
                or vocab_size < 256):
            raise ValueError(f"vocab_size must be an int >= 256 (the 256 bytes come "
                             f"first), got {vocab_size!r}")
        tok = cls(pattern=pattern)
        freq = Counter(tok.chunks(text))
        words = [list(w.encode("utf-8")) for w in freq]       # each distinct chunk once
        counts = list(freq.values())
        pairs: Counter = Counter()                        # pair -> occurrences
        where = defaultdict(set)                          # pair -> chunks holding it
        for w, (ids, c) in enumerate(zip(words, counts)):
            for p in zip(ids, ids[1:]):
                pairs[p] += c
                where[p].add(w)
        merges = {}
        for new in range(256, vocab_size):
            if not pairs:
                break
            best = max(pairs, key=pairs.__getitem__)      # first of the most frequent
            if pairs[best] < 2:
                break
            merges[best] = new
            for w in where.pop(best):
                ids, c = words[w], counts[w]
                for p in zip(ids, ids[1:]):                    # take the old pairs out
                    pairs[p] -= c
                    if pairs[p] <= 0:
                        del pairs[p]
                ids = words[w] = _merge(ids, best, new)
                for p in zip(ids, ids[1:]):                    # and the new ones in
                    pairs[p] += c
                    where[p].add(w)
            pairs.pop(best, None)
            if verbose:
                print(new, best)
        return cls(merges, pattern)

    # ------------------------------------------------------------------ using it
    def _encode_chunk(self, chunk: str) -> list[int]:
        ids = self._cache.get(chunk)
        if ids is not None:
            return ids
        ids = [self.byte_ids[b] for b in chunk.encode("utf-8")]
        while len(ids) > 1:  # apply the earliest-learned merge present, as training did
            pair = min(zip(ids, ids[1:]),
                       key=lambda p: self.merges.get(p, float("inf")))
            if pair not in self.merges:
                break
            ids = _merge(ids, pair, self.merges[pair])
        if len(self._cache) < 100_000:
            self._cache[chunk] = ids
        return ids

    def _encode_ordinary(self, text: str) -> list[int]:
        return [i for chunk in self.chunks(text) for i in self._encode_chunk(chunk)]

    def encode(self, text: str, special: bool = True) -> list[int]:
        """text -> token ids (a list of ints in 0..vocab_size-1).  A special token in
        the text (GPT-2's ``<|endoftext|>``) becomes its one id; ``special=False``
        reads it as ordinary text instead."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if not (special and self._special):
            return self._encode_ordinary(text)
        ids = []
        for k, part in enumerate(self._special.split(text)):
            if k % 2:
                ids.append(self.special_tokens[part])
            elif part:
                ids.extend(self._encode_ordinary(part))
        return ids

    def decode_bytes(self, ids) -> bytes:
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1 or ids.is_floating_point() or ids.is_complex() \
                    or ids.dtype == torch.bool:
                raise ValueError(f"ids must be a list of ints or a 1-D integer tensor, "
                                 f"got a {ids.dtype} tensor of shape "
                                 f"{tuple(ids.shape)}")
            ids = ids.tolist()
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            raise TypeError(f"ids must be a list of token ids (ints), "
                            f"got {type(ids).__name__}"
                            + (" (encode text with .encode)"
                               if isinstance(ids, str) else ""))
        out = []
        for i in ids:
            if not isinstance(i, numbers.Integral) or isinstance(i, bool):
                raise TypeError(f"ids must be ints, got {type(i).__name__} {i!r:.40}")
            i = int(i)
            if i not in self.vocab:
                raise ValueError(f"token id {i} is outside the vocabulary "
                                 f"(expected ids 0..{self.vocab_size - 1})")
            out.append(self.vocab[i])
        return b"".join(out)

    def decode(self, ids) -> str:
        """token ids -> text.  A sequence cut inside a multi-byte character decodes
        that character as U+FFFD; whole encodings always decode to the original."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def tokens(self, text: str) -> list[str]:
        """The tokens of ``text`` as readable strings (bytes that are not whole UTF-8
        characters shown as U+FFFD)."""
        return [self.vocab[i].decode("utf-8", errors="replace")
                for i in self.encode(text)]


def _read_encoder(source) -> dict[str, int]:
    if isinstance(source, dict):
        encoder = source
    elif isinstance(source, (str, os.PathLike)):
        with open(source, encoding="utf-8") as f:
            encoder = json.load(f)
    else:
        raise TypeError(f"encoder_json must be a path to GPT-2's encoder.json or the "
                        f"dict it holds, got {type(source).__name__}")
    if not isinstance(encoder, dict) or not all(
            isinstance(k, str) and isinstance(v, int) for k, v in encoder.items()):
        raise ValueError("encoder_json must map token strings to int ids")
    return encoder


def _read_merges(source) -> list[tuple[str, str]]:
    if isinstance(source, (str, os.PathLike)):
        with open(source, encoding="utf-8") as f:
            lines = f.read().split("\n")
        pairs = [tuple(line.split(" ")) for line in lines
                 if line and not line.startswith("#version")]
        bad = [p for p in pairs if len(p) != 2]
    elif isinstance(source, (list, tuple)):
        pairs = [tuple(p) for p in source]
        bad = [p for p in pairs
               if len(p) != 2 or not all(isinstance(s, str) for s in p)]
    else:
        raise TypeError(f"vocab_bpe must be a path to GPT-2's vocab.bpe or a list of "
                        f"(a, b) pairs, got {type(source).__name__}")
    if bad:
        raise ValueError(f"vocab_bpe: each merge is two strings 'a b', got {bad[0]!r}")
    return pairs
