"""The shipped character-level GPT of tiny Shakespeare (d2lmini/checkpoints/): small,
loadable without pickle, and as good on held-out text as its script says."""
import json
import math
import re
import time
from importlib import resources

import pytest
import torch

import d2lmini as d2l
from d2lmini.checkpoints import heldout_loss, load_shakespeare, split_text
from d2lmini.export import use_page_positional_encoding

CKPT = resources.files("d2lmini") / "checkpoints" / "shakespeare_char.pt"


@pytest.fixture(scope="module")
def shipped():
    torch.manual_seed(0)
    return load_shakespeare()


@pytest.fixture(scope="module")
def text():
    return d2l.load_corpus("tinyshakespeare.txt")


def test_corpus_is_tiny_shakespeare(text):
    assert len(text) == 1_115_394
    assert text.startswith("First Citizen:\nBefore we proceed any further, hear me speak.")
    train, held = split_text(text)
    assert train + held == text and len(held) == len(text) - int(0.9 * len(text))


def test_checkpoint_is_small_and_loads_without_pickle():
    with resources.as_file(CKPT) as p:
        assert p.stat().st_size <= 5_000_000, f"{p.stat().st_size / 1e6:.2f} MB"
        ckpt = torch.load(p, map_location="cpu", weights_only=True)
    assert {"config", "chars", "state_dict", "train"} <= set(ckpt)
    assert ckpt["config"]["vocab_size"] == len(ckpt["chars"]) + 1
    assert ckpt["train"]["heldout_loss"] <= 1.8
    assert ckpt["train"]["seconds"] > 0 and ckpt["train"]["machine"]


def test_d2l_load_reads_the_same_model(shipped):
    """d2l.load rebuilds the model with torch's own positional table; the shipped model
    has the page's (d2lmini.export), a few float32 steps away: the same logits to
    1e-4, and exactly once it has the page's table too."""
    model, vocab, _ = shipped
    with resources.as_file(CKPT) as p:
        again, no_vocab = d2l.load(p)
    x = torch.tensor([vocab.encode("ROMEO:\nBut soft")])
    with torch.no_grad():
        assert (again(x) - model(x)).abs().max() <= 1e-4 and no_vocab is None
        use_page_positional_encoding(again)
        assert torch.equal(again(x), model(x))


def test_vocab_matches_the_corpus_and_round_trips(shipped, text):
    _, vocab, _ = shipped
    assert vocab.chars == sorted(set(text))
    s = "ROMEO:\nBut, soft! what light through yonder window breaks?"
    assert vocab.decode(vocab.encode(s)) == s
    assert 0 not in vocab.encode(s)                      # id 0 is padding, never text
    with pytest.raises(ValueError, match="not in the vocabulary"):
        vocab.encode("naïve")


def test_heldout_loss_on_a_slice_is_at_most_1_8_nats(shipped, text):
    model, vocab, info = shipped
    start = time.perf_counter()
    _, held = split_text(text)
    loss = heldout_loss(model, vocab, held, max_windows=64)        # 8,192 characters
    assert loss <= 1.8, f"held-out loss {loss:.3f} nats/char"
    # the training log's last entry measured the same 64 windows (in float32)
    last = json.loads(info["log"])[-1]
    assert last["step"] == info["steps"]
    assert abs(loss - last["heldout"]) < 0.01, (loss, last)
    assert info["heldout_loss"] <= 1.8                              # every held-out window
    assert time.perf_counter() - start < 10


def test_greedy_text_is_mostly_real_words(shipped, text):
    model, vocab, _ = shipped
    known = set(re.findall(r"[a-z']+", split_text(text)[0].lower()))
    prompt = torch.tensor([vocab.encode("KING RICHARD:\n")])
    out = vocab.decode(d2l.generate(model, prompt, 100)[0, prompt.shape[1]:])
    words = re.findall(r"[a-z']+", out.lower())
    assert len(words) >= 10
    assert sum(w in known for w in words) / len(words) >= 0.8, out


def test_heldout_loss_matches_cross_entropy_by_hand(shipped, text):
    model, vocab, _ = shipped
    held = split_text(text)[1][:2 * model.max_len + 1]
    ids = torch.tensor(vocab.encode(held))
    with torch.no_grad():
        w = ids[:2 * model.max_len + 1]
        x = torch.stack([w[:model.max_len], w[model.max_len:2 * model.max_len]])
        y = torch.stack([w[1:model.max_len + 1], w[model.max_len + 1:]])
        logp = model(x).log_softmax(-1).gather(-1, y[..., None])
    assert math.isclose(heldout_loss(model, vocab, held), -logp.mean().item(), rel_tol=1e-5)
    with pytest.raises(ValueError, match="shorter than one window"):
        heldout_loss(model, vocab, held[:10])
