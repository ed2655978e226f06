"""A bad-input probe of the public API: every input a learner might get wrong on their own
data raises an error that names what was expected and what was given (issue 16), never a
silent wrong answer and never a raw error from deep inside torch.

Each case is (call, exception type, regex the message must match).  The regexes ask for the
name of the argument and the value or shape that was given.
"""
import pytest
import torch
from torch import nn

import d2lmini as d2l


def _mha_batch(B=3, T=3, d=8):
    torch.manual_seed(0)
    return d2l.MultiHeadAttention(d, 2).eval(), torch.randn(B, T, d)


def _tiny_transformer(**kw):
    cfg = dict(d_model=8, num_heads=2, num_layers=1, d_ff=16, dropout=0.0)
    cfg.update(kw)
    return d2l.Transformer(12, 12, **cfg)


# ------------------------------------------------------------------ attention masks
def test_padding_mask_of_shape_BT_is_refused_by_multi_head_attention():
    # B == T: a (B, T) mask would broadcast as (T_q, T_k) and give a wrong answer silently
    mha, x = _mha_batch(B=3, T=3)
    real = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1]], dtype=torch.bool)  # (B, T)
    with pytest.raises(ValueError, match=r"shape \(3, 3\).*padding_mask"):
        mha(x, x, x, real)
    # the documented 4-D and 3-D forms agree with each other
    four = mha(x, x, x, real[:, None, None, :])
    three = mha(x, x, x, real[:, None, :])
    assert torch.allclose(four, three)


def test_padding_mask_of_shape_BT_is_refused_by_sdpa_and_masked_softmax():
    q = torch.randn(3, 3, 4)
    real = torch.ones(3, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"mask of shape \(3, 3\).*scores of shape \(3, 3, 3\)"):
        d2l.scaled_dot_product_attention(q, q, q, real)
    with pytest.raises(ValueError, match=r"expected a 3-D bool mask"):
        d2l.masked_softmax(torch.randn(3, 3, 3), real)
    with pytest.raises(ValueError, match=r"boolean.*got torch.int64"):
        d2l.scaled_dot_product_attention(q, q, q, real.long()[:, None])


@pytest.mark.parametrize("shape", [(2, 1, 1, 3), (1, 1, 3, 3, 1), (3,)])
def test_multi_head_attention_mask_of_wrong_shape(shape):
    mha, x = _mha_batch()
    with pytest.raises(ValueError, match=r"mask"):
        mha(x, x, x, torch.ones(shape, dtype=torch.bool))


def test_mismatched_batch_and_dtype_in_attention():
    mha, x = _mha_batch(B=3)
    with pytest.raises(ValueError, match=r"batch size.*query \(3, 3, 8\), key \(2, 3, 8\)"):
        mha(x, x[:2], x[:2])
    with pytest.raises(ValueError, match=r"share one dtype.*torch.float32.*torch.float64"):
        mha(x, x.double(), x.double())
    with pytest.raises(TypeError, match=r"float64 but the module's weights are torch.float32"):
        mha(x.double(), x.double(), x.double())
    q = torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match=r"leading.*q \(2, 3, 4\), k \(3, 3, 4\)"):
        d2l.scaled_dot_product_attention(q, torch.randn(3, 3, 4), torch.randn(3, 3, 4))
    with pytest.raises(ValueError, match=r"share one dtype"):
        d2l.scaled_dot_product_attention(q, q.double(), q.double())
    add = d2l.AdditiveAttention(4, 4, 8)
    with pytest.raises(ValueError, match=r"batch sizes differ"):
        add(q, torch.randn(3, 3, 4), torch.randn(3, 3, 4))


