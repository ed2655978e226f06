"""The book's trained models: ``d2l.load_pretrained`` (the page's weights, exactly),
the weights asset ``d2lmini.export`` writes, and ``d2l.live`` boxes in a page without a
kernel (headless Chromium, file://, 390 and 1280 px), whose ``window.d2lModels``
answers as PyTorch does in float64 on the same weights."""
from __future__ import annotations

import base64
import pathlib
import json
import math
import re
import shutil

import numpy as np
import pytest
import torch

import d2lmini as d2l
from d2lmini.export import (export, page_weights, use_page_positional_encoding,
                            vocab_spec, weights_asset)

import live_checks

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def asset_tensors(text: str) -> dict:
    """Decode a weights asset in Python: {name: float64 array}."""
    m = re.search(r'=\{meta:(\{.*?\}),data:"([A-Za-z0-9+/=]*)"\}', text, re.S)
    meta, raw = json.loads(m.group(1)), base64.b64decode(m.group(2))
    out = {}
    for t in meta["tensors"]:
        n, o = int(np.prod(t["shape"])), t["offset"]
        if t["dtype"] == "i8":
            rows = t["shape"][0]
            q = np.frombuffer(raw, np.int8, n, o).reshape(rows, -1).astype(np.float64)
            k = np.frombuffer(raw, np.int8, rows, o + n).astype(np.float64)
            v = q * 2.0 ** k[:, None]
        else:
            dt = {"f16": "<f2", "f32": "<f4", "f64": "<f8"}[t["dtype"]]
            v = np.frombuffer(raw, dt, n, o).astype(np.float64)
        out[t["name"]] = v.reshape(t["shape"])
    return meta, out


@pytest.mark.parametrize("name", ["date", "shakespeare", "bert"])
def test_pretrained_holds_the_pages_weights_exactly(name):
    model, vocab = d2l.load_pretrained(name)
    meta, tensors = asset_tensors(weights_asset(model, vocab, name))
    sd = model.state_dict()
    assert meta["class"] == type(model).__name__ and meta["config"] == model.config
    for key, v in tensors.items():
        assert np.array_equal(v, sd[key].double().numpy()), key
    matrices = [t for t in meta["tensors"] if len(t["shape"]) >= 2]
    assert matrices and all(t["dtype"] == "i8" for t in matrices)      # int8 rows
    assert all(t["dtype"] == "f16" for t in meta["tensors"] if len(t["shape"]) == 1)
    again, _ = d2l.load_pretrained(name, dtype=torch.float64)
    for key, t in again.state_dict().items():
        if t.is_floating_point():
            assert torch.equal(t, sd[key].double()), key
    assert vocab_spec(vocab) == meta["vocab"]


def test_pretrained_models_and_vocabularies():
    date, (src, tgt) = d2l.load_pretrained("date")
    assert isinstance(date, d2l.Transformer) and len(tgt) == 15 and len(src) == 56
    iso = d2l.greedy_decode(date, torch.tensor([src.encode("3. März 1998")]), 11,
                            tgt.bos_id, tgt.eos_id)[0]
    assert tgt.decode(iso, sep="") == "1998-03-03"
    gpt, chars = d2l.load_pretrained("shakespeare")
    assert isinstance(gpt, d2l.GPT) and chars.decode(chars.encode("ROMEO:")) == "ROMEO:"
    bert, bv = d2l.load_pretrained("bert")
    assert isinstance(bert, d2l.BERT) and bv.mask_id == 3
    old, _, info = d2l.bert.load_book_bert()                       # the same weights
    assert all(torch.equal(a, b) for a, b in zip(old.state_dict().values(),
                                                 bert.state_dict().values()))
    s_old, _, s_info = d2l.checkpoints.load_shakespeare()
    x = torch.tensor([chars.encode("KING RICHARD:")])
    with torch.no_grad():
        assert torch.equal(s_old(x), gpt(x))
    for i in (info, s_info, d2l.checkpoints.read_checkpoint("date.pt")["train"]):
        assert i["machine"] and i["seconds"] > 0 and "int8" in i["precision"]
    with pytest.raises(ValueError, match="one of"):
        d2l.load_pretrained("gpt2")


