"""Answers chapter 3's exercise checks must reject (WRONG) and accept (RIGHT)."""
import torch
import torch.nn.functional as F

import d2lmini as d2l


def _lam(X):
    return torch.linalg.eigvalsh(2 / len(X) * X.T @ X).max().item()


def _rss(X, y, bias=True):
    X1 = torch.cat([X, torch.ones(len(X), 1, dtype=X.dtype)], dim=1) if bias else X
    w = torch.linalg.lstsq(X1, y[:, None]).solution
    return ((X1 @ w - y[:, None]) ** 2).sum().item()


def _softmax_loop(X, y, num_classes, lr, batch_size, num_epochs, generator, *,
                  loss_fn=None, zero=True, dim=1, use_bias=True, start=0.0,
                  own_order=False):
    """A from-scratch run with one near-miss chosen by the flags."""
    W = torch.full((X.shape[1], num_classes), start, requires_grad=True)
    b = torch.zeros(num_classes, requires_grad=True)
    for _ in range(num_epochs):
        batches = (d2l.data_iter(batch_size, X, y) if own_order
                   else d2l.data_iter(batch_size, X, y, generator=generator))
        for Xb, yb in batches:
            O = Xb @ W + (b if use_bias else 0)
            if loss_fn is None:
                P = torch.exp(O - O.amax(dim=dim, keepdim=True))
                P = P / P.sum(dim=dim, keepdim=True)
                loss = -torch.log(P[torch.arange(len(yb)), yb]).mean()
            else:
                loss = loss_fn(O, yb)
            loss.backward()
            with torch.no_grad():
                W -= lr * W.grad
                if use_bias:
                    b -= lr * b.grad
                if zero:
                    W.grad.zero_()
                    if b.grad is not None:
                        b.grad.zero_()
    return W.detach(), b.detach()


def _sm_sum(*a):
    return _softmax_loop(*a, loss_fn=lambda O, y: d2l.cross_entropy(O, y).sum())


def _sm_no_zero(*a):
    return _softmax_loop(*a, loss_fn=lambda O, y: d2l.cross_entropy(O, y).mean(),
                         zero=False)


def _sm_dim0(*a):
    return _softmax_loop(*a, dim=0)


def _sm_no_bias(*a):
    return _softmax_loop(*a, loss_fn=lambda O, y: d2l.cross_entropy(O, y).mean(),
                         use_bias=False)


def _sm_naive(*a):                        # softmax, then log: -log 0 = inf
    def naive(O, y):
        P = torch.exp(O) / torch.exp(O).sum(dim=1, keepdim=True)
        return -torch.log(P[torch.arange(len(y)), y]).mean()
    return _softmax_loop(*a, loss_fn=naive)


def _sm_torch_ce(*a):
    return _softmax_loop(*a, loss_fn=lambda O, y: F.cross_entropy(O, y))


def _sm_random_start(*a):
    return _softmax_loop(*a, loss_fn=lambda O, y: d2l.cross_entropy(O, y).mean(),
                         start=0.01)


def _sm_own_order(*a):                    # ignores the generator: other minibatches
    return _softmax_loop(*a, loss_fn=lambda O, y: d2l.cross_entropy(O, y).mean(),
                         own_order=True)


def _sm_transposed(X, y, q, lr, bs, ne, g):
    W, b = _softmax_loop(X, y, q, lr, bs, ne, g,
                         loss_fn=lambda O, y: d2l.cross_entropy(O, y).mean())
    return W.T, b


WRONG = {
    "ch3_lr_max": [
        lambda X: 1 / _lam(X),                                   # half the limit
        lambda X: 2 / torch.linalg.eigvalsh(X.T @ X).max().item(),  # 2/n forgotten
        lambda X: 2 / torch.linalg.eigvalsh(2 / len(X) * X.T @ X).min().item(),
        lambda X: 2 / torch.trace(2 / len(X) * X.T @ X).item(),   # safe, not largest
        lambda X: 1.0,                                           # "about 1"
    ],
    "ch3_sigma_mle": [
        lambda X, y: (_rss(X, y) / (len(X) - X.shape[1] - 1)) ** 0.5,   # unbiased
        lambda X, y: (_rss(X, y) / (len(X) - 1)) ** 0.5,
        lambda X, y: _rss(X, y) / len(X),                        # the variance
        lambda X, y: (_rss(X, y, bias=False) / len(X)) ** 0.5,   # no bias in the fit
        lambda X, y: y.std(unbiased=False).item(),               # spread of y itself
    ],
    "ch3_bce_with_logits": [
        lambda z, y: -y * torch.log(torch.sigmoid(z))
        - (1 - y) * torch.log(1 - torch.sigmoid(z)),             # the naive formula
        lambda z, y: y * torch.log(1 + torch.exp(-z))
        + (1 - y) * torch.log(1 + torch.exp(z)),                 # overflows
        lambda z, y: z.clamp(min=0) + y * z + torch.log1p(torch.exp(-z.abs())),  # sign
        lambda z, y: (z.clamp(min=0) - y * z + torch.log1p(torch.exp(-z.abs()))).mean(),
        lambda z, y: F.binary_cross_entropy_with_logits(z, y, reduction="none"),
        lambda z, y: torch.nn.functional.softplus(z) - y * z,    # a ready-made softplus
    ],
    "ch3_softmax_scratch": [
        _sm_sum, _sm_no_zero, _sm_dim0, _sm_no_bias, _sm_naive, _sm_torch_ce,
        _sm_random_start, _sm_own_order, _sm_transposed,
    ],
}


def _bce_where(z, y):
    big = z > 0
    pos = torch.where(big, z, torch.zeros_like(z))
    return pos - y * z + torch.log(1 + torch.exp(-torch.abs(z)))


def _sm_right(X, y, q, lr, bs, ne, g):
    W = torch.zeros(X.shape[1], q).requires_grad_()
    b = torch.zeros(q).requires_grad_()
    for _ in range(ne):
        for Xb, yb in d2l.data_iter(bs, X, y, generator=g):
            O = Xb @ W + b
            m = O.max(dim=1, keepdim=True).values
            log_z = m[:, 0] + (O - m).exp().sum(1).log()
            loss = (log_z - O[torch.arange(len(yb)), yb]).mean()
            gW, gb = torch.autograd.grad(loss, (W, b))
            with torch.no_grad():
                W -= lr * gW
                b -= lr * gb
    return W.detach(), b.detach()


RIGHT = {
    "ch3_lr_max": [lambda X: len(X) / torch.linalg.matrix_norm(X, ord=2).item() ** 2],
    "ch3_sigma_mle": [
        lambda X, y: (lambda X1: torch.sqrt(torch.mean(
            (X1 @ torch.linalg.pinv(X1) @ y - y) ** 2)).item())(
                torch.cat([X, torch.ones(len(X), 1, dtype=X.dtype)], 1))],
    "ch3_bce_with_logits": [_bce_where],
    "ch3_softmax_scratch": [_sm_right],
}
