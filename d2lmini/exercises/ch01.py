"""Chapter 1 (linear algebra): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here (not on the page)
and compares the reader's answer with :func:`expect`.
"""
from __future__ import annotations

import itertools
import math

import torch

from .core import (NotYet, Wrong, call, expect, forbid, forbid_loops, names_used,
                   register)
from .core import fresh_generator as _gen, as_number as _number

_LINALG = ["torch.linalg", "torch.det", "torch.inverse", "torch.pinverse",
           "torch.solve", "torch.lstsq", "torch.svd", "torch.eig", "torch.symeig",
           "numpy.linalg", "np.linalg", "scipy"]


def _forbid_methods(fn, methods, why: str) -> None:
    """Wrong when ``fn`` calls a tensor method such as ``P.inverse()``."""
    hits = sorted({u for u in names_used(fn) if "." in u
                   and u.rsplit(".", 1)[-1] in methods})
    if hits:
        raise Wrong(f"your code uses {', '.join(hits)}: {why}")


def _matrix2(m, what: str) -> torch.Tensor:
    if not isinstance(m, torch.Tensor):
        raise Wrong(f"{what}: expected a torch.Tensor, got {type(m).__name__}")
    if tuple(m.shape) != (2, 2):
        raise Wrong(f"{what}: expected shape (2, 2), got {tuple(m.shape)}")
    return m.detach().to(torch.float64)


def _det2(M: torch.Tensor) -> float:
    return (M[0, 0] * M[1, 1] - M[0, 1] * M[1, 0]).item()


def _random_2x2(g, mirrored: bool) -> torch.Tensor:
    """A well-conditioned random 2x2 matrix whose det has the asked-for sign."""
    while True:
        M = torch.randn(2, 2, generator=g, dtype=torch.float64)
        d = _det2(M)
        if abs(d) > 0.3 and (d < 0) == mirrored:
            return M


@register("ch1_map_between", "map_between(P, Q) and its det", chapter=1, build=True)
def _map_between(answer):
    why = ("derive A from the columns and the 2x2 inverse formula (it divides by det)")
    forbid(answer, _LINALG, why)
    _forbid_methods(answer, {"inverse", "det", "pinverse", "solve", "lstsq", "inv",
                             "pinv", "svd", "eig", "eigh", "logdet", "slogdet"}, why)
    g = _gen()
    cases = [(torch.eye(2, dtype=torch.float64), _random_2x2(g, False), "P = I"),
             (_random_2x2(g, False), _random_2x2(g, False), "both upright"),
             (_random_2x2(g, False), _random_2x2(g, True), "Q mirrored"),
             (_random_2x2(g, True), _random_2x2(g, False), "P mirrored"),
             (_random_2x2(g, True), _random_2x2(g, True), "both mirrored")]
    for P, Q, case in cases:
        got = call(answer, P.clone(), Q.clone(), case=case)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise Wrong(f"expected the pair (A, det_A) ({case}), "
                        f"got {type(got).__name__}")
        A, det_a = got
        if A is Ellipsis or det_a is Ellipsis:
            raise NotYet()
        A = _matrix2(A, f"A ({case})")
        P_inv = torch.tensor([[P[1, 1], -P[0, 1]], [-P[1, 0], P[0, 0]]],
                             dtype=torch.float64) / _det2(P)
        want = Q @ P_inv
        if torch.allclose(A, P_inv @ Q, atol=1e-6) and not torch.allclose(
                want, P_inv @ Q, atol=1e-6):
            raise Wrong(f"A @ P differs from Q ({case}): you multiplied in the wrong "
                        "order (read A P right to left: P first)")
        if not torch.allclose(A @ P, Q, atol=1e-6):
            raise Wrong(f"A @ P differs from Q ({case}): largest gap "
                        f"{(A @ P - Q).abs().max().item():.3g}")
        want_det = _det2(Q) / _det2(P)
        d = _number(det_a, f"det_A, {case}")
        if not math.isclose(d, want_det, rel_tol=1e-6):
            if math.isclose(d, abs(want_det), rel_tol=1e-6):
                raise Wrong(f"det_A ({case}) is the area factor without its sign: a "
                            "mirror flips the orientation, and the determinant "
                            "records it")
            if math.isclose(d, -want_det, rel_tol=1e-6):
                raise Wrong(f"det_A has the wrong sign ({case}): does the map mirror?")
            raise Wrong(f"det_A is not the determinant of A ({case}): "
                        "how do the two areas compare?")
        expect(A, want, case=case, rtol=1e-6, atol=1e-9, dtype=False)
    return f"{len(cases)} random pairs of parallelograms, mirrored ones included"


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


