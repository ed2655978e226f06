"""Vocabularies and small, generated translation data sets (chapter 8).  No downloads."""
from __future__ import annotations

import datetime as dt
import random
from collections import Counter
from typing import Iterable, Sequence

import torch

from .utils import check_positive_int

SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")


class Vocab:
    """Token <-> id.  Ids 0..3 are ``<pad>``, ``<bos>``, ``<eos>``, ``<unk>``; the other
    tokens follow by decreasing frequency, ties in first-seen order.

    Looking up a token that is not in the vocabulary returns the ``<unk>`` id
    (documented behaviour, not an error); decoding an id out of range raises.
    """

    def __init__(self, tokens: Iterable[str] = (), min_freq: int = 1):
        counts = Counter(tokens)
        self.idx_to_token = list(SPECIALS) + [
            t for t, c in sorted(counts.items(), key=lambda kv: -kv[1])
            if c >= min_freq and t not in SPECIALS]
        self.token_to_idx = {t: i for i, t in enumerate(self.idx_to_token)}
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = range(4)

    def __len__(self) -> int:
        return len(self.idx_to_token)

    def __getitem__(self, token: str) -> int:
        return self.token_to_idx.get(token, self.unk_id)

    def encode(self, tokens: Sequence[str], bos: bool = False, eos: bool = False) -> list[int]:
        ids = [self[t] for t in tokens]
        return [self.bos_id] * bos + ids + [self.eos_id] * eos

    def decode(self, ids: Iterable[int], strip: bool = True) -> list[str]:
        """ids -> tokens; ``strip`` drops <bos>/<pad> and stops at <eos>."""
        out = []
        for i in (ids.tolist() if isinstance(ids, torch.Tensor) else ids):
            if not 0 <= i < len(self):
                raise ValueError(f"id {i} is out of range for a vocabulary of size {len(self)}")
            if strip and i == self.eos_id:
                break
            if not (strip and i in (self.pad_id, self.bos_id)):
                out.append(self.idx_to_token[i])
        return out


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int = 0) -> torch.Tensor:
    """Right-pad lists of ids into one (B, T_max) long tensor."""
    if len(seqs) == 0:
        raise ValueError("cannot pad an empty batch")
    T = max(len(s) for s in seqs)
    return torch.tensor([list(s) + [pad_id] * (T - len(s)) for s in seqs], dtype=torch.long)


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
    if not (src.shape[0] == tgt_in.shape[0] == tgt_out.shape[0]) or tgt_in.shape != tgt_out.shape:
        raise ValueError(f"src (n, S), tgt_in and tgt_out (n, T) disagree: {tuple(src.shape)}, "
                         f"{tuple(tgt_in.shape)}, {tuple(tgt_out.shape)}")
    src_len = (src != pad_id).sum(1)                                   # (n,)
    tgt_len = ((tgt_in != pad_id) | (tgt_out != pad_id)).sum(1)        # (n,)

    def batches():
        order = torch.randperm(len(src), generator=generator)
        chunks = []
        for i in range(0, len(order), pool * batch_size):
            chunk = order[i:i + pool * batch_size]
            chunks += chunk[torch.argsort(src_len[chunk], stable=True)].split(batch_size)
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
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

# One human-readable form per entry; every form names day, month and year unambiguously
# (two-digit years mean 1950-2049, so dd/mm/yy has one reading).
FORMATS = {
    "d Month yyyy": lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
    "dd/mm/yy": lambda d: f"{d.day:02d}/{d.month:02d}/{d.year % 100:02d}",
    "Weekday, Month d, yyyy": lambda d: f"{WEEKDAYS[d.weekday()]}, {MONTHS[d.month - 1]} {d.day}, {d.year}",
    "d. Monat yyyy": lambda d: f"{d.day}. {MONATE[d.month - 1]} {d.year}",
    "yyyy年m月d日": lambda d: f"{d.year}年{d.month}月{d.day}日",
    "Mon d, yyyy": lambda d: f"{MONTHS[d.month - 1][:3]} {d.day}, {d.year}",
    "d mon yy": lambda d: f"{d.day} {MONTHS[d.month - 1][:3].lower()} {d.year % 100:02d}",
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
        self.formats = list(FORMATS) if formats is None else list(formats)
        unknown = [f for f in self.formats if f not in FORMATS]
        if unknown:
            raise ValueError(f"unknown date formats {unknown}; expected some of {list(FORMATS)}")
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
        self.pairs = [(FORMATS[rng.choice(self.formats)](d), d.isoformat()) for d in self.dates]
        self.src_vocab, self.tgt_vocab = self.vocabs()

    @staticmethod
    def vocabs() -> tuple[Vocab, Vocab]:
        """Character vocabularies over everything any format can produce (fixed order)."""
        words = MONTHS + MONATE + WEEKDAYS + [m[:3].lower() for m in MONTHS]
        src_chars = sorted(set("".join(words) + "0123456789 ,./-年月日"))
        return Vocab(src_chars), Vocab("0123456789-")

    def __len__(self) -> int:
        return len(self.pairs)

    def tensors(self, device=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(src (n, S), tgt_in (n, 11) = <bos> + ISO, tgt_out (n, 11) = ISO + <eos>)"""
        src = pad_batch([self.src_vocab.encode(s) for s, _ in self.pairs])
        tgt = pad_batch([self.tgt_vocab.encode(t, bos=True, eos=True) for _, t in self.pairs])
        return src.to(device), tgt[:, :-1].to(device), tgt[:, 1:].to(device)
