"""Vocabularies and small, generated translation data sets (chapter 8).  No
downloads."""
from __future__ import annotations

import datetime as dt
import numbers
import random
from collections import Counter
from collections.abc import Iterable, Set as AbstractSet
from typing import Callable, Sequence

import numpy as np
import torch

from .utils import check_bool, check_generator, check_positive_int

SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")


def _is_id(i) -> bool:
    return isinstance(i, numbers.Integral) and not isinstance(i, bool)


class Vocab:
    """Token <-> id.  Ids 0..3 are ``<pad>``, ``<bos>``, ``<eos>``, ``<unk>``; the other
    tokens follow by decreasing frequency, ties in first-seen order.

    ``tokens``: an iterable of strings (a string gives its characters:
    ``Vocab("hello")``).  A set has no fixed order (it changes from one Python process
    to the next), so a set or frozenset is sorted first: ``Vocab(set(text))`` gives the
    same ids in every run.  Tokens seen fewer than ``min_freq`` times are left out.

    Looking up a token that is not in the vocabulary returns the ``<unk>`` id
    (documented behaviour, not an error); decoding an id out of range raises.
    ``Vocab.from_tokens(v.idx_to_token)`` rebuilds ``v`` exactly (``d2l.save`` stores
    that list).
    """

    def __init__(self, tokens: Iterable[str] = (), min_freq: int = 1):
        if isinstance(tokens, torch.Tensor) or not isinstance(tokens, Iterable):
            raise TypeError("tokens must be an iterable of strings (e.g. a list of "
                            "words or a string of characters), got "
                            f"{type(tokens).__name__}")
        check_positive_int(min_freq, "min_freq")
        if isinstance(tokens, AbstractSet):
            tokens = sorted(tokens, key=lambda t: (not isinstance(t, str), str(t)))
        tokens = list(tokens)
        bad = next((t for t in tokens if not isinstance(t, str)), None)
        if bad is not None:
            raise TypeError(f"tokens must be strings, got {type(bad).__name__} {bad!r}"
                            + (" (pass one flat list of tokens, e.g. "
                               "[w for s in sentences for w in s])"
                               if isinstance(bad, (list, tuple)) else ""))
        counts = Counter(tokens)
        self.idx_to_token = list(SPECIALS) + [
            t for t, c in sorted(counts.items(), key=lambda kv: -kv[1])
            if c >= min_freq and t not in SPECIALS]
        self.token_to_idx = {t: i for i, t in enumerate(self.idx_to_token)}
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = range(4)

    @classmethod
    def from_tokens(cls, idx_to_token: Sequence[str]) -> "Vocab":
        """The vocabulary whose ``idx_to_token`` is exactly this list (specials
        first)."""
        if (isinstance(idx_to_token, (str, bytes))
                or not isinstance(idx_to_token, Iterable)):
            raise TypeError(f"idx_to_token must be a list of token strings, got "
                            f"{type(idx_to_token).__name__}")
        idx_to_token = list(idx_to_token)
        if idx_to_token[:4] != list(SPECIALS) or not all(
                isinstance(t, str) for t in idx_to_token) or len(
                set(idx_to_token)) != len(idx_to_token):
            raise ValueError(f"idx_to_token must be distinct strings starting with "
                             f"{list(SPECIALS)}, got {idx_to_token[:6]!r}...")
        v = cls()
        v.idx_to_token = idx_to_token
        v.token_to_idx = {t: i for i, t in enumerate(idx_to_token)}
        return v

    def __len__(self) -> int:
        return len(self.idx_to_token)

    def __eq__(self, other) -> bool:
        return isinstance(other, Vocab) and self.idx_to_token == other.idx_to_token

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, tokens={self.idx_to_token[4:12]!r}...)"

    def __getitem__(self, token: str) -> int:
        if not isinstance(token, str):  # vocab[5] is not the token of id 5
            raise TypeError("vocab[token] looks up a string token, got "
                            f"{type(token).__name__} {token!r:.40}"
                            + (f" (the token of id {token} is "
                               f"vocab.idx_to_token[{token}])"
                               if _is_id(token) else ""))
        return self.token_to_idx.get(token, self.unk_id)

    def encode(self, tokens: Sequence[str], bos: bool = False,
               eos: bool = False) -> list[int]:
        """tokens (a list of strings, or a string: its characters) -> list of ids,
        optionally with ``<bos>`` first and ``<eos>`` last.  Unknown tokens ->
        ``<unk>``."""
        if isinstance(tokens, torch.Tensor) or not isinstance(tokens, Iterable):
            raise TypeError(f"tokens must be a list of strings or a string, got "
                            f"{type(tokens).__name__}")
        check_bool(bos, "bos"), check_bool(eos, "eos")
        ids = []
        for t in tokens:
            if not isinstance(t, str):
                raise TypeError(f"tokens must be strings, got {type(t).__name__} {t!r}"
                                + (" (encode one sequence at a time)"
                                   if isinstance(t, (list, tuple)) else ""))
            ids.append(self[t])
        return [self.bos_id] * bos + ids + [self.eos_id] * eos

    def decode(self, ids, strip: bool = True, sep: str | None = None):
        """ids -> tokens; ``strip`` drops <bos>/<pad> and stops at <eos>.

        ``ids``: one sequence (a list of ints or a 1-D tensor) -> a list of tokens, or a
        batch (a list of lists or a 2-D tensor (B, T)) -> a list of lists.  With ``sep``
        the tokens are joined into text: ``sep=""`` for characters, ``sep=" "`` for
        words (a batch gives a list of strings).
        """
        if sep is not None and not isinstance(sep, str):
            raise TypeError(f"sep must be a string or None, got {type(sep).__name__}")
        if isinstance(ids, torch.Tensor):
            if ids.is_floating_point() or ids.is_complex() or ids.dim() not in (1, 2):
                raise ValueError("ids must be integer token ids of shape (T,) or "
                                 f"(B, T), got a {ids.dtype} tensor of shape "
                                 f"{tuple(ids.shape)}")
            ids = ids.tolist()
        if isinstance(ids, np.ndarray) and ids.ndim == 2:
            ids = ids.tolist()
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            raise TypeError("ids must be a list of ints, a list of lists or a tensor, "
                            f"got {type(ids).__name__}")
        ids = list(ids)
        if ids and all(isinstance(row, (list, tuple)) for row in ids):
            return [self.decode(row, strip, sep) for row in ids]
        out = []
        for i in ids:
            if not _is_id(i):
                raise TypeError(f"ids must be integers, got {type(i).__name__} {i!r}")
            if not 0 <= i < len(self):
                raise ValueError(f"id {i} is out of range for a vocabulary of size "
                                 f"{len(self)}")
            if strip and i == self.eos_id:
                break
            if not (strip and i in (self.pad_id, self.bos_id)):
                out.append(self.idx_to_token[i])
        return out if sep is None else sep.join(out)


