"""Book-level checks: table of contents, committed notebook outputs, Colab cells,
and the one repository URL.  They read files only; nbval re-executes the chapters."""
from __future__ import annotations

import pathlib
import re

import nbformat
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
REPO_URL = CONFIG["repository"]["url"].rstrip("/")
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9]*.ipynb"))         # numbered chapters
APPENDIX_NBS = sorted((ROOT / "chapters").glob("appendix_*.ipynb"))  # executed appendices
NOTEBOOKS = CHAPTERS + APPENDIX_NBS
MIN_CLAIMS = 8  # compared code cells with text output per chapter


def toc_files() -> list[str]:
    """Every file of the table of contents, a part's sections after its page."""
    def walk(entries):
        for c in entries:
            yield c["file"]
            yield from walk(c.get("sections", []))
    return list(walk(TOC["chapters"]))


def test_toc_lists_every_chapter_in_order():
    listed = toc_files()
    missing = [f for f in listed if not any((ROOT / f).with_suffix(x).exists() for x in (".ipynb", ".md"))]
    assert not missing, f"_toc.yml lists files that do not exist: {missing}"
    notebooks = [f for f in listed if (ROOT / f).with_suffix(".ipynb").exists()
                 and re.match(r"chapters/\d+_", f)]
    on_disk = [f"chapters/{p.stem}" for p in CHAPTERS]
    appendices = [f"chapters/{p.stem}" for p in APPENDIX_NBS]
    assert set(appendices) <= set(listed), f"_toc.yml misses {set(appendices) - set(listed)}"
    assert notebooks == on_disk, f"_toc.yml lists {notebooks}, chapters/ holds {on_disk}"
    numbers = [int(re.match(r"chapters/(\d+)_", f).group(1)) for f in notebooks]
    assert numbers == list(range(1, len(numbers) + 1))
    assert listed[:len(notebooks)] == notebooks, "appendices come after the chapters"


def test_config_is_strict_and_has_colab_button():
    ex = CONFIG["execute"]
    assert ex["execute_notebooks"] == "force" and ex["raise_on_error"] is True
    assert ex["allow_errors"] is False and ex["timeout"] > 0
    assert CONFIG["launch_buttons"]["colab_url"].startswith("https://colab.research.google.com")
    assert REPO_URL.startswith("https://github.com/") and CONFIG["repository"]["branch"]


def test_repository_url_is_one_setting():
    """Every GitHub URL of the book in README, intro, pyproject and notebooks is the config's."""
    files = [ROOT / "README.md", ROOT / "intro.md", ROOT / "pyproject.toml", *NOTEBOOKS]
    for f in files:
        for url in re.findall(r"github\.com/[\w.-]+/[\w.-]+", f.read_text()):
            assert url.removesuffix(".git") == REPO_URL.removeprefix("https://"), f"{f.name}: {url}"


