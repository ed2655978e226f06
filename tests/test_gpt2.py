"""GPT-2's weights in d2l.GPT (d2lmini.gpt2) against Hugging Face, and the size arithmetic."""
import math

import pytest
import torch

import d2lmini as d2l
from d2lmini.gpt2 import (GPT_CONFIGS, PUBLISHED_PARAMS, gpt2_from_hf, gpt_kv_cache_bytes_per_token,
                          gpt_param_count, gpt_train_flops)

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.usefixtures("one_thread")

# two small random GPT-2s: different widths, depths, head counts, FFN widths, eps
CONFIGS = [dict(vocab_size=97, n_positions=64, n_embd=32, n_layer=2, n_head=4),
           dict(vocab_size=151, n_positions=48, n_embd=48, n_layer=3, n_head=6, n_inner=80,
                layer_norm_epsilon=1e-6)]


def hf_model(i, seed=0, **kw):
    cfg = dict(CONFIGS[i], bos_token_id=CONFIGS[i]["vocab_size"] - 1,
               eos_token_id=CONFIGS[i]["vocab_size"] - 1, initializer_range=0.1)
    cfg.update(kw)
    torch.manual_seed(seed)
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(**cfg)).eval()


def rand_ids(B, T, V, seed=0):
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(seed))


def hf_greedy(hf, prompt, n, attention_mask=None, use_cache=True, **kw):
    mask = torch.ones_like(prompt) if attention_mask is None else attention_mask
    return hf.generate(prompt, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                       do_sample=False, use_cache=use_cache,
                       pad_token_id=hf.config.eos_token_id, **kw)


@pytest.mark.parametrize("i", range(len(CONFIGS)))
def test_logits_equal_hugging_face(i):
    hf = hf_model(i)
    ours = gpt2_from_hf(hf)
    c = CONFIGS[i]
    assert ours.config["d_model"] == c["n_embd"] and len(ours.blocks) == c["n_layer"]
    assert ours.config["activation"] == "gelu_tanh" and ours.pad_id is None
    assert ours.lm_head.weight is ours.embedding.weight
    x = rand_ids(3, c["n_positions"], c["vocab_size"])
    x[:, :4] = 0                                        # id 0 is text in GPT-2, not padding
    want = hf(x).logits
    assert want.abs().max() > 1.0                      # not a near-zero model
    assert (ours(x) - want).abs().max() <= 1e-5
    # the same parameter count, tied head counted once
    n = sum(p.numel() for p in ours.parameters())
    assert n == sum(p.numel() for p in hf.parameters()) == gpt_param_count(hf.config)


@pytest.mark.parametrize("i", range(len(CONFIGS)))
def test_greedy_generation_equals_hugging_face(i):
    hf = hf_model(i)
    ours = gpt2_from_hf(hf)
    V = CONFIGS[i]["vocab_size"]
    p = rand_ids(2, 6, V, seed=1)
    want = hf_greedy(hf, p, 30)
    assert want[:, 6:].unique().numel() >= 6            # varied text, so a slip would show
    assert torch.equal(d2l.generate(ours, p, 30), want)
    assert torch.equal(d2l.generate(ours, p, 30, use_cache=False), want)
    assert torch.equal(hf_greedy(hf, p, 30, use_cache=False), want)


@pytest.mark.parametrize("i", range(len(CONFIGS)))
def test_left_padded_batch_equals_hugging_face_and_one_at_a_time(i):
    hf = hf_model(i)
    ours = gpt2_from_hf(hf)
    V = CONFIGS[i]["vocab_size"]
    seqs = [rand_ids(1, T, V, seed=T)[0].tolist() for T in (3, 7, 5)]
    T = max(map(len, seqs))
    prompt = torch.tensor([[0] * (T - len(s)) + s for s in seqs])      # id 0 as the filler
    mask = torch.tensor([[0] * (T - len(s)) + [1] * len(s) for s in seqs])
    want = hf_greedy(hf, prompt, 20, attention_mask=mask)
    for use_cache in (True, False):
        got = d2l.generate(ours, prompt, 20, attention_mask=mask, use_cache=use_cache)
        assert torch.equal(got, want)
    for r, s in enumerate(seqs):
        alone = d2l.generate(ours, torch.tensor([s]), 20)
        assert torch.equal(alone[0], want[r, T - len(s):])
    with pytest.raises(ValueError, match="pad prompts on the LEFT.*side='left'"):
        right = torch.tensor([s + [0] * (T - len(s)) for s in seqs])
        d2l.generate(ours, right, 3, attention_mask=mask.flip(1))


def test_eos_stops_rows_as_hugging_face_does():
    hf = hf_model(0)
    ours = gpt2_from_hf(hf)
    p = rand_ids(3, 4, 97, seed=3)
    free = d2l.generate(ours, p, 12)
    eos = int(free[1, 6])                       # a token row 1 writes after 3 steps
    want = hf.generate(p, attention_mask=torch.ones_like(p), max_new_tokens=12,
                       do_sample=False, eos_token_id=eos, pad_token_id=eos)
    got = d2l.generate(ours, p, 12, eos_id=eos)
    assert torch.equal(got, want)
    assert (got[1, 7:] == eos).all()


