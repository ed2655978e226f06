"""Exercises: ``d2l.check`` for one value, ``d2l.exercise`` for what the reader builds.

A chapter's exercise cell defines the reader's function with ``...`` in its body and
calls ``d2l.exercise("name", answer)``; until it is solved that prints
``✗ title: no answer yet``.  The worked solution is the next cell (hidden in the
book).

An exercise is registered in this package's chapter module (``ch05.py`` for chapter 5)::

    import torch
    from .core import call, expect, register

    @register("masked_softmax", "masked softmax", chapter=5)
    def _(answer):
        g = torch.Generator().manual_seed(torch.seed() % 2**31)  # fresh inputs each run
        for i, (shape, dtype) in enumerate([((2, 3, 5), torch.float32),
                                           ((4, 7), torch.float16)]):
            s = torch.randn(shape, generator=g).to(dtype)
            m = torch.rand(shape, generator=g) > 0.3
            m[..., 0, :] = False                            # a fully masked row
            want = reference(s, m)                          # computed here, not shown
            expect(call(answer, s, m, case=f"case {i}"), want,
                   case=f"case {i}, {dtype}")
        return "2 random cases, float16 and a fully masked row included"

``call`` runs the reader's code (``...``/None -> "no answer yet"; an exception ->
a hint naming the case); ``expect`` compares and raises ``Wrong`` with a hint (shape,
dtype, NaN, off by a factor, largest difference).  A judge never prints the expected
value of a case before the reader has an answer.  Wrong answers each check must reject
are listed in ``tests/exercise_wrongs/chNN.py`` (``WRONG``) beside answers it must
accept (``RIGHT``), and ``tests/test_exercises.py`` runs them all.
"""
from .core import (NotYet, Verdict, Wrong, call, check, exercise, expect, register,
                   registry)

__all__ = ["NotYet", "Verdict", "Wrong", "call", "check", "exercise", "expect",
           "register", "registry"]
