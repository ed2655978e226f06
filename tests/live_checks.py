"""Shared by tests/test_live.py (a page of ``d2l.live`` outputs) and
tests/test_browser.py (the built book): what PyTorch computes in float64 on the
shipped weights, and the checks that a page's ``window.d2lModels`` and its boxes
answer the same."""
from __future__ import annotations

import json

import numpy as np
import torch

import d2lmini as d2l

# what each check types: dates in several formats, a prompt, a masked sentence
INPUTS = {"date": ["Friday, November 11, 2044", "3. März 1998", "03/03/98", "9 sep 71"],
          "shakespeare": ["KING RICHARD:\n", "O Romeo, "],
          "bert": ["the keys and the val[MASK]es", "attention looks both [MASK]ays"]}


def _weights(blocks, name):
    return [getattr(b, name).attention_weights[0].numpy() for b in blocks]


@torch.no_grad()
def reference(name: str, text: str) -> dict:
    """PyTorch in float64 on ``d2l.load_pretrained(name)``."""
    m, vocab = d2l.load_pretrained(name, dtype=torch.float64)
    if name == "date":
        src, tgt = vocab
        s = src.encode(text)
        ids = d2l.greedy_decode(m, torch.tensor([s]), 11, tgt.bos_id, tgt.eos_id)[0]
        t_in = [tgt.bos_id] + ids.tolist()[:-1]
        logits = m(torch.tensor([s]), torch.tensor([t_in]))[0]
        return {"answer": tgt.decode(ids, sep=""), "src": s, "tgt": t_in,
                "logits": logits.numpy(), "cross": _weights(m.decoder.blocks, "cross_attn"),
                "encoder": _weights(m.encoder.blocks, "self_attn")}
    if name == "shakespeare":
        p = vocab.encode(text)
        cont = d2l.generate(m, torch.tensor([p]), 60, sliding_window=True)[0, len(p):]
        logits = m(torch.tensor([p]))[0]
        return {"answer": vocab.decode(cont), "ids": p, "logits": logits.numpy(),
                "attention": _weights(m.blocks, "self_attn")}
    pre, post = text.split("[MASK]")
    ids = [vocab.cls_id] + vocab.encode(pre) + [vocab.mask_id] + vocab.encode(post)
    logits = m.mlm_logits(m(torch.tensor([ids])))[0]
    top = logits[len(pre) + 1].softmax(-1).topk(5)
    return {"ids": ids, "logits": logits.numpy(), "attention": _weights(m.blocks, "self_attn"),
            "answer": [(vocab.itos[i], v) for v, i in zip(top.values.tolist(),
                                                           top.indices.tolist())]}


def _gap(js_heads, torch_heads) -> float:
    return max(float(np.abs(np.array(a) - w).max()) for a, w in zip(js_heads, torch_heads))


def compare(page, name: str, text: str, ref: dict) -> float:
    """``window.d2lModels[name]`` against ``ref``: the same answer (ISO date, greedy
    continuation, top-5 fillers), ids, and max |page - torch| of logits and attention
    (returned)."""
    if name == "date":
        js = page.evaluate("""async ([t, src, tgt]) => {
            const m = window.d2lModels.date;
            return {answer: await m.translate(t), src: m.encode(t), logits: await m.logits(src, tgt),
                    att: await m.attention(src, tgt), dec: m.decode(m.encodeTarget('1998-03-03'))};
          }""", [text, ref["src"], ref["tgt"]])
        assert js["answer"] == ref["answer"] and js["src"] == ref["src"]
        assert js["dec"] == "1998-03-03"
        return max(float(np.abs(np.array(js["logits"]) - ref["logits"]).max()),
                   _gap(js["att"]["cross"], ref["cross"]),
                   _gap(js["att"]["encoder"], ref["encoder"]))
    if name == "shakespeare":
        js = page.evaluate("""async ([p, ids]) => {
            const m = window.d2lModels.shakespeare, o = {maxNewTokens: 40, temperature: 0.9, topK: 10, seed: 5};
            return {answer: await m.generate(p, {maxNewTokens: 60, temperature: 0}), ids: m.encode(p),
                    back: m.decode(m.encode(p)), logits: await m.logits(ids), att: await m.attention(ids),
                    a: await m.generate(p, o), b: await m.generate(p, o)};
          }""", [text, ref["ids"]])
        assert js["answer"] == ref["answer"], (js["answer"], ref["answer"])
        assert js["ids"] == ref["ids"] and js["back"] == text
        assert js["a"] == js["b"] and len(js["a"]) == 40          # seeded: repeatable
        return max(float(np.abs(np.array(js["logits"]) - ref["logits"]).max()),
                   _gap(js["att"], ref["attention"]))
    js = page.evaluate("""async ([t, ids]) => {
        const m = window.d2lModels.bert;
        return {answer: await m.fill(t), ids: m.encode(t), logits: await m.logits(ids),
                att: await m.attention(ids)};
      }""", [text, ref["ids"]])
    assert js["ids"] == ref["ids"]
    assert [f["token"] for f in js["answer"]] == [t for t, _ in ref["answer"]]
    return max(max(abs(f["p"] - p) for f, (_, p) in zip(js["answer"], ref["answer"])),
               float(np.abs(np.array(js["logits"]) - ref["logits"]).max()),
               _gap(js["att"], ref["attention"]))


def use_box(page, name: str, text: str, ref: dict) -> None:
    """Type into the page's box as a reader would: the answer appears, with attention
    drawn."""
    box = page.locator(f".d2l-live[data-d2llive={name}]").first
    box.scroll_into_view_if_needed()
    if name == "date":
        box.locator("input[type=text]").fill(text)
        box.locator("button[type=submit]").click()
        page.wait_for_function("([e, t]) => e.getAttribute('data-answer') === t",
                               arg=[box.element_handle(), ref["answer"]], timeout=60000)
        assert box.locator(".d2l-answer").inner_text().strip() == ref["answer"]
        assert box.locator(".d2l-lines line").count() > 0
    elif name == "shakespeare":
        box.locator("textarea").fill(text)
        box.locator("input[aria-label=temperature]").evaluate(
            "e => { e.value = 0; e.dispatchEvent(new Event('input')); }")
        box.locator("input[aria-label=characters]").evaluate(
            "e => { e.value = 40; e.dispatchEvent(new Event('input')); }")
        box.locator("button.d2l-go").click()
        page.wait_for_function("e => e.getAttribute('data-text') !== null",
                               arg=box.element_handle(), timeout=120000)
        assert box.get_attribute("data-text") == ref["answer"][:40]
        assert box.locator(".d2l-context .d2l-key").count() > 0
    else:
        box.locator("input[type=text]").fill(text)
        box.locator("button[type=submit]").click()
        page.wait_for_function("e => e.getAttribute('data-fillers') !== null",
                               arg=box.element_handle(), timeout=60000)
        fillers = json.loads(box.get_attribute("data-fillers"))
        assert [f["token"] for f in fillers] == [t for t, _ in ref["answer"]]
        assert box.locator(".d2l-fillers li").count() == 5
        assert box.locator(".d2l-lines line").count() > 0
