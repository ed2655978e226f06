"""d2lmini.views: the head view and model view embed exactly what attention_view decides,
reject bad settings, ship their script and CSS as package files, and respond in a page
with no kernel (headless Chromium, when there is one)."""
import json
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest
import torch

import d2lmini as d2l
from d2lmini import views as V
from d2lmini.widgets import attention_view

SRC = torch.tensor([[5, 6, 7, 8, 0], [9, 10, 11, 0, 0]])   # (B=2, S=5), pad id 0
TGT = torch.tensor([[1, 4, 5, 6], [1, 7, 8, 0]])           # (B=2, T=4)
SRC_TOK = [list("abcde"), list("fgh")]
TGT_TOK = [["<bos>", "x", "y", "z"], ["<bos>", "u", "v"]]
ROOT = pathlib.Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def maps():
    d2l.set_seed(0)
    model = d2l.Transformer(20, 15, d_model=16, num_heads=4, num_layers=2, d_ff=32)
    return d2l.collect_attention(model, SRC, TGT)


def payload(html: str) -> dict:
    m = re.search(r"window\.d2lviews\.\w+\(r,(\{.*\})\);\};", html, re.S)
    return json.loads(m.group(1))


def test_exported():
    assert d2l.head_view is V.head_view and d2l.model_view is V.model_view


def test_every_setting_is_attention_views(maps):
    data = payload(d2l.head_view(maps, SRC_TOK, TGT_TOK).html())
    assert set(data["kinds"]) == {"encoder self", "decoder self", "cross"}
    assert len(data["views"]) == 3 * 2 * 2          # kinds x layers x examples
    for key, ref in data["views"].items():
        kind, layer, example = key.split("|")
        v = attention_view(maps, kind, int(layer), "all", int(example),
                           src_tokens=SRC_TOK, tgt_tokens=TGT_TOK)
        assert data["labels"][ref["q"]] == v["ylabels"]
        assert data["labels"][ref["k"]] == v["xlabels"]
        assert len(ref["heads"]) == 4
        for i, pi in enumerate(ref["heads"]):
            p = data["panels"][pi]
            got = np.array(p["values"], float).reshape(p["rows"], p["cols"]) / p["scale"]
            want = v["values"][i]
            if v["mask"] is not None:
                keep = v["mask"][i]
                mask = np.array([c == "1" for c in data["masks"][p["mask"]]]).reshape(keep.shape)
                assert (mask == keep).all()
                want = np.where(keep, want, 0.0)
            assert np.abs(got - want).max() <= 5e-4   # thousandths
    # padding is labelled, not blank (example 1 has 3 source tokens for 5 positions)
    enc = data["views"]["encoder self|0|1"]
    assert data["labels"][enc["k"]] == ["f", "g", "h", "<pad>", "<pad>"]


def test_state_and_bad_settings(maps):
    hv = d2l.head_view(maps, SRC_TOK, TGT_TOK, kind="cross", layer=-1, example=1, heads=[0, 2])
    assert hv.state == {"kind": "cross", "layer": 1, "example": 1, "heads": [0, 2]}
    assert len(payload(hv.html())["colors"]) == 4
    mv = d2l.model_view(maps, SRC_TOK, TGT_TOK, kind="decoder self", open=(1, 3))
    assert mv.state == {"kind": "decoder self", "example": 0, "open": [1, 3]}
    assert "2 layers x 4 heads x 2 examples" in repr(mv)
    with pytest.raises(ValueError, match="kind must be one of"):
        d2l.head_view(maps, kind="self")
    with pytest.raises(ValueError, match=r"layer must be an int in \[0, 1\]"):
        d2l.head_view(maps, layer=2)
    with pytest.raises(ValueError, match=r"example must be an int in \[0, 1\]"):
        d2l.model_view(maps, example=5)
    with pytest.raises(ValueError, match=r"heads must be .* in \[0, 3\], got \[4\]"):
        d2l.head_view(maps, heads=[4])
    with pytest.raises(ValueError, match=r"open must be \(layer, head\)"):
        d2l.model_view(maps, open=(0, 9))
    with pytest.raises(ValueError, match="too many for one page"):
        d2l.head_view(torch.rand(50, 50, 4, 40, 40))