@register("ch1_sq_dists", "sq_dists(X, Y), batched", chapter=1, build=True)
def _sq_dists(answer):
    forbid_loops(answer, "broadcasting computes every pair at once, with no Python "
                         "loop")
    forbid(answer, ["cdist", "torch.cdist", "pairwise_distance", "scipy", "sklearn"],
           "build the distances from the broadcasting rules")
    g = _gen()
    cases = [((5, 3), (7, 3), torch.float32), ((2, 4, 3), (2, 6, 3), torch.float64),
             ((3, 2, 5, 4), (3, 2, 1, 4), torch.float32),
             ((2, 3, 2), (2, 3, 2), torch.float64)]
    for xs, ys, dtype in cases:
        X = torch.randn(xs, generator=g).to(dtype)
        Y = torch.randn(ys, generator=g).to(dtype)
        case = f"X {xs}, Y {ys}, {dtype}"
        got = call(answer, X.clone(), Y.clone(), case=case)
        want = ((X.unsqueeze(-2) - Y.unsqueeze(-3)) ** 2).sum(-1)
        if isinstance(got, torch.Tensor) and got.shape == want.shape and torch.allclose(
                got.double() ** 2, want.double(), rtol=1e-3, atol=1e-3) \
                and not torch.allclose(got.double(), want.double(), atol=1e-3):
            raise Wrong(f"these are the distances, not their squares ({case})")
        if isinstance(got, torch.Tensor) and want.shape[-1] != want.shape[-2] and \
                got.shape == want.shape[:-2] + (want.shape[-1], want.shape[-2]):
            raise Wrong(f"wrong shape ({case}): expected {tuple(want.shape)} "
                        f"(one row per x_i), got {tuple(got.shape)}")
        expect(got, want, case=case, rtol=1e-4, atol=1e-4)
    return f"{len(cases)} cases, 2-D to 4-D, n != m, float32 and float64"


@register("ch1_frobenius", "frobenius(X) for a stack of matrices", chapter=1,
          build=True)
def _frobenius(answer):
    why = "the exercise asks for the formula itself"
    forbid(answer, _LINALG, why)
    _forbid_methods(answer, {"norm", "matrix_norm", "vector_norm"}, why)
    g = _gen()
    cases = [((3, 4), torch.float32), ((2, 5, 3), torch.float64),
             ((4, 2, 3, 3), torch.float32), ((1, 7), torch.float64)]
    for shape, dtype in cases:
        X = torch.randn(shape, generator=g).to(dtype)
        case = f"X of shape {shape}, {dtype}"
        got = call(answer, X.clone(), case=case)
        want = (X.double() ** 2).sum(dim=(-2, -1)).sqrt().to(dtype)
        expect(got, want, case=case, rtol=1e-5, atol=1e-6)
    return f"{len(cases)} random stacks of matrices, float32 and float64"


def _psd(g, n: int, top_orthogonal_to_ones: bool = False):
    """A random symmetric PSD (n, n) float64 matrix with a clear top eigenvalue,
    its eigenvalues (descending) and eigenvectors (columns).  With
    ``top_orthogonal_to_ones`` the top eigenvector is (1, -1, 0, ...)/sqrt(2), the
    second is the all-ones direction, and the two eigenvalues are only 10 % apart:
    power iteration started from all ones stays on the second for 200 steps."""
    Q, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))
    if top_orthogonal_to_ones:       # top eigenvector (1, -1, 0, ...)/sqrt(2)
        ones = torch.ones(n, 1, dtype=torch.float64)
        first = torch.zeros(n, 1, dtype=torch.float64)
        first[0, 0], first[1, 0] = 1.0, -1.0
        rest = torch.randn(n, n - 2, generator=g, dtype=torch.float64)
        Q, _ = torch.linalg.qr(torch.cat([first, ones, rest], dim=1))
    scale = 10 ** (4 * torch.rand((), generator=g, dtype=torch.float64).item() - 1)
    tail = torch.rand(n - 1, generator=g, dtype=torch.float64).sort(descending=True)[0]
    lam = scale * torch.cat([torch.ones(1, dtype=torch.float64), 0.6 * tail])
    if top_orthogonal_to_ones:
        lam[1] = scale / 1.1
    return Q @ torch.diag(lam) @ Q.T, lam, Q


