"""d2lmini.train on an accelerator's terms: no host sync per step, clear errors, fused
attention and torch.compile.  They run on the CPU; the last ones need CUDA (skipped elsewhere)."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import d2lmini as d2l
import d2lmini.transformer as tr


pytestmark = pytest.mark.usefixtures("one_thread")


def _regression(n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 2, generator=g)
    return X, X @ torch.tensor([[2.0], [-3.4]]) + 4.2


def _tiny_transformer(fast=False, V=11):
    d2l.set_seed(0)
    model = d2l.Transformer(V, V, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0)
    return d2l.set_fused_attention(model, fast)


def _tokens(B=3, S=6, T=5, V=11, seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(1, V, (B, S), generator=g)
    src[0, -2:] = 0                                  # some padding
    tgt = torch.randint(1, V, (B, T), generator=g)
    return src, tgt


class SyncCounter:
    """Counts the calls that copy a tensor's value to Python (each one a host sync on a GPU)."""

    NAMES = ("item", "tolist", "__float__", "__int__", "__bool__")

    def __init__(self, monkeypatch):
        self.calls = {name: 0 for name in self.NAMES}
        for name in self.NAMES:
            original = getattr(torch.Tensor, name)

            def counted(t, *args, _name=name, _original=original, **kw):
                self.calls[_name] += 1
                return _original(t, *args, **kw)
            monkeypatch.setattr(torch.Tensor, name, counted)


# ---------------------------------------------------------------- no sync per step
def test_train_reads_losses_only_every_sync_every_steps(monkeypatch):
    X, y = _regression()
    net = nn.Linear(2, 1)
    data = list(zip(X.split(8), y.split(8)))                  # 25 steps
    pending = []
    counter = SyncCounter(monkeypatch)
    hist = d2l.train(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.01), data,
                     callbacks=[lambda n, h: pending.append(len(h._pending))],
                     progress=False, sync_every=10)
    calls = dict(counter.calls)
    monkeypatch.undo()
    # the losses wait as tensors: read at steps 10 and 20 (after the callbacks) and at the end
    assert pending == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] * 2 + [1, 2, 3, 4, 5]
    assert calls == {"item": 0, "tolist": 3, "__float__": 0, "__int__": 0, "__bool__": 0}
    assert hist.steps == 25 and len(hist.step_loss) == 25 and not hist._pending


def test_history_values_equal_per_step_item_and_epoch_means():
    X, y = _regression()
    results = []
    for use_train in (False, True):
        d2l.set_seed(0)
        net = nn.Linear(2, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        data = list(zip(X.split(30), y.split(30)))            # 7 steps per epoch, the last short
        if use_train:
            hist = d2l.train(net, nn.MSELoss(), opt, data, num_epochs=3, progress=False,
                             sync_every=4)
            results.append((hist.step_loss, hist.epoch_loss))
        else:
            steps, epochs = [], []
            for _ in range(3):
                total = 0.0
                for Xb, yb in data:
                    opt.zero_grad()
                    loss = F.mse_loss(net(Xb), yb)
                    loss.backward()
                    opt.step()
                    steps.append(loss.item())
                    total += steps[-1]
                epochs.append(total / len(data))
            results.append((steps, epochs))
    assert results[0] == results[1]                           # bit for bit, as with .item()
    assert len(results[1][0]) == 21 and len(results[1][1]) == 3


def test_callbacks_that_read_the_history_see_every_step_so_far():
    X, y = _regression()
    net = nn.Linear(2, 1)
    seen = []
    hist = d2l.train(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.01),
                     lambda: d2l.data_iter(50, X, y), num_epochs=2, sync_every=3,
                     callbacks=[lambda n, h: seen.append(list(h.step_loss))], progress=False)
    assert [len(s) for s in seen] == list(range(1, 9))
    assert seen[-1] == hist.step_loss and seen[3] == hist.step_loss[:4]
    assert len(hist.epoch_loss) == 2 and hist.epoch_loss[0] == pytest.approx(sum(seen[3]) / 4)


