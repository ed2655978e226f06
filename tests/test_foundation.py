"""Unit tests of the foundation modules: utils, data, regression, train and plot.plot."""
from __future__ import annotations

import random
import sys
import time

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import nn

import d2lmini as d2l
from d2lmini.utils import check_tensor

TRUE_W, TRUE_B = torch.tensor([2.0, -3.4]), 4.2


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def regression_data():
    d2l.set_seed(0)
    return d2l.synthetic_data(TRUE_W, TRUE_B, 1000)


# ---------------------------------------------------------------- utils

def test_device_is_the_best_available():
    dev = d2l.device()
    assert isinstance(dev, torch.device)
    if torch.cuda.is_available():
        assert dev.type == "cuda"
    elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        assert dev.type == "mps"
    else:
        assert dev.type == "cpu"
    torch.zeros(2, device=dev)  # usable


def test_set_seed_makes_python_numpy_and_torch_reproducible():
    def draw():
        return random.random(), np.random.rand(), torch.randn(3)

    d2l.set_seed(123)
    a = draw()
    d2l.set_seed(123)
    b = draw()
    d2l.set_seed(124)
    c = draw()
    assert a[0] == b[0] and a[1] == b[1] and torch.equal(a[2], b[2])
    assert a[0] != c[0] and not torch.equal(a[2], c[2])


@pytest.mark.parametrize("bad", [1.5, "0", True, None])
def test_set_seed_rejects_non_int(bad):
    with pytest.raises(TypeError, match="seed must be an int"):
        d2l.set_seed(bad)


def test_check_tensor_passes_good_input_through():
    x = torch.zeros(2, 3)
    assert check_tensor(x, "x", ndim=2, floating=True) is x
    assert check_tensor(x, "x", ndim=(1, 2)) is x


def test_check_tensor_errors_name_expected_and_given():
    with pytest.raises(TypeError, match=r"x must be a torch.Tensor, got list"):
        check_tensor([1, 2], "x")
    with pytest.raises(ValueError, match=r"x must be 3-D, got shape \(2, 3\)"):
        check_tensor(torch.zeros(2, 3), "x", ndim=3)
    with pytest.raises(ValueError, match=r"x must be 1-D or 3-D, got shape \(2, 3\)"):
        check_tensor(torch.zeros(2, 3), "x", ndim=(1, 3))
    with pytest.raises(TypeError, match=r"x must be a floating-point tensor, got torch.int64"):
        check_tensor(torch.zeros(2, dtype=torch.long), "x", floating=True)


def test_show_source_displays_highlighted_code_in_ipython(monkeypatch):
    import IPython
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())       # a running shell
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    d2l.show_source(d2l.linreg)
    assert len(shown) == 1 and isinstance(shown[0], IPython.display.Code)
    text = shown[0].data
    assert text.startswith("def linreg(") and "return X @ w + b" in text


@pytest.mark.parametrize("ipython", ["installed, no shell", "not installed"])
def test_show_source_prints_plain_text_outside_ipython(monkeypatch, capsys, ipython):
    import inspect

    if ipython == "not installed":
        monkeypatch.setitem(sys.modules, "IPython", None)                # import fails
        monkeypatch.setitem(sys.modules, "IPython.display", None)
    d2l.show_source(d2l.masked_softmax, checks=True)
    assert capsys.readouterr().out == inspect.getsource(d2l.masked_softmax)


def test_show_source_shows_the_teaching_core_by_default(capsys):
    """Argument checks (check_* calls, if ...: raise) fold into one comment line per
    run; the computation and the docstring stay, and the result still parses."""
    import ast
    import inspect

    d2l.show_source(d2l.linreg)
    core = capsys.readouterr().out
    full = inspect.getsource(d2l.linreg)
    assert "raise" in full and "check_tensor" in full
    assert "raise" not in core and "check_" not in core
    assert core.count("# (argument checks omitted)") == 1
    assert core.rstrip().endswith("return X @ w + b") and '"""The linear model' in core
    ast.parse(core)
    d2l.show_source(d2l.sgd)                   # a check inside the update loop
    core = capsys.readouterr().out
    assert "p -= lr * p.grad / batch_size" in core and "raise" not in core
    ast.parse(core)
    with pytest.raises(TypeError, match="checks must be True or False"):
        d2l.show_source(d2l.sgd, checks="yes")


# ---------------------------------------------------------------- data

