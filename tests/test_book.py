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
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
MIN_CLAIMS = 8  # compared code cells with text output per chapter


def toc_files() -> list[str]:
    return [c["file"] for c in TOC["chapters"]]


def test_toc_lists_every_chapter_in_order():
    listed = toc_files()
    missing = [f for f in listed if not any((ROOT / f).with_suffix(x).exists() for x in (".ipynb", ".md"))]
    assert not missing, f"_toc.yml lists files that do not exist: {missing}"
    notebooks = [f for f in listed if (ROOT / f).with_suffix(".ipynb").exists()]
    on_disk = [f"chapters/{p.stem}" for p in CHAPTERS]
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
    files = [ROOT / "README.md", ROOT / "intro.md", ROOT / "pyproject.toml", *CHAPTERS]
    for f in files:
        for url in re.findall(r"github\.com/[\w.-]+/[\w.-]+", f.read_text()):
            assert url.removesuffix(".git") == REPO_URL.removeprefix("https://"), f"{f.name}: {url}"


@pytest.fixture(params=CHAPTERS, ids=[p.stem for p in CHAPTERS])
def nb(request):
    return nbformat.read(request.param, as_version=4)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def test_chapter_has_one_h1_title_first(nb):
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.lstrip().startswith("# ")
    h1 = [l for c in nb.cells if c.cell_type == "markdown" for l in c.source.splitlines()
          if re.match(r"# \S", l)]
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
    assert len(rows) == 25, f"the notes ask 25 whys, the index has {len(rows)} rows"
    for row in rows:
        cells = re.split(r"(?<!\\)\|", row.rstrip(" |"))   # an escaped pipe is no column
        answer = re.sub(r"\{(ref|doc)\}`[^`]*`", "", cells[-1]).replace("\\|", "|")
        quotes = re.findall(r"`([^`]+)`", answer)
        assert quotes, f"row without a quoted result: {row[:80]}"
        for q in quotes:
            pattern = ".*?".join(re.escape(norm(part)) for part in q.split("..."))
            assert re.search(pattern, printed), f"not printed by a compared cell: {q!r}"
