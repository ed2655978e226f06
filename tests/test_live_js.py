"""The book's models in the page (d2lmini/static/nn.js, run by Node) against PyTorch in
float64 on the same weights: logits, hidden states and every attention weight to 1e-9
on fixed and random inputs, for the three shipped models (``d2l.load_pretrained``) and
for small random models with every option the page supports (exact and tanh GELU,
learned positions, tied weights, no biases, pre-norm, padding); the key/value cache;
greedy output identical to ``d2l.generate`` / ``d2l.greedy_decode``; the sampling
distribution, the seeded generator, erf, float16 decoding and the positional table.
Needs ``node`` (no npm package); skipped without it, unless ``D2LMINI_NODE_TEST=1``
(CI) makes that a failure."""
from __future__ import annotations

import json
import math
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest
import torch

import d2lmini as d2l
from d2lmini.export import (page_positional_encoding, use_page_positional_encoding,
                            weights_asset)

ROOT = pathlib.Path(__file__).resolve().parents[1]
NODE = shutil.which("node")
TOL = 1e-9
if NODE is None and os.environ.get("D2LMINI_NODE_TEST") == "1":
    raise RuntimeError("D2LMINI_NODE_TEST=1 but there is no node on PATH")
pytestmark = pytest.mark.skipif(NODE is None, reason="no node on PATH")


