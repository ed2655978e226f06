"""d2l.peak_memory (chapter 2): the peak bytes of the tensors a computation allocates,
on any device; and d2l.graph_diagram / d2l.network_diagram (chapters 2 and 3)."""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest
import torch

import d2lmini as d2l


def test_one_allocation_is_its_bytes():
    assert d2l.peak_memory(lambda: torch.zeros(1000)) == 4000
    assert d2l.peak_memory(lambda: torch.zeros(10, dtype=torch.float64)) == 80


def test_views_and_inputs_are_not_counted():
    x = torch.randn(100)
    assert d2l.peak_memory(lambda: (x.view(10, 10), x[:5], x.unsqueeze(0).mT)) == 0


def test_freed_temporaries_do_not_add_up():
    def chain():
        h = torch.randn(256)              # 1 KiB
        for _ in range(20):
            h = torch.tanh(h)             # the old h is freed each time
        return h
    assert d2l.peak_memory(chain) <= 3 * 1024


def test_reverse_mode_grows_with_depth_and_no_grad_does_not():
    def peak(depth, grad):
        Ws = [torch.randn(16, 16, requires_grad=grad) for _ in range(depth)]
        x = torch.randn(64, 16)

        def run():
            h = x
            for W in Ws:
                h = torch.tanh(h @ W)
            if grad:
                h.sum().backward()
        if grad:
            return d2l.peak_memory(run)
        with torch.no_grad():
            return d2l.peak_memory(run)
    act = 64 * 16 * 4
    growth = (peak(8, True) - peak(4, True)) / 4
    assert 0.9 * act <= growth <= 1.6 * act
    assert peak(8, False) == peak(4, False)


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="fn must be a function of no arguments"):
        d2l.peak_memory(torch.zeros(3))


def test_graph_diagram_draws_every_node_with_value_and_grad():
    w = torch.tensor(0.5, requires_grad=True)
    b = torch.tensor(-1.0, requires_grad=True)
    p = w * torch.tensor(3.0)
    loss = (p + b) ** 2
    p.retain_grad()
    loss.retain_grad()
    loss.backward()
    fig = d2l.graph_diagram(loss, {"w": w, "b": b, "p": p, "loss": loss})
    texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
    joined = "\n".join(texts)
    assert "w\nvalue 0.5\ngrad 3" in joined           # dl/dw = 2 (p + b) * 3 = 3
    assert "loss = square" in joined and "const" in joined
    assert fig.get_size_inches()[0] <= 5.2
    plt.close(fig)


def test_graph_diagram_refuses_what_it_cannot_draw():
    with pytest.raises(ValueError, match="grad_fn"):
        d2l.graph_diagram(torch.tensor(1.0), {})
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(ValueError, match="scalar"):
        d2l.graph_diagram(x * 2, {})
    with pytest.raises(TypeError, match="dict"):
        d2l.graph_diagram(x.sum(), ["x"])


def test_network_diagram_names_every_node():
    fig = d2l.network_diagram([2, 3], [2, 8, 1], titles=["a", "b"])
    texts = {t.get_text() for t in fig.findobj(matplotlib.text.Text)}
    assert {"x₁", "x₂", "o₃", "h₈", "o₁", "a", "b"} <= texts
    assert fig.get_size_inches()[0] <= 5.2
    plt.close(fig)
    with pytest.raises(ValueError, match="layer sizes"):
        d2l.network_diagram([3])
    with pytest.raises(ValueError, match="titles"):
        d2l.network_diagram([2, 1], titles=["a", "b"])
