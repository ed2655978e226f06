"""Scaling laws on the book's corpus: GPTs of several sizes, and how their loss falls.

Chapter 15 trains chapter 12's character GPT (``d2l.GPT`` with its defaults) at sizes
from a few thousand to a few hundred thousand parameters on tiny Shakespeare (the
same 90 / 10 split as chapter 12) and fits

    L(N)    = a N^(-alpha) + L_inf                  at a fixed number of tokens D
    L(N, D) = E + A N^(-alpha) + B D^(-beta)        (Hoffmann et al. 2022, approach 3)

N counts the **non-embedding** parameters (the blocks and the final LayerNorm: what
Kaplan et al. 2020 call N); the token table and the output head, V x d each, are left
out.  Training compute is C = 6 N D (Kaplan's estimate; see ``d2l.gpt_train_flops``).

``train_lm(shape, tokens, seed, lr)`` trains one model and returns its held-out loss;
``fit_power_law`` and ``fit_loss_surface`` fit by least squares (for a fixed exponent
the model is linear in the other parameters, so only the exponents are searched);
``bootstrap_over_seeds`` refits on seeds drawn with replacement, for an interval.
"""
from __future__ import annotations

import math
import numbers
import time

import torch
import torch.nn.functional as F

__all__ = ["SHAPES", "gpt_for", "non_embedding_params", "char_data", "train_lm",
           "fit_power_law", "fit_loss_surface", "bootstrap_over_seeds", "isoflop",
           "compute_optimal", "power_law", "loss_surface"]

#: the sizes of the scaling experiment: (num_layers, d_model, num_heads), d_ff = 4 d
SHAPES = {
    "S1": (1, 16, 2), "S2": (2, 16, 2), "S3": (2, 24, 2), "S4": (2, 32, 4),
    "S5": (2, 48, 4), "S6": (3, 64, 4),
    "XL": (4, 96, 4),    # held out of the fit: its loss is predicted before it trains
}


def _check_shape(shape) -> tuple[int, int, int]:
    if isinstance(shape, str):
        if shape not in SHAPES:
            raise ValueError(f"unknown size {shape!r}; expected one of "
                             f"{sorted(SHAPES)} "
                             f"or a tuple (num_layers, d_model, num_heads)")
        return SHAPES[shape]
    if (not isinstance(shape, (tuple, list)) or len(shape) != 3
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                       for v in shape)):
        raise ValueError(f"shape must be a size name or (num_layers, d_model, "
                         f"num_heads) positive ints, got {shape!r}")
    L, d, h = shape
    if d % h:
        raise ValueError(f"d_model={d} must be divisible by num_heads={h}")
    return tuple(shape)


def gpt_for(shape, vocab_size: int, context: int, gpt_class=None, **options):
    """A ``d2l.GPT`` (chapter 12's defaults, d_ff = 4 d_model) of the given shape: a
    name in :data:`SHAPES` or (num_layers, d_model, num_heads)."""
    from .gpt import GPT
    L, d, h = _check_shape(shape)
    cls = GPT if gpt_class is None else gpt_class
    return cls(vocab_size, d_model=d, num_heads=h, num_layers=L, d_ff=4 * d,
               max_len=context, **options)


def non_embedding_params(model) -> int:
    """Parameters of a ``d2l.GPT`` outside the token embedding, the position table
    and the output head: the blocks and the final LayerNorm (Kaplan et al.'s N)."""
    from .gpt import GPT
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a d2l.GPT, got {type(model).__name__}")
    return sum(p.numel() for name, p in model.named_parameters()
               if name.startswith(("blocks.", "norm.")))


def char_data():
    """tiny Shakespeare at the character level, split as in chapter 12 -> (train ids,
    held-out ids, vocab): the first 90 % and the last 10 % of the text, as 1-D long
    tensors, and the ``CharVocab`` (id 0 is padding, never a character)."""
    from .checkpoints import CharVocab, split_text
    from .gpt import load_corpus
    text = load_corpus("tinyshakespeare.txt")
    train_text, held_text = split_text(text)
    vocab = CharVocab(text)
    return (torch.tensor(vocab.encode(train_text)),
            torch.tensor(vocab.encode(held_text)), vocab)