def _as_id_list(s, k: int, who: str = "pad_batch") -> list[int]:
    where = f" as sequence {k}" if who == "pad_batch" else ""
    if isinstance(s, torch.Tensor):
        if s.dim() != 1 or s.is_floating_point() or s.is_complex():
            raise ValueError(f"{f'sequence {k}' if where else 'ids'} must be a 1-D "
                             f"tensor of integer ids, got a {s.dtype} tensor of shape "
                             f"{tuple(s.shape)}")
        return s.tolist()
    if isinstance(s, (str, bytes)) or not isinstance(s, Iterable):
        raise TypeError(f"{who} expects sequences of integer ids (use vocab.encode "
                        f"first), got {type(s).__name__} {s!r:.40}{where}")
    s = list(s)
    bad = [i for i in s if not _is_id(i)][:1]
    if bad:
        raise TypeError(f"{who} expects integer ids, got {type(bad[0]).__name__} "
                        f"{bad[0]!r}"
                        + (f" in sequence {k}" if where else "")
                        + (" (use vocab.encode first)" if isinstance(bad[0], str)
                           else ""))
    return s


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int = 0, side: str = "right"
              ) -> torch.Tensor:
    """Pad lists of ids into one (B, T_max) long tensor.

    ``side="right"`` (default) puts the pads after the tokens: what ``Transformer``,
    ``GRUSeq2Seq`` and training batches expect.  ``side="left"`` puts them before:
    what ``d2l.generate`` needs for prompts of different lengths, so that every row's
    last position is its last real token and the new tokens follow it.
    """
    if side not in ("right", "left"):
        raise ValueError(f'side must be "right" or "left", got {side!r}')
    if not _is_id(pad_id):
        raise TypeError(f"pad_id must be an int, got {type(pad_id).__name__} "
                        f"{pad_id!r}")
    if pad_id < 0:
        raise ValueError(f"pad_id must be an id >= 0, got {pad_id}")
    if isinstance(seqs, (str, bytes)) or not isinstance(seqs, Iterable):
        raise TypeError("seqs must be a list of id sequences, got "
                        f"{type(seqs).__name__}")
    seqs = [_as_id_list(s, k) for k, s in enumerate(seqs)]
    if len(seqs) == 0:
        raise ValueError("cannot pad an empty batch")
    T = max(len(s) for s in seqs)
    if side == "right":
        rows = [s + [pad_id] * (T - len(s)) for s in seqs]
    else:
        rows = [[pad_id] * (T - len(s)) + s for s in seqs]
    return torch.tensor(rows, dtype=torch.long)


