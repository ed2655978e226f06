"""Answers chapter 1's exercise checks must reject (WRONG) and accept (RIGHT)."""
import itertools
import math

import torch


def _rot(phi):
    c, s = math.cos(phi), math.sin(phi)
    return torch.tensor([[c, -s], [s, c]])


def _signed_perms():
    out = []
    for a, b in itertools.product((1.0, -1.0), repeat=2):
        out += [torch.tensor([[a, 0.0], [0.0, b]]), torch.tensor([[0.0, a], [b, 0.0]])]
    return out


WRONG = {
    "ch1_rotation": [
        lambda phi: _rot(phi).T,                                  # clockwise
        lambda phi: torch.eye(2),                                 # a constant
        lambda phi: _rot(math.radians(phi)),                      # degrees for radians
        lambda phi: [[math.cos(phi), -math.sin(phi)], [math.sin(phi), math.cos(phi)]],
        lambda phi: _rot(phi)[0],                                 # wrong shape
    ],
    "ch1_l1_isometries": [
        (math.sqrt(2), [torch.eye(2)]),                           # the identity only
        (1.0, _signed_perms()),                                   # stretch of L2
        (math.sqrt(2), [_rot(k * math.pi / 4) for k in range(8)]),  # 45° turns do not
        (math.sqrt(2), _signed_perms()[:4]),                      # some missing
        (math.sqrt(2), _signed_perms() + [torch.eye(2)]),         # a duplicate
        (2.0, _signed_perms()),
    ],
    "ch1_cos_std": [
        lambda d: 1 / d,
        lambda d: math.sqrt(d),
        lambda d: 0.1,
        lambda d: 1 / math.sqrt(d - 1),
        lambda d: None,
    ],
    "ch1_frobenius": [
        lambda X: (X ** 2).sum(dim=(-2, -1)),                     # no square root
        lambda X: X.abs().sum(dim=(-2, -1)),                      # L1
        lambda X: torch.sqrt((X ** 2).sum()),                     # one number for the stack
        lambda X: torch.linalg.vector_norm(X, dim=-1),            # row norms
        lambda X: torch.sqrt((X.float() ** 2).sum(dim=(-2, -1))),  # float64 lost
    ],
}

RIGHT = {
    "ch1_rotation": [
        lambda phi: torch.linalg.matrix_exp(torch.tensor([[0.0, -phi], [phi, 0.0]])),
        lambda phi: torch.stack([torch.tensor([math.cos(phi), math.sin(phi)]),
                                 torch.tensor([-math.sin(phi), math.cos(phi)])], dim=1),
    ],
    "ch1_l1_isometries": [
        (2 / math.sqrt(2), [p.double() for p in reversed(_signed_perms())]),
    ],
    "ch1_cos_std": [lambda d: math.sqrt(1 / d), lambda d: d ** -0.5],
    "ch1_frobenius": [
        lambda X: torch.einsum("...ij,...ij->...", X, X).sqrt(),
        lambda X: torch.linalg.vector_norm(X.flatten(-2), dim=-1),
    ],
}