def test_synthetic_data_shapes_and_statistics():
    d2l.set_seed(0)
    w = torch.tensor([1.0, -2.0, 0.5])
    X, y = d2l.synthetic_data(w, 3.0, 20000, noise=0.1)
    assert X.shape == (20000, 3) and y.shape == (20000, 1)
    assert X.dtype == y.dtype == torch.float32
    assert X.mean(0).abs().max() < 0.03 and (X.std(0) - 1).abs().max() < 0.03
    residual = y[:, 0] - (X @ w + 3.0)
    assert abs(residual.mean()) < 0.005 and abs(residual.std() - 0.1) < 0.005
    # least squares on the generated data recovers the generating parameters
    X1 = torch.cat([X, torch.ones(len(X), 1)], dim=1)
    sol = torch.linalg.lstsq(X1, y).solution[:, 0]
    assert torch.allclose(sol, torch.tensor([1.0, -2.0, 0.5, 3.0]), atol=0.005)


def test_synthetic_data_noise_free_and_generator():
    X, y = d2l.synthetic_data(TRUE_W, TRUE_B, 50, noise=0.0)
    assert torch.allclose(y[:, 0], X @ TRUE_W + TRUE_B)
    a = d2l.synthetic_data(TRUE_W, TRUE_B, 10, generator=torch.Generator().manual_seed(7))
    b = d2l.synthetic_data(TRUE_W, TRUE_B, 10, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    X64, _ = d2l.synthetic_data(TRUE_W.double(), TRUE_B, 5)
    assert X64.dtype == torch.float64


def test_synthetic_data_errors():
    with pytest.raises(ValueError, match=r"w must be 1-D, got shape \(2, 1\)"):
        d2l.synthetic_data(TRUE_W.reshape(2, 1), TRUE_B, 10)
    with pytest.raises(ValueError, match="num_examples must be >= 1, got 0"):
        d2l.synthetic_data(TRUE_W, TRUE_B, 0)


def test_data_iter_covers_every_row_once_per_epoch():
    X = torch.arange(103, dtype=torch.float32).reshape(-1, 1) * torch.ones(1, 2)  # row i = (i, i)
    y = torch.arange(103)
    orders = []
    for _ in range(2):
        batches = list(d2l.data_iter(10, X, y))
        assert [len(xb) for xb, _ in batches] == [10] * 10 + [3]  # last batch is smaller
        ids = torch.cat([yb for _, yb in batches])
        assert torch.equal(ids.sort().values, torch.arange(103))  # every row exactly once
        assert all(torch.equal(xb[:, 0].long(), yb) for xb, yb in batches)  # X and y stay paired
        orders.append(ids)
    assert not torch.equal(orders[0], orders[1])  # reshuffled each epoch
    assert not torch.equal(orders[0], torch.arange(103))


def test_data_iter_without_shuffle_and_with_generator():
    X, y = torch.randn(7, 3), torch.randn(7)
    batches = list(d2l.data_iter(3, X, y, shuffle=False))
    assert [tuple(xb.shape) for xb, _ in batches] == [(3, 3), (3, 3), (1, 3)]
    assert torch.equal(torch.cat([xb for xb, _ in batches]), X)
    one = [yb for _, yb in d2l.data_iter(2, X, y, generator=torch.Generator().manual_seed(1))]
    two = [yb for _, yb in d2l.data_iter(2, X, y, generator=torch.Generator().manual_seed(1))]
    assert all(torch.equal(a, b) for a, b in zip(one, two))
    assert len(list(d2l.data_iter(100, X, y))) == 1  # batch bigger than the data: one batch


def test_data_iter_errors():
    X = torch.randn(10, 2)
    with pytest.raises(ValueError, match=r"same number of rows, got X \(10, 2\) and y \(9, 1\)"):
        next(d2l.data_iter(2, X, torch.randn(9, 1)))
    for bad in (0, -3, 2.5):
        with pytest.raises(ValueError, match=f"batch_size must be a positive int, got {bad}"):
            next(d2l.data_iter(bad, X, torch.randn(10, 1)))
    with pytest.raises(TypeError, match="X must be a torch.Tensor"):
        next(d2l.data_iter(2, X.numpy(), torch.randn(10, 1)))


# ---------------------------------------------------------------- regression

def test_linreg_equals_nn_linear_forward_and_gradients():
    torch.manual_seed(0)
    layer = nn.Linear(3, 1)
    w = layer.weight.detach().T.clone().requires_grad_()  # (3, 1)
    b = layer.bias.detach().clone().requires_grad_()      # (1,)
    X = torch.randn(8, 3)
    ours = d2l.linreg(X, w, b)
    assert ours.shape == (8, 1)
    assert torch.allclose(ours, layer(X))
    ours.sum().backward()
    layer(X).sum().backward()
    assert torch.allclose(w.grad, layer.weight.grad.T) and torch.allclose(b.grad, layer.bias.grad)


def test_linreg_shape_errors_name_expected_and_given():
    X = torch.randn(4, 2)
    with pytest.raises(ValueError, match=r"X has 2 features but w has shape \(3, 1\); "
                                         r"expected w of shape \(2, 1\)"):
        d2l.linreg(X, torch.zeros(3, 1), torch.zeros(1))
    with pytest.raises(ValueError, match=r"w must be 2-D, got shape \(2,\)"):
        d2l.linreg(X, torch.zeros(2), torch.zeros(1))
    with pytest.raises(ValueError, match=r"X must be 2-D, got shape \(2,\)"):
        d2l.linreg(torch.zeros(2), torch.zeros(2, 1), torch.zeros(1))


def test_squared_loss_values_shapes_and_gradient():
    y_hat = torch.tensor([[1.0], [2.0], [4.0]], requires_grad=True)
    y = torch.tensor([0.0, 2.0, 1.0])  # (n,) is accepted and reshaped like y_hat
    l = d2l.squared_loss(y_hat, y)
    assert l.shape == (3, 1)
    assert torch.equal(l, torch.tensor([[0.5], [0.0], [4.5]]))
    assert torch.allclose(2 * l.mean(), F.mse_loss(y_hat, y.reshape(-1, 1)))
    l.sum().backward()
    assert torch.equal(y_hat.grad, y_hat.detach() - y.reshape(-1, 1))  # d/dy_hat = y_hat - y


def test_squared_loss_error():
    with pytest.raises(ValueError, match=r"got y_hat \(3, 1\) and y \(2,\)"):
        d2l.squared_loss(torch.zeros(3, 1), torch.zeros(2))


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_sgd_matches_torch_optim_sgd(reduction):
    torch.manual_seed(0)
    X, y = torch.randn(16, 3), torch.randn(16, 1)
    w1, b1 = torch.randn(3, 1, requires_grad=True), torch.randn(1, requires_grad=True)
    w2, b2 = w1.detach().clone().requires_grad_(), b1.detach().clone().requires_grad_()
    opt = torch.optim.SGD([w2, b2], lr=0.1)
    for _ in range(3):
        l1 = d2l.squared_loss(d2l.linreg(X, w1, b1), y)
        (l1.mean() if reduction == "mean" else l1.sum()).backward()
        # a summed loss needs the batch size: p -= lr * grad / batch_size
        d2l.sgd([w1, b1], 0.1, batch_size=1 if reduction == "mean" else 16)
        opt.zero_grad()
        d2l.squared_loss(d2l.linreg(X, w2, b2), y).mean().backward()
        opt.step()
        assert torch.allclose(w1, w2, atol=1e-6) and torch.allclose(b1, b2, atol=1e-6)
        assert torch.equal(w1.grad, torch.zeros_like(w1)) and torch.equal(b1.grad, torch.zeros(1))
    assert not torch.allclose(w1, torch.zeros_like(w1))  # it really moved


def test_sgd_errors():
    p = torch.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="call backward"):
        d2l.sgd([p], 0.1)
    p.sum().backward()
    with pytest.raises(ValueError, match="lr must be positive, got 0"):
        d2l.sgd([p], 0.0)
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        d2l.sgd([p], 0.1, batch_size=0)