def _check_ids(t, name: str, ndim: int) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got "
                        f"{type(t).__name__}")
    if (t.dim() != ndim or t.is_floating_point() or t.is_complex()
            or t.dtype == torch.bool):
        raise ValueError(f"{name} must be a {ndim}-D tensor of integer ids, got a "
                         f"{t.dtype} tensor of shape {tuple(t.shape)}")


def pairs_to_tensors(pairs, src_vocab: Vocab | None = None,
                     tgt_vocab: Vocab | None = None,
                     tokenize: Callable[[str], Sequence[str]] = list, device=None):
    """Your own (source, target) pairs -> tensors for a ``Transformer``, and
    vocabularies.

    ``pairs``: a list of (source, target) strings (or token lists).  ``tokenize`` splits
    a string into tokens: ``list`` (default) gives characters, ``str.split`` words.
    Without ``src_vocab``/``tgt_vocab`` they are built from the pairs (pass the
    training set's vocabularies when you encode a test set: unknown tokens map to
    ``<unk>``).  Returns ``(src (n, S), tgt_in (n, T), tgt_out (n, T), src_vocab,
    tgt_vocab)``: right-padded with id 0; ``tgt_in`` = ``<bos>`` + target, ``tgt_out``
    = target + ``<eos>``, so ``model(src, tgt_in)`` is trained to predict ``tgt_out``
    (e.g. ``d2l.train(model, d2l.sequence_loss, opt, batches)`` with batches from
    ``d2l.bucket_batches(src, tgt_in, tgt_out, 32)``).
    """
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Iterable):
        raise TypeError(f"pairs must be a list of (source, target) pairs, got "
                        f"{type(pairs).__name__}")
    pairs = list(pairs)
    if not pairs:
        raise ValueError("pairs is empty: expected at least one (source, target) pair")
    for k, p in enumerate(pairs):
        if not (isinstance(p, (tuple, list)) and len(p) == 2):
            raise TypeError(f"pair {k} must be a (source, target) pair, got {p!r:.60}")
        for side, x in zip(("source", "target"), p):
            if not (isinstance(x, str) or (isinstance(x, (list, tuple))
                                           and all(isinstance(t, str) for t in x))):
                raise TypeError(f"pair {k}: the {side} must be a string or a list of "
                                f"token strings, got {type(x).__name__} {x!r:.40}")
    if not callable(tokenize):
        raise TypeError(f"tokenize must be a function str -> tokens, got "
                        f"{type(tokenize).__name__}")
    for name, v in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
        if v is not None and not isinstance(v, Vocab):
            raise TypeError(f"{name} must be a d2l.Vocab or None, got "
                            f"{type(v).__name__}")
    tok = lambda x: tokenize(x) if isinstance(x, str) else list(x)
    src_toks = [tok(s) for s, _ in pairs]
    tgt_toks = [tok(t) for _, t in pairs]
    src_vocab = src_vocab or Vocab([t for ts in src_toks for t in ts])
    tgt_vocab = tgt_vocab or Vocab([t for ts in tgt_toks for t in ts])
    src = pad_batch([src_vocab.encode(s) for s in src_toks], src_vocab.pad_id)
    tgt = pad_batch([tgt_vocab.encode(t, bos=True, eos=True) for t in tgt_toks],
                    tgt_vocab.pad_id)
    tgt_in = tgt[:, :-1].masked_fill(tgt[:, :-1] == tgt_vocab.eos_id, tgt_vocab.pad_id)
    return (src.to(device), tgt_in.to(device), tgt[:, 1:].to(device), src_vocab,
            tgt_vocab)


