"""Where code lives (DESIGN.md, "Figures and explorers"): models and the attention-map
data import nothing from the figure, widget or page modules."""
import ast
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parents[1] / "d2lmini"
UI = {"widgets", "webfig", "monitor", "plot", "views", "diagrams", "matplotlib", "ipywidgets",
      "IPython"}
DATA_AND_MODELS = ["attention", "masks", "norms", "transformer", "gpt", "bert", "maps", "rnn",
                   "text", "bpe", "io", "train", "schedules", "regression", "data"]


def imported_modules(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            mod = (node.module or "").split(".")[0]
            names |= {mod} if mod else {a.name for a in node.names}
    return names


@pytest.mark.parametrize("name", DATA_AND_MODELS)
def test_models_and_data_import_no_ui_code(name):
    path = PKG / f"{name}.py"
    if not path.exists():
        pytest.skip(f"d2lmini/{name}.py does not exist")
    ui = imported_modules(path) & UI
    assert not ui, f"d2lmini/{name}.py imports UI code: {sorted(ui)}"
