"""LoRA, low-rank adaptation (Hu et al., 2021), from scratch, as PEFT scales it.

A frozen linear layer ``y = x W^T + b`` (W: (out, in)) learns a low-rank change
instead of a new W:

    y = x W^T + b + (alpha / r) * x A^T B^T        A: (r, in), B: (out, r)

Only A and B train: r (in + out) numbers instead of in * out.  B starts at zero, so
the adapted layer starts as the base layer; A starts as PEFT's (Kaiming-uniform with
a = sqrt(5), the default of ``nn.Linear``).  After training, ``W + (alpha / r) B A``
is one ordinary matrix: ``merge_lora`` folds it back, and the model costs nothing
extra to run.

    model = add_lora(model, rank=8, alpha=16, targets=("W_q", "W_v"))   # freeze, adapt
    ...train...                                           # only lora_A, lora_B move
    model = merge_lora(model)                             # plain nn.Linear again
"""
from __future__ import annotations

import math
import numbers

import torch
from torch import nn

__all__ = ["LoRALinear", "add_lora", "merge_lora", "lora_parameters",
           "count_parameters", "ALL_LINEAR"]

# every matrix of a GPT block (attention and FFN), the "all linear" choice of the LoRA
# paper's follow-ups; chapter 16 compares it with the paper's W_q, W_v
ALL_LINEAR = ("W_q", "W_k", "W_v", "W_o", "linear1", "linear2")


def _check_rank_alpha(rank, alpha) -> None:
    if isinstance(rank, bool) or not isinstance(rank, numbers.Integral) or rank < 1:
        raise ValueError(f"rank must be a positive int (the inner size r of B A), "
                         f"got {rank!r}")
    if (isinstance(alpha, bool) or not isinstance(alpha, numbers.Real)
            or not math.isfinite(alpha) or alpha <= 0):
        raise ValueError(f"alpha must be a finite number > 0 (the update is scaled "
                         f"by alpha / rank), got {alpha!r}")


class LoRALinear(nn.Module):
    """A frozen ``nn.Linear`` plus a trainable low-rank update.

    forward(x (..., in_features)) -> (..., out_features):
    ``base(x) + (alpha / rank) * x @ lora_A.T @ lora_B.T``.

    ``base``: the wrapped ``nn.Linear`` (its parameters are frozen here);
    ``lora_A`` (rank, in_features), Kaiming-uniform (a = sqrt(5)) as in PEFT;
    ``lora_B`` (out_features, rank), zeros, so the layer equals ``base`` at start;
    ``scaling`` = alpha / rank.  ``weight`` is the effective matrix W + scaling B A
    (differentiable), ``bias`` the base layer's, so code that reads them instead of
    calling the layer (a fused attention kernel) computes the adapted layer;
    ``merged_weight()`` is the matrix ``merge_lora`` puts in its place.
    """

    def __init__(self, base: nn.Linear, rank: int, alpha: float):
        super().__init__()
        if isinstance(base, LoRALinear):
            raise TypeError("base is already a LoRALinear: adapt the plain nn.Linear "
                            "(or merge_lora first)")
        if not isinstance(base, nn.Linear):
            raise TypeError(f"base must be a torch.nn.Linear, got "
                            f"{type(base).__name__}")
        _check_rank_alpha(rank, alpha)
        self.base = base
        self.rank, self.alpha = int(rank), float(alpha)
        self.scaling = self.alpha / self.rank
        self.in_features, self.out_features = base.in_features, base.out_features
        w = base.weight
        self.lora_A = nn.Parameter(torch.empty(self.rank, self.in_features,
                                               device=w.device, dtype=w.dtype))
        self.lora_B = nn.Parameter(torch.zeros(self.out_features, self.rank,
                                               device=w.device, dtype=w.dtype))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        for p in base.parameters():
            p.requires_grad_(False)

    @property
    def weight(self) -> torch.Tensor:
        """The layer's effective matrix W + (alpha / rank) B A, differentiable in A
        and B: code that reads ``.weight`` instead of calling the layer (a fused
        q/k/v product) computes the adapted layer too."""
        return self.base.weight + self.scaling * (self.lora_B @ self.lora_A)

    @property
    def bias(self) -> torch.Tensor | None:
        return self.base.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1:] != (self.in_features,):
            raise ValueError(f"x must end in in_features={self.in_features}, got "
                             f"shape {tuple(x.shape)}")
        # the order PEFT computes in: B(A(x)), then the scale
        return self.base(x) + (x @ self.lora_A.T) @ self.lora_B.T * self.scaling

    @torch.no_grad()
    def merged_weight(self) -> torch.Tensor:
        """W + (alpha / rank) B A, (out_features, in_features), summed in float64
        and rounded once to the weight's dtype."""
        w = self.base.weight
        wide = torch.float64 if w.device.type != "mps" else torch.float32
        delta = self.lora_B.to(wide) @ self.lora_A.to(wide)
        return (w.to(wide) + self.scaling * delta).to(w.dtype)

    def extra_repr(self) -> str:
        return f"rank={self.rank}, alpha={self.alpha:g}"


def _check_model(model) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")


