"""d2l.check: the one-line verdict every exercise prints."""
import math

import pytest
import torch

import d2lmini as d2l


def test_match_prints_tick_and_value(capsys):
    assert d2l.check("shape", (2, 5, 5), (2, 5, 5))
    assert capsys.readouterr().out == "✓ shape: (2, 5, 5)\n"


def test_numbers_within_tolerance_match(capsys):
    assert d2l.check("ln 10", 2.302585, math.log(10), rtol=1e-5)
    assert not d2l.check("ln 10", 2.30, math.log(10), rtol=1e-5)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("✓ ln 10")
    assert out[1].startswith("✗ ln 10: expected") and "largest difference" in out[1]


def test_show_false_hides_the_value(capsys):
    assert d2l.check("sum", 0.1 + 0.2, 0.3, show=False)
    assert capsys.readouterr().out == "✓ sum\n"


def test_placeholder_means_no_answer_yet(capsys):
    assert not d2l.check("answer", ..., 1.0)
    assert not d2l.check("answers", [..., ...], [1, 2])
    out = capsys.readouterr().out
    assert out.count("no answer yet") == 2


def test_callable_is_evaluated_and_its_errors_reported(capsys):
    R = torch.tensor([[0.0, -1.0], [1.0, 0.0]])
    assert d2l.check("R^4", lambda: torch.linalg.matrix_power(R, 4), torch.eye(2))
    R = ...
    assert not d2l.check("R^4", lambda: R @ R, torch.eye(2))
    assert not d2l.check("ratio", lambda: 1 / 0, 1.0)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("✓ R^4")
    assert out[1] == "✗ R^4: no answer yet (replace the ... with your code)"
    assert out[2] == "✗ ratio: your code raised ZeroDivisionError: division by zero"


def test_wrong_shape_and_type_are_explained(capsys):
    assert not d2l.check("weights", torch.zeros(2, 3), torch.zeros(3, 2))
    assert not d2l.check("weights", "abc", torch.zeros(3))
    out = capsys.readouterr().out.splitlines()
    assert "expected shape (3, 2), got shape (2, 3)" in out[0]
    assert "expected a number or array" in out[1]


def test_empty_description_is_refused():
    with pytest.raises(ValueError, match="non-empty description"):
        d2l.check("", 1, 1)


def test_verdict_shows_nothing_at_the_end_of_a_cell():
    """A cell ending in d2l.check(...) shows the ✓/✗ line only, not also True/False."""
    from IPython.core.formatters import DisplayFormatter

    data, _ = DisplayFormatter().format(d2l.check("x", 1, 1))
    assert data == {}
    assert bool(d2l.check("x", 1, 1)) and not d2l.check("x", 1, 2)
