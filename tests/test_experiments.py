"""d2lmini.experiments (the Runner and the chapters' variants) and d2lmini.seqtasks."""
import pytest
import torch

from d2lmini import experiments, seqtasks


def _square(x):
    return x * x


def test_runner_returns_results_by_name_in_job_order():
    r = experiments.Runner(workers=2)
    r.submit("sq", _square, [dict(x=i) for i in range(5)])
    r.submit("more", _square, [dict(x=10)])
    assert r["sq"] == [0, 1, 4, 9, 16] and r["more"] == [100]
    assert len(r.seconds["sq"]) == 5 and all(s >= 0 for s in r.seconds["sq"])
    assert "sq" in r and r.names() == ["sq", "more"]
    r.close()


def test_runner_in_a_worker_gives_the_numbers_of_this_process():
    job = dict(model="gru", seed=3, steps=5, max_distance=6, eval_distances=(2, 6),
               n_eval=50, batch_size=8)
    here = experiments.recall_run(**job)
    r = experiments.Runner(workers=2)
    r.submit("a", experiments.recall_run, [job])
    there = r["a"][0]
    r.close()
    assert there["accuracy"] == here["accuracy"]
    assert there["step_loss"] == pytest.approx(here["step_loss"], abs=1e-6)


def test_runner_refuses_bad_input():
    r = experiments.Runner(workers=1)
    with pytest.raises(ValueError, match="already submitted"):
        r.submit("x", _square, [dict(x=1)])
        r.submit("x", _square, [dict(x=1)])
    with pytest.raises(ValueError, match="non-empty list"):
        r.submit("y", _square, [])
    with pytest.raises(TypeError, match="fn must be a function"):
        r.submit("z", 3, [dict(x=1)])
    with pytest.raises(KeyError, match="no runs named 'nope'"):
        r["nope"]


def _tiny(**kw):
    torch.manual_seed(0)
    return experiments.build_transformer(12, 10, d_model=16, num_heads=2, num_layers=1,
                                         d_ff=32, dropout=0.0, max_len=40, **kw).eval()


def test_build_transformer_variants_keep_the_parameters_and_change_one_thing():
    base, lin, gelu = _tiny(), _tiny(activation="identity"), _tiny(activation="gelu")
    for m in (lin, gelu):
        assert all(torch.equal(a, b) for a, b in zip(base.parameters(), m.parameters()))
    x = torch.randn(2, 5, 16)
    ffn = lin.encoder.blocks[0].ffn
    want = ffn.linear2(ffn.linear1(x))                     # no activation in between
    assert torch.allclose(ffn(x), want, atol=1e-6)
    assert torch.allclose(gelu.encoder.blocks[0].ffn(x),
                          ffn.linear2(torch.nn.functional.gelu(ffn.linear1(x))), atol=1e-6)
    drop = _tiny(ffn_dropout=0.3)
    assert drop.encoder.blocks[0].ffn.dropout.p == 0.3
    assert drop.encoder.blocks[0].dropout1.p == 0.0        # only the FFN's hidden units
    with pytest.raises(ValueError, match="activation must be one of"):
        _tiny(activation="swish")


def test_growing_pe_scales_each_position_and_keeps_its_direction():
    base, grow = _tiny(), _tiny(pe_growth=True)
    pb, pg = base.encoder.pos_encoding.pe[0], grow.encoder.pos_encoding.pe[0]
    factor = 2 * torch.arange(1, 41, dtype=pb.dtype) / 30
    assert torch.allclose(pg, pb * factor[:, None])
    assert torch.equal(grow.decoder.pos_encoding.pe, base.decoder.pos_encoding.pe)
    with pytest.raises(ValueError, match="sinusoidal"):
        _tiny(pe_growth=True, pos_encoding="learned")


def test_no_residual_block_is_the_block_without_its_shortcuts():
    m = _tiny(residual=False)
    blk, x = m.encoder.blocks[0], torch.randn(2, 5, 16)
    h = blk.norm1(blk.self_attn(x, x, x))
    assert torch.allclose(blk(x), blk.norm2(blk.ffn(h)), atol=1e-6)