def test_softmax_matches_torch_and_is_stable():
    torch.manual_seed(0)
    X = torch.randn(4, 5, 6)
    for dim in (-1, 1, 0):
        assert torch.allclose(d2l.softmax(X, dim=dim), torch.softmax(X, dim=dim), atol=1e-7)
    big = torch.tensor([[1000.0, 1001.0], [-1000.0, -1001.0]])
    naive = torch.exp(big) / torch.exp(big).sum(1, keepdim=True)
    assert torch.isnan(naive[0]).all()  # the problem the max trick solves
    p = d2l.softmax(big)
    assert torch.isfinite(p).all() and torch.allclose(p, torch.softmax(big, dim=1))
    assert torch.allclose(p[0], torch.tensor([1.0, np.e]) / (1 + np.e))
    with pytest.raises(TypeError, match="floating-point"):
        d2l.softmax(torch.tensor([1, 2]))


def test_cross_entropy_matches_torch_forward_and_gradient():
    torch.manual_seed(0)
    logits = torch.randn(6, 4, requires_grad=True)
    y = torch.tensor([0, 3, 1, 1, 2, 0])
    ours = d2l.cross_entropy(logits, y)
    assert ours.shape == (6,)
    ref = F.cross_entropy(logits, y, reduction="none")
    assert torch.allclose(ours, ref)
    g_ours, = torch.autograd.grad(ours.mean(), logits)
    g_ref, = torch.autograd.grad(ref.mean(), logits)
    assert torch.allclose(g_ours, g_ref)
    assert torch.allclose(g_ours, (torch.softmax(logits, 1) - F.one_hot(y, 4)).detach() / 6)
    # a confident wrong prediction: finite, and equal to torch's
    wrong = torch.tensor([[0.0, 200.0]])
    assert d2l.cross_entropy(wrong, torch.tensor([0])).item() == pytest.approx(200.0)