@register("ch1_power_iteration", "top_eigen(S) by power iteration", chapter=1,
          build=True, project=True)
def _power_iteration(answer):
    forbid(answer, _LINALG, "the exercise builds the eigen-solver itself")
    _forbid_methods(answer, {"eig", "eigh", "eigvals", "eigvalsh", "svd", "svdvals",
                             "lobpcg", "matrix_norm"},
                    "the exercise builds the eigen-solver itself")
    g = _gen()
    cases = [(_psd(g, 4), "4x4"), (_psd(g, 12), "12x12"),
             (_psd(g, 6, top_orthogonal_to_ones=True), "6x6"),
             (_psd(g, 30), "30x30, largest eigenvalue above 1,000")]
    S, lam, Q = cases[-1][0]
    big = 2000.0 / lam[0].item()                         # a large top eigenvalue
    cases[-1] = ((S * big, lam * big, Q), cases[-1][1])
    for (S, lam, Q), case in cases:
        got = call(answer, S.clone(), case=case)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise Wrong(f"expected the pair (eigenvalue, eigenvector) ({case}), "
                        f"got {type(got).__name__}")
        value, v = got
        if value is Ellipsis or v is Ellipsis:
            raise NotYet()
        value = _number(value, f"eigenvalue, {case}")
        if not isinstance(v, torch.Tensor) or v.numel() != S.shape[0]:
            raise Wrong(f"the eigenvector must be a tensor of {S.shape[0]} numbers "
                        f"({case}), got {type(v).__name__}")
        v = v.detach().double().reshape(-1)
        if not torch.isfinite(v).all() or not math.isfinite(value):
            raise Wrong(f"your vector overflowed or vanished ({case}): rescale it to "
                        "length 1 after every product")
        top = lam[0].item()
        length = v.norm().item()
        if not math.isclose(length, 1.0, rel_tol=1e-6):
            raise Wrong(f"the eigenvector has length {length:.4g} ({case}); return it "
                        "with length 1")
        align = abs((v @ Q[:, 0]).item())
        if math.isclose(value, math.sqrt(top), rel_tol=1e-4):
            raise Wrong(f"off by a square root ({case}): the exercise asks for S's "
                        "eigenvalue lambda (for S = X^T X, sqrt(lambda) is the stretch "
                        "of X)")
        if align < 1 - 1e-6:
            second = abs((v @ Q[:, 1]).item())
            hint = (" (it found another eigenvector: does your start vector have a "
                    "component along the top one, whatever S is? start from a random "
                    "vector)" if second > 0.99 else "")
            raise Wrong(f"your vector is not the top eigenvector ({case}): |cos| with "
                        f"it is {align:.6f}{hint}")
        if not math.isclose(value, top, rel_tol=1e-6):
            raise Wrong(f"the eigenvalue is off ({case}): yours {value:.6g}; S v = "
                        "lambda v for a unit v gives lambda = v^T S v")
    # the chapter's task: the largest stretch of a random 30 x 40 matrix
    X = torch.randn(30, 40, generator=g)
    value, v = call(answer, (X.T @ X).double(), case="S = X^T X, X of shape (30, 40)")
    v = v.detach().double().reshape(-1)
    stretch = ((X.double() @ v).norm() / v.norm()).item()
    sigma = torch.linalg.svdvals(X.double())[0].item()
    if not math.isclose(stretch, sigma, rel_tol=1e-5):
        raise Wrong("on X^T X of a random 30 x 40 matrix your direction stretches X by "
                    f"{stretch:.4g}, less than the largest stretch")
    V = torch.randn(40, 1000, generator=g, dtype=torch.float64)
    best_random = ((X.double() @ V).norm(dim=0) / V.norm(dim=0)).max().item()
    fro = X.double().norm().item()
    return (f"{len(cases)} random PSD matrices; on a 30 x 40 X your direction "
            f"stretches by {stretch / fro:.3f} ||X||_F, the best of 1000 random "
            f"directions by {best_random / fro:.3f} ||X||_F")
