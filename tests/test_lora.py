"""LoRA from scratch (d2lmini.lora): the layer, add_lora, merge_lora, and equality with
PEFT's LoRA on a GPT-2 port (a random small GPT2Config, offline)."""
import math

import pytest
import torch
from torch import nn

import d2lmini as d2l
from d2lmini.lora import count_parameters, lora_parameters


def _tiny_gpt(**kw):
    torch.manual_seed(0)
    cfg = dict(d_model=16, num_heads=2, num_layers=2, d_ff=32, max_len=12)
    cfg.update(kw)
    return d2l.GPT(20, **cfg)


def _randomise_b(model, seed=1):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, d2l.LoRALinear):
                m.lora_B.copy_(torch.randn(m.lora_B.shape, generator=g) * 0.1)


# ------------------------------------------------------------------ the layer
def test_lora_linear_is_the_formula_and_starts_as_the_base():
    torch.manual_seed(0)
    base = nn.Linear(6, 5)
    lora = d2l.LoRALinear(base, rank=3, alpha=6)
    x = torch.randn(4, 2, 6)
    assert lora.lora_A.shape == (3, 6) and lora.lora_B.shape == (5, 3)
    assert torch.equal(lora.lora_B, torch.zeros(5, 3))
    assert torch.equal(lora(x), base(x))                       # B = 0: the base layer
    with torch.no_grad():
        lora.lora_B.normal_()
    want = base(x) + (6 / 3) * x @ lora.lora_A.T @ lora.lora_B.T
    assert torch.allclose(lora(x), want, atol=1e-6)
    assert lora.scaling == 2.0 and lora.bias is base.bias
    assert torch.allclose(lora.weight, base.weight + 2.0 * lora.lora_B @ lora.lora_A)
    assert not base.weight.requires_grad and lora.lora_A.requires_grad


def test_lora_a_is_initialised_like_peft_kaiming_uniform_sqrt5():
    """kaiming_uniform(a=sqrt 5) draws from U(-1/sqrt(in), 1/sqrt(in)): the same
    stream of random numbers gives the same A as nn.init with that seed."""
    torch.manual_seed(3)
    lora = d2l.LoRALinear(nn.Linear(64, 8), rank=16, alpha=16)
    bound = 1 / math.sqrt(64)
    assert lora.lora_A.abs().max() <= bound
    assert lora.lora_A.std() > 0.8 * bound / math.sqrt(3)     # uniform's std: b/sqrt 3
    torch.manual_seed(3)
    ref = nn.Linear(64, 8)
    a = torch.empty(16, 64)
    nn.init.kaiming_uniform_(a, a=math.sqrt(5))
    assert torch.equal(lora.lora_A, a)
    assert torch.equal(lora.base.weight, ref.weight)


@pytest.mark.parametrize("bad, match", [
    (dict(rank=0), "rank"), (dict(rank=2.0), "rank"), (dict(rank=True), "rank"),
    (dict(alpha=0), "alpha"), (dict(alpha=float("nan")), "alpha"),
    (dict(alpha="16"), "alpha")])
def test_lora_linear_refuses_bad_rank_and_alpha(bad, match):
    kw = dict(rank=2, alpha=4)
    kw.update(bad)
    with pytest.raises(ValueError, match=match):
        d2l.LoRALinear(nn.Linear(3, 3), **kw)


def test_lora_linear_refuses_what_is_not_a_linear_layer():
    with pytest.raises(TypeError, match="nn.Linear, got LayerNorm"):
        d2l.LoRALinear(nn.LayerNorm(3), 2, 4)
    inner = d2l.LoRALinear(nn.Linear(3, 3), 2, 4)
    with pytest.raises(TypeError, match="already a LoRALinear"):
        d2l.LoRALinear(inner, 2, 4)
    with pytest.raises(ValueError, match="in_features=3"):
        inner(torch.randn(2, 4))


# ------------------------------------------------------------------ add_lora / merge_lora
def test_add_lora_replaces_the_targets_and_freezes_the_rest():
    model = _tiny_gpt()
    x = torch.randint(1, 20, (3, 9))
    before = model(x)
    out = d2l.add_lora(model, rank=4, alpha=8)
    assert out is model
    adapted = sorted(n for n, m in model.named_modules() if isinstance(m, d2l.LoRALinear))
    assert adapted == [f"blocks.{i}.self_attn.{w}" for i in range(2) for w in ("W_q", "W_v")]
    trainable = sorted(n for n, p in model.named_parameters() if p.requires_grad)
    assert trainable == sorted(f"{n}.lora_{ab}" for n in adapted for ab in "AB")
    assert torch.equal(model(x), before)                       # B = 0 at start
    t, total = count_parameters(model)
    assert t == 2 * 2 * (4 * 16 + 16 * 4) and total == t + sum(
        p.numel() for p in _tiny_gpt().parameters())
    assert set(lora_parameters(model)) == set(trainable)