# ------------------------------------------------------------------ sizes of modules
@pytest.mark.parametrize("make, pattern", [
    (lambda: d2l.MultiHeadAttention(0, 1), r"d_model must be a positive int, got 0"),
    (lambda: d2l.MultiHeadAttention(-4, 2), r"d_model must be a positive int, got -4"),
    (lambda: d2l.MultiHeadAttention(8.0, 2), r"d_model must be an int, got float 8.0"),
    (lambda: d2l.MultiHeadAttention(8, 2.0), r"num_heads must be an int, got float"),
    (lambda: d2l.MultiHeadAttention(8, 2, dropout=1.5), r"dropout.*\[0, 1\), got 1.5"),
    (lambda: d2l.AdditiveAttention(4, -1, 8), r"key_size must be a positive int, got -1"),
    (lambda: d2l.PositionWiseFFN(8, -3), r"d_ff must be a positive int, got -3"),
    (lambda: d2l.PositionalEncoding(8, max_len=2.5), r"max_len must be an int, got float"),
    (lambda: d2l.LayerNorm(-2), r"normalized_shape.*got -2"),
    (lambda: d2l.BatchNorm(2.5), r"num_features must be a positive int, got 2.5"),
    (lambda: _tiny_transformer(num_layers=0), r"num_layers must be a positive int, got 0"),
    (lambda: _tiny_transformer(d_model=-8), r"d_model must be a positive int, got -8"),
    (lambda: _tiny_transformer(num_heads=3), r"d_model=8 is not divisible by num_heads=3"),
    (lambda: _tiny_transformer(pad_id=12), r"pad_id must be an id in both vocab.*0\.\.11, got 12"),
    (lambda: _tiny_transformer(pad_id=-1), r"pad_id.*got -1"),
    (lambda: _tiny_transformer(d_ff=2.5), r"d_ff must be an int >= 0.*got 2.5"),
    (lambda: _tiny_transformer(dropout=float("nan")), r"dropout.*got nan"),
    (lambda: _tiny_transformer(norm_first="yes"), r"norm_first must be True or False"),
    (lambda: d2l.Transformer(0, 12), r"src_vocab_size must be a positive int, got 0"),
    (lambda: d2l.GRUSeq2Seq(10, 10, pad_id=10), r"pad_id must be an id.*got 10"),
    (lambda: d2l.synthetic_data(torch.ones(2), 0.0, 2.5), r"num_examples must be an int, got float"),
    (lambda: next(d2l.data_iter(-1, torch.ones(4, 2), torch.ones(4))),
     r"batch_size must be a positive int, got -1"),
    (lambda: d2l.causal_mask(2.5), r"T must be an int, got float"),
    (lambda: d2l.padding_mask(torch.ones(2, 3), 0), r"tokens must hold integer ids"),
])
def test_bad_sizes_are_named(make, pattern):
    with pytest.raises((ValueError, TypeError), match=pattern):
        make()


# ------------------------------------------------------------------ decoding
def test_greedy_decode_wants_an_encoder_decoder():
    gpt = d2l.GPT(10, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=16)
    with pytest.raises(TypeError, match=r"encoder-decoder.*got GPT.*d2l.generate"):
        d2l.greedy_decode(gpt, torch.ones(1, 3, dtype=torch.long), 4, 1, 2)
    with pytest.raises(TypeError, match=r"encoder-decoder.*got Linear"):
        d2l.greedy_decode(nn.Linear(2, 2), torch.ones(1, 3, dtype=torch.long), 4, 1, 2)


def test_greedy_decode_refuses_the_pad_id_as_bos_or_eos():
    with pytest.raises(ValueError, match=r"bos_id=0 is the model's pad id"):
        d2l.greedy_decode(_tiny_transformer(), torch.tensor([[4, 5]]), 3, 0, 2)
    with pytest.raises(ValueError, match=r"pad_id must be an id >= 0, got -1"):
        d2l.pad_batch([[4, 5], [6]], pad_id=-1)


def test_greedy_decode_refuses_nan_logits():
    model = _tiny_transformer()
    with torch.no_grad():
        model.generator.bias.fill_(float("nan"))
    with pytest.raises(ValueError, match=r"logits are NaN"):
        d2l.greedy_decode(model, torch.tensor([[4, 5, 6]]), 5, 1, 2)


# ------------------------------------------------------------------ optimisation settings
def _linear_data():
    torch.manual_seed(0)
    X = torch.randn(16, 2)
    return nn.Linear(2, 1), [(X[:8], X[:8].sum(1, keepdim=True)), (X[8:], X[8:].sum(1, keepdim=True))]


