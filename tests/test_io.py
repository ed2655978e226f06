"""d2l.save / d2l.load: models and vocabularies round-trip through a file that
torch.load(weights_only=True) reads; the positional-encoding table is not stored."""
import os
import subprocess
import sys

import pytest
import torch

import d2lmini as d2l


def _models():
    torch.manual_seed(0)
    return {
        "Transformer": d2l.Transformer(14, 13, d_model=16, num_heads=2, num_layers=2, d_ff=32,
                                       dropout=0.1, max_len=64, pos_encoding="sinusoidal"),
        "GPT": d2l.GPT(15, d_model=16, num_heads=2, num_layers=2, d_ff=32, max_len=24),
        "BERT": d2l.BERT(15, 16, 2, 1, 32, 20),
        "GRUSeq2Seq": d2l.GRUSeq2Seq(14, 13, embed_size=8, num_hiddens=16),
    }


def _outputs(model, name):
    torch.manual_seed(1)
    src = torch.randint(4, 13, (3, 7))
    tgt = torch.randint(4, 13, (3, 5))
    with torch.no_grad():
        if name in ("Transformer", "GRUSeq2Seq"):
            return model(src, tgt)
        if name == "BERT":
            return model(src)
        return model(src)


@pytest.mark.parametrize("name", ["Transformer", "GPT", "BERT", "GRUSeq2Seq"])
def test_round_trip_same_outputs_same_vocab(tmp_path, name):
    model = _models()[name].eval()
    vocab = d2l.Vocab(set("the quick brown fox"))
    path = tmp_path / f"{name}.pt"
    d2l.save(path, model, vocab=vocab)
    raw = torch.load(path, weights_only=True)           # plain data only: safe to load
    assert raw["class"] == name and raw["config"] == model.config
    loaded, v2 = d2l.load(path)
    assert type(loaded) is type(model) and not loaded.training
    assert v2 == vocab and v2.idx_to_token == vocab.idx_to_token
    assert torch.equal(_outputs(model, name), _outputs(loaded, name))
    for k, t in model.state_dict().items():
        assert torch.equal(t, loaded.state_dict()[k]), k


def test_vocab_containers_round_trip(tmp_path):
    a, b = d2l.Vocab("abc"), d2l.Vocab("xyz")
    model = _models()["Transformer"]
    for vocab in ((a, b), [a, b], {"src": a, "tgt": b}, None):
        d2l.save(tmp_path / "m.pt", model, vocab=vocab)
        assert d2l.load(tmp_path / "m.pt")[1] == vocab


def test_positional_table_is_not_stored_and_max_len_can_change(tmp_path):
    small = d2l.Transformer(14, 13, d_model=16, num_heads=2, num_layers=1, d_ff=32,
                            max_len=5000)
    keys = small.state_dict().keys()
    assert not any(k.endswith(".pe") for k in keys)
    d2l.save(tmp_path / "t.pt", small)
    # the file holds weights, not the 5000 x 16 table (320 KB in float32)
    assert os.path.getsize(tmp_path / "t.pt") < 5000 * 16 * 4
    other = d2l.Transformer(14, 13, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=50)
    other.load_state_dict(small.state_dict())           # another max_len: loads
    assert other.encoder.pos_encoding.pe.shape == (1, 50, 16)
    # a state dict from before (with the table) still loads
    old = dict(small.state_dict())
    old["encoder.pos_encoding.pe"] = torch.zeros(1, 5000, 16)
    other.load_state_dict(old)
    assert other.encoder.pos_encoding.pe.abs().sum() > 0        # rebuilt, not overwritten


def test_vocab_order_is_the_same_in_every_process():
    code = ("import d2lmini as d2l; print(d2l.Vocab(set('the quick brown fox jumps')).idx_to_token)")
    outs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                text=True, check=True).stdout)
    assert len(outs) == 1


def test_save_and_load_errors(tmp_path):
    with pytest.raises(TypeError, match=r"save supports the models.*got Linear"):
        d2l.save(tmp_path / "x.pt", torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match=r"vocab must be a d2l.Vocab.*got str"):
        d2l.save(tmp_path / "x.pt", _models()["GPT"], vocab="abc")
    torch.save({"w": torch.zeros(2)}, tmp_path / "sd.pt")
    with pytest.raises(ValueError, match=r"not a d2lmini checkpoint"):
        d2l.load(tmp_path / "sd.pt")
    with pytest.raises(TypeError, match=r"path must be a file name, got int"):
        d2l.load(3)
    model = _models()["GPT"]
    model.config = dict(model.config, extra=torch.zeros(1))
    with pytest.raises(TypeError, match=r"config\['extra'\].*Tensor"):
        d2l.save(tmp_path / "x.pt", model)


def test_load_to_a_device(tmp_path):
    d2l.save(tmp_path / "m.pt", _models()["GPT"])
    model, vocab = d2l.load(tmp_path / "m.pt", device="cpu")
    assert vocab is None and next(model.parameters()).device.type == "cpu"