def test_cross_entropy_and_accuracy_errors():
    with pytest.raises(ValueError, match=r"expected integer class ids y of shape \(3,\)"):
        d2l.cross_entropy(torch.randn(3, 2), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="integer class ids"):
        d2l.cross_entropy(torch.randn(3, 2), torch.tensor([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match=r"logits must be 2-D"):
        d2l.cross_entropy(torch.randn(3), torch.tensor([0, 1, 1]))
    assert d2l.accuracy(torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]),
                        torch.tensor([1, 1, 1])) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match=r"expected y of shape \(3,\), got \(2,\)"):
        d2l.accuracy(torch.randn(3, 2), torch.tensor([0, 1]))


# ---------------------------------------------------------------- train

def test_train_from_scratch_sgd_recovers_true_parameters(regression_data):
    X, y = regression_data
    w = torch.normal(0, 0.01, size=(2, 1), requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    hist = d2l.train(lambda X: d2l.linreg(X, w, b), d2l.squared_loss,
                     lambda: d2l.sgd([w, b], 0.03), lambda: d2l.data_iter(10, X, y),
                     num_epochs=3, progress=False)
    assert hist.steps == 300 and len(hist.step_loss) == 300 and len(hist.epoch_loss) == 3
    assert hist.epoch_loss[0] > hist.epoch_loss[1] > hist.epoch_loss[2]
    assert (w.detach()[:, 0] - TRUE_W).abs().max() < 0.01 and abs(b.item() - TRUE_B) < 0.01
    assert hist.seconds > 0


def test_train_equals_a_hand_written_loop(regression_data):
    X, y = regression_data
    results = []
    for use_train in (False, True):
        d2l.set_seed(3)
        w, b = torch.normal(0, 0.01, size=(2, 1), requires_grad=True), torch.zeros(1, requires_grad=True)
        if use_train:
            d2l.train(lambda X: d2l.linreg(X, w, b), d2l.squared_loss, lambda: d2l.sgd([w, b], 0.03),
                      lambda: d2l.data_iter(10, X, y), 2, progress=False)
        else:
            for _ in range(2):
                for Xb, yb in d2l.data_iter(10, X, y):
                    d2l.squared_loss(d2l.linreg(Xb, w, b), yb).mean().backward()
                    d2l.sgd([w, b], 0.03)
        results.append((w.detach(), b.detach()))
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


def test_train_nn_linear_with_torch_optim(regression_data):
    X, y = regression_data
    torch.manual_seed(0)
    net = nn.Linear(2, 1)
    data = list(zip(X.split(50), y.split(50)))  # a re-iterable list of batches works too
    hist = d2l.train(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.05), data,
                     num_epochs=5, device="cpu", progress=False)
    assert hist.steps == 100
    assert torch.allclose(net.weight.detach()[0], TRUE_W, atol=0.01)
    assert abs(net.bias.item() - TRUE_B) < 0.01


def test_train_keeps_a_summed_loss_as_is(regression_data):
    X, y = regression_data
    net = nn.Linear(2, 1)
    data = [(X[:10], y[:10])]
    with torch.no_grad():
        expected = F.mse_loss(net(X[:10]), y[:10], reduction="sum").item()
    hist = d2l.train(net, nn.MSELoss(reduction="sum"), torch.optim.SGD(net.parameters(), lr=1e-4),
                     data, 1, progress=False)
    assert hist.step_loss[0] == pytest.approx(expected)


