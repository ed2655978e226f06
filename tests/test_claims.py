"""d2l.claim: a measured quantity, its bound and a verdict in one line; the notebook
comparison masks the measured digits and keeps the rest."""
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


def test_claim_prints_value_bound_and_verdict(capsys):
    assert d2l.claim("max |ours − torch|", 2.4e-7, "<=", 1e-5)
    assert d2l.claim("exact match", 0.999, ">=", 0.99, note=" (999/1000)")
    assert not d2l.claim("speed-up", torch.tensor(2.0), ">", 100, unit="×")
    assert d2l.claim("share", np.float32(0.5), "in", (0, 1))
    assert d2l.claim("parameters", 23636, "==", 23636)
    out = capsys.readouterr().out.splitlines()
    assert out == ["max |ours − torch| = 2.4e-07 ≤ 1e-05 ✓",
                   "exact match = 0.999 (999/1000) ≥ 0.99 ✓",
                   "speed-up = 2× > 100× ✗",
                   "share = 0.5 ∈ [0, 1] ✓",
                   "parameters = 23,636 = 23,636 ✓"]


def test_nan_never_passes_and_bad_arguments_are_named(capsys):
    assert not d2l.claim("loss", math.nan, "<", 1.0)
    assert not d2l.claim("loss", math.nan, "!=", 1.0)
    with pytest.raises(ValueError, match="op must be one of"):
        d2l.claim("x", 1, "=<", 2)
    with pytest.raises(ValueError, match=r"bound=\(lo, hi\)"):
        d2l.claim("x", 1, "in", 2)
    with pytest.raises(ValueError, match="one number, got a tensor of shape"):
        d2l.claim("x", torch.zeros(3), "<", 1)
    with pytest.raises(TypeError, match="must be a number, got str"):
        d2l.claim("x", "0.5", "<", 1)
    with pytest.raises(ValueError, match="non-empty description"):
        d2l.claim(" ", 1, "<", 2)


@pytest.mark.parametrize("value", [0.00012345, 0.5, 3.14159, 2377.4, 1e-9, 12])
def test_the_comparison_masks_the_digits_only(capsys, value):
    d2l.claim("n = 1000: speed-up", value, ">", 1e-12, unit="×")
    d2l.claim("max |a − b|", value, "<=", 1e6)
    d2l.claim("count", 7, "==", 7)
    out = sanitized(capsys.readouterr().out)
    assert out.splitlines() == ["n = 1000: speed-up = VALUE > 1e-12× ✓",
                                "max |a − b| = VALUE ≤ 1,000,000 ✓",
                                "count = 7 = 7 ✓"]


def test_a_failed_claim_differs_from_a_passed_one_after_masking(capsys):
    d2l.claim("loss gap", 0.3, ">", 0.1)
    d2l.claim("loss gap", 0.05, ">", 0.1)
    ok, bad = sanitized(capsys.readouterr().out).splitlines()
    assert ok != bad and ok.endswith("✓") and bad.endswith("✗")


def test_format_of_values():
    f = d2l.claims.fmt_value
    assert [f(2.4e-7), f(0.999), f(2377.4), f(12345), f(0.0), f(True)] == \
        ["2.4e-07", "0.999", "2,377", "12,345", "0", "True"]
    assert f(0.5, ".2f") == "0.50"
