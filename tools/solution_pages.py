"""Write the book's Solutions part: one notebook per chapter, one `d2l.solution(name)`
cell per exercise, in the chapter's order and with its numbers and titles.

    python tools/solution_pages.py            # writes chapters/solutions/*.ipynb
    python benchmarks/chapter_times.py chapters/solutions/*.ipynb --write

The second line executes the pages once and stores their outputs (the worked solution
and its check), as every chapter's outputs are made.
"""
from __future__ import annotations

import pathlib
import re

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "chapters" / "solutions"
CALL = re.compile(r"""d2l\.exercise\(\s*["']([\w.-]+)["']""")
HEADING = re.compile(r"\*\*(\d+)\.\s*(.+?)\*\*", re.S)


def exercises(nb) -> list[tuple[str, str, str]]:
    """(number, title, name) of each exercise cell of a chapter, in order."""
    found, heading = [], None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = HEADING.search(cell.source)
            if m:
                heading = (m.group(1), " ".join(m.group(2).split()).rstrip("."))
        elif cell.cell_type == "code":
            for name in CALL.findall(cell.source):
                if heading is None:
                    raise ValueError(f"exercise {name!r} has no '**N. Title.**' "
                                     f"statement above it")
                found.append((*heading, name))
    return found


def page(chapter: pathlib.Path) -> nbformat.NotebookNode:
    nb = nbformat.read(chapter, as_version=4)
    title = nb.cells[0].source.splitlines()[0].lstrip("# ").strip()   # "5. Masks"
    number, name = title.split(". ", 1)
    colab = next(c for c in nb.cells if c.cell_type == "code")
    cells = [new_markdown_cell(
        f"# Solutions to chapter {number}: {name}\n\n"
        f"The worked solution of each exercise of {{doc}}`chapter {number} "
        f"<../{chapter.stem}>`,\nas `d2l.solution(name)` shows it in a notebook, "
        f"followed by its check on fresh\ninputs. Each teaches most after your own "
        f"try."),
        new_code_cell(colab.source, metadata={"tags": ["remove-cell"]}),
        new_code_cell("import d2lmini as d2l")]
    for num, head, name in exercises(nb):
        cells += [new_markdown_cell(f"## Exercise {num}. {head}"),
                  new_code_cell(f'd2l.solution("{name}")')]
    out = new_notebook(cells=cells, metadata=nb.metadata)
    return out


INDEX = """# Solutions

Every chapter ends with exercises that ask you to build something; each is checked by
`d2l.exercise(name, answer)` on fresh inputs. The pages below hold a worked solution
for each, with its check run on fresh inputs. In a notebook, `d2l.solution(name)`
shows the same solution beside your own code. Each teaches most after your own try.

"""


def main() -> None:
    OUT.mkdir(exist_ok=True)
    chapters = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
    for chapter in chapters:
        nbformat.write(page(chapter), OUT / chapter.name)
        print("wrote", (OUT / chapter.name).relative_to(ROOT))
    (OUT / "index.md").write_text(INDEX)


if __name__ == "__main__":
    main()
