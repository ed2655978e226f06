"""Chapter 3 (linear regression): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .core import Wrong, call, expect, forbid, register
from .core import fresh_generator as _gen, as_number as _number


def _close(got: float, want: float, case: str, rel: float = 1e-3) -> None:
    if not math.isfinite(got):
        raise Wrong(f"your answer is {got} ({case})")
    if not math.isclose(got, want, rel_tol=rel):
        ratio = got / want if want else float("nan")
        raise Wrong(f"not right ({case}): "
                    f"your answer is {ratio:.3g} times the right one")


@register("ch3_lr_max", "lr_max(X), largest stable lr", chapter=3,
          build=True)
def _lr_max(answer):
    g = _gen()
    cases = []
    for _ in range(4):
        n = int(torch.randint(32, 400, (1,), generator=g))
        d = int(torch.randint(1, 6, (1,), generator=g))
        scale = 0.3 + 2.7 * torch.rand(d, generator=g, dtype=torch.float64)
        if not cases:                             # one with scales far apart
            d, scale = 3, torch.tensor([0.5, 1.0, 3.0], dtype=torch.float64)
        cases.append(torch.randn(n, d, generator=g, dtype=torch.float64) * scale)
    for X in cases:
        case = f"X of shape {tuple(X.shape)}"
        got = _number(call(answer, X.clone(), case=case), case)
        H = 2 / len(X) * X.T @ X                  # Hessian of (1/n) ||X w - y||^2
        eig = torch.linalg.eigvalsh(H)
        want = 2 / eig.max().item()
        if X.shape[1] > 1 and math.isclose(got, 2 / eig.sum().item(), rel_tol=1e-6):
            raise Wrong(f"not right ({case}): 2 / trace(H) is a safe rate but not the "
                        "largest one; which eigenvalue limits the step?")
        _close(got, want, case)
    return f"{len(cases)} random data sets, features of different scales"


def _fit(X, y):
    X1 = torch.cat([X, torch.ones(len(X), 1, dtype=X.dtype)], dim=1)
    sol = torch.linalg.lstsq(X1, y[:, None]).solution[:, 0]
    return X1 @ sol - y


@register("ch3_sigma_mle", "sigma_mle(X, y), the noise level", chapter=3,
          build=True)
def _sigma_mle(answer):
    g = _gen()
    cases = [(8, 3), (12, 1), (30, 4), (200, 2)]
    for n, d in cases:
        X = torch.randn(n, d, generator=g, dtype=torch.float64)
        sigma = 0.2 + torch.rand((), generator=g, dtype=torch.float64).item()
        y = X @ torch.randn(d, generator=g, dtype=torch.float64) + 1.5 \
            + sigma * torch.randn(n, generator=g, dtype=torch.float64)
        case = f"n = {n}, d = {d}"
        got = _number(call(answer, X.clone(), y.clone(), case=case), case)
        rss = (_fit(X, y) ** 2).sum().item()
        want = math.sqrt(rss / n)
        near = {"the unbiased estimate's divisor n - d - 1; the likelihood's optimum "
                "divides by n": math.sqrt(rss / (n - d - 1)),
                "a divisor n - 1": math.sqrt(rss / (n - 1)),
                "the variance sigma^2, not sigma": rss / n}
        for why, value in near.items():
            if not math.isclose(want, value, rel_tol=1e-9) and math.isclose(
                    got, value, rel_tol=1e-6):
                raise Wrong(f"not right ({case}): this is {why}")
        no_bias = torch.linalg.lstsq(X, y[:, None]).solution[:, 0]
        if math.isclose(got, ((X @ no_bias - y) ** 2).mean().sqrt().item(),
                        rel_tol=1e-6):
            raise Wrong(f"not right ({case}): the model has a bias b too; fit w and b "
                        "together")
        if math.isclose(got, y.std(unbiased=False).item(), rel_tol=1e-6):
            raise Wrong(f"not right ({case}): that is the spread of y itself; sigma is "
                        "the spread of y around the best fit")
        _close(got, want, case, rel=1e-6)
    return f"{len(cases)} random data sets, from 8 examples up"


@register("ch3_bce_with_logits", "bce_with_logits(z, y), stable", chapter=3,
          build=True)
def _bce(answer):
    forbid(answer, ["binary_cross_entropy", "binary_cross_entropy_with_logits",
                    "logsigmoid", "softplus", "logsumexp", "BCELoss",
                    "BCEWithLogitsLoss", "torch.nn"],
           "the exercise builds the stable formula itself")
    g = _gen()
    extreme = torch.tensor([1000.0, -1000.0, 100.0, -100.0, 89.0, -89.0, 20.0, -20.0,
                            0.0, 1e-3])
    cases = [(3 * torch.randn(6, generator=g), torch.float32, "ordinary logits"),
             (extreme.repeat(2), torch.float32, "logits up to ±1000"),
             (5 * torch.randn(2, 3, 4, generator=g), torch.float64, "shape (2, 3, 4)")]
    for z, dtype, case in cases:
        z = z.to(dtype)
        y = (torch.rand(z.shape, generator=g) < 0.5).to(dtype)
        if case.startswith("logits up"):
            y = torch.cat([torch.ones(10), torch.zeros(10)]).to(dtype)
        case = f"{case}, {dtype}"
        got = call(answer, z.clone(), y.clone(), case=case)
        want = F.binary_cross_entropy_with_logits(z.double(), y.double(),
                                                  reduction="none").to(dtype)
        if isinstance(got, torch.Tensor) and got.shape == want.shape:
            bad = ~torch.isfinite(got)
            if bad.any():
                zs = sorted({round(v, 1) for v in z[bad].tolist()})[:4]
                raise Wrong(f"your loss is inf or nan at z = {zs} ({case}): not stable "
                            "for large |z|; rewrite it so that exp only sees "
                            "-|z|")
        expect(got, want, case=case, rtol=1e-5, atol=1e-6)
    return "ordinary logits, logits up to ±1,000 in float32, any shape"


# ------------------------------------------------------------------ the project
def _softmax_reference(X, y, q, lr, batch_size, num_epochs, seed, *, reduction="mean",
                       zero_grad=True, axis=1, bias=True):
    """The exercise's reference run (and its near-misses, by the flags)."""
    from ..data import data_iter
    g = torch.Generator().manual_seed(seed)
    W = torch.zeros(X.shape[1], q, dtype=X.dtype, requires_grad=True)
    b = torch.zeros(q, dtype=X.dtype, requires_grad=True)
    for _ in range(num_epochs):
        for Xb, yb in data_iter(batch_size, X, y, generator=g):
            O = Xb @ W + (b if bias else 0)
            logp = O - torch.logsumexp(O, dim=axis, keepdim=True)
            loss = -logp.gather(1, yb[:, None])
            loss = loss.sum() if reduction == "sum" else loss.mean()
            loss.backward()
            with torch.no_grad():
                W -= lr * W.grad
                b -= lr * b.grad if bias else 0
                if zero_grad:
                    W.grad.zero_()
                    b.grad.zero_() if b.grad is not None else None
    return W.detach(), b.detach()