def test_train_rejects_a_bad_sync_every():
    net = nn.Linear(2, 1)
    with pytest.raises(ValueError, match="sync_every must be a positive int, got 0"):
        d2l.train(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.1),
                  [(torch.ones(1, 2), torch.ones(1, 1))], sync_every=0, progress=False)


def test_the_training_monitor_reads_the_losses_only_at_its_snapshots(monkeypatch):
    X, y = _regression()
    net = nn.Linear(2, 1)
    data = list(zip(X.split(8), y.split(8)))                  # 25 steps
    mon = d2l.TrainingMonitor(None, every=10, live=False)
    counter = SyncCounter(monkeypatch)
    hist = d2l.train(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.01), data,
                     callbacks=[mon], progress=False, sync_every=1000)
    calls = dict(counter.calls)
    monkeypatch.undo()
    assert calls["item"] == 0 and calls["tolist"] == 4        # steps 1, 10, 20 and the end
    assert [s["step"] for s in mon.snapshots] == [1, 10, 20]
    assert mon.losses == hist.step_loss and mon.snapshots[-1]["loss"] == hist.step_loss[19]


# ---------------------------------------------------------------- clear errors
def test_an_epoch_without_batches_is_an_error():
    net = nn.Linear(2, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with pytest.raises(ValueError, match=r"epoch 1 of 1 got no batches from data"):
        d2l.train(net, nn.MSELoss(), opt, [], progress=False)
    once = iter([(torch.ones(4, 2), torch.ones(4, 1))])         # a one-shot iterator
    with pytest.raises(ValueError, match=r"epoch 2 of 3 got no batches.*one-shot iterator"):
        d2l.train(net, nn.MSELoss(), opt, once, num_epochs=3, progress=False)


def test_bad_token_ids_are_caught_on_the_cpu_before_the_batch_moves():
    model = _tiny_transformer()
    src, tgt = _tokens()
    src[1, 2] = 11                                            # vocabulary of size 11
    loss = lambda logits, y: F.cross_entropy(logits.transpose(1, 2), y)  # noqa: E731
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    # "meta" stands for an accelerator: the batch never gets there, the CPU check fires first
    with pytest.raises(ValueError, match=r"token id 11 is out of range for a vocabulary of size 11"):
        d2l.train(model, loss, opt, [(src, tgt, tgt)], device="meta", progress=False)
    with pytest.raises(ValueError, match=r"token id 11 is out of range"):   # and on the CPU
        d2l.train(model, loss, opt, [(src, tgt, tgt)], device="cpu", progress=False)


def test_on_the_device_token_ids_are_checked_without_reading_them(monkeypatch):
    monkeypatch.setattr(tr, "_compiling", lambda: True)        # the CUDA / compiled branch
    counter = SyncCounter(monkeypatch)
    tr.check_token_ids(torch.tensor([[0, 3, 10]]), 11)          # fine: nothing raised
    logits = torch.randn(2, 3, 5)
    tr.label_smoothing_cross_entropy(logits, torch.tensor([[0, 4, 1], [2, 0, 0]]), 0.1, 0)
    assert sum(counter.calls.values()) == 0                    # no value came to the host
    with pytest.raises(RuntimeError, match=r"out of range for a vocabulary of size 11"):
        tr.check_token_ids(torch.tensor([[0, 11]]), 11)
    with pytest.raises(RuntimeError, match=r"target ids must be in 0..4 \(or ignore_index=0\)"):
        tr.label_smoothing_cross_entropy(logits, torch.tensor([[0, 5, 1], [2, 0, 0]]), 0.1, 0)


# ---------------------------------------------------------------- fused attention
def test_fused_attention_equals_the_from_scratch_path():
    src, tgt = _tokens()
    outs = []
    for fast in (False, True):
        model = _tiny_transformer(fast).double()
        logits = model(src, tgt)
        logits.square().sum().backward()
        outs.append((logits.detach(), [p.grad for p in model.parameters()], model))
    (a, ga, slow), (b, gb, fast) = outs
    assert torch.allclose(a, b, atol=1e-10)
    assert all(torch.allclose(x, y, atol=1e-10) for x, y in zip(ga, gb))
    mhas = [m for m in fast.modules() if isinstance(m, d2l.MultiHeadAttention)]
    assert len(mhas) == 3 and all(m.fast and m.attention_weights is None for m in mhas)
    assert all(m.attention_weights is not None
               for m in slow.modules() if isinstance(m, d2l.MultiHeadAttention))
    maps = d2l.collect_attention(fast, src, tgt)              # draws from the fused model too
    assert torch.allclose(maps["cross"][0], slow.decoder.blocks[0].cross_attn.attention_weights.float())
    assert all(m.fast and m.attention_weights is not None for m in mhas)   # switched back
    d2l.set_fused_attention(fast, False)                       # and back
    assert not any(m.fast for m in mhas)


def test_set_fused_attention_errors():
    with pytest.raises(TypeError, match="model must be a torch.nn.Module, got function"):
        d2l.set_fused_attention(lambda x: x)
    with pytest.raises(ValueError, match="Linear contains no d2lmini MultiHeadAttention"):
        d2l.set_fused_attention(nn.Linear(2, 2))


# ---------------------------------------------------------------- torch.compile
def _compile_works():
    try:
        return torch.compile(lambda x: x + 1, backend="eager")(torch.ones(1)).item() == 2
    except Exception:  # noqa: BLE001  (no dynamo on this platform)
        return False


needs_compile = pytest.mark.skipif(not _compile_works(), reason="torch.compile unavailable here")


@needs_compile
def test_train_compiles_the_fused_transformer_in_one_graph():
    torch._dynamo.reset()
    model = _tiny_transformer(fast=True)
    reference = _tiny_transformer(fast=True)
    src, tgt = _tokens()
    loss = lambda logits, y: F.cross_entropy(logits.transpose(1, 2), y, ignore_index=0)  # noqa: E731
    hists = []
    for net, comp in ((reference, False), (model, {"backend": "eager", "fullgraph": True})):
        hists.append(d2l.train(net, loss, torch.optim.Adam(net.parameters(), lr=1e-2),
                               [(src, tgt, tgt)], num_epochs=3, compile=comp, progress=False))
    # fullgraph=True raises at the first graph break; the compiled run matches eager
    assert hists[1].step_loss == pytest.approx(hists[0].step_loss, rel=1e-5, abs=1e-6)
    compiled = torch.compile(model, backend="eager", fullgraph=True)
    with pytest.raises(RuntimeError, match="out of range for a vocabulary of size 11"):
        compiled(src.clamp(max=10) + 1, tgt)                     # id 11, checked in the graph


@needs_compile
def test_the_from_scratch_transformer_has_no_graph_break():
    torch._dynamo.reset()
    model = _tiny_transformer(fast=False)
    d2l.set_seed(0)
    explained = torch._dynamo.explain(model)(*_tokens())
    assert explained.graph_count == 1 and explained.graph_break_count == 0, explained.break_reasons


@needs_compile
@pytest.mark.parametrize("fast", [False, True])
def test_gpt_compiles_in_one_graph(fast):
    torch._dynamo.reset()
    d2l.set_seed(0)
    model = d2l.set_fused_attention(d2l.GPT(13, d_model=16, num_heads=2, num_layers=1, d_ff=32), fast)
    tokens = torch.randint(0, 13, (2, 7), generator=torch.Generator().manual_seed(0))
    compiled = torch.compile(model, backend="eager", fullgraph=True)   # raises at a graph break
    assert torch.allclose(compiled(tokens), model(tokens), atol=1e-6)


# ---------------------------------------------------------------- on CUDA (skipped elsewhere)
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@needs_cuda
@pytest.mark.parametrize("fused", [False, True])
def test_on_cuda_training_steps_never_wait_for_the_gpu(fused):
    data = d2l.DateTranslation(512, seed=0)
    src, tgt_in, tgt_out = data.tensors()
    d2l.set_seed(0)
    model = d2l.Transformer(len(data.src_vocab), len(data.tgt_vocab), 32, 4, 1, 64, 0.1).cuda()
    d2l.set_fused_attention(model, fused)
    loss = lambda logits, y: d2l.label_smoothing_cross_entropy(logits, y, 0.1, ignore_index=0)  # noqa: E731
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, d2l.warmup_cosine_schedule(5, 20))
    g = torch.Generator().manual_seed(0)
    batches = lambda: d2l.bucket_batches(src, tgt_in, tgt_out, 64, generator=g)  # noqa: E731

    def strict(net, hist):  # any synchronising CUDA call during steps 3..19 raises
        torch.cuda.set_sync_debug_mode("error" if 2 <= hist.steps < 19 else "default")
    try:
        hist = d2l.train(model, loss, opt, batches, device="cuda", scheduler=sched, amp=True,
                         grad_clip=1.0, max_steps=20, callbacks=[strict], progress=False,
                         sync_every=100)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert hist.steps == 20 and len(hist.step_loss) == 20
    assert all(math.isfinite(v) for v in hist.step_loss)