def test_single_tensor_and_one_head():
    w = torch.softmax(torch.randn(6, 6), -1)                  # (T_q, T_k)
    data = payload(d2l.head_view(w, list("abcdef")).html())
    assert data["kinds"] == {"self": {"L": 1, "B": 1, "h": 1}}
    assert data["labels"][data["views"]["self|0|0"]["q"]] == list("abcdef")


def test_script_and_css_are_package_files_defined_once(maps):
    js, css = V.asset("views.js"), V.asset("views.css")
    assert "window.d2lviews = {head: headView, model: modelView, data: viewData" in js
    assert "if (window.d2lviews) return;" in js                # a second copy does nothing
    assert ".d2l-view" in css
    html = d2l.model_view(maps).html()
    assert html.count(js) == 1 and html.count(css) == 1
    assert 'data-d2l-asset="views.js"' in html and 'data-d2l-asset="views.css"' in html
    assert "</script" not in json.dumps(payload(html))
    if shutil.which("node"):
        for name in ("views.js", "webfig.js", "nn.js", "live.js"):
            path = ROOT / "d2lmini" / "static" / name
            r = subprocess.run(["node", "--check", str(path)], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium")
def test_views_respond_in_a_page_without_a_kernel(maps, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    page_html = ("<html><body>" + d2l.head_view(maps, SRC_TOK, TGT_TOK, kind="cross").html()
                 + d2l.model_view(maps, SRC_TOK, TGT_TOK).html() + "</body></html>")
    (tmp_path / "index.html").write_text(page_html)
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for width in (1280, 390):
            page = b.new_page(viewport={"width": width, "height": 900})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((tmp_path / "index.html").as_uri())
            hv, mv = page.locator(".d2l-view").all()
            # head view: hover a query token -> only its lines; a line -> its exact weight
            all_lines = hv.locator(".d2l-lines line").count()
            hv.locator(".d2l-token[data-side=q]").nth(1).hover()
            assert 0 < hv.locator(".d2l-lines line").count() < all_lines
            assert json.loads(hv.get_attribute("data-state"))["focus"] == ["q", 1]
            assert re.search(r"query 'x' \(position 1\) attends to .*head 0: '\w' 0\.\d+",
                             hv.locator(".d2l-readout").text_content())
            line = hv.locator(".d2l-lines line").first
            line.dispatch_event("mouseenter")
            r, c = int(line.get_attribute("data-q")), int(line.get_attribute("data-k"))
            j = int(line.evaluate("e => e.parentNode.getAttribute('data-head')"))
            w = attention_view(maps, "cross", 0, "all", 0)["values"][j, r, c]
            got = re.search(r": (\d\.\d+)$", hv.locator(".d2l-readout").text_content()).group(1)
            assert abs(float(got) - w) <= 5e-4
            # toggling a head removes its lines
            page.mouse.move(0, 0)
            hv.locator(".d2l-heads button[data-head='0']").click()
            assert hv.locator(".d2l-lines g[data-head='0']").count() == 0
            # model view: click a thumbnail -> it opens large; hover reads a weight
            assert mv.locator(".d2l-thumb").count() == 2 * 4
            assert mv.locator(".d2l-scroll svg").count() == 0
            mv.locator(".d2l-thumb[data-layer='1'][data-head='2']").click()
            assert json.loads(mv.get_attribute("data-state"))["open"] == [1, 2]
            mv.locator(".d2l-scroll image").hover()
            assert re.search(r"layer 1, head 2: query .*: (\d\.\d+|masked)$",
                             mv.locator(".d2l-readout").text_content())
            # one-position controls are not shown; kinds switch
            assert mv.locator("select[aria-label=example]").is_visible()
            mv.locator("button[data-kind='cross']").click()
            assert json.loads(mv.get_attribute("data-state"))["kind"] == "cross"
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            assert not errors, errors
            page.close()
        b.close()
