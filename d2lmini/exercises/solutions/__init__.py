"""The worked solutions of the exercises, one module per chapter, registered with
:func:`d2lmini.exercises.solution`; a learner sees one only by asking for it."""
