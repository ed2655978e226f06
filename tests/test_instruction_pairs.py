"""Chapter 16 on your own instruction pairs: ExampleSet, read_dolly and LoRA
instruction tuning of a GPT-2 port with GPT-2's own tokenizer (a random small
GPT2Config, offline: the chapter's cell does the same with GPT-2 small)."""
import json

import pytest
import torch

import d2lmini as d2l
from d2lmini import align


def test_read_dolly_keeps_one_line_answers_without_context():
    rows = [dict(instruction="Name a colour.", context="", response="Blue."),
            dict(instruction="Summarise.", context="A long passage.", response="Short."),
            dict(instruction="List two.", context="", response="One\nTwo"),
            dict(instruction="Say a lot.", context="", response="x" * 200),
            dict(instruction="  ", context="", response="empty instruction"),
            dict(instruction="What is 2+2?", context=None, response=" Four. ")]
    lines = [json.dumps(r) for r in rows] + [""]
    assert align.read_dolly(lines) == [("Name a colour.", "Blue."),
                                       ("What is 2+2?", "Four.")]
    assert align.read_dolly(lines, max_chars=4) == []


def test_example_set_draws_reproducibly_and_names_bad_pairs():
    pairs = [("a", "1"), ("b", "2"), ("c", "3")]
    s = align.ExampleSet(pairs)
    draw = lambda: [e.answer for e in s.sample(20, torch.Generator().manual_seed(0))]
    assert draw() == draw() and set(draw()) == {"1", "2", "3"} and len(s) == 3
    with pytest.raises(ValueError, match="empty"):
        align.ExampleSet([])
    with pytest.raises(ValueError, match="one line"):
        align.ExampleSet([("a", "two\nlines")])
    with pytest.raises(TypeError, match="two strings"):
        align.ExampleSet([("a", 3)])
    with pytest.raises(ValueError, match="no tasks"):
        s.sample(2, tasks=["upper"])


def test_lora_instruction_tuning_teaches_a_gpt2_port_its_answer():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=50257, n_embd=32, n_head=2, n_layer=2,
                                  n_positions=64, initializer_range=0.2)
    gpt = d2l.gpt2_from_hf(transformers.GPT2LMHeadModel(cfg).eval())
    tok = d2l.BPE.from_gpt2()
    pairs = [("Name a colour.", "Blue."), ("What is two plus two?", "Four.")]
    res = align.lora_instruction_tuning(gpt, tok, pairs, [p[0] for p in pairs],
                                        steps=60, lr=3e-2, rank=4, batch_size=4,
                                        max_new_tokens=8)
    assert res["after"] == ["Blue.", "Four."], res
    assert res["before"] != res["after"]
    assert sum(res["loss"][-5:]) / 5 < 0.7 * res["loss"][0]
    assert 0 < res["trainable"] < res["total"]
    assert not any(isinstance(m, d2l.LoRALinear) for m in gpt.modules())   # merged