_NEAR_MISSES = {
    "the summed loss instead of its mean over the minibatch": dict(reduction="sum"),
    "the gradients are never zeroed, so every step adds up all past gradients":
        dict(zero_grad=False),
    "the softmax runs over the batch axis (dim=0); each example's classes are dim=1":
        dict(axis=0),
    "the bias is never trained": dict(bias=False),
}


def _blobs(g, n_per_class, std=0.9):
    centers = torch.tensor([[-2.0, -1.0], [2.0, -1.0], [0.0, 2.0]])
    X = torch.cat([c + std * torch.randn(n_per_class, 2, generator=g) for c in centers])
    return X, torch.arange(3).repeat_interleave(n_per_class)


def _params(got, d, q, case):
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        raise Wrong(f"expected the pair (W, b) ({case}), got {type(got).__name__}")
    W, b = got
    for name, t, shape in (("W", W, (d, q)), ("b", b, (q,))):
        if not isinstance(t, torch.Tensor):
            raise Wrong(f"{name}: expected a tensor ({case}), got {type(t).__name__}")
        if tuple(t.shape) != shape:
            raise Wrong(f"{name} has shape {tuple(t.shape)} ({case}), expected {shape}"
                        + (" (the logits are X @ W + b)" if name == "W" else ""))
    return W.detach().double(), b.detach().double()


