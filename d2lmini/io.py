"""Save a trained model with its vocabulary, load it back: ``save`` / ``load``.

    d2l.save("dates.pt", model, vocab=(src_vocab, tgt_vocab))
    model, (src_vocab, tgt_vocab) = d2l.load("dates.pt")

The file holds only tensors, dicts, lists, strings and numbers, so it loads with
``torch.load(path, weights_only=True)`` (PyTorch's safe default): the model's class
name, its constructor arguments (``model.config``), its state dict and the tokens of
the vocabularies.  ``load`` rebuilds the model from those arguments and loads the
weights.  Tables that are formulas (the sinusoidal positional encoding) are not stored.
"""
from __future__ import annotations

import importlib
import math
import os
import pickle

import torch
from torch import nn

from .text import Vocab

__all__ = ["save", "load", "MODELS", "load_results", "save_results"]

FORMAT = "d2lmini-checkpoint"
VERSION = 1

# class name -> module that defines it (imported only when a file needs it)
MODELS = {"Transformer": "d2lmini.transformer", "GPT": "d2lmini.gpt",
          "BERT": "d2lmini.bert", "GRUSeq2Seq": "d2lmini.rnn"}


def _check_plain(value, where: str) -> None:
    """Only what ``torch.load(weights_only=True)`` reads back: None, bool, int, float,
    str, and lists/tuples/dicts of those."""
    if value is None or isinstance(value, (bool, int, str)):
        return
    if isinstance(value, float):
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_plain(v, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where} has a non-string key {k!r}")
            _check_plain(v, f"{where}[{k!r}]")
        return
    raise TypeError(f"{where} = {value!r} is a {type(value).__name__}: a checkpoint's "
                    f"config holds only None, bool, int, float, str, lists and dicts")


def _vocab_to_plain(vocab):
    if vocab is None:
        return None
    if isinstance(vocab, Vocab):
        return {"kind": "Vocab", "idx_to_token": list(vocab.idx_to_token)}
    if isinstance(vocab, (list, tuple)):
        return {"kind": type(vocab).__name__,
                "items": [_vocab_to_plain(v) for v in vocab]}
    if isinstance(vocab, dict):
        return {"kind": "dict",
                "items": {str(k): _vocab_to_plain(v) for k, v in vocab.items()}}
    raise TypeError(f"vocab must be a d2l.Vocab, a tuple/list/dict of them, or None, "
                    f"got {type(vocab).__name__}")


def _vocab_from_plain(data):
    if data is None:
        return None
    kind = data.get("kind")
    if kind == "Vocab":
        return Vocab.from_tokens(data["idx_to_token"])
    if kind in ("list", "tuple"):
        items = [_vocab_from_plain(v) for v in data["items"]]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {k: _vocab_from_plain(v) for k, v in data["items"].items()}
    raise ValueError(f"unknown vocabulary kind {kind!r} in the checkpoint")


def save(path: str | os.PathLike, model: nn.Module, vocab=None) -> None:
    """Write ``model`` (a ``Transformer``, ``GPT``, ``BERT`` or ``GRUSeq2Seq``) and its
    vocabulary to ``path``.

    ``vocab``: a ``d2l.Vocab``, a tuple/list/dict of them (e.g. ``(src_vocab,
    tgt_vocab)``), or None.  The model's ``config`` (its constructor arguments) and
    state dict are stored, on the CPU; :func:`load` rebuilds both.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file name, got {type(path).__name__}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    name = type(model).__name__
    if name not in MODELS:
        raise TypeError(f"save supports the models {sorted(MODELS)}, got {name} "
                        f"(for another module save its state_dict with torch.save)")
    config = getattr(model, "config", None)
    if not isinstance(config, dict):
        raise TypeError(f"{name} has no .config dict of its constructor arguments, so "
                        f"it could not be rebuilt on load")
    _check_plain(config, f"{name}.config")
    for k, v in config.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{name}.config[{k!r}] = {v} is not finite")
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    torch.save({"format": FORMAT, "version": VERSION, "class": name,
                "config": dict(config), "state_dict": state,
                "vocab": _vocab_to_plain(vocab)}, path)


def load(path: str | os.PathLike, device: torch.device | str | None = None):
    """Read a file written by :func:`save` -> ``(model, vocab)``.

    The model is rebuilt from its stored constructor arguments, gets the stored
    weights, is moved to ``device`` (default: the CPU) and put in eval mode (call
    ``model.train()`` to train on).  ``vocab`` comes back as it was given to ``save``
    (a ``Vocab``, a tuple/list/dict of them, or None), with the same ids.  Reads with
    ``torch.load(weights_only=True)``: a file cannot run code.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file name, got {type(path).__name__}")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, EOFError, RuntimeError) as err:  # not a torch file
        raise ValueError(f"{os.fspath(path)!r} is not a d2lmini checkpoint written by "
                         f"d2l.save (torch.load could not read it: "
                         f"{str(err).splitlines()[0]})") from err
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{os.fspath(path)!r} is not a d2lmini checkpoint written by "
                         f"d2l.save (for a bare state dict use "
                         f"model.load_state_dict(torch.load(...)))")
    if data.get("version", 0) > VERSION:
        raise ValueError(f"{os.fspath(path)!r} has checkpoint version "
                         f"{data['version']}, newer than this d2lmini reads "
                         f"({VERSION}): upgrade d2lmini")
    name = data["class"]
    if name not in MODELS:
        raise ValueError(f"unknown model class {name!r} in the checkpoint; "
                         f"known: {sorted(MODELS)}")
    try:
        cls = getattr(importlib.import_module(MODELS[name]), name)
    except (ImportError, AttributeError) as err:
        raise ImportError(f"cannot rebuild a {name}: {MODELS[name]} is not available "
                          f"({err})")
    model = cls(**data["config"])
    model.load_state_dict(data["state_dict"])
    if device is not None:
        model = model.to(device)
    return model.eval(), _vocab_from_plain(data["vocab"])


RESULTS = os.path.join(os.path.dirname(__file__), "results")


def load_results(name: str) -> dict:
    """What a long experiment measured, as its script shipped it: the JSON file
    ``d2lmini/results/<name>.json`` (a script in ``benchmarks/`` reruns it and says
    the machine, versions and time it took)."""
    import json

    path = os.path.join(RESULTS, f"{name}.json")
    if not isinstance(name, str) or not os.path.exists(path):
        known = sorted(f[:-5] for f in os.listdir(RESULTS) if f.endswith(".json")) \
            if os.path.isdir(RESULTS) else []
        raise ValueError(f"no shipped results named {name!r}; known: {known}")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def save_results(name: str, data: dict) -> str:
    """Write ``data`` (plain JSON values) to ``d2lmini/results/<name>.json``, for the
    benchmark scripts; returns the path."""
    import json

    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"{name}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return path