def run(tmp_path, assets: dict, jobs: list) -> list:
    """Write the assets and jobs, run tests/js/run_nn.js, return its results."""
    files = {}
    for name, text in assets.items():
        files[name] = str(tmp_path / f"weights-{name}.js")
        pathlib.Path(files[name]).write_text(text)
    (tmp_path / "jobs.json").write_text(json.dumps({"assets": files, "jobs": jobs}))
    r = subprocess.run([NODE, str(ROOT / "tests" / "js" / "run_nn.js"),
                        str(tmp_path / "jobs.json"), str(tmp_path / "out.json")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads((tmp_path / "out.json").read_text())["results"]


def gap(js, ref) -> float:
    a = np.asarray(js, dtype=np.float64)
    b = ref.detach().double().cpu().numpy() if isinstance(ref, torch.Tensor) else np.asarray(ref)
    assert a.size == b.size, (a.shape, b.shape)
    return float(np.abs(a.ravel() - b.ravel()).max()) if a.size else 0.0


def weights(blocks, name) -> list:
    return [getattr(b, name).attention_weights[0] for b in blocks]  # (h, T_q, T_k)


def check_heads(js_layers, torch_layers) -> float:
    return max(gap(js, t) for js, t in zip(js_layers, torch_layers))


# ------------------------------------------------------------------ shipped models
@pytest.fixture(scope="module")
def shipped():
    out = {}
    for name in ("date", "shakespeare", "bert"):
        model, vocab = d2l.load_pretrained(name)
        double, _ = d2l.load_pretrained(name, dtype=torch.float64)
        out[name] = (model, vocab, double, weights_asset(model, vocab, name))
    return out


@torch.no_grad()
def test_shakespeare_logits_attention_cache_and_greedy(shipped, tmp_path):
    model, vocab, m64, asset = shipped["shakespeare"]
    g = torch.Generator().manual_seed(0)
    fixed = vocab.encode("ROMEO:\nBut, soft! what light through yonder window breaks?")
    random_ids = torch.randint(1, len(vocab), (model.max_len,), generator=g).tolist()
    cases = [fixed, random_ids, random_ids[:7], [0, 0] + fixed[:20]]      # left padding
    jobs = [{"op": "gpt", "model": "s", "ids": ids} for ids in cases]
    jobs.append({"op": "gpt_cached", "model": "s", "ids": fixed, "prompt": 9})
    prompts = [vocab.encode("KING RICHARD:\n"), random_ids[:5]]
    jobs += [{"op": "generate", "model": "s", "ids": p,
              "options": {"maxNewTokens": 150, "temperature": 0}} for p in prompts]
    res = run(tmp_path, {"s": asset}, jobs)
    worst = 0.0
    for ids, r in zip(cases, res):
        x = torch.tensor([ids])
        worst = max(worst, gap(r["logits"], m64(x)[0]),
                    check_heads(r["attention"], weights(m64.blocks, "self_attn")))
    # cache: the prompt, then one token at a time == the whole sequence at once
    full = m64(torch.tensor([fixed]))[0]
    steps = res[len(cases)]["steps"]
    got = np.concatenate([np.asarray(s["logits"]).reshape(-1, model.vocab_size)
                          for s in steps])
    worst = max(worst, gap(got, full))
    m64(torch.tensor([fixed]))
    last = [w[:, -1, :] for w in weights(m64.blocks, "self_attn")]         # (h, T)
    worst = max(worst, check_heads(steps[-1]["attention"], last))
    assert worst <= TOL, f"max |JS - torch float64| = {worst:.2e}"
    # greedy generation, with the cache and past max_len (sliding window)
    for p, r in zip(prompts, res[len(cases) + 1:]):
        want = d2l.generate(m64, torch.tensor([p]), 150, sliding_window=True)[0]
        assert r["ids"] == want.tolist()
    print(f"\nshakespeare: max |JS - torch float64| = {worst:.1e}; greedy 150 characters "
          f"after 5 (past the 128-character context) in {res[-1]['ms'] / 1000:.1f} s in Node")


@torch.no_grad()
def test_bert_logits_hidden_attention(shipped, tmp_path):
    model, vocab, m64, asset = shipped["bert"]
    g = torch.Generator().manual_seed(1)
    fixed = [vocab.cls_id] + vocab.encode("the mask hides the pads")
    fixed[5] = vocab.mask_id
    random_ids = torch.randint(4, len(vocab), (model.max_len,), generator=g).tolist()
    padded = fixed[:12] + [vocab.pad_id] * 6
    cases = [fixed, random_ids, padded, random_ids[:3]]
    res = run(tmp_path, {"b": asset}, [{"op": "bert", "model": "b", "ids": c}
                                        for c in cases])
    worst = 0.0
    for ids, r in zip(cases, res):
        hidden = m64(torch.tensor([ids]))
        worst = max(worst, gap(r["hidden"], hidden[0]),
                    gap(r["logits"], m64.mlm_logits(hidden)[0]),
                    check_heads(r["attention"], weights(m64.blocks, "self_attn")))
    assert worst <= TOL, f"max |JS - torch float64| = {worst:.2e}"
    print(f"\nbert: max |JS - torch float64| = {worst:.1e}")


@torch.no_grad()
def test_date_model_logits_attention_and_greedy(shipped, tmp_path):
    model, (src_vocab, tgt_vocab), m64, asset = shipped["date"]
    dates = ["3 March 1998", "Wednesday, June 18, 2025", "15. Februar 2019",
             "2019年2月15日", "03/03/98", "9 sep 71", "31.12.2049"]
    g = torch.Generator().manual_seed(2)
    rand_src = torch.randint(4, len(src_vocab), (20,), generator=g).tolist()
    jobs, refs = [], []
    for s in dates + [rand_src]:
        src = src_vocab.encode(s) if isinstance(s, str) else s
        tgt = tgt_vocab.encode("1998-03-03", bos=True)
        jobs.append({"op": "seq2seq", "model": "d", "src": src, "tgt": tgt})
        jobs.append({"op": "greedy", "model": "d", "src": src, "max_len": 11,
                     "bos": tgt_vocab.bos_id, "eos": tgt_vocab.eos_id})
        refs.append((src, tgt))
    padded = src_vocab.encode("3 March 1998") + [0, 0, 0]
    jobs.append({"op": "seq2seq", "model": "d", "src": padded,
                 "tgt": tgt_vocab.encode("1998-03", bos=True) + [0, 0]})
    refs.append((padded, jobs[-1]["tgt"]))
    res = run(tmp_path, {"d": asset}, jobs)
    worst = 0.0
    outs = res[0:-1:2] + [res[-1]]
    for (src, tgt), r in zip(refs, outs):
        logits = m64(torch.tensor([src]), torch.tensor([tgt]))[0]
        worst = max(worst, gap(r["logits"], logits),
                    check_heads(r["encoder"], weights(m64.encoder.blocks, "self_attn")),
                    check_heads(r["decoder"], weights(m64.decoder.blocks, "self_attn")),
                    check_heads(r["cross"], weights(m64.decoder.blocks, "cross_attn")))
    assert worst <= TOL, f"max |JS - torch float64| = {worst:.2e}"
    for (src, _), r in zip(refs, res[1:-1:2]):
        want = d2l.greedy_decode(m64, torch.tensor([src]), 11, tgt_vocab.bos_id,
                                 tgt_vocab.eos_id)[0]
        assert r["ids"] == want.tolist()
    iso = [tgt_vocab.decode(r["ids"], sep="") for r in res[1:-2:2]]
    assert iso[:4] == ["1998-03-03", "2025-06-18", "2019-02-15", "2019-02-15"], iso
    print(f"\ndate: max |JS - torch float64| = {worst:.1e}")


# ------------------------------------------------------------------ random models
def _randomize(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Every parameter random (LayerNorm gains and biases too), float64."""
    g = torch.Generator().manual_seed(seed)
    model = model.double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.5
                    + (1.0 if p.dim() == 1 and p.shape[0] % 2 else 0.0))
    return use_page_positional_encoding(model)


GPT_VARIANTS = [
    dict(activation="gelu"),
    dict(activation="gelu_tanh", pos_encoding="learned", scale_embedding=False,
         tie_weights=True, pad_id=None),
    dict(activation="relu", bias=False, norm_eps=1e-6),
]


@pytest.mark.parametrize("variant", range(len(GPT_VARIANTS)))
@torch.no_grad()
def test_random_gpt_every_option(variant, tmp_path):
    opts = GPT_VARIANTS[variant]
    torch.manual_seed(variant)
    m = _randomize(d2l.GPT(23, d_model=24, num_heads=3, num_layers=2, d_ff=40,
                           max_len=20, **opts), variant)
    vocab = d2l.checkpoints.CharVocab(chars=list("abcdefghijklmnopqrstuv"))
    g = torch.Generator().manual_seed(10 + variant)
    cases = [torch.randint(1, 23, (T,), generator=g).tolist() for T in (1, 7, 20)]
    if opts.get("pad_id", 0) == 0:
        cases.append([0, 0, 0] + cases[1])
    jobs = [{"op": "gpt", "model": "g", "ids": c} for c in cases]
    jobs.append({"op": "gpt_cached", "model": "g", "ids": cases[2], "prompt": 4})
    jobs.append({"op": "generate", "model": "g", "ids": cases[1],
                 "options": {"maxNewTokens": 30, "temperature": 0}})
    res = run(tmp_path, {"g": weights_asset(m, vocab, "g")}, jobs)
    worst = 0.0
    for ids, r in zip(cases, res):
        worst = max(worst, gap(r["logits"], m(torch.tensor([ids]))[0]),
                    check_heads(r["attention"], weights(m.blocks, "self_attn")))
    full = m(torch.tensor([cases[2]]))[0]
    steps = res[len(cases)]["steps"]
    worst = max(worst, gap(np.concatenate([np.asarray(s["logits"]).reshape(-1, 23)
                                           for s in steps]), full))
    assert worst <= TOL, f"{opts}: max |JS - torch float64| = {worst:.2e}"
    want = d2l.generate(m, torch.tensor([cases[1]]), 30, sliding_window=True)[0]
    assert res[-1]["ids"] == want.tolist()


@torch.no_grad()
def test_random_bert_and_transformer_options(tmp_path):
    bert = _randomize(d2l.BERT(30, 16, 2, 2, 24, 12, activation="gelu_tanh",
                               norm_eps=1e-5), 3)
    bvocab = d2l.bert.CharVocab("abcdefghijklmnopqrstuvwxyz")
    pre = _randomize(d2l.Transformer(17, 13, d_model=16, num_heads=4, num_layers=2,
                                     d_ff=20, dropout=0.0, norm_first=True,
                                     max_len=30), 4)
    post = _randomize(d2l.Transformer(17, 13, d_model=16, num_heads=2, num_layers=2,
                                      d_ff=0, dropout=0.0, max_len=30,
                                      pos_encoding="learned", scale_embedding=False), 5)
    tv = (d2l.Vocab(list("abcdefghijklm")), d2l.Vocab(list("abcdefghi")))
    g = torch.Generator().manual_seed(7)
    b_ids = [1] + torch.randint(4, 30, (9,), generator=g).tolist() + [0, 0]
    src = torch.randint(4, 17, (11,), generator=g).tolist() + [0, 0]
    tgt = [1] + torch.randint(4, 13, (6,), generator=g).tolist() + [0]
    segs = [0] * 5 + [1] * 7
    jobs = [{"op": "bert", "model": "b", "ids": b_ids, "segments": segs},
            {"op": "seq2seq", "model": "pre", "src": src, "tgt": tgt},
            {"op": "seq2seq", "model": "post", "src": src, "tgt": tgt},
            {"op": "greedy", "model": "pre", "src": src, "max_len": 9, "bos": 1,
             "eos": 2}]
    res = run(tmp_path, {"b": weights_asset(bert, bvocab, "b"),
                         "pre": weights_asset(pre, tv, "pre"),
                         "post": weights_asset(post, tv, "post")}, jobs)
    hidden = bert(torch.tensor([b_ids]), torch.tensor([segs]))
    worst = max(gap(res[0]["hidden"], hidden[0]),
                gap(res[0]["logits"], bert.mlm_logits(hidden)[0]),
                check_heads(res[0]["attention"], weights(bert.blocks, "self_attn")))
    for m, r in ((pre, res[1]), (post, res[2])):
        worst = max(worst, gap(r["logits"], m(torch.tensor([src]), torch.tensor([tgt]))[0]),
                    check_heads(r["cross"], weights(m.decoder.blocks, "cross_attn")),
                    check_heads(r["encoder"], weights(m.encoder.blocks, "self_attn")),
                    check_heads(r["decoder"], weights(m.decoder.blocks, "self_attn")))
    assert worst <= TOL, f"max |JS - torch float64| = {worst:.2e}"
    want = d2l.greedy_decode(pre, torch.tensor([src]), 9, 1, 2)[0]
    assert res[3]["ids"] == want.tolist()


# ------------------------------------------------------------------ the pieces
def test_erf_gelu_half_positions_sampling_and_seeds(tmp_path):
    xs = np.concatenate([np.linspace(-7, 7, 2001), [0.0, 1e-300, -1e-8, 3.3e-3, 5.9999]])
    table_args = {"max_len": 128, "d_model": 128}
    bits = list(range(0, 65536, 7)) + [0x7BFF, 0x0001, 0x8001, 0x3C00]
    bits = [b for b in bits if (b >> 10) & 31 != 31]          # no inf/nan patterns
    logits = [2.0, -1.0, 0.5, 0.5, 3.0, -20.0, 0.0]
    jobs = [{"op": "erf", "x": xs.tolist()}, {"op": "half", "bits": bits},
            {"op": "sinusoid", **table_args},
            {"op": "probabilities", "logits": logits, "temperature": 0.8, "top_k": 4},
            {"op": "random", "seed": 7, "n": 5}, {"op": "random", "seed": 7, "n": 5}]
    r = run(tmp_path, {}, jobs)
    erf = np.array([math.erf(x) for x in xs])
    x = torch.tensor(xs, dtype=torch.float64)
    assert np.abs(np.array(r[0]["values"]) - erf).max() <= 4e-15        # a few ulps
    assert gap(r[0]["gelu"], torch.nn.functional.gelu(x)) <= 2e-14
    assert gap(r[0]["gelu_tanh"], torch.nn.functional.gelu(x, approximate="tanh")) <= 2e-14
    want = np.frombuffer(np.array(bits, dtype="<u2").tobytes(), dtype="<f2")
    assert np.array_equal(np.array(r[1]["values"]), want.astype(np.float64))
    table = page_positional_encoding(**table_args)[0].double().numpy()
    assert np.array_equal(np.array(r[2]["table"]), table)           # bit for bit
    # the distribution sample_next draws from, in float64
    z = (torch.tensor(logits, dtype=torch.float64) - 3.0) / 0.8
    z = z.masked_fill(z < z.topk(4).values[-1], -math.inf)
    assert gap(r[3]["p"], z.softmax(-1)) <= 1e-15
    assert r[4]["values"] == r[5]["values"] and len(set(r[4]["values"])) == 5
    assert all(0 <= u < 1 for u in r[4]["values"])


def test_page_table_is_torch_table_within_float32_steps():
    """The page's positional table differs from torch's float32 one by a few float32
    steps at most (torch rounds pos * w before the sine)."""
    for n, d in ((128, 128), (64, 64)):
        ours = page_positional_encoding(n, d)
        theirs = d2l.PositionalEncoding(d, max_len=n).pe
        assert (ours - theirs).abs().max() <= 2e-5


@torch.no_grad()
def test_errors_are_clear(shipped, tmp_path):
    _, vocab, _, asset = shipped["shakespeare"]
    r = run(tmp_path, {"s": asset}, [
        {"op": "error", "model": "s", "call": "gpt", "ids": [999]},
        {"op": "error", "model": "s", "call": "gpt", "ids": [1] * 129}])
    assert "outside the vocabulary" in r[0]["error"]
    assert "max_len=128" in r[1]["error"]
