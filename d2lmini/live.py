"""The book's trained models, live in the page: type a date and watch chapter 8's
Transformer write it as ISO with its cross-attention, type a prompt and watch chapter
12's character GPT continue it, mask a character and watch chapter 14's BERT fill it.

``d2l.live(name)`` is one HTML output (``static/live.js`` on top of ``nn.js``, the
models' forward passes in plain JavaScript, and ``views.js``, the head view): it runs
in the reader's browser, in Jupyter, Colab and the static book alike, with no kernel
and no server, offline.  The output carries the model's weights (``d2lmini.export``: the
values ``d2l.load_pretrained(name)`` holds, int8 rows); the book writes them to a file
that the page loads only when the reader first asks the model something.  The page
registers ``window.d2lModels[name]`` (``encode``, ``decode``, ``logits``,
``attention``, and ``translate`` / ``generate`` / ``fill``) for code and tests.
"""
from __future__ import annotations

import datetime as dt

from .checkpoints import load_pretrained
from .export import vocab_spec, weights_asset
from .webfig import page_html

__all__ = ["live", "LiveModel", "NAMES"]

NAMES = ("date", "shakespeare", "bert")
DEFAULTS = {
    "date": {"text": "3 March 1998"},
    "shakespeare": {"prompt": "ROMEO:\n", "temperature": 0.8, "top_k": None, "seed": 0,
                    "length": 120},
    "bert": {"text": "every head has its own [MASK]eights"},
}
HINTS = {
    "date": "type a date in any of the formats below (or tap one), then translate: the "
            "model writes the ISO date one character at a time; each character's "
            "cross-attention is drawn below it",
    "shakespeare": "write continues the prompt one character at a time (temperature 0: "
                   "always the most likely; a seed makes a sample repeatable); tap a "
                   "written character to see what the character before it read; past "
                   "the model's context every character re-reads the whole window: "
                   "slower",
    "bert": "put [MASK] where one character is missing: the model lists its five most "
            "likely characters, reading both sides",
}
BERT_EXAMPLES = ["the [MASK]ask hides the pads", "attention looks both [MASK]ays",
                 "one token at a [MASK]ime", "the keys and the val[MASK]es"]


class LiveModel:
    """One of the book's models as a box in the page (see the module's docstring).
    ``state``: the box's first input (``text`` for "date" and "bert"; ``prompt``,
    ``temperature``, ``top_k``, ``seed``, ``length`` for "shakespeare")."""

    def __init__(self, name: str, **state):
        if name not in NAMES:
            raise ValueError(f"name must be one of {list(NAMES)}, got {name!r}")
        unknown = set(state) - set(DEFAULTS[name])
        if unknown:
            raise ValueError(f"unknown setting(s) {sorted(unknown)} for {name!r}; "
                             f"expected some of {sorted(DEFAULTS[name])}")
        self.name, self.state = name, {**DEFAULTS[name], **state}
        self.model, self.vocab = load_pretrained(name)

    def data(self) -> dict:
        """What the page's box needs besides the weights: vocabulary, configuration,
        first input, examples."""
        d = {"name": self.name, "vocab": vocab_spec(self.vocab),
             "config": dict(self.model.config), "state": dict(self.state),
             "hint": HINTS[self.name]}
        if self.name == "date":
            from .text import FORMATS
            day = dt.date(2025, 6, 18)
            d.update(examples=[f(day) for f in FORMATS.values()], max_len=11,
                     max_src=self.model.config["max_len"], delay=110)
        elif self.name == "bert":
            d["examples"] = BERT_EXAMPLES
        else:
            d["frame_ms"] = 4
        return d

    def html(self) -> str:
        weights = weights_asset(self.model, self.vocab, self.name)
        return page_html("live", "d2llive", self.name, self.data(), "d2l-live",
                         needs=("views", "nn"),
                         lazy={f"weights-{self.name}.js": weights})

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        n = sum(p.numel() for p in self.model.parameters())
        return (f"LiveModel({self.name!r}: {type(self.model).__name__}, "
                f"{n:,} parameters)")


def live(name: str, **state) -> LiveModel:
    """:class:`LiveModel`: ``d2l.live("date")``, ``d2l.live("shakespeare",
    prompt="JULIET:\\n")``, ``d2l.live("bert")`` as the last line of a cell."""
    return LiveModel(name, **state)