@needs_cuda
def test_on_cuda_bad_token_ids_get_a_clear_error_before_the_batch_moves():
    model = _tiny_transformer().cuda()
    src, tgt = _tokens()
    src[0, 0] = -1
    loss = lambda logits, y: F.cross_entropy(logits.transpose(1, 2), y)  # noqa: E731
    with pytest.raises(ValueError, match=r"token id -1 is out of range for a vocabulary of size 11"):
        d2l.train(model, loss, torch.optim.SGD(model.parameters(), lr=0.1), [(src, tgt, tgt)],
                  device="cuda", progress=False)


# ---------------------------------------------------------------- steps, schedules, progress


def test_max_steps_runs_exactly_that_many_steps_over_several_epochs():
    torch.manual_seed(0)
    net = nn.Linear(2, 1)
    data = [(torch.randn(4, 2), torch.randn(4, 1)) for _ in range(8)]   # 8 batches an epoch
    hist = d2l.train(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.01), data,
                     max_steps=100, progress=False)
    assert hist.steps == 100 and len(hist.step_loss) == 100
    assert len(hist.epoch_loss) == 13          # 12 full epochs and the 4 steps of the 13th
    hist = d2l.train(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.01), data,
                     num_epochs=2, max_steps=100, progress=False)
    assert hist.steps == 16                    # both given: whichever ends first


