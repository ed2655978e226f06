"""The page layer as one house: what a setting shows lives in d2lmini.selection, below
every front-end (matplotlib figures and explorers in widgets, the page's views, the
training monitor, the live models); no front-end borrows another's private helpers;
the page's JavaScript twin of ``view_data`` (static/views.js) draws the same numbers;
the static files are package files that parse; no class of the monitor runs long."""
from __future__ import annotations

import ast
import importlib
import json
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest
import torch

import d2lmini as d2l
from d2lmini import selection

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "d2lmini"
FRONT_ENDS = ("widgets", "views", "monitor", "live", "webfig", "plot")
NODE = shutil.which("node")


def imports(module: str) -> list[tuple[str, str]]:
    """(module imported from, name) for every ``from .x import y`` of a module."""
    tree = ast.parse((PKG / f"{module}.py").read_text())
    return [(n.module or "", a.name) for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.level == 1 for a in n.names]


def test_front_ends_borrow_no_private_helpers():
    for m in FRONT_ENDS + ("selection",):
        for src, name in imports(m):
            assert not (src in FRONT_ENDS + ("selection",) and name.startswith("_")), \
                f"{m} imports the private {name} from {src}"
        used = re.findall(r"\b(" + "|".join(FRONT_ENDS) + r")\.(_\w+)",
                          (PKG / f"{m}.py").read_text())
        assert not [u for u in used if u[0] != m], f"{m} uses private {used}"
    # selection is below every front-end: it imports none of them
    assert not [s for s, _ in imports("selection") if s in FRONT_ENDS]
    for m in ("views", "monitor", "widgets"):
        assert ("selection" in {s for s, _ in imports(m)}), m


def test_old_names_still_work():
    from d2lmini import monitor, views, widgets, webfig
    assert widgets.attention_view is selection.attention_view
    assert widgets._select is selection.select and widgets._labels is selection.labels
    assert views.view_data is selection.view_data
    assert webfig.PanelTable is selection.PanelTable
    plot = importlib.import_module("d2lmini.plot")
    assert widgets.figure_png is plot.figure_png and widgets.in_kernel is plot.in_kernel
    for name in ("attention_explorer", "head_view", "model_view", "pe_explorer",
                 "TrainingMonitor", "collect_attention", "AttentionMaps", "live",
                 "load_pretrained"):
        assert callable(getattr(d2l, name)), name
    assert callable(monitor.smooth) and callable(monitor.animation_data)


def test_no_monitor_class_runs_past_100_lines():
    tree = ast.parse((PKG / "monitor.py").read_text())
    sizes = {n.name: n.end_lineno - n.lineno + 1 for n in ast.walk(tree)
             if isinstance(n, ast.ClassDef)}
    assert sizes and max(sizes.values()) <= 100, sizes


def test_static_files_are_package_data_and_parse():
    names = {p.name for p in (PKG / "static").iterdir()}
    assert {"views.js", "views.css", "webfig.js", "webfig.css", "nn.js", "live.js",
            "live.css"} <= names
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"static/*.js"' in pyproject and '"static/*.css"' in pyproject
    for css in (PKG / "static").glob("*.css"):
        text = re.sub(r"/\*.*?\*/", "", css.read_text(), flags=re.S)
        assert text.count("{") == text.count("}"), css.name
    if NODE:
        for js in (PKG / "static").glob("*.js"):
            r = subprocess.run([NODE, "--check", str(js)], capture_output=True, text=True)
            assert r.returncode == 0, (js.name, r.stderr)


@pytest.mark.skipif(NODE is None, reason="no node on PATH")
def test_views_js_view_data_is_selection_view_data(tmp_path):
    """The page's twin (d2lviews.data, for attention computed in the page) gives the
    views the numbers selection.view_data gives them, for the same attention."""
    torch.manual_seed(0)
    model = d2l.Transformer(12, 10, d_model=16, num_heads=2, num_layers=2, d_ff=32,
                            dropout=0.0)
    src, tgt = torch.tensor([[5, 6, 7, 8, 9]]), torch.tensor([[1, 4, 5, 6]])
    maps = d2l.collect_attention(model, src, tgt)
    s_tok, t_tok = list("abcde"), ["<bos>", "x", "y", "z"]
    py = selection.view_data(maps, s_tok, t_tok)
    kinds = []
    for kind, (q, k) in {"encoder self": (s_tok, s_tok), "decoder self": (t_tok, t_tok),
                         "cross": (t_tok, s_tok)}.items():
        w = maps[kind][:, 0]                                      # (L, h, T_q, T_k)
        m = maps.masks[kind][0, 0]                                # (T_q, T_k)
        kinds.append({"kind": kind, "layers": w.reshape(*w.shape[:2], -1).tolist(),
                      "q": q, "k": k, "mask": m.int().flatten().tolist()})
    script = tmp_path / "twin.js"
    script.write_text(
        "globalThis.window = globalThis;\n"
        f"const v = require({json.dumps(str(PKG / 'static' / 'views.js'))});\n"
        f"const kinds = {json.dumps(kinds)};\n"
        "kinds.forEach(k => { const m = k.mask, T = k.k.length;"
        " k.allowed = (i, j) => m[i * T + j] === 1; });\n"
        "process.stdout.write(JSON.stringify(v.data(kinds)));\n")
    r = subprocess.run([NODE, str(script)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    js = json.loads(r.stdout)
    assert js["kinds"] == py["kinds"]
    for key, view in py["views"].items():
        other = js["views"][key]
        assert other["title"] == view["title"]
        assert js["labels"][other["q"]] == py["labels"][view["q"]]
        assert js["labels"][other["k"]] == py["labels"][view["k"]]
        for a, b in zip(other["heads"], view["heads"]):
            pa, pb = js["panels"][a], py["panels"][b]
            assert (pa["rows"], pa["cols"]) == (pb["rows"], pb["cols"])
            ours = np.round(np.array(pa["values"]) * 1000).astype(int)
            assert np.array_equal(ours, np.array(pb["values"])), key
            ma = None if pa["mask"] is None else js["masks"][pa["mask"]]
            mb = None if pb["mask"] is None else py["masks"][pb["mask"]]
            assert ma == mb, key