@pytest.fixture(params=NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def nb(request):
    """Every executed page: the numbered chapters and the notebook appendices."""
    return nbformat.read(request.param, as_version=4)


@pytest.fixture(params=CHAPTERS, ids=[p.stem for p in CHAPTERS])
def chapter(request):
    """A numbered chapter: it also has exercises."""
    return nbformat.read(request.param, as_version=4)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def test_chapter_has_one_h1_title_first(nb):
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.lstrip().startswith("# ")
    prose = [re.sub(r"```.*?```", "", c.source, flags=re.S)   # not a shell comment
             for c in nb.cells if c.cell_type == "markdown"]
    h1 = [l for text in prose for l in text.splitlines() if re.match(r"# \S", l)]
    assert len(h1) == 1, f"expected exactly one H1, got {h1}"


def test_first_code_cell_installs_d2lmini_only_in_colab(nb):
    src = code_cells(nb)[0].source
    assert 'if "google.colab" in sys.modules:' in src
    assert f"git+{REPO_URL}" in src and "pip install" in src


def test_outputs_come_from_one_clean_run(nb):
    cells = code_cells(nb)
    counts = [c.execution_count for c in cells]
    assert all(c.source.strip() for c in cells), "empty code cell"
    assert counts == list(range(1, len(cells) + 1)), f"execution counts not 1..n in order: {counts}"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    errors = [o for c in cells for o in c.outputs if o.output_type == "error"]
    assert not errors, f"committed error output: {errors[0].ename}"


CHECK = "nbval-check-output"   # the cell tag that makes nbval (lax mode) compare a cell


def tags(cell) -> list:
    return cell.metadata.get("tags", [])


def test_claims_are_tagged_and_compared(nb):
    """nbval runs in lax mode: only cells tagged CHECK are compared, so a chapter's claims
    must carry the tag, print plain text, and never a display (figure, widget, source)."""
    claims = [c for c in code_cells(nb) if CHECK in tags(c)]
    with_text = [c for c in claims if any(o.output_type == "stream" or "text/plain" in o.get("data", {})
                                          for o in c.outputs)]
    assert len(with_text) >= MIN_CLAIMS, f"only {len(with_text)} compared cells with output"
    for c in claims:
        kinds = {k for o in c.outputs for k in o.get("data", {})}
        displays = kinds & {"image/png", "text/html", "application/vnd.jupyter.widget-view+json"}
        assert not displays, f"a compared cell shows a display ({sorted(displays)}): {c.source[:80]}"
        assert "show_source" not in c.source, "highlighted source is a display, not a claim"
        stderr = [o.text for o in c.outputs if o.output_type == "stream" and o.name == "stderr"]
        assert not stderr, f"stderr in a compared cell: {stderr[0][:200]}"


def test_no_test_markers_in_what_a_reader_sees(nb):
    """Markers live in cell tags; no NBVAL comment or test talk in sources or outputs."""
    for c in nb.cells:
        text = c.source + "".join(str(o) for o in c.get("outputs", []))
        assert not re.search(r"nbval", text, re.I), f"test marker in a cell: {c.source[:80]}"
    assert "remove-cell" in tags(code_cells(nb)[0]), "the Colab cell is hidden from the HTML page"


def test_chapter_has_figures_and_stays_small(nb):
    pngs = [o for c in code_cells(nb) for o in c.outputs if "image/png" in o.get("data", {})]
    assert pngs, "a chapter without a single figure"
    size = len(nbformat.writes(nb))
    assert size < 5_000_000, f"notebook is {size / 1e6:.1f} MB"


def test_why_index_quotes_only_compared_claims():
    """Every result quoted in the why index (in `backticks`, "..." standing for omitted
    text) is printed by a cell whose output pytest compares: the index cannot drift
    from what the chapters measure."""
    norm = lambda t: re.sub(r"\s+", " ", t)
    printed = []
    for path in CHAPTERS:
        for c in code_cells(nbformat.read(path, as_version=4)):
            if CHECK in tags(c):
                printed += [o.get("text", "") + o.get("data", {}).get("text/plain", "")
                            for o in c.outputs]
    printed = norm("\n".join(printed))
    rows = [l for l in (ROOT / "chapters" / "appendix_why.md").read_text().splitlines()
            if re.match(r"\| *\d+ *\|", l)]
    assert len(rows) >= 36, f"the notes ask at least 36 whys, the index has {len(rows)} rows"
    for row in rows:
        cells = re.split(r"(?<!\\)\|", row.rstrip(" |"))   # an escaped pipe is no column
        answer = re.sub(r"\{(ref|doc)\}`[^`]*`", "", cells[-1]).replace("\\|", "|")
        quotes = re.findall(r"`([^`]+)`", answer)
        assert quotes, f"row without a quoted result: {row[:80]}"
        for q in quotes:
            pattern = ".*?".join(re.escape(norm(part)) for part in q.split("..."))
            assert re.search(pattern, printed), f"not printed by a compared cell: {q!r}"


# ------------------------------------------------------------------ what a reader reads
def outputs_text(cell) -> str:
    return "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                   for o in cell.get("outputs", []))


def printed_lines(nb) -> list[str]:
    return [l for c in code_cells(nb) for o in c.outputs if o.output_type == "stream"
            for l in o.text.splitlines() if l.strip()]


def test_claims_show_numbers_not_bare_verdicts(nb):
    """At most 10 % of the printed lines end in a bare True/False: a claim shows its
    quantity and margin (d2l.claim), a bare verdict is for genuine yes/no facts."""
    lines = printed_lines(nb)
    bare = [l for l in lines if l.rstrip().endswith(("True", "False"))]
    assert len(bare) <= 0.10 * len(lines), (
        f"{len(bare)} of {len(lines)} printed lines end in True/False, e.g. {bare[:3]}")


TEST_TALK = re.compile(r"\bnbval\b|\bpytest\b|\.ci/|\bCI\b|\bchecked\b|not measured|"
                       r"tried while writing|cell tag|\bthe book's tests\b|compared cells?",
                       re.I)
MD_PAGES = sorted((ROOT / "chapters").glob("*.md")) + [ROOT / "intro.md"]


def test_no_test_talk_where_a_reader_looks(nb):
    """Readers see the subject: no CI, test-runner, tag or 'checked' talk in prose,
    code or outputs."""
    for c in nb.cells:
        text = c.source + ("" if c.cell_type != "code" else outputs_text(c))
        hit = TEST_TALK.search(text)
        assert not hit, f"{hit.group(0)!r} in a cell a reader sees: {c.source[:80]!r}"


@pytest.mark.parametrize("page", MD_PAGES, ids=[p.name for p in MD_PAGES])
def test_no_test_talk_in_pages(page):
    hit = TEST_TALK.search(page.read_text())
    assert not hit, f"{hit.group(0)!r} in {page.name}"


# A number quoted from a measurement: a decimal, a percentage or a factor.
MEASURED = re.compile(r"(?<![\w.])\d[\d,]*\.\d+(?![\w.])|(?<![\w.])\d[\d,.]*\s?%|"
                      r"(?<![\w.])\d[\d,.]*\s?×")
# Numbers that are names, not measurements: section numbers, versions.
NAMED = re.compile(r"(?:§|[Ss]ections?|[Cc]hapters?|[Ff]igures?|[Ee]xercises?|Python|"
                   r"version|torch|transformers|ipywidgets|IPython|numpy|Jupyter Book)"
                   r"\s*(?:\d+(?:\.\d+)*(?:,\s*|\s*(?:and|to|–|-)\s*)?)+|^#+ \d+(?:\.\d+)*",
                   re.M)


def _prose_and_quotes(md: str) -> tuple[str, list[str]]:
    """Markdown -> (prose without math, code, roles and links; the `quotes`)."""
    md = re.sub(r"```.*?```", " ", md, flags=re.S)                    # code blocks
    md = re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$", " ", md, flags=re.S)      # math
    md = re.sub(r"\{\w+\}`[^`]*`", " ", md)                           # {ref}`...` roles
    quotes = re.findall(r"`([^`]+)`", md)
    md = re.sub(r"`[^`]+`", " ", md)
    md = re.sub(r"\]\([^)]*\)|<[^>]+>", " ", md)                      # link targets, tags
    return NAMED.sub(" ", md), quotes


def _found(quote: str, haystack: str) -> bool:
    norm = lambda t: re.sub(r"\s+", " ", t)
    pattern = ".*?".join(re.escape(norm(part).strip()) for part in quote.split("..."))
    return re.search(pattern, haystack) is not None


def test_numbers_in_prose_are_quoted_from_outputs(nb):
    """A measured number in prose (a decimal, a percentage, a factor) is quoted in
    backticks, and every backticked quote holding one appears in the chapter's outputs
    (or code, for settings such as `lr=0.1`): prose cannot drift from what the chapter
    prints.  Formulas go in $...$."""
    outputs = re.sub(r"\s+", " ", "\n".join(outputs_text(c) for c in code_cells(nb)))
    sources = re.sub(r"\s+", " ", "\n".join(c.source for c in code_cells(nb)))
    for c in nb.cells:
        if c.cell_type != "markdown":
            continue
        prose, quotes = _prose_and_quotes(c.source)
        loose = MEASURED.findall(prose)
        assert not loose, (f"measured numbers {loose} in prose outside backticks/math "
                           f"(quote the output they come from): {c.source[:100]!r}")
        for q in quotes:
            if MEASURED.search(q):
                assert _found(q, outputs) or _found(q, sources), \
                    f"`{q}` appears in no output or code of the chapter"


# ------------------------------------------------------------------ exercises
def exercise_calls(cell) -> list[str]:
    return re.findall(r"""d2l\.exercise\(\s*["']([\w.-]+)["']""", cell.source)


def test_exercises_build_and_no_solution_is_on_the_page(chapter):
    """≥ 3 exercises, ≥ 1 where the reader builds a function or module and ≥ 1 project
    (a piece the chapter uses, run on the chapter's task); each exercise cell says
    "no answer yet" until solved; no solution, no ✓ and no hidden cell below the
    exercises: a learner in Colab or Jupyter sees none unless they ask
    (d2l.solution)."""
    from d2lmini.exercises import registry
    cells = code_cells(chapter)
    names = []
    for c in cells:
        assert "hide-cell" not in tags(c) or not exercise_calls(c), \
            f"a hidden cell with an exercise (a solution?): {c.source[:80]!r}"
        if not exercise_calls(c):
            continue
        out = outputs_text(c)
        assert "✓" not in out and out.count("no answer yet") == len(exercise_calls(c)), \
            f"an unsolved exercise cell must print 'no answer yet': {c.source[:80]!r}"
        assert "d2l.solution" not in c.source, "a chapter never calls for a solution"
        names += exercise_calls(c)
    known = registry()
    assert all(n in known for n in names), f"unknown exercises: {set(names) - set(known)}"
    assert len(names) >= 3, f"{len(names)} exercises (want >= 3)"
    assert any(known[n].build for n in names), "no exercise where the reader builds something"
    assert any(known[n].project for n in names), "no project exercise"
    first = next(i for i, c in enumerate(chapter.cells) if c.cell_type == "markdown"
                 and re.match(r"#+ *Exercises", c.source))
    for c in chapter.cells[first:]:
        assert c.cell_type == "markdown" or "✓" not in outputs_text(c), \
            f"a ✓ below the exercises: {c.source[:80]!r}"


def test_every_exercise_has_a_solution_page_entry():
    """The Solutions part shows every exercise's worked solution, chapter by chapter."""
    from d2lmini.exercises import registry
    pages = sorted((ROOT / "chapters" / "solutions").glob("*.ipynb"))
    shown = [n for p in pages for c in code_cells(nbformat.read(p, as_version=4))
             for n in re.findall(r"""d2l\.solution\(\s*["']([\w.-]+)["']""", c.source)]
    assert sorted(shown) == sorted(n for n in registry() if not n.startswith("_"))
    for p in pages:
        assert f"chapters/solutions/{p.stem}" in toc_files(), f"{p.name} not in _toc.yml"


def test_every_registered_exercise_is_in_a_chapter():
    from d2lmini.exercises import registry
    used = {n for p in CHAPTERS for c in code_cells(nbformat.read(p, as_version=4))
            for n in exercise_calls(c)}
    missing = sorted(n for n in registry() if n not in used and not n.startswith("_"))
    assert not missing, f"registered exercises no chapter uses: {missing}"


# ------------------------------------------------------------------ figures and code width
def test_figures_have_captions_and_alt_text(nb):
    """Every figure is numbered and captioned in the book and has real alt text."""
    for c in code_cells(nb):
        if any(k in o.get("data", {}) for o in c.outputs for k in ("image/png", "image/svg+xml")):
            meta = c.metadata.get("mystnb", {})
            caption = meta.get("figure", {}).get("caption", "")
            alt = meta.get("image", {}).get("alt", "")
            assert caption and meta["figure"].get("name"), f"figure without caption: {c.source[:80]!r}"
            assert len(alt) > 15 and "/" not in alt.split()[0], f"weak alt text {alt!r}"


def test_code_fits_88_columns(nb):
    long = [l for c in code_cells(nb) for l in c.source.splitlines() if len(l) > 88]
    assert not long, f"{len(long)} code lines longer than 88 columns, e.g. {long[0]!r}"


def test_package_source_fits_88_columns():
    """Chapters print the package's source (d2l.show_source): it fits the page as chapter
    code does."""
    long = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "d2lmini").rglob("*.py"))
            for i, l in enumerate(p.read_text().splitlines(), 1) if len(l) > 88]
    assert not long, f"{len(long)} package lines longer than 88 columns: {long[:5]}"


def test_printed_lines_fit_88_columns(nb):
    """What a cell prints fits the page as its code does (88 columns): a desktop reader
    sees every output line whole, without a sideways scroll."""
    long = [l for c in code_cells(nb) for o in c.outputs if o.output_type == "stream"
            for l in o.text.splitlines() if len(l) > 88]
    assert not long, f"{len(long)} printed lines longer than 88 columns, e.g. {long[0]!r}"
