"""The book's models in the page: their weights as a file the page loads.

A model trained in PyTorch runs in the built book's pages too (``static/nn.js``, plain
JavaScript in float64), from a *weights asset*: a small script that holds the model's
configuration, its vocabulary and its weights, base64-encoded.  The page and Python
must compute with the same numbers, so the weights are first stored the way the page
keeps them (:func:`page_weights`), and the model in Python loads exactly those values:

* a matrix (embeddings, projections, the output layer) as int8 per row with a
  power-of-two scale, ``w = q * 2**k`` (``q`` in -127..127, one ``k`` per row), so every
  value is exactly a float16 (and a float32): a ``.pt`` file keeps them as float16 and
  ``d2l.load`` reads them unchanged;
* a vector (biases, LayerNorm gains) as float16.

:func:`weights_asset` encodes a model whose values are already exact in the smallest
exact form (int8 rows, float16, float32 or float64), so the asset decodes to the very
numbers the model holds.  :func:`export` does both, writes the file and prints its size
and what the storage precision costs on a held-out measure.

The sinusoidal positional-encoding table is a formula, not a weight: the page computes
``sin``/``cos`` in float64 and rounds to float32, and
:func:`use_page_positional_encoding` gives a PyTorch model that same table (it differs
from torch's own float32 table by at most a few float32 steps).
"""
from __future__ import annotations

import base64
import json
import math
import os
import re

import numpy as np
import torch
from torch import nn

__all__ = ["page_weights", "page_positional_encoding", "use_page_positional_encoding",
           "weights_asset", "vocab_spec", "export", "PRECISIONS"]

PRECISIONS = ("int8", "float16")
FORMAT = "d2lmini-page-weights"


# ------------------------------------------------------------------ storage precision
def _int8_rows(w: torch.Tensor) -> torch.Tensor:
    """w (rows, ...) -> q * 2**k per row (q integer in -127..127), float64."""
    w = w.detach().double().reshape(w.shape[0], -1)
    m = w.abs().amax(1, keepdim=True)
    k = torch.ceil(torch.log2(torch.where(m > 0, m, torch.ones_like(m)) / 127))
    k = torch.where(m > 0, k, torch.zeros_like(k)).clamp(-24, 15)
    s = torch.pow(2.0, k)
    return (torch.round(w / s).clamp(-127, 127) * s)