def test_a_schedule_function_works_as_scheduler():
    def run(scheduler_of):
        torch.manual_seed(0)
        net = nn.Linear(2, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        lrs = []
        data = [(torch.randn(4, 2), torch.randn(4, 1)) for _ in range(5)]
        d2l.train(net, nn.MSELoss(), opt, data, scheduler=scheduler_of(opt), progress=False,
                  callbacks=[lambda n, h: lrs.append(opt.param_groups[0]["lr"])])
        return lrs, net.weight.detach().clone()
    sched = d2l.warmup_cosine_schedule(2, 5)
    lrs_fn, w_fn = run(lambda opt: sched)
    lrs_obj, w_obj = run(lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, sched))
    assert lrs_fn == lrs_obj and torch.equal(w_fn, w_obj)
    assert lrs_fn[0] == pytest.approx(0.1 * sched(1))
    with pytest.raises(TypeError, match="needs a torch.optim optimizer"):
        d2l.train(nn.Linear(2, 1), nn.MSELoss(), lambda: None,
                  [(torch.randn(4, 2), torch.randn(4, 1))], scheduler=sched, progress=False)


def test_progress_bar_counts_steps(capsys):
    net = nn.Linear(2, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    batches = [(torch.randn(4, 2), torch.randn(4, 1)) for _ in range(3)]
    d2l.train(net, nn.MSELoss(), opt, batches, num_epochs=2, desc="known")
    assert "6/6" in capsys.readouterr().err
    d2l.train(net, nn.MSELoss(), opt, lambda: iter(batches), num_epochs=2, desc="unknown")
    err = capsys.readouterr().err
    assert "unknown: " in err and "6step" in err.replace(" ", "")