def lm_windows(ids, block_size: int, stride: int | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Language-model examples from one long id sequence: inputs and next-token targets.

    ids: a list of ints or a 1-D integer tensor (e.g. ``vocab.encode(text)``) ->
    ``(x (n, block_size), y (n, block_size))`` with ``y[i, t] = x[i, t + 1]``'s
    successor in ``ids``: window i starts at ``i * stride`` (default ``block_size``:
    windows do not overlap; ``stride=1``: every start).  A tail too short for a window
    is dropped.  Batch them with ``lambda: d2l.data_iter(batch_size, x, y)`` for
    ``d2l.train`` and train a ``GPT`` with ``d2l.sequence_loss`` (``pad_id=None`` if the
    text has no padding).
    """
    check_positive_int(block_size, "block_size")
    stride = block_size if stride is None else check_positive_int(stride, "stride")
    if isinstance(ids, torch.Tensor):
        _check_ids(ids, "ids", 1)
        ids = ids.long().cpu()
    else:
        ids = torch.tensor(_as_id_list(ids, 0, "lm_windows"), dtype=torch.long)
    n = (len(ids) - block_size - 1) // stride + 1
    if len(ids) < block_size + 1 or n < 1:
        raise ValueError(f"ids has {len(ids)} tokens: a window of "
                         f"block_size={block_size} and its target need at least "
                         f"{block_size + 1}")
    starts = torch.arange(n) * stride                                  # (n,)
    idx = starts[:, None] + torch.arange(block_size)[None]             # (n, block_size)
    return ids[idx], ids[idx + 1]


def bucket_batches(src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor,
                   batch_size: int, pad_id: int = 0, pool: int = 16,
                   generator: torch.Generator | None = None):
    """Shuffled minibatches of examples of similar source length, trimmed of padding.

    src (n, S), tgt_in/tgt_out (n, T), right-padded with ``pad_id``.  Each pool of
    ``pool * batch_size`` shuffled examples is sorted by source length and cut into
    batches; the batch order is shuffled again.  Every batch is trimmed to its own
    longest source and target, so short examples are not padded to the longest one
    in the data set ("batched together by approximate sequence length", as in the
    paper).  Yields (src (b, S_b), tgt_in (b, T_b), tgt_out (b, T_b)), b <= batch_size.
    """
    check_positive_int(batch_size, "batch_size"), check_positive_int(pool, "pool")
    check_generator(generator)
    for name, t in (("src", src), ("tgt_in", tgt_in), ("tgt_out", tgt_out)):
        _check_ids(t, name, 2)
    if not _is_id(pad_id):
        raise TypeError(f"pad_id must be an int, got {type(pad_id).__name__} "
                        f"{pad_id!r}")
    if (not (src.shape[0] == tgt_in.shape[0] == tgt_out.shape[0])
            or tgt_in.shape != tgt_out.shape):
        raise ValueError("src (n, S), tgt_in and tgt_out (n, T) disagree: "
                         f"{tuple(src.shape)}, {tuple(tgt_in.shape)}, "
                         f"{tuple(tgt_out.shape)}")
    if src.shape[0] == 0:
        raise ValueError(f"no examples to batch: src of shape {tuple(src.shape)} is "
                         "empty")
    src_len = (src != pad_id).sum(1)                                   # (n,)
    tgt_len = ((tgt_in != pad_id) | (tgt_out != pad_id)).sum(1)        # (n,)

    def batches():
        order = torch.randperm(len(src), generator=generator)
        chunks = []
        for i in range(0, len(order), pool * batch_size):
            chunk = order[i:i + pool * batch_size]
            chunks += chunk[torch.argsort(src_len[chunk],
                                          stable=True)].split(batch_size)
        for k in torch.randperm(len(chunks), generator=generator).tolist():
            idx = chunks[k]
            S, T = int(src_len[idx].max()), int(tgt_len[idx].max())
            yield src[idx, :S], tgt_in[idx, :T], tgt_out[idx, :T]
    return batches()


def toy_translation() -> list[tuple[str, str]]:
    """The notes' two German -> English pairs (word level)."""
    return [("ich mochte ein bier", "i want a beer ."),
            ("ich mochte ein cola", "i want a coke .")]


MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
MONATE = ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August",
          "September", "Oktober", "November", "Dezember"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
            "Sunday"]

