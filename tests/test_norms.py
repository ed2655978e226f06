"""d2lmini.LayerNorm / d2lmini.BatchNorm against torch.nn.LayerNorm / nn.BatchNorm1d.

Weights are copied with load_state_dict; forward outputs, the gradients of the input
and of the parameters, and (for BatchNorm) the running statistics must agree.
"""
import pytest
import torch
from torch import nn

import d2lmini as d2l


def _randomise(module: nn.Module, seed: int = 1) -> None:
    """Non-trivial weight/bias so that the affine part is tested too."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        module.weight.copy_(1 + 0.5 * torch.randn(module.weight.shape, generator=g))
        module.bias.copy_(0.5 * torch.randn(module.bias.shape, generator=g))


def _fwd_bwd(module, x, transpose=False):
    """Forward + backward of a fixed random projection; returns (y, x.grad, param grads)."""
    x = x.detach().clone().requires_grad_(True)
    y = module(x.transpose(1, 2)).transpose(1, 2) if transpose else module(x)
    w = torch.randn(y.shape, generator=torch.Generator().manual_seed(7), dtype=y.dtype)
    (y * w).sum().backward()
    return y.detach(), x.grad, module.weight.grad.clone(), module.bias.grad.clone()


def _assert_all_close(a, b, atol=1e-5):
    for u, v in zip(a, b):
        torch.testing.assert_close(u, v, atol=atol, rtol=1e-5)


# ---------------------------------------------------------------- LayerNorm
@pytest.mark.parametrize("shape,normalized_shape", [
    ((4, 8), 8),
    ((3, 5, 8), 8),
    ((3, 5, 8), (5, 8)),
    ((2, 3, 4, 6), (4, 6)),
])
def test_layernorm_matches_torch(shape, normalized_shape):
    torch.manual_seed(0)
    ref = nn.LayerNorm(normalized_shape)
    _randomise(ref)
    ours = d2l.LayerNorm(normalized_shape)
    ours.load_state_dict(ref.state_dict())
    x = 3 * torch.randn(shape) + 2
    _assert_all_close(_fwd_bwd(ours, x), _fwd_bwd(ref, x))


@pytest.mark.parametrize("normalized_shape", [8, (5, 8)])
def test_layernorm_fused_equals_from_scratch_and_keeps_the_checks(normalized_shape):
    """The fused kernel the models use computes the from-scratch formula: same
    forward and gradients (float64), same errors on bad input."""
    torch.manual_seed(0)
    scratch = d2l.LayerNorm(normalized_shape).double()
    _randomise(scratch)
    fused = d2l.LayerNorm(normalized_shape, fused=True).double()
    fused.load_state_dict(scratch.state_dict())
    x = 3 * torch.randn(3, 5, 8, dtype=torch.float64) + 2
    _assert_all_close(_fwd_bwd(fused, x), _fwd_bwd(scratch, x), atol=1e-12)
    with pytest.raises(ValueError, match=r"expected input ending in"):
        fused(torch.randn(4, 7, dtype=torch.float64))
    with pytest.raises(TypeError, match="fused must be True or False"):
        d2l.LayerNorm(8, fused="yes")


def test_models_use_the_fused_layernorm():
    models = [d2l.Transformer(11, 12, d_model=8, num_heads=2, num_layers=1, d_ff=16,
                              norm_first=True),
              d2l.GPT(11, d_model=8, num_heads=2, num_layers=1, d_ff=16)]
    norms = [m for model in models for m in model.modules()
             if isinstance(m, d2l.LayerNorm)]
    assert len(norms) == 7 + 3 and all(m.fused for m in norms)


def test_layernorm_tuple_shape_statistics_per_example():
    # normalising over (T, F): every example of the output has mean 0 and variance 1
    x = torch.randn(4, 5, 8) * 10 + 3
    y = d2l.LayerNorm((5, 8))(x)
    torch.testing.assert_close(y.mean(dim=(1, 2)), torch.zeros(4), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.var(dim=(1, 2), unbiased=False), torch.ones(4), atol=1e-3, rtol=0)


def test_layernorm_state_dict_keys_and_shapes():
    for ns in (8, (5, 8)):
        ours, ref = d2l.LayerNorm(ns).state_dict(), nn.LayerNorm(ns).state_dict()
        assert list(ours) == list(ref)
        assert all(ours[k].shape == ref[k].shape for k in ref)


def test_layernorm_eps_and_double():
    ref = nn.LayerNorm(6, eps=1e-3).double()
    ours = d2l.LayerNorm(6, eps=1e-3).double()
    ours.load_state_dict(ref.state_dict())
    x = torch.randn(3, 6, dtype=torch.float64) * 0.01   # small variance: eps matters
    _assert_all_close(_fwd_bwd(ours, x), _fwd_bwd(ref, x), atol=1e-10)


def test_layernorm_bad_input():
    ln = d2l.LayerNorm(8)
    with pytest.raises(ValueError, match=r"expected input ending in \(8,\).*\(4, 7\)"):
        ln(torch.randn(4, 7))
    with pytest.raises(ValueError, match=r"ending in \(5, 8\)"):
        d2l.LayerNorm((5, 8))(torch.randn(2, 6, 8))
    with pytest.raises(TypeError, match="floating-point.*torch.int64"):
        ln(torch.ones(4, 8, dtype=torch.long))
    with pytest.raises(TypeError, match="torch.Tensor, got list"):
        ln([[0.0] * 8])


# ---------------------------------------------------------------- BatchNorm
@pytest.mark.parametrize("shape", [(16, 6), (4, 5, 6)])
def test_batchnorm_train_and_eval_match_torch(shape):
    torch.manual_seed(0)
    ref = nn.BatchNorm1d(6)
    _randomise(ref)
    ours = d2l.BatchNorm(6)
    ours.load_state_dict(ref.state_dict())
    transpose = len(shape) == 3      # torch wants (B, F, T); ours takes (B, T, F)
    # several training batches: outputs, gradients and running statistics agree
    for step in range(5):
        x = (step + 1) * torch.randn(shape) + step
        ref.zero_grad(), ours.zero_grad()
        _assert_all_close(_fwd_bwd(ours, x), _fwd_bwd(ref, x, transpose))
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        torch.testing.assert_close(getattr(ours, name), getattr(ref, name), atol=1e-5, rtol=1e-5)
    assert int(ours.num_batches_tracked) == 5
    # eval mode: the running statistics are used, and they are not updated
    ours.eval(), ref.eval()
    before = ours.running_mean.clone()
    x = torch.randn(shape) * 2 + 1
    ref.zero_grad(), ours.zero_grad()
    _assert_all_close(_fwd_bwd(ours, x), _fwd_bwd(ref, x, transpose))
    assert torch.equal(ours.running_mean, before)
    assert int(ours.num_batches_tracked) == 5


def test_batchnorm_eval_differs_from_train():
    torch.manual_seed(0)
    bn = d2l.BatchNorm(4)
    x = torch.randn(8, 4) * 3 + 5
    y_train = bn(x)
    bn.eval()
    y_eval = bn(x)   # running stats after one step are still close to (0, 1)
    assert not torch.allclose(y_train, y_eval, atol=1e-2)


def test_batchnorm_eval_accepts_single_example():
    ref, ours = nn.BatchNorm1d(3).eval(), d2l.BatchNorm(3).eval()
    x = torch.randn(1, 3)
    torch.testing.assert_close(ours(x), ref(x))


def test_batchnorm_state_dict_keys_and_shapes():
    ours, ref = d2l.BatchNorm(6).state_dict(), nn.BatchNorm1d(6).state_dict()
    assert list(ours) == list(ref)
    for k in ref:
        assert ours[k].shape == ref[k].shape and ours[k].dtype == ref[k].dtype, k


def test_batchnorm_loads_torch_running_stats():
    ref = nn.BatchNorm1d(5)
    for _ in range(3):
        ref(torch.randn(10, 5) * 4 + 2)
    ours = d2l.BatchNorm(5)
    ours.load_state_dict(ref.state_dict())
    ours.eval(), ref.eval()
    x = torch.randn(7, 5)
    torch.testing.assert_close(ours(x), ref(x))


def test_batchnorm_bad_input():
    bn = d2l.BatchNorm(6)
    with pytest.raises(ValueError, match=r"expected 6 features.*\(4, 5\)"):
        bn(torch.randn(4, 5))
    with pytest.raises(ValueError, match=r"expected 6 features.*\(2, 6, 3\)"):
        bn(torch.randn(2, 6, 3))            # torch's (B, F, T) layout is rejected
    with pytest.raises(ValueError, match=r"more than 1 value per feature.*\(1, 6\)"):
        bn(torch.randn(1, 6))
    with pytest.raises(ValueError, match=r"more than 1 value per feature.*\(1, 1, 6\)"):
        bn(torch.randn(1, 1, 6))
    with pytest.raises(ValueError, match=r"2-D or 3-D.*\(6,\)"):
        bn(torch.randn(6))
    with pytest.raises(TypeError, match="floating-point.*torch.int64"):
        bn(torch.ones(4, 6, dtype=torch.long))
    assert int(bn.num_batches_tracked) == 0   # failed calls changed nothing


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="num_features"):
        d2l.BatchNorm(0)
    with pytest.raises(ValueError, match="momentum"):
        d2l.BatchNorm(4, momentum=1.5)
    with pytest.raises(ValueError, match="normalized_shape"):
        d2l.LayerNorm((4, 0))
    with pytest.raises(ValueError, match="eps"):
        d2l.LayerNorm(4, eps=-1.0)


# ---------------------------------------------------------------- RMSNorm
@pytest.mark.skipif(not hasattr(nn, "RMSNorm"), reason="nn.RMSNorm needs torch >= 2.4")
@pytest.mark.parametrize("shape,normalized_shape", [((4, 8), 8), ((3, 5, 8), 8),
                                                    ((3, 5, 8), (5, 8))])
def test_rmsnorm_matches_torch(shape, normalized_shape):
    torch.manual_seed(0)
    ref = nn.RMSNorm(normalized_shape, eps=1e-6).double()
    with torch.no_grad():
        ref.weight.normal_(1, 0.5)
    ours = d2l.RMSNorm(normalized_shape).double()
    ours.load_state_dict(ref.state_dict())
    assert list(ours.state_dict()) == list(ref.state_dict()) == ["weight"]
    x = (3 * torch.randn(shape, dtype=torch.float64) + 2).requires_grad_()
    g = torch.randn(shape, dtype=torch.float64)
    outs = []
    for m in (ours, ref):
        y = m(x)
        outs.append([y, *torch.autograd.grad((y * g).sum(), [x, m.weight])])
    for u, v in zip(*outs):
        torch.testing.assert_close(u, v, atol=1e-12, rtol=1e-12)


def test_rmsnorm_is_scale_invariant_and_keeps_the_mean_direction():
    """RMSNorm(c x) = RMSNorm(x) for c > 0; unlike LayerNorm it does not centre."""
    x = torch.randn(4, 16, dtype=torch.float64) + 3
    rms = d2l.RMSNorm(16, eps=1e-12).double()
    torch.testing.assert_close(rms(5 * x), rms(x))
    assert (rms(x).mean(-1) > 0.5).all()
    torch.testing.assert_close(rms(x).pow(2).mean(-1), torch.ones(4, dtype=torch.float64))


def test_rmsnorm_rejects_bad_input():
    with pytest.raises(ValueError, match="normalized_shape"):
        d2l.RMSNorm(0)
    with pytest.raises(ValueError, match="eps"):
        d2l.RMSNorm(4, eps=0)
    with pytest.raises(ValueError, match="expected input ending in"):
        d2l.RMSNorm(4)(torch.randn(2, 5))


def test_layernorm_is_scale_invariant():
    """LN(c x) = LN(x) for c > 0 (up to eps): the norm of each token is lost."""
    x = torch.randn(4, 16, dtype=torch.float64)
    ln = d2l.LayerNorm(16, eps=1e-12).double()
    torch.testing.assert_close(ln(3 * x), ln(x))
    torch.testing.assert_close(ln(-3 * x), -ln(x))
