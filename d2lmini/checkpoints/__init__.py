"""Small trained models shipped with the package, and what they need to be read.

``d2l.load_pretrained(name)`` -> ``(model, vocab)``, the same weights the book's pages
run (``d2lmini.export``: int8 rows with a power-of-two scale, stored as float16):

* ``"date"``: ``date.pt``, chapter 8's Transformer that writes dates as ISO
  ``YYYY-MM-DD`` (``make_date.py``); vocab = (source, target) ``d2l.Vocab``;
* ``"shakespeare"``: ``shakespeare_char.pt``, a character-level :class:`d2lmini.GPT`
  trained on tiny Shakespeare (``d2lmini/corpus/tinyshakespeare.txt``, the last 10 %
  held out) by ``make_shakespeare.py``; vocab = :class:`CharVocab`;
* ``"bert"``: ``bert_book.pt``, chapter 14's small BERT pre-trained on the book's
  prose (``make_bert.py``); vocab = ``d2lmini.bert.CharVocab``.

Each script in this folder reproduces its file (``--from`` re-stores an existing
checkpoint in the page's precision and prints what that costs on held-out data).
``load_shakespeare()`` and ``d2lmini.bert.load_book_bert()`` also return the training
log.
"""
from __future__ import annotations

import math
import os
import platform
from importlib import resources

import torch
import torch.nn.functional as F

# the size of the shipped model; the rest are d2l.GPT's defaults
CONFIG = {"d_model": 128, "num_heads": 4, "num_layers": 4, "d_ff": 512, "max_len": 128}


class CharVocab:
    """Characters <-> ids.  Id 0 is the GPT's pad id (never a character); the
    characters of ``text``, sorted, get ids 1..len(chars)."""

    def __init__(self, text: str = "", chars: list[str] | None = None):
        self.chars = sorted(set(text)) if chars is None else list(chars)
        self.idx = {c: i + 1 for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars) + 1

    def encode(self, text: str) -> list[int]:
        bad = sorted(set(text) - self.idx.keys())
        if bad:
            raise ValueError(f"characters {bad!r} are not in the vocabulary "
                             f"(expected some of {''.join(self.chars)!r})")
        return [self.idx[c] for c in text]

    def decode(self, ids) -> str:
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else ids
        return "".join(self.chars[i - 1] for i in ids if i != 0)


def split_text(text: str, heldout: float = 0.1) -> tuple[str, str]:
    """-> (first 90 %, last 10 %) of the text: train and held-out."""
    cut = int(len(text) * (1 - heldout))
    return text[:cut], text[cut:]


@torch.no_grad()
def heldout_loss(model, vocab: CharVocab, text: str, max_windows: int | None = None,
                 batch_size: int = 64) -> float:
    """Mean cross-entropy in nats per character of ``model`` on ``text``, read as
    consecutive windows of ``model.max_len + 1`` characters (each window predicts its
    last ``max_len`` characters); ``max_windows`` keeps only the first windows."""
    T = model.max_len
    ids = torch.tensor(vocab.encode(text))
    n = (len(ids) - 1) // T
    n = n if max_windows is None else min(n, max_windows)
    if n == 0:
        raise ValueError(f"text of {len(text)} characters is shorter than one window "
                         f"of {T + 1}")
    windows = torch.stack([ids[i * T:i * T + T + 1] for i in range(n)])   # (n, T + 1)
    was_training, dev = model.training, model.embedding.weight.device
    model.eval()
    total = 0.0
    try:
        for b in range(0, n, batch_size):
            w = windows[b:b + batch_size].to(dev)
            logits = model(w[:, :-1]).float()                               # (b, T, V)
            total += F.cross_entropy(logits.flatten(0, 1), w[:, 1:].flatten(),
                                     reduction="sum").item()
    finally:
        model.train(was_training)
    return total / (n * T)


def read_checkpoint(name: str, path=None) -> dict:
    """The dict a ``make_*.py`` script saved (config, state_dict, chars, train): the
    shipped file ``name``, or the file at ``path`` when one is given."""
    if path is not None:
        return torch.load(path, map_location="cpu", weights_only=True)
    with resources.as_file(resources.files("d2lmini") / "checkpoints" / name) as p:
        return torch.load(p, map_location="cpu", weights_only=True)


def load_shakespeare(device=None, dtype: torch.dtype = torch.float32, path=None):
    """The shipped tiny-Shakespeare GPT -> (model in eval mode, CharVocab, info dict).

    ``info`` holds how it was trained: steps, seconds, machine, held-out loss.
    ``path``: another checkpoint written by ``make_shakespeare.py`` (default: the
    shipped ``shakespeare_char.pt``).  The model is
    ``load_pretrained("shakespeare")``'s.
    """
    ckpt = read_checkpoint("shakespeare_char.pt", path)
    model = _build(ckpt, device, dtype)
    return model, CharVocab(chars=ckpt["chars"]), dict(ckpt["train"])


PRETRAINED = {"date": "date.pt", "shakespeare": "shakespeare_char.pt",
              "bert": "bert_book.pt"}


def _build(ckpt: dict, device=None, dtype: torch.dtype = torch.float32):
    """A checkpoint's model, in eval mode, with the page's positional-encoding table."""
    import importlib
    from ..export import use_page_positional_encoding
    from ..io import MODELS
    name = ckpt.get("class", "GPT")
    cls = getattr(importlib.import_module(MODELS[name]), name)
    model = cls(**ckpt["config"])
    model.load_state_dict({k: v.to(dtype) if v.is_floating_point() else v
                           for k, v in ckpt["state_dict"].items()})
    use_page_positional_encoding(model.to(dtype))
    return model.to(device if device is not None else "cpu").eval()


def load_pretrained(name: str, device=None, dtype: torch.dtype = torch.float32):
    """One of the book's trained models -> ``(model in eval mode, vocab)``, with exactly
    the weights the book's pages compute with (``window.d2lModels[name]``).

    ``name``: ``"date"`` (chapter 8's date Transformer; vocab = (source, target)
    ``d2l.Vocab``), ``"shakespeare"`` (chapter 12's character GPT; vocab =
    :class:`CharVocab`) or ``"bert"`` (chapter 14's small BERT; vocab =
    ``d2lmini.bert.CharVocab``).  ``dtype=torch.float64`` computes in double precision,
    as the page does.  How each was trained: ``read_checkpoint(...)["train"]``."""
    if name not in PRETRAINED:
        raise ValueError(f"name must be one of {sorted(PRETRAINED)}, got {name!r}")
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    ckpt = read_checkpoint(PRETRAINED[name])
    model = _build(ckpt, device, dtype)
    if name == "shakespeare":
        return model, CharVocab(chars=ckpt["chars"])
    if name == "bert":
        from ..bert import CharVocab as BertVocab
        return model, BertVocab(ckpt["chars"])
    from ..io import _vocab_from_plain
    return model, _vocab_from_plain(ckpt["vocab"])


def bits(nats: float) -> float:
    """nats per character -> bits per character."""
    return nats / math.log(2)


def machine() -> str:
    """The CPU's name and core count, e.g. 'Intel(R) Xeon(R) ... (2 cores)'."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            name = next(l.split(":", 1)[1].strip() for l in f
                        if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{name} ({os.cpu_count()} cores)"