# One human-readable form per entry; every form names day, month and year unambiguously
# (two-digit years mean 1950-2049, so dd/mm/yy has one reading).
FORMATS = {
    "d Month yyyy": lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
    "dd/mm/yy": lambda d: f"{d.day:02d}/{d.month:02d}/{d.year % 100:02d}",
    "Weekday, Month d, yyyy": lambda d: f"{WEEKDAYS[d.weekday()]}, "
                                        f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
    "d. Monat yyyy": lambda d: f"{d.day}. {MONATE[d.month - 1]} {d.year}",
    "yyyy年m月d日": lambda d: f"{d.year}年{d.month}月{d.day}日",
    "Mon d, yyyy": lambda d: f"{MONTHS[d.month - 1][:3]} {d.day}, {d.year}",
    "d mon yy": lambda d: f"{d.day} {MONTHS[d.month - 1][:3].lower()} "
                          f"{d.year % 100:02d}",
    "dd.mm.yyyy": lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",
}
FIRST_DAY, LAST_DAY = dt.date(1950, 1, 1), dt.date(2049, 12, 31)


class DateTranslation:
    """Human-readable dates -> ISO ``YYYY-MM-DD``, character level, generated locally.

    ``DateTranslation(n, seed)`` draws ``n`` distinct dates in 1950-2049, each in a
    random format from :data:`FORMATS`; the same seed gives the same pairs.  Pass
    ``exclude=train_set`` to draw a held-out set with no date in common with it.
    The vocabularies cover every character any format can produce, so train and
    test sets share them.  ``pairs``: list of (source, target) strings.
    """

    def __init__(self, n: int, seed: int = 0, exclude: "DateTranslation | None" = None,
                 formats: Sequence[str] | None = None):
        if not _is_id(n):
            raise TypeError(f"n (the number of pairs) must be an int, got "
                            f"{type(n).__name__} {n!r}")
        if not _is_id(seed):
            raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
        if exclude is not None and not isinstance(exclude, DateTranslation):
            raise TypeError("exclude must be another DateTranslation (the training "
                            f"set) or None, got {type(exclude).__name__}")
        if isinstance(formats, str) or not (formats is None
                                            or isinstance(formats, Iterable)):
            raise TypeError(f"formats must be a list of format names such as "
                            f"[{next(iter(FORMATS))!r}], got {formats!r}")
        self.formats = list(FORMATS) if formats is None else list(formats)
        unknown = [f for f in self.formats if f not in FORMATS]
        if not self.formats:
            raise ValueError(f"formats is empty: expected some of {list(FORMATS)}")
        if unknown:
            raise ValueError(f"unknown date formats {unknown}; expected some of "
                             f"{list(FORMATS)}")
        span = (LAST_DAY - FIRST_DAY).days + 1
        taken = set() if exclude is None else set(exclude.dates)
        if not 0 < n <= span - len(taken):
            raise ValueError(f"n must be between 1 and {span - len(taken)}, got {n}")
        rng = random.Random(seed)
        self.dates: list[dt.date] = []
        seen = set(taken)
        while len(self.dates) < n:
            d = FIRST_DAY + dt.timedelta(days=rng.randrange(span))
            if d not in seen:
                seen.add(d)
                self.dates.append(d)
        self.pairs = [(FORMATS[rng.choice(self.formats)](d), d.isoformat())
                      for d in self.dates]
        self.src_vocab, self.tgt_vocab = self.vocabs()

    @staticmethod
    def vocabs() -> tuple[Vocab, Vocab]:
        """Character vocabularies over everything any format can produce (fixed
        order)."""
        words = MONTHS + MONATE + WEEKDAYS + [m[:3].lower() for m in MONTHS]
        src_chars = sorted(set("".join(words) + "0123456789 ,./-年月日"))
        return Vocab(src_chars), Vocab("0123456789-")

    def __len__(self) -> int:
        return len(self.pairs)

    def tensors(self, device=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(src (n, S), tgt_in (n, 11) = <bos> + ISO, tgt_out (n, 11) = ISO + <eos>)"""
        return pairs_to_tensors(self.pairs, self.src_vocab, self.tgt_vocab,
                                device=device)[:3]


# ---------------------------------------------------------------- your own data files
def read_pairs(path, delimiter: str | None = None, columns: Sequence[int] = (0, 1),
               header: bool = False, encoding: str = "utf-8") -> list[tuple[str, str]]:
    """Your own (source, target) pairs from a text file, one pair a line -> a list of
    ``(source, target)`` strings (for ``pairs_to_tensors``; or ``(text, label)``).

    The file is tab-separated (TSV: the default, and what a ``.tsv`` or ``.txt`` file
    is read as; quotes are plain characters) or comma-separated (CSV: a ``.csv`` file,
    or ``delimiter=","``; a field holding commas, quotes or line breaks is in double
    quotes, as spreadsheets write it).  ``columns``: the indices of the source and the
    target field (``(1, 0)`` swaps them; other fields, such as the attribution column
    of Tatoeba's files, are ignored).  ``header=True`` skips the first line.  Blank
    lines are skipped.  A line with too few fields, or an empty source or target, is
    an error that names the line.
    """
    import csv
    import os

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file name, got {type(path).__name__}")
    if delimiter is None:
        delimiter = "," if os.fspath(path).lower().endswith(".csv") else "\t"
    if not (isinstance(delimiter, str) and len(delimiter) == 1):
        raise ValueError(f"delimiter must be one character such as '\\t' or ',', got "
                         f"{delimiter!r}")
    if (isinstance(columns, (str, bytes)) or not isinstance(columns, Sequence)
            or len(columns) != 2 or not all(_is_id(c) and c >= 0 for c in columns)
            or columns[0] == columns[1]):
        raise ValueError(f"columns must be two different field indices (source, "
                         f"target) such as (0, 1), got {columns!r}")
    check_bool(header, "header")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such file or directory: {os.fspath(path)!r} (the "
                                f"working directory is {os.getcwd()!r})")
    what = "tab" if delimiter == "\t" else repr(delimiter)
    need = max(columns) + 1
    pairs = []
    try:
        with open(path, encoding=encoding, newline="") as f:
            rows = csv.reader(f, delimiter=delimiter, quoting=csv.QUOTE_NONE
                              if delimiter == "\t" else csv.QUOTE_MINIMAL)
            for k, row in enumerate(rows):
                line = rows.line_num
                if (header and k == 0) or not any(field.strip() for field in row):
                    continue
                if len(row) < need:
                    text = delimiter.join(row)
                    hint = next((f" (it holds {n}: pass delimiter={d!r})"
                                 for n, d in (("commas", ","), ("tabs", "\t"))
                                 if d != delimiter and d in text), "")
                    raise ValueError(f"{os.fspath(path)!r} line {line} has {len(row)} "
                                     f"field(s) separated by {what}, expected at least "
                                     f"{need}: {text!r:.60}{hint}")
                src, tgt = row[columns[0]], row[columns[1]]
                for side, field in (("source", src), ("target", tgt)):
                    if not field.strip():
                        raise ValueError(f"{os.fspath(path)!r} line {line}: the "
                                         f"{side} (field "
                                         f"{columns[side == 'target']}) is empty")
                pairs.append((src, tgt))
    except UnicodeDecodeError as err:
        raise ValueError(f"{os.fspath(path)!r} is not {encoding} text ({err.reason} at "
                         f"byte {err.start}): pass its encoding, e.g. "
                         f"encoding='latin-1'") from err
    except csv.Error as err:
        raise ValueError(f"{os.fspath(path)!r} is not a text file of pairs: {err}") \
            from err
    if not pairs:
        raise ValueError(f"{os.fspath(path)!r} holds no pairs (one per line, the "
                         f"fields separated by {what})")
    return pairs


def split_heldout(data, fraction: float = 0.1, seed: int | None = 0,
                  key: Callable | None = None):
    """Hold out part of your data for measuring what the model learned ->
    ``(train, heldout)``.

    ``data`` a text (``str``): its last ``fraction`` of the characters is held out, in
    one piece, so no training window overlaps a held-out one (``seed`` and ``key`` do
    not apply).  ``data`` a list (pairs, labelled examples, ...): about ``fraction`` of
    the items, drawn at random with ``seed`` (``seed=None``: the last items), both
    parts in their original order.  ``key``: a function item -> group (e.g. ``lambda
    p: p[0]``, the source of a pair); all items of a group go to the same part, so
    an example repeated in the data is never both trained on and held out.
    """
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) or not (
            0 < fraction < 1):
        raise ValueError(f"fraction must be a number strictly between 0 and 1 (the "
                         f"share held out), got {fraction!r}")
    if seed is not None and not (_is_id(seed) and seed >= 0):
        raise ValueError(f"seed must be an int >= 0 or None, got {seed!r}")
    if key is not None and not callable(key):
        raise TypeError(f"key must be a function item -> group, or None, got "
                        f"{type(key).__name__}")
    if isinstance(data, str):
        if key is not None:
            raise TypeError("key groups the items of a list; a text is split at one "
                            "point (its end is held out)")
        n_held = round(fraction * len(data))
        if not 0 < n_held < len(data):
            raise ValueError(f"a text of {len(data)} characters leaves nothing on one "
                             f"side when {fraction} of it is held out")
        return data[:len(data) - n_held], data[len(data) - n_held:]
    if (isinstance(data, (bytes, torch.Tensor, np.ndarray, AbstractSet, dict))
            or not isinstance(data, Iterable)):
        raise TypeError("data must be a text (str) or a list of examples, got "
                        f"{type(data).__name__}"
                        + (" (split the text or the list before encoding it)"
                           if isinstance(data, (torch.Tensor, np.ndarray)) else ""))
    items = list(data)
    groups: dict = {}
    for i, item in enumerate(items):
        g = key(item) if key is not None else i
        try:
            groups.setdefault(g, []).append(i)
        except TypeError as err:
            raise TypeError(f"key must return a hashable group (a str, a number, a "
                            f"tuple), got {type(g).__name__} for item {i}") from err
    order = list(groups.values())
    if seed is not None:
        random.Random(seed).shuffle(order)
    else:
        order.reverse()                                  # the last items first
    want, held = round(fraction * len(items)), set()
    for idx in order:
        if len(held) >= want:
            break
        held.update(idx)
    if not held or len(held) == len(items):
        raise ValueError(f"{len(items)} item(s) in {len(groups)} group(s) leave "
                         f"nothing on one side when {fraction} of them is held out")
    return ([x for i, x in enumerate(items) if i not in held],
            [x for i, x in enumerate(items) if i in held])


def random_batches(batch_size: int, *tensors: torch.Tensor, seed: int = 0,
                   start: int = 0):
    """An endless stream of random minibatches in which batch ``s`` depends only on
    ``(seed, s)``.

    tensors (n, ...) -> yields tuples ``(t[idx] for t in tensors)`` of ``batch_size``
    rows drawn at random (with replacement, as nanoGPT draws its windows), for
    s = start, start + 1, ...  A run resumed at step s with ``start=s`` therefore sees
    exactly the batches the uninterrupted run saw.  It never ends: give ``d2l.train``
    a ``max_steps``, e.g. ``d2l.train(model, loss, opt, lambda:
    d2l.random_batches(32, x, y, start=done), max_steps=100)``.
    """
    check_positive_int(batch_size, "batch_size")
    if not (_is_id(seed) and seed >= 0):
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    if not (_is_id(start) and start >= 0):
        raise ValueError(f"start must be an int >= 0 (the number of the first batch), "
                         f"got {start!r}")
    if not tensors:
        raise ValueError("random_batches needs at least one tensor, e.g. "
                         "random_batches(32, x, y)")
    for k, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor) or t.dim() == 0:
            raise TypeError(f"tensor {k} must be a torch.Tensor with a first "
                            f"(example) dimension, got "
                            + ("a 0-d tensor" if isinstance(t, torch.Tensor)
                               else type(t).__name__))
    n = tensors[0].shape[0]
    if any(t.shape[0] != n for t in tensors) or n == 0:
        raise ValueError("the tensors must have the same number of rows, at least "
                         f"one, got shapes {[tuple(t.shape) for t in tensors]}")

    def stream():
        s = start
        while True:
            rng = np.random.default_rng([seed, s])
            idx = torch.from_numpy(rng.integers(0, n, batch_size))
            yield tuple(t[idx.to(t.device)] for t in tensors)
            s += 1
    return stream()