def page_weights(model_or_state_dict, precision: str = "int8") -> dict:
    """The state dict as the page stores it -> {name: float16 tensor} (non-float
    tensors unchanged).  ``precision="int8"``: every tensor of 2 or more dims as int8
    rows with a power-of-two scale per row, vectors as float16; ``"float16"``: all as
    float16.  Every value is exact in float16, float32 and float64, so
    ``model.load_state_dict(page_weights(model))`` gives the model the page runs."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    sd = (model_or_state_dict.state_dict() if isinstance(model_or_state_dict, nn.Module)
          else model_or_state_dict)
    if not isinstance(sd, dict):
        raise TypeError(f"expected a model or a state dict, got "
                        f"{type(model_or_state_dict).__name__}")
    out = {}
    for name, t in sd.items():
        if not t.is_floating_point():
            out[name] = t.detach().clone()
            continue
        v = (_int8_rows(t).reshape(t.shape) if precision == "int8" and t.dim() >= 2
             else t.detach().double())
        h = v.to(torch.float16)
        if precision == "int8" and t.dim() >= 2 and not torch.equal(h.double(), v):
            raise ValueError(f"{name}: int8 rows are not exact in float16")
        out[name] = h
    return out


# ------------------------------------------------------------------ positions
def page_positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
    """The sinusoidal table as the page computes it -> float32 (1, max_len, d_model):
    ``PE[p, i] = sin(p * w)`` (even i) or ``cos(p * w)`` (odd i), ``w = exp(-log(10000)
    * (i - i % 2) / d_model)``, each in float64, rounded once to float32."""
    for n, v in (("max_len", max_len), ("d_model", d_model)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{n} must be a positive int, got {v!r}")
    freq = [math.exp(-math.log(10000) * (i - i % 2) / d_model) for i in range(d_model)]
    table = np.array([[math.cos(p * f) if i % 2 else math.sin(p * f)
                       for i, f in enumerate(freq)] for p in range(max_len)])
    return torch.from_numpy(table.astype(np.float32))[None]


def use_page_positional_encoding(model: nn.Module) -> nn.Module:
    """Give every sinusoidal ``PositionalEncoding`` of ``model`` the page's table
    (:func:`page_positional_encoding`, in the module's dtype and device); -> model."""
    from .transformer import ConcatPositionalEncoding, PositionalEncoding
    for m in model.modules():
        if isinstance(m, PositionalEncoding) and not isinstance(
                m, ConcatPositionalEncoding):
            _, n, d = m.pe.shape
            m.pe = page_positional_encoding(n, d).to(m.pe.dtype).to(m.pe.device)
    return model


# ------------------------------------------------------------------ the asset
def vocab_spec(vocab) -> dict:
    """A vocabulary as the page reads it (plain JSON)."""
    from .text import Vocab
    if isinstance(vocab, (tuple, list)) and len(vocab) == 2 and all(
            isinstance(v, Vocab) for v in vocab):
        return {"kind": "pair", "src": list(vocab[0].idx_to_token),
                "tgt": list(vocab[1].idx_to_token),
                "pad": 0, "bos": 1, "eos": 2, "unk": 3}
    if isinstance(vocab, Vocab):
        return {"kind": "vocab", "tokens": list(vocab.idx_to_token),
                "pad": 0, "bos": 1, "eos": 2, "unk": 3}
    if hasattr(vocab, "itos") and hasattr(vocab, "mask_id"):      # BERT's CharVocab
        return {"kind": "bert", "itos": list(vocab.itos), "pad": vocab.pad_id,
                "cls": vocab.cls_id, "sep": vocab.sep_id, "mask": vocab.mask_id}
    if hasattr(vocab, "chars") and hasattr(vocab, "idx"):         # the GPT's CharVocab
        return {"kind": "chars", "chars": list(vocab.chars), "pad": 0}
    raise TypeError(f"vocab must be a d2l.Vocab, a (source, target) pair of them or a "
                    f"character vocabulary of d2lmini.checkpoints or d2lmini.bert, got "
                    f"{type(vocab).__name__}")


def _encode(t: torch.Tensor) -> tuple[str, bytes]:
    """The smallest exact encoding of one tensor -> (dtype, bytes, little-endian)."""
    v = t.detach().double().cpu()
    if v.dim() >= 2 and v.numel():
        rows = v.reshape(v.shape[0], -1)
        m = rows.abs().amax(1)
        k = torch.ceil(torch.log2(torch.where(m > 0, m, torch.ones_like(m)) / 127))
        k = torch.where(m > 0, k, torch.zeros_like(k))
        q = rows / torch.pow(2.0, k)[:, None]
        exact = torch.equal(q, q.round()) and bool((q.abs() <= 127).all())
        if exact and bool((k.abs() <= 127).all()):
            return "i8", (q.to(torch.int8).numpy().tobytes()
                          + k.to(torch.int8).numpy().tobytes())
    for dtype, np_dtype in (("f16", "<f2"), ("f32", "<f4")):
        a = v.numpy().astype(np_dtype)
        if np.array_equal(a.astype(np.float64), v.numpy()):
            return dtype, a.tobytes()
    return "f64", v.numpy().astype("<f8").tobytes()


def _model_class(model: nn.Module) -> str:
    name = type(model).__name__
    if name not in ("GPT", "BERT", "Transformer"):
        raise TypeError(f"the page runs d2lmini's GPT, BERT and Transformer, "
                        f"got {name}")
    return name


def weights_asset(model: nn.Module, vocab, name: str) -> str:
    """The page's weights file for ``model`` -> JavaScript text that sets
    ``d2lWeights[name] = {meta, data}``: ``meta`` the class, config, vocabulary
    (:func:`vocab_spec`) and one entry per tensor (name, shape, dtype, byte offset);
    ``data`` the bytes, base64.  Each tensor is stored in the smallest form that holds
    its values exactly (int8 rows with a power-of-two scale, float16, float32,
    float64): store the model with :func:`page_weights` first to get int8 rows."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", name):
        raise ValueError(f"name must be a word such as 'shakespeare', got {name!r}")
    cls = _model_class(model)
    config = dict(model.config)
    sd = model.state_dict()
    tied = bool(config.get("tie_weights"))
    tensors, chunks, offset = [], [], 0
    for key, t in sd.items():
        if not t.is_floating_point() or (tied and key == "lm_head.weight"):
            continue
        dtype, data = _encode(t)
        tensors.append({"name": key, "shape": list(t.shape), "dtype": dtype,
                        "offset": offset})
        chunks.append(data)
        offset += len(data)
    meta = {"format": FORMAT, "version": 1, "name": name, "class": cls,
            "config": config, "vocab": vocab_spec(vocab), "tensors": tensors,
            "bytes": offset,
            "parameters": sum(p.numel() for p in model.parameters())}
    data = base64.b64encode(b"".join(chunks)).decode("ascii")
    kinds = sorted({t["dtype"] for t in tensors})
    return (f"/* d2lmini page weights: {name} ({cls}, {meta['parameters']:,} "
            f"parameters, {'/'.join(kinds)}), written by d2lmini.export */\n"
            f"(function(g){{(g.d2lWeights=g.d2lWeights||{{}})[{json.dumps(name)}]="
            f"{{meta:{json.dumps(meta, separators=(',', ':'))},data:\"{data}\"}};}})"
            f"(typeof window!==\"undefined\"?window:globalThis);\n")


def export(model: nn.Module, vocab, name: str, path: str | os.PathLike | None = None,
           precision: str = "int8", heldout=None) -> dict:
    """Model + vocabulary -> the page's weights file.  The model's weights are stored
    as the page keeps them (:func:`page_weights`, in place: afterwards Python computes
    with exactly the page's numbers), the file is written to ``path`` (default
    ``weights-<name>.js``), and its size is printed; ``heldout``, a function
    model -> a loss on held-out data, is measured before and after, to print what the
    precision costs.  -> {"path", "bytes", "before", "after"}."""
    _model_class(model)
    before = None if heldout is None else float(heldout(model))
    model.load_state_dict(page_weights(model, precision))
    use_page_positional_encoding(model)
    after = None if heldout is None else float(heldout(model))
    text = weights_asset(model, vocab, name)
    path = os.fspath(path or f"weights-{name}.js")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    size = os.path.getsize(path)
    line = f"{path}: {size / 1e6:.2f} MB ({precision})"
    if heldout is not None:
        line += f"; held-out loss {before:.4f} -> {after:.4f} ({after - before:+.4f})"
    print(line)
    return {"path": path, "bytes": size, "before": before, "after": after}