@register("ch3_softmax_scratch", "train_softmax from scratch",
          chapter=3, build=True, project=True)
def _softmax_scratch(answer):
    forbid(answer, ["torch.nn", "nn", "torch.optim", "optim", "F.cross_entropy",
                    "cross_entropy_loss", "nll_loss", "CrossEntropyLoss",
                    "torch.nn.functional.cross_entropy", "log_softmax"],
           "the exercise builds the classifier from tensors and autograd (d2l's "
           "cross_entropy and sgd are allowed)")
    g = _gen()
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=g))
    # 1. the same trajectory as the reference, on fresh random data
    n, d, q = 60, 4, 5
    X = torch.randn(n, d, generator=g)
    y = torch.randint(0, q, (n,), generator=g)
    case = f"{n} random examples, {d} features, {q} classes"
    got = call(answer, X.clone(), y.clone(), q, 0.5, 8, 3,
               torch.Generator().manual_seed(seed), case=case)
    W, b = _params(got, d, q, case)
    if not (torch.isfinite(W).all() and torch.isfinite(b).all()):
        raise Wrong(f"your parameters hold inf or nan ({case})")
    W_ref, b_ref = _softmax_reference(X.double(), y, q, 0.5, 8, 3, seed)
    if not (torch.allclose(W, W_ref, rtol=1e-4, atol=1e-5)
            and torch.allclose(b, b_ref, rtol=1e-4, atol=1e-5)):
        for why, flags in _NEAR_MISSES.items():
            W_alt, b_alt = _softmax_reference(X.double(), y, q, 0.5, 8, 3, seed,
                                              **flags)
            if torch.allclose(W, W_alt, rtol=1e-4, atol=1e-5):
                raise Wrong(f"{case}: {why}")
        raise Wrong(f"your W and b differ from the reference run ({case}); start "
                    "from zeros, use the mean cross-entropy, one "
                    "d2l.data_iter(batch_size, X, y, generator=generator) per epoch "
                    "and a plain step p -= lr * p.grad")
    # 2. logits that overflow a naive softmax
    X_big = 60 * torch.randn(n, d, generator=g)
    case = "features scaled by 60 (logits in the thousands)"
    got = call(answer, X_big.clone(), y.clone(), q, 0.5, 8, 2,
               torch.Generator().manual_seed(seed), case=case)
    W, b = _params(got, d, q, case)
    if not (torch.isfinite(W).all() and torch.isfinite(b).all()):
        raise Wrong(f"your parameters became inf or nan ({case}): compute the "
                    "cross-entropy stably (log-sum-exp with the maximum subtracted)")
    W_ref, b_ref = _softmax_reference(X_big.double(), y, q, 0.5, 8, 2, seed)
    scale = W_ref.abs().max().item()       # float32 against float64 on logits in the
    if not torch.allclose(W, W_ref, rtol=1e-2, atol=1e-2 * scale):   # thousands: loose
        raise Wrong(f"your W differs from the reference run ({case}): is the loss "
                    "computed stably for large logits?")
    # 3. the chapter's task: three Gaussian blobs
    X_tr, y_tr = _blobs(g, 100)
    X_te, y_te = _blobs(g, 100)
    got = call(answer, X_tr.clone(), y_tr.clone(), 3, 0.1, 30, 10,
               torch.Generator().manual_seed(seed), case="the three blobs")
    W, b = _params(got, 2, 3, "the three blobs")
    acc = ((X_te.double() @ W + b).argmax(1) == y_te).double().mean().item()
    loss0 = math.log(3)
    logits = X_tr.double() @ W + b
    loss = (torch.logsumexp(logits, 1) - logits.gather(1, y_tr[:, None])[:, 0]).mean()
    if acc < 0.8:
        raise Wrong(f"on the three blobs your classifier reaches a test accuracy of "
                    f"{acc:.3f} only")
    return (f"equal to the reference run on random data, stable for huge logits; on "
            f"the three blobs: training loss {loss0:.3f} -> {loss.item():.3f}, test "
            f"accuracy {acc:.3f} (always the most common class: 0.333)")