def test_only_the_adapters_move_in_training_and_merge_keeps_the_outputs():
    model = d2l.add_lora(_tiny_gpt(), rank=2, alpha=4,
                         targets=("W_q", "W_k", "W_v", "W_o", "linear1", "linear2"))
    frozen = {n: p.clone() for n, p in model.named_parameters() if not p.requires_grad}
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    x = torch.randint(1, 20, (4, 10))
    for _ in range(5):
        loss = nn.functional.cross_entropy(model(x[:, :-1]).transpose(1, 2), x[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert all(torch.equal(p, frozen[n]) for n, p in model.named_parameters()
               if n in frozen)
    model.eval()
    adapted = model(x)
    merged = d2l.merge_lora(model)
    assert merged is model
    assert not any(isinstance(m, d2l.LoRALinear) for m in model.modules())
    assert isinstance(model.blocks[0].self_attn.W_q, nn.Linear)
    # float32: a different order of the same sums, relative to the logits' size
    assert (model(x) - adapted).abs().max() <= 1e-6 * adapted.abs().max()
    assert sorted(model.state_dict()) == sorted(_tiny_gpt().state_dict())


def test_merge_in_float64_is_exact_to_rounding():
    model = d2l.add_lora(_tiny_gpt().double(), rank=3, alpha=7,
                         targets=("W_q", "W_v", "linear2"))
    _randomise_b(model)
    x = torch.randint(1, 20, (2, 8))
    adapted = model(x)
    assert (d2l.merge_lora(model)(x) - adapted).abs().max() <= 1e-12


def test_merge_of_one_layer_returns_a_linear_with_the_same_outputs():
    torch.manual_seed(0)
    lora = d2l.LoRALinear(nn.Linear(5, 7, bias=False), rank=2, alpha=3)
    _randomise_b(lora)
    x = torch.randn(3, 5)
    merged = d2l.merge_lora(lora)
    assert type(merged) is nn.Linear and merged.bias is None
    assert torch.allclose(merged(x), lora(x), atol=1e-6)


def test_add_lora_errors_name_what_was_expected():
    with pytest.raises(ValueError, match=r"no module of GPT is named \['W_z'\]"):
        d2l.add_lora(_tiny_gpt(), targets=("W_z",))
    with pytest.raises(TypeError, match="norm1 is a LayerNorm, not an nn.Linear"):
        d2l.add_lora(_tiny_gpt(), targets=("norm1",))
    with pytest.raises(TypeError, match="self_attn is a MultiHeadAttention"):
        d2l.add_lora(_tiny_gpt(), targets=("self_attn",))
    with pytest.raises(ValueError, match="rank"):
        d2l.add_lora(_tiny_gpt(), rank=0)
    with pytest.raises(ValueError, match="alpha"):
        d2l.add_lora(_tiny_gpt(), alpha=-1)
    with pytest.raises(ValueError, match="targets"):
        d2l.add_lora(_tiny_gpt(), targets=())
    with pytest.raises(TypeError, match="torch.nn.Module"):
        d2l.add_lora("gpt")
    twice = d2l.add_lora(_tiny_gpt())
    with pytest.raises(ValueError, match="already has a LoRA adapter"):
        d2l.add_lora(twice)
    with pytest.raises(ValueError, match="nothing to merge"):
        d2l.merge_lora(_tiny_gpt())


def test_a_string_target_and_a_dotted_target():
    model = d2l.add_lora(_tiny_gpt(), targets="linear1")
    assert isinstance(model.blocks[1].ffn.linear1, d2l.LoRALinear)
    model = d2l.add_lora(_tiny_gpt(), targets=("blocks.0.self_attn.W_o",))
    assert isinstance(model.blocks[0].self_attn.W_o, d2l.LoRALinear)
    assert isinstance(model.blocks[1].self_attn.W_o, nn.Linear)


def test_the_fused_attention_path_computes_the_adapted_layers():
    """set_fused_attention reads W_q/W_k/W_v's .weight for one stacked product: the
    LoRA layer's weight is its effective matrix, so both paths agree, gradients too."""
    model = d2l.add_lora(_tiny_gpt().double(), rank=2, alpha=4,
                         targets=("W_q", "W_k", "W_v"))
    _randomise_b(model)
    x = torch.randint(1, 20, (3, 9))
    slow = model(x)
    slow.square().sum().backward()
    g_slow = [p.grad.clone() for p in model.parameters() if p.requires_grad]
    model.zero_grad()
    d2l.set_fused_attention(model)
    fast = model(x)
    fast.square().sum().backward()
    g_fast = [p.grad for p in model.parameters() if p.requires_grad]
    assert (fast - slow).abs().max() <= 1e-10
    assert all((a - b).abs().max() <= 1e-9 for a, b in zip(g_slow, g_fast))


def test_lora_works_in_float64_and_with_generate():
    model = d2l.add_lora(_tiny_gpt().double(), rank=2, alpha=2)
    assert model.blocks[0].self_attn.W_q.lora_A.dtype == torch.float64
    out = d2l.generate(model, torch.tensor([[1, 2, 3]]), 4)
    assert out.shape == (1, 7)


# ------------------------------------------------------------------ the same as PEFT
peft = pytest.importorskip("peft")
transformers = pytest.importorskip("transformers")

# GPT-2's modules (Conv1D, x @ W with W (in, out)) and ours (nn.Linear): c_attn is the
# fused (d, 3d) query/key/value matrix, so one PEFT adapter there has one A and a B of
# 3d rows; ours has three adapters, each with that A and a third of B.
PEFT_TARGETS = ["c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"]
OURS = {"attn.c_proj": "W_o", "c_fc": "linear1", "mlp.c_proj": "linear2"}


def _gpt2_pair(rank=4, alpha=8):
    from peft import LoraConfig, get_peft_model
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=50, n_embd=16, n_head=2, n_layer=2, n_positions=16,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    hf = GPT2LMHeadModel(cfg)
    ours = d2l.gpt2_from_hf(hf)                       # copies the weights first
    theirs = get_peft_model(hf, LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0,
                                           target_modules=PEFT_TARGETS,
                                           fan_in_fan_out=True))
    d2l.add_lora(ours, rank, alpha,
                 targets=("W_q", "W_k", "W_v", "W_o", "linear1", "linear2"))
    g = torch.Generator().manual_seed(1)
    d = cfg.n_embd
    with torch.no_grad():
        for i, block in enumerate(theirs.base_model.model.transformer.h):
            mine = ours.blocks[i]
            for name, layer in [("c_attn", block.attn.c_attn),
                                ("attn.c_proj", block.attn.c_proj),
                                ("c_fc", block.mlp.c_fc), ("mlp.c_proj", block.mlp.c_proj)]:
                A = layer.lora_A["default"].weight                 # (r, in)
                B = layer.lora_B["default"].weight                 # (out, r)
                B.copy_(torch.randn(B.shape, generator=g) * 0.2)   # PEFT starts it at 0
                if name == "c_attn":
                    for k, w in enumerate(("W_q", "W_k", "W_v")):
                        lin = getattr(mine.self_attn, w)
                        lin.lora_A.copy_(A)
                        lin.lora_B.copy_(B[k * d:(k + 1) * d])
                else:
                    parent = mine.self_attn if name == "attn.c_proj" else mine.ffn
                    lin = getattr(parent, OURS[name])
                    lin.lora_A.copy_(A)
                    lin.lora_B.copy_(B)
    return theirs, ours, d


def test_add_lora_gives_peft_outputs_and_gradients_on_gpt2():
    theirs, ours, d = _gpt2_pair()
    assert count_parameters(ours)[0] == sum(p.numel() for p in theirs.parameters()
                                            if p.requires_grad) + 2 * 2 * 4 * 16
    # (ours has 3 copies of each c_attn A: 2 extra (r, d) per layer)
    x = torch.randint(0, 50, (3, 11))
    y = torch.randint(0, 50, (3, 11))
    lt = theirs(x).logits
    lo = ours(x)
    assert (lt - lo).abs().max() <= 1e-5
    nn.functional.cross_entropy(lt.transpose(1, 2), y).backward()
    nn.functional.cross_entropy(lo.transpose(1, 2), y).backward()
    worst = 0.0
    for i, block in enumerate(theirs.base_model.model.transformer.h):
        mine = ours.blocks[i]
        a, b = block.attn.c_attn.lora_A["default"], block.attn.c_attn.lora_B["default"]
        qkv = [getattr(mine.self_attn, w) for w in ("W_q", "W_k", "W_v")]
        worst = max(worst, (sum(l.lora_A.grad for l in qkv) - a.weight.grad).abs().max(),
                    (torch.cat([l.lora_B.grad for l in qkv]) - b.weight.grad).abs().max())
        for layer, lin in [(block.attn.c_proj, mine.self_attn.W_o),
                           (block.mlp.c_fc, mine.ffn.linear1),
                           (block.mlp.c_proj, mine.ffn.linear2)]:
            worst = max(worst,
                        (lin.lora_A.grad - layer.lora_A["default"].weight.grad).abs().max(),
                        (lin.lora_B.grad - layer.lora_B["default"].weight.grad).abs().max())
    assert worst <= 1e-5, worst


def test_merge_lora_equals_peft_merge_and_unload():
    theirs, ours, _ = _gpt2_pair(rank=2, alpha=5)
    x = torch.randint(0, 50, (2, 9))
    merged_hf = theirs.merge_and_unload()
    d2l.merge_lora(ours)
    assert (merged_hf(x).logits - ours(x)).abs().max() <= 1e-5
    assert (d2l.gpt2_from_hf(merged_hf)(x) - ours(x)).abs().max() <= 1e-5
