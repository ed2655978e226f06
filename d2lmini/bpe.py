"""Byte-level byte-pair encoding (BPE), the tokenizer of GPT-2, from scratch.

Text is UTF-8 bytes, so the first 256 token ids are the 256 byte values and any string
(Chinese, emoji, the empty string) can be encoded: nothing is "unknown".  Training
repeats one step: find the most frequent pair of adjacent tokens in the corpus and give
it a new id (a *merge*), until the vocabulary has ``vocab_size`` tokens.  Encoding
applies the merges in the order they were learned; decoding concatenates the bytes of
the tokens and decodes them as UTF-8.

As GPT-2, the text is first cut into chunks (words with their leading space, runs of
digits, runs of punctuation, runs of spaces) and no merge crosses a chunk boundary, so
"dog" and "dog." share the token " dog".  GPT-2's pattern uses Unicode classes (\\p{L},
\\p{N}) from the third-party ``regex`` module; ``SPLIT_PATTERN`` writes the same with
the standard ``re`` module (letters = ``[^\\W\\d_]``).

    >>> tok = BPE.train(text, vocab_size=512)
    >>> tok.decode(tok.encode("héllo 世界 🙂")) == "héllo 世界 🙂"
    True
"""
from __future__ import annotations

import numbers
import re
from collections import Counter, defaultdict
from collections.abc import Iterable

import torch

__all__ = ["BPE", "SPLIT_PATTERN"]

#: GPT-2's pre-tokenizer: contractions, words, numbers, other symbols (each with an
#: optional leading space), then whitespace.
SPLIT_PATTERN = (r"'(?:s|t|re|ve|m|ll|d)| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+"
                 r"|\s+(?!\S)|\s+")


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
    (ids 256, 257, ...); ``vocab``: {id: bytes}.  Build one with :meth:`train`."""

    def __init__(self, merges: dict[tuple[int, int], int] | None = None,
                 pattern: str = SPLIT_PATTERN):
        if merges is not None and not isinstance(merges, dict):
            raise TypeError(f"merges must be a dict {{(a, b): new id}} (as BPE.train "
                            f"makes), got {type(merges).__name__}")
        if pattern is not None and not isinstance(pattern, str):
            raise TypeError(f"pattern must be a regular expression string (or '' for "
                            f"no pre-tokenizer), got {type(pattern).__name__}")
        self.merges = dict(merges or {})
        self.pattern = pattern
        self._split = re.compile(pattern) if pattern else None
        self.vocab = {i: bytes([i]) for i in range(256)}
        for (a, b), new in self.merges.items():
            if new != len(self.vocab) or a not in self.vocab or b not in self.vocab:
                raise ValueError(f"merge {(a, b)} -> {new} is out of order: expected "
                                 f"new id {len(self.vocab)} made of ids already in the "
                                 f"vocabulary")
            self.vocab[new] = self.vocab[a] + self.vocab[b]
        self._cache: dict[str, list[int]] = {}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def __len__(self) -> int:
        return len(self.vocab)

    def __repr__(self) -> str:
        return f"BPE(vocab_size={self.vocab_size}, merges={len(self.merges)})"

    def chunks(self, text: str) -> list[str]:
        """The pre-tokenizer's pieces of ``text`` (they concatenate back to it)."""
        return self._split.findall(text) if self._split else ([text] if text else [])

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
        ids = list(chunk.encode("utf-8"))
        while len(ids) > 1:  # apply the earliest-learned merge present, as training did
            pair = min(zip(ids, ids[1:]),
                       key=lambda p: self.merges.get(p, float("inf")))
            if pair not in self.merges:
                break
            ids = _merge(ids, pair, self.merges[pair])
        if len(self._cache) < 100_000:
            self._cache[chunk] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        """text -> token ids (a list of ints in 0..vocab_size-1)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return [i for chunk in self.chunks(text) for i in self._encode_chunk(chunk)]

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
