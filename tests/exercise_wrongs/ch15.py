"""Answers chapter 15's exercise checks must reject (WRONG) and accept (RIGHT)."""
import math

import torch


# ------------------------------------------------------------------ fit_power_law
def _fit(N, L, alphas):
    N, L = N.double(), L.double()
    best = None
    for alpha in alphas:
        X = torch.stack([N ** -alpha, torch.ones_like(N)], 1)
        coef = torch.linalg.lstsq(X, L[:, None]).solution[:, 0]
        sse = ((X @ coef - L) ** 2).sum().item()
        if best is None or sse < best[0]:
            best = (sse, coef[0].item(), alpha, coef[1].item())
    return best[1:]


def _fit_right(N, L):
    """Written differently: golden-section search on alpha, closed-form a and L_inf."""
    N, L = N.double(), L.double()

    def solve(alpha):
        x = N ** -alpha
        xm, lm = x.mean(), L.mean()
        a = ((x - xm) * (L - lm)).sum() / ((x - xm) ** 2).sum()
        c = lm - a * xm
        return ((a * x + c - L) ** 2).sum().item(), a.item(), c.item()

    lo, hi = 0.01, 2.0
    g = (math.sqrt(5) - 1) / 2
    for _ in range(80):
        m1, m2 = hi - g * (hi - lo), lo + g * (hi - lo)
        if solve(m1)[0] < solve(m2)[0]:
            hi = m2
        else:
            lo = m1
    alpha = (lo + hi) / 2
    _, a, c = solve(alpha)
    return a, alpha, c


def _loglog(N, L):                     # Kaplan's form: no floor
    X = torch.stack([N.double().log(), torch.ones_like(N, dtype=torch.float64)], 1)
    slope, icpt = torch.linalg.lstsq(X, L.double().log()[:, None]).solution[:, 0]
    return math.exp(icpt.item()), -slope.item(), 0.0


def _floor_at_min(N, L):               # L_inf just below the smallest loss, then a line
    floor = L.min().item() - 1e-3
    a, alpha, _ = _loglog(N, L - floor)
    return a, alpha, floor


def _coarse(N, L):                     # alpha on a grid of 0.1, no refinement
    return _fit(N, L, [0.1 * i for i in range(1, 20)])


def _order(N, L):                      # the triple in the wrong order
    a, alpha, c = _fit_right(N, L)
    return alpha, a, c


def _sign(N, L):                       # the exponent returned as a negative number
    a, alpha, c = _fit_right(N, L)
    return a, -alpha, c


# ------------------------------------------------------------------ head_scores
def _scores(weights, tokens, *, shift=1, all_queries=False, wrap_prev=False,
            last_only=False, clamp=True):
    B, h, T, _ = weights.shape
    t = torch.arange(0 if wrap_prev else 1, T)
    prev = weights[:, :, t, t - 1].mean((0, 2))
    mass = torch.zeros(B, h, T)
    has = torch.zeros(B, T, dtype=torch.bool)
    for b in range(B):
        for q in range(T):
            keys = [j for j in range(shift, q + 1)
                    if tokens[b, j - shift] == tokens[b, q] and j - shift < q]
            if last_only and keys:
                keys = keys[-1:]
            if keys:
                has[b, q] = True
                mass[b, :, q] = weights[b, :, q, keys].sum(-1)
    if all_queries:
        return prev, mass.mean((0, 2))
    n = has.sum().clamp(min=1) if clamp else has.sum()
    return prev, (mass * has[:, None]).sum((0, 2)) / n


def _scores_right(weights, tokens):
    """Written differently: a loop over rows and queries."""
    B, h, T, _ = weights.shape
    prev = torch.stack([weights[:, :, t, t - 1] for t in range(1, T)], -1).mean((0, 2))
    total, n = torch.zeros(h), 0
    for b in range(B):
        for q in range(T):
            keys = [j for j in range(1, q + 1) if tokens[b, j - 1] == tokens[b, q]]
            if keys:
                total += weights[b, :, q, keys].sum(-1)
                n += 1
    return prev, total / max(n, 1)


# ------------------------------------------------------------------ strided mask
def _strided(T, stride, causal=True, rule="lag", dtype=torch.bool):
    i = torch.arange(T)
    lag = i[:, None] - i[None, :]
    if rule == "lag":
        m = lag % stride == 0
    elif rule == "band":
        m = lag < stride
    else:                                   # absolute key positions
        m = (i[None, :] % stride == 0) | (lag == 0)
    if causal:
        m = m & (lag >= 0)
    return m[None, None].to(dtype)


def _strided_loop(T, stride):               # right, but with a Python loop
    m = torch.zeros(1, 1, T, T, dtype=torch.bool)
    for i in range(T):
        m[0, 0, i, i::-stride] = True
    return m


def _strided_right(T, stride):
    lag = torch.arange(T)[:, None] - torch.arange(T)
    return (torch.ones(T, T, dtype=torch.bool).tril()
            & (torch.remainder(lag, stride) == 0)).view(1, 1, T, T)


WRONG = {
    "ch15_power_law_fit": [_loglog, _floor_at_min, _coarse, _order, _sign],
    "ch15_head_scores": [
        lambda w, t: _scores(w, t, shift=0),          # the earlier occurrence itself
        lambda w, t: _scores(w, t, all_queries=True),  # every query in the mean
        lambda w, t: _scores(w, t, wrap_prev=True),    # query 0 "sees" key -1
        lambda w, t: _scores(w, t, last_only=True),    # only the latest occurrence
        lambda w, t: _scores(w, t, clamp=False),       # NaN when nothing repeats
    ],
    "ch15_strided_mask": [
        lambda T, s: _strided(T, s, causal=False),     # future keys at lag -s, -2s
        lambda T, s: _strided(T, s, rule="band"),       # the local band instead
        lambda T, s: _strided(T, s, rule="absolute"),   # key positions 0, s, 2s, ...
        lambda T, s: _strided(T, s, dtype=torch.float32),
        _strided_loop,
    ],
}

RIGHT = {
    "ch15_power_law_fit": [_fit_right],
    "ch15_head_scores": [_scores_right],
    "ch15_strided_mask": [_strided_right],
}
