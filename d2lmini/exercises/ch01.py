"""Chapter 1 (linear algebra): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`.
"""
from __future__ import annotations

import itertools
import math

import torch

from .core import NotYet, Wrong, call, expect, register
from .core import fresh_generator as _gen, as_number as _number


def _matrix2(m, what: str) -> torch.Tensor:
    if not isinstance(m, torch.Tensor):
        raise Wrong(f"{what}: expected a torch.Tensor, got {type(m).__name__}")
    if tuple(m.shape) != (2, 2):
        raise Wrong(f"{what}: expected shape (2, 2), got {tuple(m.shape)}")
    return m.detach().to(torch.float64)


@register("ch1_rotation", "rotation(phi)", chapter=1, build=True)
def _rotation(answer):
    g = _gen()
    angles = [math.pi / 2] + (4 * math.pi * (torch.rand(5, generator=g) - 0.5)).tolist()
    for phi in angles:
        case = f"phi = {phi:.3f} rad"
        got = call(answer, phi, case=case)
        c, s = math.cos(phi), math.sin(phi)
        want = torch.tensor([[c, -s], [s, c]])
        if isinstance(got, torch.Tensor) and got.shape == (2, 2) and torch.allclose(
                got.detach().double(), want.double().T, atol=1e-5) and abs(s) > 1e-3:
            raise Wrong(f"this turns clockwise ({case}): "
                        f"R e1 must be (cos phi, sin phi)")
        expect(got, want, case=case, rtol=1e-4, atol=1e-4, dtype=False)
    return f"{len(angles)} angles (90° and 5 random ones, negative and > 2π included)"


def _signed_permutations() -> list[torch.Tensor]:
    out = []
    for perm in itertools.permutations(range(2)):
        for signs in itertools.product((1.0, -1.0), repeat=2):
            m = torch.zeros(2, 2, dtype=torch.float64)
            for row, col in enumerate(perm):
                m[row, col] = signs[row]
            out.append(m)
    return out


@register("ch1_l1_isometries", "L1 stretch and L1 isometries",
          chapter=1, build=False)
def _l1(answer):
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
        raise Wrong("expected the pair (stretch, keepers)")
    stretch, keepers = answer
    if stretch is Ellipsis or keepers is Ellipsis:
        raise NotYet()
    stretch = _number(stretch, "stretch")
    phi = math.pi / 4
    r45 = torch.tensor([[math.cos(phi), -math.sin(phi)],
                        [math.sin(phi), math.cos(phi)]], dtype=torch.float64)
    angles = torch.linspace(0, 2 * math.pi, 3601, dtype=torch.float64)
    dirs = torch.stack([angles.cos(), angles.sin()], dim=1)
    l1 = lambda v: v.abs().sum(dim=1)
    measured = (l1(dirs @ r45.T) / l1(dirs)).max().item()
    if not math.isclose(stretch, measured, rel_tol=1e-3):
        raise Wrong(f"stretch = {stretch:.4g} is not the largest ratio "
                    "||R45 x||_1 / ||x||_1 "
                    "(try x = e1: where does it go, and what is its L1 length?)")
    if not isinstance(keepers, (list, tuple)) or not keepers:
        raise Wrong(f"keepers: expected a list of 2x2 matrices, "
                    f"got {type(keepers).__name__}")
    mats = [_matrix2(m, f"keepers[{i}]") for i, m in enumerate(keepers)]
    x = torch.randn(2000, 2, generator=_gen(), dtype=torch.float64)
    for i, m in enumerate(mats):
        if not torch.allclose(l1(x @ m.T), l1(x), rtol=1e-5, atol=1e-6):
            raise Wrong(f"keepers[{i}] changes the L1 length of some vectors")
    distinct = []
    for m in mats:
        if not any(torch.allclose(m, d) for d in distinct):
            distinct.append(m)
    if len(distinct) < len(mats):
        raise Wrong("keepers lists the same matrix twice")
    missing = [p for p in _signed_permutations()
               if not any(torch.allclose(p, m, atol=1e-6) for m in distinct)]
    if missing:
        raise Wrong(f"all {len(distinct)} of your matrices keep L1 lengths, "
                    "but some are missing (where may e1 go, if its L1 length and the "
                    "diamond's corners must stay?)")
    return "stretch over 3,601 directions; every L1 isometry found"


@register("ch1_cos_std", "std of cos(theta) as a function of d", chapter=1, build=False)
def _cos_std(answer):
    g = _gen()
    dims = [2, 16, 1024] + torch.randint(3, 4097, (3,), generator=g).tolist()
    for d in dims:
        got = _number(call(answer, d, case=f"d = {d}"), f"d = {d}")
        # E[cos^2] = 1/d exactly for directions uniform on the sphere
        want = 1 / math.sqrt(d)
        if not math.isclose(got, want, rel_tol=1e-3):
            raise Wrong(f"not right for d = {d} (off by a factor of {got / want:.3g}; "
                        "how large is u.v compared with |u| |v|?)")
    return f"{len(dims)} dimensions from 2 to 4,096"


@register("ch1_frobenius", "frobenius(X) for a stack of matrices", chapter=1,
          build=True)
def _frobenius(answer):
    g = _gen()
    cases = [((3, 4), torch.float32), ((2, 5, 3), torch.float64),
             ((4, 2, 3, 3), torch.float32), ((1, 7), torch.float64)]
    for shape, dtype in cases:
        X = torch.randn(shape, generator=g).to(dtype)
        case = f"X of shape {shape}, {dtype}"
        got = call(answer, X.clone(), case=case)
        want = torch.linalg.matrix_norm(X)
        expect(got, want, case=case, rtol=1e-5, atol=1e-6)
    return f"{len(cases)} random stacks of matrices, float32 and float64"