def test_position_probe_reads_positions_and_not_noise():
    g = torch.Generator().manual_seed(0)
    N, S, d = 200, 10, 16
    src = torch.randint(1, 5, (N, S), generator=g)
    onehot = torch.nn.functional.one_hot(torch.arange(S), d).float().expand(N, S, d)
    assert experiments.position_probe(onehot, src) == 1.0
    noise = torch.randn(N, S, d, generator=g)
    assert experiments.position_probe(noise, src) < 0.3
    with pytest.raises(ValueError, match="expected states"):
        experiments.position_probe(noise[:, :5], src)


def test_recall_batch_marks_the_token_to_recall():
    x, y = experiments.recall_batch(50, 7, vocab=8, generator=torch.Generator().manual_seed(0))
    assert x.shape == (50, 8) and torch.equal(y, x[:, 0] - 8)
    assert (x[:, 1:] < 8).all() and (x[:, 0] >= 8).all()
    x, y = experiments.recall_batch(50, 7, marked=False)
    assert torch.equal(y, x[:, 0]) and (x < 8).all()


# ---------------------------------------------------------------- seqtasks
def test_retrieval_batch_answers_with_the_value_of_the_query_key():
    k, v, q, y = seqtasks.retrieval_batch(64, pairs=5, keys=9, values=7,
                                          generator=torch.Generator().manual_seed(0))
    assert k.shape == v.shape == (64, 5) and q.shape == y.shape == (64,)
    assert all(len(set(row.tolist())) == 5 for row in k)          # distinct keys
    hit = k == q[:, None]
    assert (hit.sum(1) == 1).all() and torch.equal(v[hit], y)
    with pytest.raises(ValueError, match="keys >= pairs"):
        seqtasks.retrieval_batch(4, pairs=5, keys=3)


