"""d2l.BERT, d2l.mask_tokens and d2l.bert_from_hf against their references."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import d2lmini as d2l


def small_bert(seed=0, **kw):
    torch.manual_seed(seed)
    args = dict(vocab_size=30, d_model=32, num_heads=4, num_layers=2, d_ff=64, max_len=24)
    args.update(kw)
    return d2l.BERT(**args)


# ------------------------------------------------------------------ the encoder stack
def test_encoder_stack_equals_nn_transformer_encoder_forward_and_gradient(one_thread):
    """BERT's blocks are post-norm encoder layers with GELU: copy the weights of
    nn.TransformerEncoder into them; same output and same gradients."""
    torch.manual_seed(0)
    d, h, ff, L, eps = 32, 4, 64, 3, 1e-12
    layer = nn.TransformerEncoderLayer(d, h, ff, dropout=0.0, activation="gelu",
                                       batch_first=True, layer_norm_eps=eps)
    ref = nn.TransformerEncoder(layer, L, enable_nested_tensor=False).double()
    for p in ref.parameters():                          # not the default identical copies
        nn.init.normal_(p, std=0.2)
    model = small_bert(num_layers=L).double()
    for i, blk in enumerate(model.blocks):
        blk.load_state_dict(d2l.state_dict_from_torch(ref.layers[i].state_dict()))
    tokens = torch.randint(1, 30, (3, 9))
    tokens[1, 6:] = 0                                   # right-padded row
    x = model.embed(tokens).detach()
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    ours = x1
    for blk in model.blocks:
        ours = blk(ours, (tokens != 0)[:, None, None, :])
    theirs = ref(x2, src_key_padding_mask=tokens == 0)
    # the whole model from tokens gives the same hidden states as its own blocks
    assert torch.allclose(model(tokens), ours, atol=1e-12)
    real = (tokens != 0)[..., None]
    assert (ours - theirs).mul(real).abs().max() < 1e-10
    w = torch.randn_like(ours) * real
    (ours * w).sum().backward()
    (theirs * w).sum().backward()
    assert (x1.grad - x2.grad).abs().max() < 1e-10
    ref_grads = d2l.state_dict_from_torch(
        {f"{k}": p.grad for k, p in ref.layers[1].named_parameters()})
    for k, p in model.blocks[1].named_parameters():
        assert (p.grad - ref_grads[k]).abs().max() < 1e-10, k


def test_ffn_uses_gelu_and_block_is_post_norm():
    model = small_bert()
    x = torch.linspace(-3, 3, 7)
    assert torch.equal(model.blocks[0].ffn.activation(x), F.gelu(x))
    assert not model.blocks[0].norm_first
    assert model.blocks[0].norm1.eps == 1e-12


# ------------------------------------------------------------------ Hugging Face
CONFIGS = [dict(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=64, max_position_embeddings=40),
           dict(vocab_size=97, hidden_size=48, num_hidden_layers=3, num_attention_heads=3,
                intermediate_size=80, max_position_embeddings=24, type_vocab_size=3,
                hidden_act="gelu_new", pad_token_id=1)]


@pytest.mark.parametrize("i", range(len(CONFIGS)))
def test_port_from_hugging_face_bert(i):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(**CONFIGS[i])
    torch.manual_seed(i)
    for cls in (transformers.BertModel, transformers.BertForMaskedLM):
        hf = cls(cfg).eval()
        ours = d2l.bert_from_hf(hf).eval()
        assert ours.config["num_layers"] == cfg.num_hidden_layers
        assert ours.pad_id == cfg.pad_token_id
        V, pad = cfg.vocab_size, cfg.pad_token_id
        ids = torch.randint(2, V, (3, 13))
        ids[2, 8:] = pad                                            # right padding
        seg = torch.randint(0, cfg.type_vocab_size, ids.shape)
        with torch.no_grad():
            out = hf(ids, attention_mask=(ids != pad).long(), token_type_ids=seg)
            hidden = ours(ids, seg)
        if cls is transformers.BertModel:
            assert (out.last_hidden_state - hidden).abs().max() < 1e-5
            assert (out.pooler_output - ours.pooled(hidden)).abs().max() < 1e-5
        else:
            assert (out.logits - ours.mlm_logits(hidden)).abs().max() < 1e-5
            # without pads and segments: Hugging Face's defaults are ours
            x = torch.randint(2, V, (2, 7))
            with torch.no_grad():
                assert (hf(x).logits - ours.mlm_logits(ours(x))).abs().max() < 1e-5


def test_port_refuses_what_it_cannot_hold():
    transformers = pytest.importorskip("transformers")
    with pytest.raises(TypeError, match="BertModel"):
        d2l.bert_from_hf(nn.Linear(2, 2))
    cfg = transformers.BertConfig(**CONFIGS[0], hidden_act="silu")
    with pytest.raises(ValueError, match="hidden_act"):
        d2l.bert_from_hf(transformers.BertModel(cfg))


# ------------------------------------------------------------------ behaviour
def test_bidirectional_unlike_gpt():
    """Changing the last token changes every earlier position's output in BERT; in a
    GPT (causal) no earlier position moves."""
    bert = small_bert().double().eval()
    torch.manual_seed(1)
    gpt = d2l.GPT(30, d_model=32, num_heads=4, num_layers=2, d_ff=64, max_len=24).double().eval()
    x = torch.randint(1, 30, (2, 10))
    y = x.clone()
    y[:, -1] = x[:, -1] % 29 + 1                                       # another real token
    with torch.no_grad():
        moved_bert = (bert(x) - bert(y))[:, :-1].abs().amax(-1)         # (2, 9)
        moved_gpt = (gpt(x) - gpt(y))[:, :-1].abs().amax(-1)
    assert (moved_bert > 1e-6).all()
    assert (moved_gpt < 1e-12).all()


def test_padding_changes_nothing_for_real_tokens():
    model = small_bert().double().eval()
    x = torch.randint(1, 30, (3, 8))
    seg = torch.randint(0, 2, (3, 8))
    with torch.no_grad():
        base = model(x, seg)
        right = model(F.pad(x, (0, 5)), F.pad(seg, (0, 5)))
        left = model(F.pad(x, (4, 0)), F.pad(seg, (4, 0)))
    assert (right[:, :8] - base).abs().max() < 1e-12
    assert (left[:, 4:] - base).abs().max() < 1e-12
    # and the pads matter without the mask: another pad id makes them real tokens
    other = small_bert(pad_id=29).double().eval()
    with torch.no_grad():
        assert (other(F.pad(x, (0, 5)))[:, :8] - other(x)).abs().max() > 1e-6


def test_segments_change_the_output_and_default_to_zero():
    model = small_bert().eval()
    x = torch.randint(1, 30, (2, 6))
    with torch.no_grad():
        assert torch.equal(model(x), model(x, torch.zeros_like(x)))
        assert not torch.allclose(model(x), model(x, torch.ones_like(x)))


def test_heads_shapes_and_tied_mlm_matrix():
    model = small_bert()
    x = torch.randint(1, 30, (2, 6))
    hidden = model(x)
    assert hidden.shape == (2, 6, 32)
    logits = model.mlm_logits(hidden)
    assert logits.shape == (2, 6, 30) and model.pooled(hidden).shape == (2, 32)
    assert model.pooled(hidden).abs().max() <= 1
    logits.sum().backward()         # the MLM gradient reaches the token embedding directly
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == sum(p.numel() for p in model.state_dict().values())  # no extra copy
    assert model.token_embedding.weight.grad is not None


def test_config_rebuilds_the_model():
    model = small_bert(dropout=0.1, pad_id=3)
    rebuilt = d2l.BERT(**model.config)
    rebuilt.load_state_dict(model.state_dict())
    assert all(isinstance(v, (int, float, str, type(None))) for v in model.config.values())
    x = torch.randint(0, 30, (2, 5))
    with torch.no_grad():
        assert torch.equal(model.eval()(x), rebuilt.eval()(x))


def test_attention_maps_look_both_ways():
    model = small_bert().eval()
    x = torch.randint(1, 30, (2, 7))
    x[1, 5:] = 0
    maps = model.attention_maps(x)
    w, m = maps["self"], maps.masks["self"]
    assert w.shape == (2, 2, 4, 7, 7) and m.shape == (2, 4, 7, 7)
    assert torch.allclose(w.sum(-1), torch.ones(2, 2, 4, 7))
    assert w[:, 0].triu(1).sum() > 0                           # queries see later keys
    assert (w[:, 1, :, :, 5:] == 0).all()                      # nobody sees the pads
    assert not m[1, :, 5:].any() and m[0].all()


def test_clear_errors():
    model = small_bert()
    x = torch.randint(1, 30, (2, 5))
    with pytest.raises(ValueError, match="out of range"):
        model(torch.full((1, 3), 30))
    with pytest.raises(ValueError, match="max_len=24"):
        model(torch.ones(1, 25, dtype=torch.long))
    with pytest.raises(TypeError, match="integer ids"):
        model(x.float())
    with pytest.raises(ValueError, match="2-D"):
        model(x[0])
    with pytest.raises(ValueError, match="segments must be a tensor of the tokens' shape"):
        model(x, torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="num_segments=2"):
        model(x, torch.full_like(x, 2))
    with pytest.raises(ValueError, match="d_model"):
        model.mlm_logits(torch.randn(2, 5, 16))
    with pytest.raises(ValueError, match="not divisible"):
        d2l.BERT(30, 30, 4, 1, 8, 10)
    with pytest.raises(ValueError, match="pad_id"):
        d2l.BERT(30, 32, 4, 1, 8, 10, pad_id=30)


# ------------------------------------------------------------------ the masking rule
SPECIALS = [0, 1, 2, 3, 4]          # <pad>, <bos>, <eos>, <unk>, [MASK]
MASK = 4


def test_masking_rule_proportions():
    V = 40
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(5, V, (400, 500), generator=g)
    tokens[:, 0], tokens[:, -1] = 1, 2                        # [CLS]-like, [SEP]-like
    tokens[:200, 400:-1] = 0                                  # padding
    eligible = tokens >= 5
    inputs, labels = d2l.mask_tokens(tokens, MASK, V, SPECIALS, p=0.15, generator=g)
    sel = labels != -100
    n = eligible.sum().item()
    assert abs(sel.sum().item() / n - 0.15) < 0.005
    assert torch.equal(labels[sel], tokens[sel])
    assert torch.equal(inputs[~sel], tokens[~sel])           # nothing else moves
    k = sel.sum().item()
    masked = (inputs[sel] == MASK).sum().item() / k
    kept = (inputs[sel] == tokens[sel]).sum().item() / k
    swapped = ((inputs[sel] != MASK) & (inputs[sel] != tokens[sel])).sum().item() / k
    n_normal = V - 5
    assert abs(masked - 0.8) < 0.01
    assert abs(kept - (0.1 + 0.1 / n_normal)) < 0.01          # a random id may be the same
    assert abs(swapped - 0.1 * (1 - 1 / n_normal)) < 0.01
    assert (inputs[sel & (inputs != MASK)] >= 5).all()        # random ids are never special


def test_special_tokens_and_pads_are_never_selected():
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 12, (50, 60), generator=g)
    inputs, labels = d2l.mask_tokens(tokens, 4, 12, [1, 2, 3, 4], p=1.0, generator=g)
    special = tokens <= 4                                     # pad id 0 is padding by default
    assert (labels[special] == -100).all() and (labels[~special] == tokens[~special]).all()
    assert torch.equal(inputs[special], tokens[special])
    # pad_id=None: id 0 is an ordinary token, selected like the others
    _, labels = d2l.mask_tokens(tokens, 4, 12, [1, 2, 3, 4], p=1.0, pad_id=None)
    assert (labels[tokens == 0] == 0).all()


def test_masking_is_seeded():
    tokens = torch.randint(5, 40, (8, 30))
    a = d2l.mask_tokens(tokens, MASK, 40, SPECIALS, generator=torch.Generator().manual_seed(3))
    b = d2l.mask_tokens(tokens, MASK, 40, SPECIALS, generator=torch.Generator().manual_seed(3))
    c = d2l.mask_tokens(tokens, MASK, 40, SPECIALS, generator=torch.Generator().manual_seed(4))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[1], c[1])
    assert a[1].dtype == torch.long and a[0].shape == tokens.shape


def test_masking_errors():
    t = torch.randint(5, 40, (2, 6))
    with pytest.raises(TypeError, match="integer ids"):
        d2l.mask_tokens(t.float(), MASK, 40, SPECIALS)
    with pytest.raises(ValueError, match="out of range"):
        d2l.mask_tokens(t + 40, MASK, 40, SPECIALS)
    with pytest.raises(ValueError, match="mask_id"):
        d2l.mask_tokens(t, 40, 40, SPECIALS)
    with pytest.raises(ValueError, match="probability"):
        d2l.mask_tokens(t, MASK, 40, SPECIALS, p=1.5)
    with pytest.raises(ValueError, match="special id"):
        d2l.mask_tokens(t, MASK, 40, [0, 99])
    with pytest.raises(TypeError, match="generator"):
        d2l.mask_tokens(t, MASK, 40, SPECIALS, generator=3)
    with pytest.raises(ValueError, match="every id"):
        d2l.mask_tokens(torch.zeros(2, 3, dtype=torch.long), 1, 3, [0, 1, 2])


def test_learns_a_small_masked_task(one_thread):
    """Each row is [CLS], four random words, then the same four again: a masked word is
    read off its twin in the other half, to its left or to its right.  After pre-training
    with mask_tokens, BERT fills one blank per row almost always (a guess: 1 in 16)."""
    torch.manual_seed(0)
    V, half = 21, 4                                     # ids 5..20 are words, 4 is [MASK]
    model = d2l.BERT(V, 48, 4, 2, 96, 2 * half + 1)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(0)

    def batch(n):
        a = torch.randint(5, V, (n, half), generator=g)
        return torch.cat([torch.full((n, 1), 1), a, a], 1)    # [CLS] a a

    for step in range(300):
        inputs, labels = d2l.mask_tokens(batch(64), MASK, V, SPECIALS, generator=g)
        loss = F.cross_entropy(model.mlm_logits(model(inputs)).transpose(1, 2), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    x = batch(500)
    where = torch.randint(1, 2 * half + 1, (500,), generator=g)     # one blank per row
    inputs = x.clone()
    inputs[torch.arange(500), where] = MASK
    with torch.no_grad():
        pred = model.mlm_logits(model(inputs)).argmax(-1)[torch.arange(500), where]
    acc = (pred == x[torch.arange(500), where]).float().mean().item()
    assert acc > 0.9, acc


# ------------------------------------------------------------------ chapter 14's corpus
def test_book_vocab_and_windows():
    vocab, train_ids, held_ids = d2l.bert.book_vocab()
    assert vocab.itos[:4] == ["<pad>", "[CLS]", "[SEP]", "[MASK]"]
    assert vocab.decode(vocab.encode("attention")) == "attention"
    assert len(train_ids) > 8 * len(held_ids) and train_ids.min() >= 4
    rows = d2l.bert.book_windows(held_ids, 5, torch.Generator().manual_seed(0))
    assert rows.shape == (5, 32) and (rows[:, 0] == vocab.cls_id).all()
    with pytest.raises(ValueError, match="not in the vocabulary"):
        vocab.encode("€")


def test_shipped_checkpoint_restores_masked_characters():
    """The pre-trained model of make_bert.py: config round trip, and far more masked
    characters restored than by always guessing the most frequent one."""
    model, vocab, info = d2l.bert.load_book_bert()
    assert model.config == d2l.BERT(**model.config).config and info["steps"] > 0
    _, train_ids, held_ids = d2l.bert.book_vocab()
    acc = d2l.bert.mlm_accuracy(model, held_ids, vocab, n=300)
    g = torch.Generator().manual_seed(1)
    _, y = d2l.mask_tokens(d2l.bert.book_windows(held_ids, 300, g), vocab.mask_id,
                           len(vocab), vocab.special_ids, generator=g)
    top = torch.bincount(train_ids).argmax()
    unigram = (y[y != -100] == top).float().mean().item()
    assert acc > unigram + 0.15, (acc, unigram)


# ------------------------------------------------------------------ NSP, PLL, sizes
def test_nsp_pairs_follow_the_rule():
    ids = torch.randperm(2000) + 4                       # distinct: a slice says its place
    where = torch.empty(2004, dtype=torch.long)
    where[ids] = torch.arange(2000)
    x, seg, is_next = d2l.bert.nsp_pairs(ids, 3000, torch.Generator().manual_seed(0))
    assert x.shape == seg.shape == (3000, 32) and is_next.shape == (3000,)
    assert (x[:, 0] == 1).all() and (x[:, 15] == 2).all() and (x[:, -1] == 2).all()
    assert (seg[:, :16] == 0).all() and (seg[:, 16:] == 1).all()
    a, b = where[x[:, 1:15]], where[x[:, 16:31]]
    assert ((a[:, 1:] - a[:, :-1]) == 1).all() and ((b[:, 1:] - b[:, :-1]) == 1).all()
    follows = b[:, 0] == a[:, -1] + 1
    assert torch.equal(follows, is_next == 1)            # NotNext never follows A
    assert abs(is_next.float().mean().item() - 0.5) < 0.04
    with pytest.raises(ValueError, match="1-D tensor"):
        d2l.bert.nsp_pairs(ids[:10], 4)


def test_pseudo_log_likelihood_masks_one_position_at_a_time():
    model = small_bert(max_len=12).eval()
    x = torch.randint(4, 30, (3, 8))
    x[:, 0] = 1
    got = d2l.bert.pseudo_log_likelihood(model, x, mask_id=3, special_ids=[0, 1, 2])
    want = torch.zeros(3)
    with torch.no_grad():
        for r in range(3):
            for c in range(1, 8):
                m = x[r:r + 1].clone()
                m[0, c] = 3
                logp = model.mlm_logits(model(m))[0, c].log_softmax(-1)
                want[r] += logp[x[r, c]]
    assert torch.allclose(got, want, atol=1e-4)
    some = d2l.bert.pseudo_log_likelihood(model, x, 3, [0, 1, 2], positions=[2, 5])
    assert (some > got).all()                            # fewer (negative) terms


def test_param_count_equals_hugging_face_and_ours():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=48, num_hidden_layers=3,
                                  num_attention_heads=4, intermediate_size=96,
                                  max_position_embeddings=40, type_vocab_size=3)
    assert d2l.bert.bert_param_count(cfg) == transformers.BertModel(cfg).num_parameters()
    mlm = transformers.BertForMaskedLM(cfg)              # no pooler, a tied MLM head
    assert d2l.bert.bert_param_count(cfg, pooler=False, mlm_head=True) == \
        mlm.num_parameters()
    ours = d2l.bert_from_hf(mlm)
    assert d2l.bert.bert_param_count(ours, mlm_head=True) == \
        sum(p.numel() for p in ours.parameters())
    assert d2l.bert.bert_param_count(transformers.BertConfig()) == 109_482_240
    with pytest.raises(TypeError, match="config must be"):
        d2l.bert.bert_param_count(42)


def test_chapter_diagrams_draw():
    import matplotlib.pyplot as plt
    for name, words in (("bert_input", ["segment", "position", "[SEP]"]),
                        ("bert_tasks", ["tagging", "span QA", "start", "end"]),
                        ("gpt2_names", ["c_attn", "W_q, W_k, W_v", "tied"])):
        fig = d2l.diagram(name)
        text = "\n".join(t.get_text() for t in fig.findobj(plt.Text))
        assert all(w in text for w in words), (name, text)
        assert fig.get_size_inches()[0] <= 5.2
        plt.close(fig)
    tok = d2l.BPE.train("low lower lowest newer newest " * 20, 270)
    fig = d2l.diagrams.merge_tree(tok, tok.encode(" lowest")[0])
    labels = [t.get_text() for t in fig.findobj(plt.Text) if t.get_text()]
    assert sum("\n" not in l for l in labels) == len(" lowest")    # one leaf per byte
    plt.close(fig)
    with pytest.raises(ValueError, match="token_id must be"):
        d2l.diagrams.merge_tree(tok, 10_000)
