"""The chapters as the book build executed them say what the committed chapters say.

``jupyter-book build`` executes every chapter (execution is forced) and keeps the executed
notebooks in ``_build/jupyter_execute/``. With ``D2LMINI_EXECUTED=_build/jupyter_execute``
this test compares every cell tagged ``nbval-check-output`` there with the committed cell,
the way ``pytest`` (nbval, lax mode, ``tests/sanitize.cfg``) compares a fresh execution:
streams by name, the same sanitize patterns, no images, metadata or widget ids. So one
execution of the chapters serves both the build and the comparison. Without the variable
it is skipped.

One difference: the build merges the pieces of a stream with a line break after each
piece (myst-nb's ``coalesce_streams`` right-strips every piece), and where a print's
output is cut into pieces depends on the kernel's timing. So stream text is compared
without its whitespace: every word, number and verdict, not the line breaks.
"""
import os
import pathlib
import re
from collections import defaultdict

import pytest

nbformat = pytest.importorskip("nbformat")
nbval_plugin = pytest.importorskip("nbval.plugin")

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXECUTED = os.environ.get("D2LMINI_EXECUTED")
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
PATTERNS = nbval_plugin.get_sanitize_patterns((ROOT / "tests" / "sanitize.cfg").read_text())
SKIP = {"metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
        "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg"}


def _sanitize(value):
    if isinstance(value, str):
        for regex, replace in PATTERNS:
            value = re.sub(regex, replace, value)
    return value


def compared(outputs, merged: bool = False) -> dict:
    """{stream name or MIME type: [sanitized values]} of a cell's outputs, as nbval
    compares them. ``merged``: the build merged each stream into its first output (and
    may leave the later pieces behind), so only the first output of a stream counts."""
    outputs = [nbformat.from_dict(dict(o)) for o in outputs]
    if merged:
        seen, kept = set(), []
        for o in outputs:
            if o.output_type == "stream":
                if o.name in seen:
                    continue
                seen.add(o.name)
            kept.append(o)
        outputs = kept
    found = defaultdict(list)
    for o in nbval_plugin.coalesce_streams(outputs):
        if o.output_type == "stream":
            found[o.name].append("".join(_sanitize(o.text).split()))
            continue
        for key, value in o.items():
            if key == "data":
                for mime, v in value.items():
                    if mime not in SKIP:
                        found[mime].append(_sanitize(v))
            elif key not in SKIP:
                found[key].append(_sanitize(value))
    return dict(found)


def _stream(*pieces):
    return [{"output_type": "stream", "name": "stdout", "text": t} for t in pieces]


def test_a_stream_merged_by_the_build_compares_equal_to_its_pieces():
    raw = _stream("x.grad =", " [0.0, 3.0]\n", "exact match = 0.1 (baseline 0.5)\n")
    # what the build keeps: the first piece holds them all, a line break after each
    # right-stripped piece; the later pieces stay behind it
    built = _stream("x.grad =\n [0.0, 3.0]\nexact match = 0.2 (baseline 0.5)\n",
                    " [0.0, 3.0]\n", "exact match = 0.2 (baseline 0.5)\n")
    assert compared(built, merged=True) == compared(raw) == {
        "stdout": ["x.grad=[N,N]exactmatch=N(baselineN)"]}
    changed = _stream("x.grad =\n [0.0, 3.5, 1.0]\nexact match = 0.2 (baseline 0.5)\n")
    assert compared(changed, merged=True) != compared(raw)
    other_words = _stream("x.grad = [0.0, 3.0]\nexact match = 0.2 (chance 0.5)\n")
    assert compared(other_words) != compared(raw)


@pytest.mark.skipif(not EXECUTED, reason="set D2LMINI_EXECUTED to the build's executed notebooks")
@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_executed_chapter_matches_its_committed_outputs(path):
    committed = nbformat.read(path, as_version=4)
    executed = nbformat.read(pathlib.Path(EXECUTED) / "chapters" / path.name, as_version=4)
    assert [c.get("id") for c in executed.cells] == [c.get("id") for c in committed.cells]
    tagged = [(a, b) for a, b in zip(committed.cells, executed.cells)
              if "nbval-check-output" in a.metadata.get("tags", [])]
    assert tagged, f"{path.name}: no claim cells"
    for ref, new in tagged:
        want, got = compared(ref.outputs), compared(new.outputs, merged=True)
        assert got == want, f"{path.name}, cell {ref.get('id')}:\ncommitted {want}\nexecuted {got}"
