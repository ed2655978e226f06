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


def test_a_tensor_matches_a_list_and_dicts_compare_by_value(capsys):
    assert d2l.check("ids", torch.tensor([1, 2, 3]), [1, 2, 3])
    assert d2l.check("config", {"a": 1, "b": [1.0, 2.0]}, {"a": 1, "b": [1, 2]})
    assert not d2l.check("config", {"a": 1}, {"a": 2})
    assert not d2l.check("config", {"a": 1}, {"b": 1})
    out = capsys.readouterr().out.splitlines()
    assert "at key 'a'" in out[2] and "expected the keys ['b']" in out[3]


def test_check_reports_and_never_raises_on_numpy(capsys):
    import numpy as np
    assert not d2l.check("flag", np.array([True, False]), True)
    assert d2l.check("flag", np.array(True), True)
    assert not d2l.check("flag", 1, True)           # a bool question wants a bool
    assert d2l.check("values", np.array([1.0, 2.0]), torch.tensor([1.0, 2.0]))
    assert not d2l.check("values", object(), torch.tensor([1.0, 2.0]))
    out = capsys.readouterr().out
    assert out.count("✗") == 3


# ------------------------------------------------------------------ d2l.exercise
from d2lmini.exercises import core as ex_core  # noqa: E402


@pytest.fixture
def double_exercise():
    """A throw-away exercise: write f(x) = 2 x for tensors of any shape and dtype."""
    @ex_core.register("_double", "doubling", chapter=0)
    def judge(answer):
        for i, dtype in enumerate((torch.float32, torch.float16)):
            x = torch.randn(3, 4).to(dtype)
            ex_core.expect(ex_core.call(answer, x, case=f"case {i}"), 2 * x,
                           case=f"case {i}, {dtype}", rtol=1e-3)
        return "2 random cases, float16 included"
    yield
    ex_core._REGISTRY.pop("_double")


def test_exercise_verdicts_and_hints(capsys, double_exercise):
    def placeholder(x):
        ...
    answers = [..., placeholder, lambda x: 2 * x, lambda x: 4 * x, lambda x: (2 * x).float(),
               lambda x: x.sum(), lambda x: 1 / 0, lambda x: 2 * x + 1, 42]
    verdicts = [bool(d2l.exercise("_double", a)) for a in answers]
    assert verdicts == [False, False, True, False, False, False, False, False, False]
    out = capsys.readouterr().out.splitlines()
    assert out[0] == out[1] == "✗ doubling: no answer yet (replace the ... with your code)"
    assert out[2] == "✓ doubling: 2 random cases, float16 included"
    assert out[3] == "✗ doubling: off by a factor of 2 (case 0, torch.float32)"
    assert "wrong dtype (case 1, torch.float16): expected torch.float16, got torch.float32" in out[4]
    assert "wrong shape" in out[5]
    assert "your code raised ZeroDivisionError on case 0" in out[6]
    assert "wrong values (case 0, torch.float32): largest difference" in out[7]
    assert "expected a function or a class, got int" in out[8]


def test_unknown_exercise_is_named():
    with pytest.raises(ValueError, match="no exercise named 'nope'"):
        d2l.exercise("nope", lambda: 1)


# ------------------------------------------------------------------ every chapter's exercises
import importlib.util  # noqa: E402
import pathlib  # noqa: E402

WRONGS_DIR = pathlib.Path(__file__).with_name("exercise_wrongs")


def _answer_sets():
    """WRONG and RIGHT answers of every tests/exercise_wrongs/chNN.py, by exercise name."""
    wrong, right = {}, {}
    for path in sorted(WRONGS_DIR.glob("ch*.py")):
        spec = importlib.util.spec_from_file_location(f"exercise_wrongs_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name, answers in getattr(mod, "WRONG", {}).items():
            wrong.setdefault(name, []).extend(answers)
        for name, answers in getattr(mod, "RIGHT", {}).items():
            right.setdefault(name, []).extend(answers)
    return wrong, right


WRONG, RIGHT = _answer_sets()
NAMES = sorted(n for n in ex_core.registry() if not n.startswith("_"))


@pytest.mark.parametrize("name", NAMES)
def test_every_exercise_rejects_wrong_answers_and_accepts_right_ones(name, capsys):
    """The placeholder and at least three wrong answers are ✗ (with a hint, never an
    exception); at least one right answer, written differently from the hidden
    reference, is ✓."""
    assert len(WRONG.get(name, [])) >= 3, f"{name}: fewer than 3 wrong answers to reject"
    assert RIGHT.get(name), f"{name}: no right answer to accept"
    assert not d2l.exercise(name, ...)
    assert "no answer yet" in capsys.readouterr().out
    for i, wrong in enumerate(WRONG[name]):
        assert not d2l.exercise(name, wrong), f"{name}: wrong answer {i} passed"
        out = capsys.readouterr().out
        assert out.startswith("✗") and "could not be used" not in out, out
    for right in RIGHT[name]:
        assert d2l.exercise(name, right), capsys.readouterr().out


@pytest.mark.parametrize("name", NAMES)
def test_every_exercise_has_a_worked_solution_that_passes(name, capsys):
    """d2l.solution(name) shows the source and the check's ✓; the solution is not in
    any chapter notebook."""
    assert d2l.solution(name)
    out = capsys.readouterr().out
    assert out.startswith("Worked solution of") and "\n✓ " in out, out


def test_a_solution_that_fails_its_check_is_a_bug_not_a_verdict(monkeypatch):
    name = NAMES[0]
    monkeypatch.setitem(ex_core._SOLUTIONS, name, (lambda *a: 1 / 0, False))
    with pytest.raises(RuntimeError, match="failed its own check"):
        d2l.solution(name)


def test_source_rules_find_loops_and_forbidden_names():
    def looped(x):
        total = 0
        for v in x:
            total += v
        return [t for t in (total,)][0]

    def vectorised(x):
        return torch.linalg.norm(x) + F.softmax(x, -1).sum()

    import torch.nn.functional as F  # noqa: F401 (read by vectorised's source only)
    assert ex_core.loops_in(looped) == ["for (line 3)", "list comprehension (line 5)"]
    assert ex_core.loops_in(vectorised) == []
    ex_core.forbid_loops(vectorised)
    with pytest.raises(ex_core.Wrong, match=r"found a Python loop: for \(line 3\)"):
        ex_core.forbid_loops(looped)
    with pytest.raises(ex_core.Wrong, match="uses torch.linalg.norm: no linalg"):
        ex_core.forbid(vectorised, ["torch.linalg"], "no linalg")
    with pytest.raises(ex_core.Wrong, match="uses F.softmax"):
        ex_core.forbid(vectorised, ["softmax"], "write it yourself")
    ex_core.forbid(vectorised, ["cross_entropy", "torch.nn.functional"], "x")
    with pytest.raises(ex_core.Wrong, match="could not read your code"):
        ex_core.forbid_loops(len)