def test_page_weights_are_int8_rows_with_power_of_two_scales():
    torch.manual_seed(0)
    w = torch.randn(5, 40) * torch.tensor([[1e-4], [0.01], [1.0], [30.0], [0.0]])
    out = page_weights({"w": w, "b": torch.randn(40), "n": torch.tensor(3)})
    v = out["w"].double()
    assert out["w"].dtype == torch.float16 and out["n"].item() == 3
    for row, orig in zip(v, w.double()):
        m = orig.abs().max()
        if m == 0:
            assert (row == 0).all()
            continue
        k = math.ceil(math.log2(m / 127))
        q = row / 2 ** k
        assert torch.equal(q, q.round()) and q.abs().max() <= 127
        assert (row - orig).abs().max() <= 2 ** k / 2 + 1e-12          # rounded
    assert out["b"].dtype == torch.float16
    with pytest.raises(ValueError, match="precision"):
        page_weights({"w": w}, "int4")


def test_export_prints_size_and_loss_cost(tmp_path, capsys):
    torch.manual_seed(0)
    m = d2l.GPT(12, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=16)
    vocab = d2l.checkpoints.CharVocab(chars=list("abcdefghijk"))
    x = torch.randint(1, 12, (4, 16))
    loss = lambda model: torch.nn.functional.cross_entropy(
        model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten()).item()
    r = export(m, vocab, "tiny", tmp_path / "weights-tiny.js", heldout=loss)
    out = capsys.readouterr().out
    assert re.search(r"weights-tiny\.js: 0\.\d\d MB \(int8\); held-out loss "
                     r"\d\.\d{4} -> \d\.\d{4} \([+-]\d\.\d{4}\)", out), out
    assert r["bytes"] == (tmp_path / "weights-tiny.js").stat().st_size
    assert abs(r["after"] - r["before"]) < 0.05
    meta, tensors = asset_tensors((tmp_path / "weights-tiny.js").read_text())
    assert all(np.array_equal(v, m.state_dict()[k].double().numpy())
               for k, v in tensors.items())
    with pytest.raises(TypeError, match="GPT, BERT and Transformer"):
        weights_asset(torch.nn.Linear(2, 2), vocab, "x")
    with pytest.raises(ValueError, match="a word"):
        weights_asset(m, vocab, "../x")


def test_page_positional_table_replaces_torch_s():
    m = use_page_positional_encoding(d2l.GPT(10, d_model=8, num_heads=2, max_len=12))
    table = torch.tensor([[math.cos(p * math.exp(-math.log(10000) * (i - i % 2) / 8))
                           if i % 2 else math.sin(p * math.exp(-math.log(10000) * i / 8))
                           for i in range(8)] for p in range(12)]).float()
    assert torch.equal(m.pos_encoding.pe[0], table)


def test_live_output_carries_its_files_and_weights():
    box = d2l.live("date")
    html = box.html()
    for name in ("views.css", "views.js", "nn.js", "live.css", "live.js"):
        assert html.count(f'data-d2l-asset="{name}"') == 1, name
    assert html.count('data-d2l-lazy="weights-date.js"') == 1
    assert not re.search(r"src=|url\(|fetch\(|XMLHttpRequest|import\(", html)
    assert "window.d2llive.date(" in html and repr(box).startswith("LiveModel('date'")
    with pytest.raises(ValueError, match="one of"):
        d2l.live("gpt")
    with pytest.raises(ValueError, match="unknown setting"):
        d2l.live("bert", prompt="x")