def test_train_max_steps_and_max_seconds_stop(regression_data):
    X, y = regression_data
    net = nn.Linear(2, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    data = lambda: d2l.data_iter(10, X, y)  # noqa: E731  (100 steps per epoch)
    hist = d2l.train(net, nn.MSELoss(), opt, data, num_epochs=50, max_steps=130, progress=False)
    assert hist.steps == 130 and len(hist.step_loss) == 130 and len(hist.epoch_loss) == 2
    hist = d2l.train(net, nn.MSELoss(), opt, data, num_epochs=50, max_seconds=0.0, progress=False)
    assert hist.steps == 1 and len(hist.epoch_loss) == 1
    start = time.perf_counter()
    hist = d2l.train(net, nn.MSELoss(), opt, data, num_epochs=10**6, max_seconds=0.3, progress=False)
    assert 0.3 <= hist.seconds < 5 and time.perf_counter() - start < 5 and hist.steps >= 1


def test_train_eval_fn_metrics_are_recorded_in_eval_mode_without_grad(regression_data):
    X, y = regression_data
    net = nn.Sequential(nn.Linear(2, 1), nn.Dropout(0.1))
    seen = []

    def eval_fn():
        seen.append((net.training, torch.is_grad_enabled()))
        return {"val": F.mse_loss(net(X), y).item(), "const": torch.tensor(1.5)}

    hist = d2l.train(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.05),
                     lambda: d2l.data_iter(100, X, y), num_epochs=4, eval_fn=eval_fn, progress=False)
    assert seen == [(False, False)] * 4
    assert net.training  # back in training mode afterwards
    assert list(hist.metrics) == ["val", "const"]
    assert len(hist.metrics["val"]) == 4 and hist.metrics["const"] == [1.5] * 4
    assert hist.metrics["val"][-1] < hist.metrics["val"][0]


def test_train_callbacks_run_after_every_step(regression_data):
    X, y = regression_data
    net = nn.Linear(2, 1)
    calls = []
    d2l.train(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.01),
              lambda: d2l.data_iter(250, X, y), num_epochs=3,
              callbacks=[lambda n, h: calls.append((n is net, h.steps, len(h.step_loss)))],
              progress=False)
    assert calls == [(True, s, s) for s in range(1, 13)]


@pytest.mark.parametrize("bad", [0, -1])
def test_train_rejects_bad_num_epochs(bad):
    net = nn.Linear(2, 1)
    with pytest.raises(ValueError, match=f"num_epochs must be >= 1, got {bad}"):
        d2l.train(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.1), [], bad,
                  progress=False)


def test_train_rejects_bad_updater():
    with pytest.raises(TypeError, match="updater must be an optimizer or a function, got float"):
        d2l.train(nn.Linear(2, 1), nn.MSELoss(), 0.1, [], 1, progress=False)


# ---------------------------------------------------------------- plot

def test_plot_one_curve_from_a_list_or_tensor():
    for y in ([3.0, 1.0, 2.0], torch.tensor([3.0, 1.0, 2.0]), np.array([3.0, 1.0, 2.0])):
        fig = d2l.plot(y, xlabel="step", ylabel="loss", title="t")
        assert isinstance(fig, Figure)
        ax = fig.axes[0]
        assert len(ax.lines) == 1
        assert np.array_equal(ax.lines[0].get_xdata(), [0, 1, 2])
        assert np.array_equal(ax.lines[0].get_ydata(), [3.0, 1.0, 2.0])
        assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("step", "loss", "t")


def test_plot_several_curves_shared_or_paired_x():
    x = torch.arange(4.0)
    fig = d2l.plot(x, [x ** 2, torch.ones(4), [0, 1, 0, 1]], legend=["sq", "one", "alt"],
                   yscale="log")
    ax = fig.axes[0]
    assert len(ax.lines) == 3 and ax.get_yscale() == "log"
    assert np.array_equal(ax.lines[0].get_ydata(), [0, 1, 4, 9])
    assert all(np.array_equal(line.get_xdata(), [0, 1, 2, 3]) for line in ax.lines)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["sq", "one", "alt"]
    fig = d2l.plot([[1, 2], [10, 20, 30]], [[5, 6], [7, 8, 9]])
    lines = fig.axes[0].lines
    assert len(lines) == 2
    assert np.array_equal(lines[1].get_xdata(), [10, 20, 30])
    assert np.array_equal(lines[1].get_ydata(), [7, 8, 9])


def test_plot_draws_on_a_given_axes():
    fig, (a1, a2) = plt.subplots(1, 2)
    out = d2l.plot([1, 2, 3], ax=a2, xlim=(0, 5))
    assert out is fig and len(a1.lines) == 0 and len(a2.lines) == 1
    assert a2.get_xlim() == (0, 5)


def test_plot_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="curve 1: x has 3 points but y has 2"):
        d2l.plot([0, 1, 2], [[1, 2, 3], [1, 2]])
    with pytest.raises(ValueError, match="got 3 x sequences for 2 y curves"):
        d2l.plot([[0, 1], [0, 1], [0, 1]], [[1, 2], [1, 2]])
    with pytest.raises(ValueError, match=r"Y must hold 1-D curves, got one of shape \(2, 2\)"):
        d2l.plot(torch.zeros(2, 2))