@torch.no_grad()
def heldout_loss(model, held: torch.Tensor, max_windows: int | None = None,
                 batch_size: int = 128) -> float:
    """Mean cross-entropy (nats per character) on ``held`` read as consecutive windows
    of ``model.max_len + 1`` characters, each predicting its last ``max_len``."""
    T = model.max_len
    n = (len(held) - 1) // T
    n = n if max_windows is None else min(n, max_windows)
    if n < 1:
        raise ValueError(f"held-out text of {len(held)} ids is shorter than one window "
                         f"of {T + 1}")
    idx = torch.arange(n)[:, None] * T + torch.arange(T + 1)               # (n, T + 1)
    windows = held[idx]
    was_training = model.training
    model.eval()
    total = 0.0
    try:
        for b in range(0, n, batch_size):
            w = windows[b:b + batch_size]
            logits = model(w[:, :-1]).float()
            total += F.cross_entropy(logits.flatten(0, 1), w[:, 1:].flatten(),
                                     reduction="sum").item()
    finally:
        model.train(was_training)
    return total / (n * T)


def train_lm(shape, tokens: int, seed: int, lr: float, *, context: int = 64,
             batch_size: int = 32, warmup_frac: float = 0.1, final_lr: float = 0.1,
             weight_decay: float = 0.1, data=None, gpt_class=None, options=None,
             eval_windows: int | None = None, log=None) -> dict:
    """Train one GPT of ``shape`` on ``tokens`` training characters, from seed ``seed``.

    AdamW (betas 0.9, 0.99; weight decay on matrices only), a linear warm-up over
    ``warmup_frac`` of the steps, then a cosine decay to ``final_lr`` x ``lr`` at the
    last step; batches of ``batch_size`` random windows of ``context`` + 1 characters
    of the training text; gradient norm clipped at 1.  The seed fixes the initial
    weights and the batches.  -> dict with the held-out loss (nats/char), the
    non-embedding and total parameters, the steps, the tokens seen, C = 6 N D and
    the seconds it took."""
    from .schedules import warmup_cosine_schedule
    from .utils import set_seed
    from .attention import set_fused_attention
    if isinstance(tokens, bool) or not isinstance(tokens, numbers.Integral) \
            or tokens < batch_size * context:
        raise ValueError(f"tokens must be an int >= one batch ({batch_size} x "
                         f"{context}), got {tokens!r}")
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not 0 < lr < 1:
        raise ValueError(f"lr must be a number in (0, 1), got {lr!r}")
    train_ids, held_ids, vocab = char_data() if data is None else data
    steps = max(1, round(tokens / (batch_size * context)))
    set_seed(seed)
    model = gpt_for(shape, len(vocab), context, gpt_class, **(options or {}))
    set_fused_attention(model, True)
    decay = [p for p in model.parameters() if p.dim() > 1]
    rest = [p for p in model.parameters() if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.99))
    warm = max(1, round(warmup_frac * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, warmup_cosine_schedule(warm, max(steps, warm + 1), final=final_lr))
    gen = torch.Generator().manual_seed(seed)
    offsets = torch.arange(context + 1)
    t0 = time.time()
    model.train()
    for step in range(steps):
        start = torch.randint(0, len(train_ids) - context - 1, (batch_size,),
                              generator=gen)
        win = train_ids[start[:, None] + offsets]                    # (B, context + 1)
        loss = F.cross_entropy(model(win[:, :-1]).flatten(0, 1), win[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if log is not None and (step + 1) % max(1, steps // 4) == 0:
            log(f"  step {step + 1}/{steps} train loss {loss.item():.3f}")
    held = heldout_loss(model, held_ids, eval_windows)
    n = non_embedding_params(model)
    D = steps * batch_size * context
    return {"shape": list(_check_shape(shape)), "seed": seed, "lr": lr,
            "tokens": D, "steps": steps, "non_embedding": n,
            "params": sum(p.numel() for p in model.parameters()),
            "flops": 6.0 * n * D, "heldout": held,
            "seconds": round(time.time() - t0, 2), "model": model}


# ------------------------------------------------------------------------ fitting
def power_law(N, a: float, alpha: float, L_inf: float):
    """a N^(-alpha) + L_inf, elementwise (N a number or a tensor)."""
    N = torch.as_tensor(N, dtype=torch.float64)
    return a * N ** (-alpha) + L_inf


def loss_surface(N, D, E: float, A: float, alpha: float, B: float, beta: float):
    """E + A N^(-alpha) + B D^(-beta), elementwise."""
    N = torch.as_tensor(N, dtype=torch.float64)
    D = torch.as_tensor(D, dtype=torch.float64)
    return E + A * N ** (-alpha) + B * D ** (-beta)


def _as_vector(x, name: str) -> torch.Tensor:
    t = torch.as_tensor(x, dtype=torch.float64).flatten()
    if t.numel() == 0 or not torch.isfinite(t).all():
        raise ValueError(f"{name} must be finite numbers, got {x!r}")
    return t


def _best(design, y: torch.Tensor, cands: torch.Tensor):
    """Least squares with non-negative coefficients for every candidate exponent row
    of ``cands`` (G, k) at once: ``design(cands)`` -> X (G, n, p).  Every subset of
    the p columns is solved without a constraint, and a solution with a negative
    coefficient is discarded (for p <= 3 this is exact non-negative least squares).
    -> (best candidate, its coefficients (p,), SSE)."""
    X = design(cands)
    G, n, p = X.shape
    best_sse = torch.full((G,), math.inf, dtype=X.dtype)
    best_coef = torch.zeros(G, p, dtype=X.dtype)
    for mask in range(1, 2 ** p):
        cols = [j for j in range(p) if mask >> j & 1]
        Xs = X[..., cols]
        coef = torch.linalg.lstsq(Xs, y.expand(G, -1)[..., None]).solution[..., 0]
        sse = ((Xs @ coef[..., None])[..., 0] - y).pow(2).sum(-1)
        ok = (coef >= 0).all(-1) & torch.isfinite(sse) & (sse < best_sse)
        best_sse = torch.where(ok, sse, best_sse)
        full = torch.zeros(G, p, dtype=X.dtype)
        full[:, cols] = coef
        best_coef = torch.where(ok[:, None], full, best_coef)
    i = int(best_sse.argmin())
    return cands[i], best_coef[i], float(best_sse[i])


def _search(design, y, grid: list[torch.Tensor], rounds: int = 25):
    """Grid search over the exponents (a product of 1-D grids), then ``rounds`` of
    refinement on a 9-point-per-axis grid around the best, shrinking by 3 each
    time, never below the grids' smallest exponent."""
    lo = min(float(g[0]) for g in grid)
    mesh = torch.stack([g.flatten() for g in torch.meshgrid(*grid, indexing="ij")], 1)
    best, coef, sse = _best(design, y, mesh)
    step = torch.tensor([float(g[1] - g[0]) for g in grid], dtype=torch.float64)
    for _ in range(rounds):
        axes = [torch.linspace(max(float(b - s), lo), float(b + s), 9,
                               dtype=torch.float64) for b, s in zip(best, step)]
        mesh = torch.stack([g.flatten() for g in torch.meshgrid(*axes, indexing="ij")],
                           1)
        best, coef, sse = _best(design, y, mesh)
        step = step / 3
    return best, coef, sse


def fit_power_law(N, L) -> dict:
    """Least-squares fit of L = a N^(-alpha) + L_inf to points (N, L).

    For a fixed alpha the model is linear in (a, L_inf), solved exactly with a, L_inf
    >= 0 (a loss has no negative floor); alpha is searched on a grid over 0.01..2,
    then refined.  -> {"a", "alpha", "L_inf", "rmse"}.  Needs at least 3 different
    N."""
    N, L = _as_vector(N, "N"), _as_vector(L, "L")
    if N.shape != L.shape:
        raise ValueError(f"N and L must have the same length, got {N.numel()} and "
                         f"{L.numel()}")
    if (N <= 0).any():
        raise ValueError("N must be positive parameter counts")
    if len(set(N.tolist())) < 3:
        raise ValueError(f"a power law with an offset needs at least 3 different N, "
                         f"got {sorted(set(N.tolist()))}")
    design = lambda c: torch.stack([N ** -c[:, :1], torch.ones(len(c), len(N),
                                                               dtype=N.dtype)], -1)
    best, (a, L_inf), sse = _search(design, L, [torch.linspace(
        0.01, 2.0, 200, dtype=torch.float64)])
    return {"a": float(a), "alpha": float(best[0]), "L_inf": float(L_inf),
            "rmse": math.sqrt(sse / N.numel())}


def fit_loss_surface(N, D, L) -> dict:
    """Least-squares fit of L = E + A N^(-alpha) + B D^(-beta) (Hoffmann et al.'s
    approach 3, with squared error instead of their Huber loss on log L).  For fixed
    (alpha, beta) the model is linear in (E, A, B), solved exactly with E, A, B >= 0;
    the exponents are searched on a grid over 0.02..1.5, then refined (not below
    0.02).  -> {"E", "A", "alpha", "B", "beta", "rmse"}."""
    N, D, L = _as_vector(N, "N"), _as_vector(D, "D"), _as_vector(L, "L")
    if not (N.shape == D.shape == L.shape):
        raise ValueError("N, D and L must have the same length")
    if len(set(N.tolist())) < 2 or len(set(D.tolist())) < 2:
        raise ValueError("the surface needs at least 2 different N and 2 different D")
    design = lambda c: torch.stack([torch.ones(len(c), len(N), dtype=N.dtype),
                                    N ** -c[:, :1], D ** -c[:, 1:]], -1)
    g = torch.linspace(0.02, 1.5, 60, dtype=torch.float64)
    best, (E, A, B), sse = _search(design, L, [g, g])
    return {"E": float(E), "A": float(A), "alpha": float(best[0]), "B": float(B),
            "beta": float(best[1]), "rmse": math.sqrt(sse / N.numel())}


def compute_optimal(surface: dict, C: float) -> dict:
    """The N and D that minimise the fitted L(N, D) at compute C = 6 N D:
    N_opt = G (C/6)^(beta/(alpha+beta)), G = (alpha A / (beta B))^(1/(alpha+beta)),
    D_opt = C / (6 N_opt)  -> {"N", "D", "tokens_per_param", "loss"}."""
    al, be, A, B = (surface[k] for k in ("alpha", "beta", "A", "B"))
    if A <= 0 or B <= 0:
        raise ValueError(f"the surface's A and B must be positive for an optimum, got "
                         f"A={A:.3g}, B={B:.3g}")
    G = (al * A / (be * B)) ** (1 / (al + be))
    N = G * (C / 6) ** (be / (al + be))
    D = C / (6 * N)
    return {"N": N, "D": D, "tokens_per_param": D / N,
            "loss": float(loss_surface(N, D, surface["E"], A, al, B, be))}


def isoflop(runs: list[dict], C: float) -> dict:
    """Hoffmann et al.'s approach 2 at compute ``C`` = 6 N D: for every size, its
    loss at D = C / (6 N), interpolated linearly in log D between the budgets it was
    trained on (mean over seeds; sizes whose D falls outside are skipped); a parabola
    in log N through those points; its minimum is the compute-optimal N.

    ``runs``: dicts with "non_embedding", "tokens_asked", "tokens", "heldout".
    -> {"points": [(N, D, L)], "N", "D", "tokens_per_param", "loss"}, the last four
    None when fewer than 3 sizes reach C or the minimum is not inside their range."""
    if isinstance(C, bool) or not isinstance(C, numbers.Real) or not C > 0:
        raise ValueError(f"C must be a positive number of FLOPs, got {C!r}")
    table = {}
    for r in runs:
        table.setdefault(r["non_embedding"], {}).setdefault(r["tokens_asked"], []) \
            .append((r["tokens"], r["heldout"]))
    points = []
    for n, by_d in sorted(table.items()):
        Ds = sorted((sum(t for t, _ in v) / len(v), sum(l for _, l in v) / len(v))
                    for v in by_d.values())
        D = C / (6 * n)
        for (d0, l0), (d1, l1) in zip(Ds, Ds[1:]):
            if d0 <= D <= d1:
                w = math.log(D / d0) / math.log(d1 / d0)
                points.append((n, D, l0 + w * (l1 - l0)))
                break
    out = {"points": points, "N": None, "D": None, "tokens_per_param": None,
           "loss": None}
    if len(points) < 3:
        return out
    x = torch.tensor([math.log(n) for n, _, _ in points], dtype=torch.float64)
    y = torch.tensor([l for _, _, l in points], dtype=torch.float64)
    a, b, c = torch.linalg.lstsq(torch.stack([x * x, x, torch.ones_like(x)], 1),
                                 y[:, None]).solution[:, 0].tolist()
    if a <= 0 or not x.min() < -b / (2 * a) < x.max():
        return out
    n_opt = math.exp(-b / (2 * a))
    out.update(N=n_opt, D=C / (6 * n_opt), tokens_per_param=C / (6 * n_opt ** 2),
               loss=c - b * b / (4 * a))
    return out


def bootstrap_over_seeds(runs: list[dict], fit, draws: int = 1000, seed: int = 0,
                         group=("shape", "tokens")) -> list:
    """Refit on resampled seeds: every group of runs that differ only in the seed
    (same shape and tokens) is replaced by as many of its runs drawn with
    replacement, independently per group, and ``fit(list_of_runs)`` is called on the
    result.  -> the list of ``draws`` fits (fits that fail are skipped)."""
    groups = {}
    for r in runs:
        groups.setdefault(tuple(str(r[k]) for k in group), []).append(r)
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(draws):
        sample = [rs[i] for rs in groups.values()
                  for i in torch.randint(len(rs), (len(rs),), generator=g).tolist()]
        try:
            out.append(fit(sample))
        except (ValueError, RuntimeError):
            continue
    return out
