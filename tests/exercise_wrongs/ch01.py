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


def _det(M):
    return M[0, 0] * M[1, 1] - M[0, 1] * M[1, 0]


def _inv(M):
    return torch.stack([torch.stack([M[1, 1], -M[0, 1]]),
                        torch.stack([-M[1, 0], M[0, 0]])]) / _det(M)


def _map_linalg(P, Q):                     # right, but with the library
    A = Q @ torch.linalg.inv(P)
    return A, torch.linalg.det(A).item()


def _map_method(P, Q):                     # right, but with a tensor method
    return Q @ P.inverse(), (_det(Q) / _det(P)).item()


def _map_wrong_order(P, Q):                # P^-1 Q instead of Q P^-1
    return _inv(P) @ Q, (_det(Q) / _det(P)).item()


def _map_abs_det(P, Q):                    # the area factor without its sign
    return Q @ _inv(P), abs((_det(Q) / _det(P)).item())


def _map_transpose(P, Q):                  # P^T in place of P^-1 (right for rotations)
    return Q @ P.T, (_det(Q) / _det(P)).item()


def _map_bad_inverse(P, Q):                # swapped the wrong entries
    bad = torch.stack([torch.stack([P[0, 0], -P[0, 1]]),
                       torch.stack([-P[1, 0], P[1, 1]])]) / _det(P)
    return Q @ bad, (_det(Q) / _det(P)).item()


def _map_det_q(P, Q):                      # det of Q only: right only when P = I
    return Q @ _inv(P), _det(Q).item()


def _eig_no_rescale(S, steps=200):         # lambda^k overflows
    v = torch.randn(S.shape[0], dtype=S.dtype)
    for _ in range(steps):
        v = S @ v
    u = v / v.norm()
    return (u @ S @ u).item(), u


def _eig_from_ones(S, steps=200):          # a start with no top component
    v = torch.ones(S.shape[0], dtype=S.dtype)
    for _ in range(steps):
        v = S @ v
        v = v / v.norm()
    return (v @ S @ v).item(), v


def _eig_singular_value(S, steps=200):     # the stretch |S v|... square-rooted
    v = torch.randn(S.shape[0], dtype=S.dtype)
    for _ in range(steps):
        v = S @ v
        v = v / v.norm()
    return (v @ S @ v).sqrt().item(), v


def _eig_unnormalised(S, steps=200):       # returns S v, not v
    v = torch.randn(S.shape[0], dtype=S.dtype)
    for _ in range(steps):
        v = S @ v
        v = v / v.norm()
    return (v @ S @ v).item(), S @ v


def _eig_few_steps(S, steps=3):            # stops long before it converges
    v = torch.randn(S.shape[0], dtype=S.dtype)
    for _ in range(steps):
        v = S @ v
        v = v / v.norm()
    return (v @ S @ v).item(), v


def _eig_linalg(S, steps=200):
    lam, V = torch.linalg.eigh(S)
    return lam[-1].item(), V[:, -1]


def _sq_dists_loop(X, Y):
    return torch.stack([((x - Y) ** 2).sum(-1) for x in X.unbind(-2)], dim=-2)


WRONG = {
    "ch1_map_between": [
        _map_wrong_order, _map_abs_det, _map_transpose, _map_bad_inverse, _map_det_q,
        _map_linalg, _map_method,
        lambda P, Q: (Q, (_det(Q) / _det(P)).item()),             # ignores P
    ],
    "ch1_l1_isometries": [
        (math.sqrt(2), [torch.eye(2)]),                           # the identity only
        (1.0, _signed_perms()),                                   # stretch of L2
        (math.sqrt(2), [_rot(k * math.pi / 4) for k in range(8)]),  # 45° turns do not
        (math.sqrt(2), _signed_perms()[:4]),                      # some missing
        (math.sqrt(2), _signed_perms() + [torch.eye(2)]),         # a duplicate
        (2.0, _signed_perms()),
    ],
    "ch1_sq_dists": [
        lambda X, Y: ((X[:, None] - Y[None]) ** 2).sum(-1),       # 2-D only
        lambda X, Y: ((X.unsqueeze(-2) - Y.unsqueeze(-3)) ** 2).sum(-1).sqrt(),
        lambda X, Y: (X ** 2).sum(-1, keepdim=True) + (Y ** 2).sum(-1)
        - X @ Y.transpose(-2, -1),                                # factor 2 missing
        lambda X, Y: ((X.unsqueeze(-3) - Y.unsqueeze(-2)) ** 2).sum(-1),  # (m, n)
        lambda X, Y: torch.cdist(X, Y) ** 2,
        _sq_dists_loop,
        lambda X, Y: ((X.unsqueeze(-2) - Y.unsqueeze(-3)) ** 2).sum(-2),  # wrong axis
    ],
    "ch1_frobenius": [
        lambda X: (X ** 2).sum(dim=(-2, -1)),                     # no square root
        lambda X: X.abs().sum(dim=(-2, -1)),                      # L1
        lambda X: torch.sqrt((X ** 2).sum()),                     # one for the stack
        lambda X: (X ** 2).sum(dim=-1).sqrt(),                    # row norms
        lambda X: torch.sqrt((X.float() ** 2).sum(dim=(-2, -1))),  # float64 lost
        lambda X: torch.linalg.matrix_norm(X),                    # the library
        lambda X: X.norm(dim=(-2, -1)),                           # a norm method
    ],
    "ch1_power_iteration": [
        _eig_no_rescale, _eig_from_ones, _eig_singular_value, _eig_unnormalised,
        _eig_few_steps, _eig_linalg,
    ],
}


def _map_solve(P, Q):
    # solve A P = Q column by column with Cramer's rule: A = Q adj(P) / det(P)
    d = _det(P)
    adj = torch.tensor([[P[1, 1], -P[0, 1]], [-P[1, 0], P[0, 0]]], dtype=P.dtype)
    A = Q @ adj / d
    return A, float(_det(A))


def _eig_rayleigh(S, steps=300):
    g = torch.Generator().manual_seed(0)
    v = torch.rand(S.shape[0], generator=g, dtype=S.dtype) - 0.5
    for _ in range(steps):
        w = S @ v
        v = w / torch.sqrt(torch.sum(w * w))
    lam = torch.dot(v, S @ v) / torch.dot(v, v)
    return float(lam), v


RIGHT = {
    "ch1_map_between": [_map_solve],
    "ch1_l1_isometries": [
        (2 / math.sqrt(2), [p.double() for p in reversed(_signed_perms())]),
    ],
    "ch1_sq_dists": [
        lambda X, Y: (X ** 2).sum(-1, keepdim=True) + (Y ** 2).sum(-1).unsqueeze(-2)
        - 2 * X @ Y.transpose(-2, -1),
        lambda X, Y: torch.einsum("...nmd,...nmd->...nm",
                                  X.unsqueeze(-2) - Y.unsqueeze(-3),
                                  X.unsqueeze(-2) - Y.unsqueeze(-3)),
    ],
    "ch1_frobenius": [
        lambda X: torch.einsum("...ij,...ij->...", X, X).sqrt(),
        lambda X: (X * X).flatten(-2).sum(-1) ** 0.5,
    ],
    "ch1_power_iteration": [_eig_rayleigh],
}