@pytest.mark.parametrize("kw, exc, pattern", [
    (dict(grad_clip=-1), ValueError, r"grad_clip must be a finite number > 0, got -1"),
    (dict(grad_clip=0), ValueError, r"grad_clip must be a finite number > 0, got 0"),
    (dict(grad_clip=float("nan")), ValueError, r"grad_clip.*got nan"),
    (dict(max_steps=0), ValueError, r"max_steps must be >= 1, got 0"),
    (dict(max_steps=-5), ValueError, r"max_steps must be >= 1, got -5"),
    (dict(max_steps=2.5), TypeError, r"max_steps must be an int, got float 2.5"),
    (dict(num_epochs=1.5), TypeError, r"num_epochs must be an int, got float"),
    (dict(max_seconds=-1.0), ValueError, r"max_seconds must be a finite number >= 0"),
    (dict(callbacks=lambda net, h: None), TypeError, r"callbacks must be a list.*callbacks=\[cb\]"),
    (dict(callbacks=[3]), TypeError, r"each callback must be a function.*got int"),
    (dict(scheduler=3), TypeError, r"scheduler must have a .step\(\) method or be a function"),
])
def test_train_rejects_bad_settings(kw, exc, pattern):
    net, data = _linear_data()
    with pytest.raises(exc, match=pattern):
        d2l.train(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.1), data,
                  progress=False, **kw)


@pytest.mark.parametrize("lr", [float("nan"), float("inf"), -0.1])
def test_bad_learning_rates_are_refused(lr):
    w = torch.zeros(2, requires_grad=True)
    (w.sum()).backward()
    with pytest.raises(ValueError, match=r"lr must be (positive|a finite number > 0), got"):
        d2l.sgd([w], lr)
    net, data = _linear_data()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    opt.param_groups[0]["lr"] = lr  # torch itself lets NaN through
    with pytest.raises(ValueError, match=r"learning rate must be a finite number >= 0, got lr="):
        d2l.train(net, nn.MSELoss(), opt, data, progress=False)


def test_train_rejects_single_tensor_batches_and_wrong_dtypes():
    net, data = _linear_data()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with pytest.raises(TypeError, match=r"tuple \(\*inputs, target\).*tensor of shape \(8, 2\)"):
        d2l.train(net, nn.MSELoss(), opt, [X for X, _ in data], progress=False)
    with pytest.raises(ValueError, match=r"at least 2 items, got 1"):
        d2l.train(net, nn.MSELoss(), opt, [(X,) for X, _ in data], progress=False)
    with pytest.raises(TypeError, match=r"torch.float64 but the model's parameters are torch.float32"):
        d2l.train(net, nn.MSELoss(), opt, [(X.double(), y.double()) for X, y in data],
                  progress=False)
    with pytest.raises(TypeError, match=r"data must be a list of .*got Tensor"):
        d2l.train(net, nn.MSELoss(), opt, data[0][0], progress=False)


def test_train_refuses_a_target_that_broadcasts():
    # (8, 1) outputs against (8,) targets: MSE over an (8, 8) grid, a silent wrong loss
    net, data = _linear_data()
    flat = [(X, y.flatten()) for X, y in data]
    with pytest.raises(ValueError, match=r"output \(8, 1\) and the target \(8,\).*\(8, 8\)"):
        d2l.train(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.1), flat,
                  progress=False)
    # d2l.squared_loss reshapes y to the output's shape itself: the same numbers either way
    losses = []
    for batches in (flat, data):
        torch.manual_seed(1)
        m = nn.Linear(2, 1)
        h = d2l.train(m, d2l.squared_loss, torch.optim.SGD(m.parameters(), lr=0.1), batches,
                      progress=False)
        losses.append(h.step_loss)
    assert losses[0] == losses[1]