def test_retrieval_scores_follow_their_formulas():
    k, v, q, _ = seqtasks.retrieval_batch(3, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    dot, raw = seqtasks.Retrieval("dot", d_k=64), seqtasks.Retrieval("dot-unscaled", d_k=64)
    raw.load_state_dict(dot.state_dict())
    assert torch.allclose(dot.scores(k, q) * 8, raw.scores(k, q), atol=1e-5)
    add = seqtasks.Retrieval("additive", d_k=4)
    qh, kh = add.W_q(add.key_embedding(q)), add.W_k(add.key_embedding(k))
    want = (torch.tanh(qh[:, None] + kh) @ add.w_v.weight[0])
    assert torch.allclose(add.scores(k, q), want, atol=1e-6)
    with pytest.raises(ValueError, match="score must be one of"):
        seqtasks.Retrieval("cosine")


def test_motif_labels_mean_the_bigram_occurs():
    x, y = seqtasks.motif_batch(500, generator=torch.Generator().manual_seed(0))
    for row, label in zip(x[:50], y[:50]):
        s = row.tolist()
        assert label == any(a == 0 and b == 1 for a, b in zip(s, s[1:]))
    assert 0.3 < y.float().mean() < 0.7                             # about balanced


@pytest.mark.parametrize("kind", seqtasks.MotifClassifier.KINDS)
def test_motif_classifiers_shapes_and_a_short_run(kind):
    net = seqtasks.MotifClassifier(kind)
    assert net(torch.randint(6, (3, 16))).shape == (3, 2)
    r = seqtasks.motif_run(kind, n_train=20, steps=3, n_test=30)
    assert 0 <= r["accuracy"] <= 1 and r["params"] > 0
    with pytest.raises(ValueError, match="kind must be one of"):
        seqtasks.MotifClassifier("lstm")


def test_depth_stack_residual_and_plain():
    torch.manual_seed(0)
    plain, res = seqtasks.DepthStack(3, residual=False), seqtasks.DepthStack(3)
    res.load_state_dict(plain.state_dict())
    x = torch.randn(4, 8)
    h = res.inp(x)
    for f, n in zip(res.fs, res.norms):
        h = n(h + f(h))
    assert torch.allclose(res(x), res.head(h), atol=1e-6)
    assert not torch.allclose(plain(x), res(x))
    r = seqtasks.depth_run(2, steps=5)
    assert len(r["step_loss"]) == 5 and r["train_loss"] > 0


# ---------------------------------------------------------------- new variants
def test_tanh_sigmoid_ffn_and_embedding_inits():
    x = torch.randn(2, 5, 16)
    for name, f in (("tanh", torch.tanh), ("sigmoid", torch.sigmoid)):
        ffn = _tiny(activation=name).encoder.blocks[0].ffn
        assert torch.allclose(ffn(x), ffn.linear2(f(ffn.linear1(x))), atol=1e-6)
    base = _tiny()
    scaled = _tiny(scale_embedding=False, embed_init="scaled")
    src = torch.randint(4, 12, (2, 6))
    # the factor folded into the init: the same model at the start
    assert torch.allclose(base.encoder.embed(src), scaled.encoder.embed(src), atol=1e-5)
    normal = _tiny(scale_embedding=False, embed_init="normal")
    assert 0.8 < normal.encoder.embedding.weight.std().item() < 1.2
    with pytest.raises(ValueError, match="embed_init"):
        _tiny(embed_init="xavier")


def test_alibi_slopes_and_bias_follow_press_et_al():
    assert torch.allclose(experiments.alibi_slopes(8),
                          torch.tensor([2.0 ** -(i + 1) for i in range(8)]))
    s6 = experiments.alibi_slopes(6)                 # not a power of 2: their rule
    assert torch.allclose(s6[:4], experiments.alibi_slopes(4))
    assert torch.allclose(s6[4:], experiments.alibi_slopes(8)[0::2][:2])
    b = experiments.alibi_bias(5, 2)
    assert b.shape == (2, 5, 5) and torch.equal(b, b.transpose(1, 2))
    assert b[0, 0, 3].item() == pytest.approx(-3 * 2 ** -4)


def test_rope_scores_depend_on_the_offset_only():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(16, generator=g), torch.randn(16, generator=g)
    dots = [float(experiments.rope(q.expand(p + 1, 16).contiguous())[p]
                  @ experiments.rope(k.expand(p + 4, 16).contiguous())[p + 3])
            for p in (0, 5, 40)]
    assert max(dots) - min(dots) < 1e-4
    x = torch.randn(2, 3, 7, 8, generator=g)
    assert torch.allclose(experiments.rope(x).norm(dim=-1), x.norm(dim=-1), atol=1e-5)


@pytest.mark.parametrize("scheme", ["alibi", "rope"])
def test_relative_encoder_fused_equals_slow_and_has_no_absolute_positions(scheme):
    from d2lmini.attention import set_fused_attention
    m = _tiny(relative=scheme, pos_encoding="sinusoidal")
    src = torch.randint(4, 12, (3, 7))
    src[0, 5:] = 0
    tgt = torch.randint(3, 10, (3, 4))
    slow = m(src, tgt)
    assert m.encoder.blocks[0].self_attn.attention_weights.shape == (3, 2, 7, 7)
    set_fused_attention(m, True)
    assert torch.allclose(m(src, tgt), slow, atol=1e-5)
    assert isinstance(m.encoder.pos_encoding, torch.nn.Identity)
    assert type(m.decoder.pos_encoding).__name__ == "PositionalEncoding"
    with pytest.raises(ValueError, match="relative must be"):
        _tiny(relative="t5")


def test_a_zero_bias_is_attention_without_positions():
    plain = _tiny(pos_encoding="none")
    zero = _tiny(relative="alibi", relative_fn=lambda T, h: torch.zeros(h, T, T))
    src = torch.randint(4, 12, (2, 6))
    assert torch.allclose(plain.encode(src)[0], zero.encode(src)[0], atol=1e-6)


def test_probe_chance_is_the_commonest_position():
    src = torch.tensor([[5, 5, 0, 0], [5, 5, 5, 0], [5, 0, 0, 0], [5, 5, 5, 5]] * 2)
    # scored half: rows 4..7, 10 real tokens, 4 at the commonest position 0
    assert experiments.probe_chance(src) == pytest.approx(0.4)


def test_lesion_skips_one_block_at_a_time(one_thread):
    from d2lmini import ablation
    data = ablation.DateData(n_train=100, n_test=30)
    torch.manual_seed(0)
    m = d2l_transformer(len(data.src_vocab), len(data.tgt_vocab))
    out = experiments.lesion(m, *data.test)
    assert len(out["without"]["encoder"]) == 2 == len(out["update"]["decoder"])
    assert out["loss"] == pytest.approx(ablation.evaluate(m, *data.test)["loss"])
    assert all(v > 0 for v in out["update"]["encoder"])
    assert "forward" not in vars(m.encoder.blocks[0])            # restored


def d2l_transformer(V_src, V_tgt):
    import d2lmini as d2l
    return d2l.Transformer(V_src, V_tgt, d_model=16, num_heads=2, num_layers=2,
                           d_ff=32, dropout=0.0, max_len=64)
