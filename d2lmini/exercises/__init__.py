"""Exercises: ``d2l.check`` for one value, ``d2l.exercise`` for what the reader builds.

A chapter's exercise cell defines the reader's function with ``...`` in its body and
calls ``d2l.exercise("name", answer)``; until it is solved that prints
``✗ title: no answer yet``.  No solution sits in a chapter: the worked solution of each
exercise lives in ``solutions/chNN.py`` and shows only when a learner asks for it,
``d2l.solution("name")`` (the book's Solutions pages call it for every exercise).

An exercise is registered in this package's chapter module (``ch05.py`` for chapter 5)::

    import torch
    from .core import call, expect, fresh_generator, register

    @register("ch5_example_softmax", "masked softmax", chapter=5)   # an example
    def _(answer):
        g = fresh_generator()                               # fresh inputs each run
        for i, (shape, dtype) in enumerate([((2, 3, 5), torch.float32),
                                           ((4, 7), torch.float16)]):
            s = torch.randn(shape, generator=g).to(dtype)
            m = torch.rand(shape, generator=g) > 0.3
            m[..., 0, :] = False                            # a fully masked row
            want = reference(s, m)                          # computed here, not shown
            expect(call(answer, s, m, case=f"case {i}"), want,
                   case=f"case {i}, {dtype}")
        return "2 random cases, float16 and a fully masked row included"

and its worked solution in ``solutions/ch05.py``::

    from ..core import solution

    @solution("ch5_example_softmax")
    def masked_softmax(scores, mask):
        ...

``call`` runs the reader's code (``...``/None -> "no answer yet"; an exception ->
a hint naming the case); ``expect`` compares and raises ``Wrong`` with a hint (shape,
dtype, NaN, off by a factor, largest difference); ``forbid`` and ``forbid_loops`` read
the reader's source and enforce what the text demands ("no torch.linalg", "no Python
loop").  ``register(..., project=True)`` marks a project: the reader builds a piece the
chapter uses and the judge runs it on the chapter's task.  A judge never prints the
expected value of a case before the reader has an answer.  Wrong answers each check
must reject are listed in ``tests/exercise_wrongs/chNN.py`` (``WRONG``) beside answers
it must accept (``RIGHT``), and ``tests/test_exercises.py`` runs them all, with every
worked solution.
"""
from .core import (NotYet, Verdict, Wrong, call, check, exercise, expect, forbid,
                   forbid_loops, loops_in, names_used, reference_solution, register,
                   registry, show_solution, solution)

__all__ = ["NotYet", "Verdict", "Wrong", "call", "check", "exercise", "expect",
           "forbid", "forbid_loops", "loops_in", "names_used", "reference_solution",
           "register", "registry", "show_solution", "solution"]