# ------------------------------------------------------------------ text helpers
@pytest.mark.parametrize("call, exc, pattern", [
    (lambda: d2l.Vocab(5), TypeError, r"iterable of strings.*got int"),
    (lambda: d2l.Vocab([["a", "b"], ["c"]]), TypeError, r"strings, got list.*one flat list"),
    (lambda: d2l.Vocab([1, 2, 3]), TypeError, r"tokens must be strings, got int 1"),
    (lambda: d2l.Vocab("abc", min_freq=0), ValueError, r"min_freq must be a positive int, got 0"),
    (lambda: d2l.Vocab("abc").encode([["a"]]), TypeError, r"one sequence at a time"),
    (lambda: d2l.Vocab("abc").decode([4, 5.0]), TypeError, r"ids must be integers, got float"),
    (lambda: d2l.Vocab("abc").decode(torch.zeros(3)), ValueError, r"integer token ids.*float32"),
    (lambda: d2l.pad_batch(["abc", "de"]), TypeError, r"use vocab.encode first.*'abc'"),
    (lambda: d2l.pad_batch([[1, 2], [3.5]]), TypeError, r"integer ids, got float 3.5 in sequence 1"),
    (lambda: d2l.pad_batch([[1, 2]], side="middle"), ValueError, r'side must be "right" or "left"'),
    (lambda: d2l.pad_batch(7), TypeError, r"seqs must be a list of id sequences, got int"),
    (lambda: d2l.bucket_batches([[1]], [[1]], [[1]], 2), TypeError, r"src must be a torch.Tensor"),
    (lambda: d2l.bucket_batches(torch.ones(4, 3), torch.ones(4, 2, dtype=torch.long),
                                torch.ones(4, 2, dtype=torch.long), 2),
     ValueError, r"src must be a 2-D tensor of integer ids, got a torch.float32"),
    (lambda: d2l.DateTranslation(2.5), TypeError, r"n \(the number of pairs\) must be an int, got float 2.5"),
    (lambda: d2l.DateTranslation("10"), TypeError, r"must be an int, got str"),
    (lambda: d2l.DateTranslation(10, formats="dd/mm/yy"), TypeError, r"formats must be a list"),
    (lambda: d2l.DateTranslation(10, exclude=[1]), TypeError, r"exclude must be another DateTranslation"),
    (lambda: d2l.pairs_to_tensors(["ab"]), TypeError, r"pair 0 must be a \(source, target\) pair"),
    (lambda: d2l.pairs_to_tensors([]), ValueError, r"pairs is empty"),
    (lambda: d2l.lm_windows([1, 2, 3], 3), ValueError, r"3 tokens.*block_size=3.*at least 4"),
    (lambda: d2l.lm_windows(torch.ones(10), 3), ValueError, r"ids must be a 1-D tensor of integer ids"),
    (lambda: d2l.sequence_loss(torch.randn(2, 3, 5), torch.zeros(2, 4, dtype=torch.long)),
     ValueError, r"logits \(B, T, V\) and targets \(B, T\) disagree.*\(2, 3, 5\).*\(2, 4\)"),
    (lambda: d2l.sequence_loss(torch.randn(6, 5), torch.zeros(6, dtype=torch.long)),
     ValueError, r"logits must be 3-D, got shape \(6, 5\)"),
    (lambda: d2l.sequence_loss(torch.randn(2, 3, 5), torch.zeros(2, 3, dtype=torch.long),
                               label_smoothing=float("nan")), ValueError, r"smoothing must be in \[0, 1\]"),
    (lambda: d2l.noam_schedule(64, 10, factor=float("nan")), ValueError, r"factor must be a finite"),
    (lambda: d2l.warmup_cosine_schedule(1, 10, final=2.0), ValueError, r"final must be a multiplier"),
])
def test_text_and_loss_helpers_reject_wrong_input(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


# ------------------------------------------------------------------ attention maps
def test_empty_attention_maps_are_refused():
    from d2lmini.maps import as_attention_maps
    with pytest.raises(TypeError, match=r"non-empty dict"):
        as_attention_maps({})
    with pytest.raises(ValueError, match=r"empty: shape \(1, 1, 0, 0\)"):
        as_attention_maps(torch.zeros(1, 1, 0, 0))
    with pytest.raises(ValueError, match=r"empty"):
        as_attention_maps({"self": torch.zeros(0, 3, 3)})


# ------------------------------------------------------------------ rnn: checks on the device
def test_rnn_token_check_uses_the_shared_device_check(monkeypatch):
    import d2lmini.rnn as rnn
    with pytest.raises(ValueError, match=r"token id 10 is out of range.*size 10"):
        d2l.GRUSeq2Seq(10, 12)(torch.tensor([[4, 10]]), torch.tensor([[1, 4]]))
    calls = []
    monkeypatch.setattr(rnn, "check_token_ids", lambda t, V: calls.append((tuple(t.shape), V)))
    model = d2l.GRUSeq2Seq(10, 12, embed_size=4, num_hiddens=8)
    model(torch.tensor([[4, 5, 6]]), torch.tensor([[1, 4]]))
    assert calls == [((1, 3), 10), ((1, 2), 12)]


def test_transformer_check_is_assertion_on_the_device_without_host_sync(monkeypatch):
    # on CUDA the check is torch._assert_async (no .item()); simulated here by asking the
    # CPU path to take the device branch
    import d2lmini.transformer as tr
    monkeypatch.setattr(tr, "_compiling", lambda: True)
    seen = []
    monkeypatch.setattr(torch, "_assert_async", lambda cond, msg="": seen.append(msg))
    tr.check_token_ids(torch.tensor([[1, 2]]), 5)
    assert seen and "out of range" in seen[0]