# ------------------------------------------------------------------ in a page
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium")
def test_live_boxes_answer_as_torch_in_a_page_without_a_kernel(tmp_path):
    """The three boxes in one page as Jupyter shows them (weights inline), from
    file://, at 1280 and 390 px: window.d2lModels gives PyTorch's answers and numbers
    (float64, 1e-9) for inputs in several formats; typing into a box shows the answer
    with its attention; nothing scrolls sideways; no console error."""
    playwright = pytest.importorskip("playwright.sync_api")
    refs = {(n, t): live_checks.reference(n, t)
            for n, texts in live_checks.INPUTS.items() for t in texts}
    body = "".join(d2l.live(n).html() for n in ("date", "shakespeare", "bert"))
    (tmp_path / "index.html").write_text(
        "<!doctype html><html><head><meta charset='utf-8'><meta name='viewport' "
        "content='width=device-width'></head><body>" + body + "</body></html>")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for width in (1280, 390):
            page = b.new_page(viewport={"width": width, "height": 900})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            page.goto((tmp_path / "index.html").as_uri())
            assert sorted(page.evaluate("Object.keys(window.d2lModels)")) == \
                ["bert", "date", "shakespeare"]
            worst = max(live_checks.compare(page, n, t, r) for (n, t), r in refs.items())
            assert worst <= 1e-9, f"max |page - torch float64| = {worst:.2e}"
            for n, texts in live_checks.INPUTS.items():
                live_checks.use_box(page, n, texts[0], refs[n, texts[0]])
            # BERT's head view keeps the [MASK] row on another layer; a bad input
            # leaves no answer of the earlier sentence beside its message
            bert = page.locator(".d2l-live[data-d2llive=bert]")
            bert.locator("select[aria-label=layer]").select_option("1")
            mask = refs["bert", live_checks.INPUTS["bert"][0]]["ids"].index(3)
            state = bert.locator(".d2l-view").get_attribute("data-state")
            assert '"layer":1' in state and f'"focus":["q",{mask}]' in state, state
            bert.locator("input[type=text]").fill("no blank here")
            bert.locator("button[type=submit]").click()
            assert "[MASK]" in bert.locator(".d2l-note").inner_text()
            assert bert.locator(".d2l-fillers li").count() == 0
            assert bert.locator(".d2l-lines line").count() == 0
            assert bert.get_attribute("data-fillers") is None
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            assert not errors, errors
            page.close()
        b.close()


@pytest.mark.skipif(shutil.which("node") is None, reason="no node on PATH")
def test_page_vocabularies_are_python_s(tmp_path):
    """static/live.js's encode/decode (run in Node) give the ids and texts of the
    Python vocabularies, unknown characters included."""
    import subprocess
    cases = {"date": ["3 March 1998", "2019年2月15日", "31.12.49 ?!", ""],
             "shakespeare": ["ROMEO:\nBut soft", "KING RICHARD III.", "naïve"],
             "bert": ["the [MASK]ask hides the pads", "[CLS]ab[SEP]cd", "émoji"]}
    data = {n: d2l.live(n).data() for n in cases}
    script = tmp_path / "vocab.js"
    script.write_text(
        "globalThis.window = globalThis; globalThis.document = {currentScript: null};\n"
        f"require({json.dumps(str(pathlib.Path(d2l.__file__).parent / 'static' / 'live.js'))});\n"
        f"const data = {json.dumps(data)}, cases = {json.dumps(cases)}, out = {{}};\n"
        "for (const n in cases) { const api = window.d2llive.api[n](data[n]);\n"
        "  out[n] = cases[n].map(t => { try { const ids = api.encode(t);\n"
        "    return {ids, back: api.decode(n === 'date' ? api.encodeTarget('1998-03-03') : ids)}; }\n"
        "    catch (e) { return {error: e.message}; } }); }\n"
        "process.stdout.write(JSON.stringify(out));\n")
    r = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    _, (src, tgt) = d2l.load_pretrained("date")
    for text, got in zip(cases["date"], out["date"]):
        assert got["ids"] == src.encode(text) and got["back"] == "1998-03-03"
    _, chars = d2l.load_pretrained("shakespeare")
    for text, got in zip(cases["shakespeare"], out["shakespeare"]):
        try:
            want = chars.encode(text)
        except ValueError:
            assert "not in the vocabulary" in got["error"]
            continue
        assert got["ids"] == want and got["back"] == chars.decode(want)
    _, bv = d2l.load_pretrained("bert")
    first = out["bert"][0]
    pre, post = cases["bert"][0].split("[MASK]")
    assert first["ids"] == [bv.cls_id] + bv.encode(pre) + [bv.mask_id] + bv.encode(post)
    assert first["back"] == bv.decode(first["ids"])
    assert out["bert"][1]["ids"] == [bv.cls_id, *bv.encode("ab"), bv.sep_id, *bv.encode("cd")]
    assert "not in the vocabulary" in out["bert"][2]["error"]
