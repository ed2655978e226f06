"""d2l.claim: a measured quantity beside what gives it meaning, in one line; the bound
that guards it raises when broken and is never printed; the notebook comparison masks
the numbers and keeps the words."""
import math
import pathlib
import re

import numpy as np
import pytest
import torch

import d2lmini as d2l

SANITIZE = pathlib.Path(__file__).with_name("sanitize.cfg").read_text()


def sanitized(text: str) -> str:
    pats = re.findall(r"^regex: (.*)$\n^replace: (.*)$", SANITIZE, flags=re.MULTILINE)
    for regex, replace in pats:
        text = re.sub(regex, replace, text)
    return text


def test_claim_prints_the_value_and_its_reference_never_the_bound(capsys):
    assert d2l.claim("max |ours − torch|", 2.4e-7, "<=", 1e-5,
                     ref=("float32 eps", 1.19e-7)) is None
    d2l.claim("exact match", 0.999, ">=", 0.99, note=" (999/1000)",
              ref=[("input-blind baseline", 0.506), "chance 0.08"])
    d2l.claim("share", np.float32(0.5), "in", (0, 1))
    d2l.claim("parameters", 23636, "==", 23636, ref="4d² + 4d")
    d2l.claim("speed-up", torch.tensor(2.0), ">", 1, unit="×", ref=("loop", 1.0))
    out = capsys.readouterr().out.splitlines()
    assert out == ["max |ours − torch| = 2.4e-07 (float32 eps 1.2e-07)",
                   "exact match = 0.999 (999/1000) (input-blind baseline 0.506; "
                   "chance 0.08)",
                   "share = 0.5",
                   "parameters = 23,636 (4d² + 4d)",
                   "speed-up = 2× (loop 1×)"]
    assert not any(s in "".join(out) for s in ("✓", "✗", "≤", "≥", "∈"))


def test_a_broken_finding_raises_with_its_bound(capsys):
    with pytest.raises(d2l.ClaimError, match=r"speed-up = 2.0, expected > 100"):
        d2l.claim("speed-up", torch.tensor(2.0), ">", 100, unit="×")
    assert capsys.readouterr().out == "speed-up = 2×\n"     # the line, then the error
    with pytest.raises(d2l.ClaimError, match=r"expected ∈ \[0, 1\]"):
        d2l.claim("share", 1.5, "in", (0, 1))
    with pytest.raises(AssertionError):                     # a ClaimError is one
        d2l.claim("count", 3, "==", 4)


def test_nan_never_holds_and_bad_arguments_are_named():
    with pytest.raises(d2l.ClaimError):
        d2l.claim("loss", math.nan, "<", 1.0)
    with pytest.raises(d2l.ClaimError):
        d2l.claim("loss", math.nan, "!=", 1.0)
    with pytest.raises(ValueError, match="op must be one of"):
        d2l.claim("x", 1, "=<", 2)
    with pytest.raises(ValueError, match=r"bound=\(lo, hi\)"):
        d2l.claim("x", 1, "in", 2)
    with pytest.raises(ValueError, match=r"lo <= hi"):
        d2l.claim("x", 1, "in", (2, 1))
    with pytest.raises(ValueError, match="one number, got a tensor of shape"):
        d2l.claim("x", torch.zeros(3), "<", 1)
    with pytest.raises(TypeError, match="must be a number, got str"):
        d2l.claim("x", "0.5", "<", 1)
    with pytest.raises(ValueError, match="non-empty description"):
        d2l.claim(" ", 1, "<", 2)
    with pytest.raises(TypeError, match="ref must be a string"):
        d2l.claim("x", 1, "<", 2, ref=3)


@pytest.mark.parametrize("value", [0.00012345, 0.5, 3.14159, 2377.4, 1e-9, 12, -0.25,
                                   12345678])
def test_the_comparison_masks_the_numbers_and_keeps_the_words(capsys, value):
    d2l.claim("T = 1000: speed-up", value, ">", -1e12, unit="×", ref=("loop", 1.0))
    d2l.claim("shape of the weights", 7, "==", 7, ref="(B, h, T_q, T_k) = (2, 4, 5, 5)")
    out = sanitized(capsys.readouterr().out)
    assert out.splitlines() == ["T = N: speed-up = N× (loop N×)",
                                "shape of the weights = N ((B, h, T_q, T_k) = (N, N, N, N))"]


def test_format_of_values():
    f = d2l.claims.fmt_value
    assert [f(2.4e-7), f(0.999), f(2377.4), f(12345), f(0.0), f(True), f(1.1e26)] == \
        ["2.4e-07", "0.999", "2,377", "12,345", "0", "True", "1.1e+26"]
    assert f(0.5, ".2f") == "0.50"