def test_gradients_equal_hugging_face():
    hf = hf_model(1).double()
    ours = gpt2_from_hf(hf)
    assert ours.embedding.weight.dtype == torch.float64
    x = rand_ids(2, 20, 151)
    w = torch.randn(2, 20, 151, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    (hf(x).logits * w).sum().backward()
    (ours(x) * w).sum().backward()
    d, h, b = 48, hf.transformer.h[1], ours.blocks[1]
    pairs = [(ours.embedding.weight.grad, hf.transformer.wte.weight.grad),   # embedding + head
             (ours.pos_encoding.weight.grad, hf.transformer.wpe.weight.grad),
             (b.self_attn.W_k.weight.grad, h.attn.c_attn.weight.grad[:, d:2 * d].t()),
             (b.self_attn.W_v.bias.grad, h.attn.c_attn.bias.grad[2 * d:]),
             (b.ffn.linear1.weight.grad, h.mlp.c_fc.weight.grad.t()),
             (b.norm2.weight.grad, h.ln_2.weight.grad),
             (ours.norm.bias.grad, hf.transformer.ln_f.bias.grad)]
    for g_ours, g_hf in pairs:
        assert g_hf.abs().max() > 0
        assert torch.allclose(g_ours, g_hf, rtol=1e-9, atol=1e-9)


def test_untied_head_and_other_activations():
    hf = hf_model(0, activation_function="relu", tie_word_embeddings=False)
    hf.lm_head.weight.data.normal_(0, 0.2)
    ours = gpt2_from_hf(hf)
    assert ours.config["activation"] == "relu" and not ours.config["tie_weights"]
    x = rand_ids(2, 10, 97)
    assert (ours(x) - hf(x).logits).abs().max() <= 1e-5
    with pytest.raises(ValueError, match="activation_function must be one of.*got 'swish'"):
        gpt2_from_hf(hf_model(0, activation_function="swish"))
    with pytest.raises(ValueError, match="scale_attn_by_inverse_layer_idx"):
        gpt2_from_hf(hf_model(0, scale_attn_by_inverse_layer_idx=True))
    with pytest.raises(TypeError, match="expected a transformers GPT2LMHeadModel.*got Linear"):
        gpt2_from_hf(torch.nn.Linear(2, 2))


# ---------------------------------------------------------------- size arithmetic
@pytest.mark.parametrize("name", list(GPT_CONFIGS))
def test_param_counts_match_the_published_ones(name):
    n = gpt_param_count(name)
    assert abs(n / PUBLISHED_PARAMS[name] - 1) <= 0.01, (name, n)


def test_param_count_formula_equals_counting_a_real_model():
    for kw in [dict(), dict(tie_weights=True, pos_encoding="learned"), dict(bias=False),
               dict(d_ff=40, num_layers=3, pos_encoding="learned", bias=False)]:
        m = d2l.GPT(50, d_model=16, num_heads=2, d_ff=kw.pop("d_ff", 32), max_len=24, **kw)
        assert gpt_param_count(m) == gpt_param_count(m.config) == \
            sum(p.numel() for p in m.parameters())
    # the released GPT-2 small: 124,439,808 (Hugging Face's count of "gpt2")
    assert gpt_param_count(transformers.GPT2Config()) == gpt_param_count("gpt2") == 124_439_808


def test_flops_and_kv_cache_arithmetic():
    # GPT-3 paper, table D.1: 3.14e23 training FLOPs for 175B on 300B tokens
    assert abs(gpt_train_flops("gpt3-175b", 300e9) / 3.14e23 - 1) <= 0.01
    assert gpt_kv_cache_bytes_per_token("gpt2") == 2 * 12 * 768 * 2
    m = d2l.GPT(50, d_model=16, num_heads=2, num_layers=3, d_ff=32, max_len=24)
    assert gpt_kv_cache_bytes_per_token(m, 4) * 5 * 7 == d2l.kv_cache_bytes(m, 5, 7)
    with pytest.raises(ValueError, match="unknown model 'gpt5'"):
        gpt_param_count("gpt5")


def test_config_from_a_dict_and_a_gpt2model_without_head():
    from d2lmini.gpt2 import gpt_config_from_hf
    kw = gpt_config_from_hf(dict(CONFIGS[1], activation_function="gelu_new"))
    assert kw["d_ff"] == 80 and kw["norm_eps"] == 1e-6 and kw["pad_id"] is None
    assert d2l.gpt_param_count(kw) == d2l.gpt_param_count(d2l.GPT(**kw))
    hf = hf_model(0)
    body = hf.transformer                          # a GPT2Model: the head is the embedding
    ours = gpt2_from_hf(body)
    x = rand_ids(2, 9, 97)
    assert (ours(x) - hf(x).logits).abs().max() <= 1e-5


def test_network_look_is_short_and_false_offline():
    import socket
    import time
    with socket.socket() as s:                     # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = time.perf_counter()
    assert not d2l.huggingface_reachable("127.0.0.1", port, timeout=1.0)
    assert not d2l.huggingface_reachable("no-such-host.invalid", 443, timeout=1.0)
    assert time.perf_counter() - t < 2.5


def test_bits_per_char_is_the_summed_loss_per_character():
    from d2lmini.gpt2 import lm_bits_per_char
    hf = hf_model(0)
    ours = gpt2_from_hf(hf)
    V = CONFIGS[0]["vocab_size"]
    ids = rand_ids(1, 150, V - 1, seed=3)[0]                  # 150 tokens, bos = V - 1
    bits = lm_bits_per_char(ours, ids, n_chars=400, bos_id=V - 1, window=64)
    want = 0.0
    for start in range(0, 150, 64):                           # windows of 64, 64, 22
        x = torch.cat([torch.tensor([V - 1]), ids[start:start + 64]])[None]
        want += torch.nn.functional.cross_entropy(hf(x[:, :-1]).logits[0], x[0, 1:],
                                                  reduction="sum").item()
    assert abs(bits - want / 400 / math.log(2)) < 1e-6 * bits
    with pytest.raises(ValueError, match="n_chars must be a positive int"):
        lm_bits_per_char(ours, ids, 0, bos_id=0)