def _check_targets(targets) -> tuple[str, ...]:
    if isinstance(targets, str):
        targets = (targets,)
    if (not isinstance(targets, (tuple, list)) or not targets
            or not all(isinstance(t, str) and t.strip() for t in targets)):
        raise ValueError(f"targets must be a non-empty tuple of module names, e.g. "
                         f"('W_q', 'W_v'), got {targets!r}")
    return tuple(targets)


def _parent(model: nn.Module, name: str) -> tuple[nn.Module, str]:
    parent_name, _, child = name.rpartition(".")
    return (model.get_submodule(parent_name) if parent_name else model), child


def add_lora(model: nn.Module, rank: int = 8, alpha: float = 16,
             targets=("W_q", "W_v")) -> nn.Module:
    """Adapt ``model`` in place with LoRA and return it.

    Every ``nn.Linear`` whose dotted name ends in one of ``targets`` (the whole
    name, or its last parts after a dot: ``"W_q"`` matches ``blocks.0.self_attn.W_q``,
    as PEFT's ``target_modules`` does) becomes a :class:`LoRALinear` with ``rank``
    and ``alpha``; every other parameter is frozen (``requires_grad=False``), so an
    optimizer over ``model.parameters()`` moves only ``lora_A`` and ``lora_B``.

    Errors: a target that names no module, or names a module that is not an
    ``nn.Linear`` (a LayerNorm, a whole attention layer) or already a LoRALinear;
    a rank that is not a positive int; an alpha that is not a positive number.
    """
    _check_model(model)
    _check_rank_alpha(rank, alpha)
    targets = _check_targets(targets)
    named = dict(model.named_modules())
    hits = {t: [n for n in named if n == t or n.endswith("." + t)] for t in targets}
    missing = [t for t, names in hits.items() if not names]
    if missing:
        linears = [n for n, m in named.items() if isinstance(m, nn.Linear)]
        some = ", ".join(linears[:6]) + (", ..." if len(linears) > 6 else "")
        raise ValueError(f"no module of {type(model).__name__} is named {missing} "
                         f"(or ends in it); its nn.Linear layers: "
                         f"{some or 'none'}")
    chosen = sorted({n for names in hits.values() for n in names})
    for n in chosen:
        m = named[n]
        if isinstance(m, LoRALinear):
            raise ValueError(f"{n} already has a LoRA adapter: call merge_lora(model) "
                             f"first, or adapt other targets")
        if not isinstance(m, nn.Linear):
            raise TypeError(f"target {n} is a {type(m).__name__}, not an nn.Linear: "
                            f"LoRA adapts linear layers (e.g. W_q, W_k, W_v, W_o, "
                            f"linear1, linear2)")
    for p in model.parameters():
        p.requires_grad_(False)
    for n in chosen:
        parent, child = _parent(model, n)
        setattr(parent, child, LoRALinear(named[n], rank, alpha))
    return model


@torch.no_grad()
def merge_lora(model: nn.Module) -> nn.Module:
    """Fold every :class:`LoRALinear` in ``model`` back into a plain ``nn.Linear``
    holding W + (alpha / rank) B A (and the base's bias), in place; returns the model
    (or the new ``nn.Linear`` when ``model`` itself is a LoRALinear).  Outputs are
    unchanged up to float rounding.  The merged layers keep the base layer's
    ``requires_grad`` (frozen after ``add_lora``).  A model without a LoRALinear is
    an error (nothing to merge)."""
    _check_model(model)
    if isinstance(model, LoRALinear):
        return _merged(model)
    found = [n for n, m in model.named_modules() if isinstance(m, LoRALinear)]
    if not found:
        raise ValueError(f"{type(model).__name__} holds no LoRALinear: nothing to "
                         f"merge (add_lora(model, ...) adapts a model)")
    for n in found:
        parent, child = _parent(model, n)
        setattr(parent, child, _merged(getattr(parent, child)))
    return model


def _merged(lora: LoRALinear) -> nn.Linear:
    base = lora.base
    w = base.weight
    out = nn.Linear(lora.in_features, lora.out_features, bias=base.bias is not None,
                    device=w.device, dtype=w.dtype)
    out.weight.copy_(lora.merged_weight())
    out.weight.requires_grad_(w.requires_grad)
    if base.bias is not None:
        out.bias.copy_(base.bias)
        out.bias.requires_grad_(base.bias.requires_grad)
    out.train(base.training)
    return out


def lora_parameters(model: nn.Module) -> dict[str, torch.Tensor]:
    """The adapters alone, name -> tensor (``lora_A``/``lora_B`` of every
    LoRALinear): what one saves to share a fine-tuning (kilobytes, not the model)."""
    _check_model(model)
    return {n: p.detach() for n, p in model.named_parameters()
            if n.endswith(("lora_A", "lora_B"))}


def count_parameters(model: nn.Module) -> tuple[int, int]:
    """-> (trainable, total) numbers of parameters (a shared, tied matrix once)."""
    _check_model(model)
    params = list({id(p): p for p in model.parameters()}.values())
    return (sum(p.numel() for p in params if p.requires_grad),
            sum(p.numel() for p in params))
