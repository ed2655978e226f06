"""Chapter 2 (autograd): the exercises' judges.

Each judge draws fresh random inputs, computes the reference here with autograd (not on
the page) and compares the reader's hand-derived answer with :func:`expect`.
"""
from __future__ import annotations

import math
import random

import torch
from torch.autograd.functional import jacobian

from .core import NotYet, Wrong, call, expect, forbid, register
from .core import fresh_generator as _gen

_AUTOGRAD = ["backward", "torch.autograd", "torch.func", "jacobian", "vjp", "jvp",
             "functorch", "grad"]


def _pair_of_functions(answer, what: str):
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
        raise Wrong(f"expected the pair ({what})")
    if any(a is Ellipsis for a in answer):
        raise NotYet()
    return answer


@register("ch2_softmax_jacobian", "softmax Jacobian and VJP", chapter=2, build=True)
def _softmax_jacobian(answer):
    jac, vjp_fn = _pair_of_functions(answer, "softmax_jacobian, softmax_vjp")
    forbid(jac, _AUTOGRAD, "derive the Jacobian by hand")
    g = _gen()
    sizes = [1, 4] + torch.randint(2, 10, (3,), generator=g).tolist()
    for i, n in enumerate(sizes):
        dtype = torch.float64 if i % 2 else torch.float32
        x = (3 * torch.randn(n, generator=g)).to(dtype)
        case = f"x of length {n}, {dtype}"
        got = call(jac, x.clone(), case=case)
        want = jacobian(lambda t: torch.softmax(t, dim=0), x)
        expect(got, want, case=f"softmax_jacobian, {case}", rtol=1e-4, atol=1e-6)
    forbid(vjp_fn, _AUTOGRAD, "derive the product by hand")
    forbid(vjp_fn, ["diag", "outer", "eye", "diag_embed", "ger", "einsum",
                    "softmax_jacobian", "jac"],
           "the VJP never builds the n x n Jacobian: u^T J can be written with "
           "elementwise products and one sum per row")
    for shape, dtype in [((7,), torch.float64), ((3, 5), torch.float32),
                         ((2, 3, 4000), torch.float64)]:
        x = (3 * torch.randn(shape, generator=g)).to(dtype)
        u = torch.randn(shape, generator=g).to(dtype)
        case = f"x and u of shape {shape}, {dtype}"
        got = call(vjp_fn, x.clone(), u.clone(), case=case)
        xr = x.clone().requires_grad_()
        (want,) = torch.autograd.grad(torch.softmax(xr, dim=-1), xr, grad_outputs=u)
        if isinstance(got, torch.Tensor) and got.shape == want.shape and len(shape) > 1:
            p = torch.softmax(x, dim=-1)
            wrong_axis = p * (u - (u * p).sum(dim=0, keepdim=True))
            if torch.allclose(got.double(), wrong_axis.double(), atol=1e-9):
                raise Wrong(f"softmax_vjp, {case}: the sum runs over the wrong axis "
                            "(each row has its own softmax: sum over the last axis)")
        expect(got, want, case=f"softmax_vjp, {case}", rtol=1e-4, atol=1e-7)
    return (f"the Jacobian on {len(sizes)} random vectors; the VJP on batches, rows of "
            "4,000 included")


@register("ch2_linear_backward", "linear_backward(X, W, G)", chapter=2, build=True)
def _linear_backward(answer):
    forbid(answer, _AUTOGRAD, "derive the two gradients with the chain rule")
    g = _gen()
    cases = [((6,), 3, 4), ((5,), 4, 4), ((2, 6), 3, 3), ((2, 3, 5), 4, 2)]
    for lead, n_in, n_out in cases:
        X = torch.randn(*lead, n_in, generator=g, dtype=torch.float64)
        W = torch.randn(n_in, n_out, generator=g, dtype=torch.float64)
        G = torch.randn(*lead, n_out, generator=g, dtype=torch.float64)
        case = f"X {tuple(X.shape)}, W {tuple(W.shape)}"
        got = call(answer, X.clone(), W.clone(), G.clone(), case=case)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise Wrong(f"expected the pair (dX, dW) ({case}), "
                        f"got {type(got).__name__}")
        Xr, Wr = X.clone().requires_grad_(), W.clone().requires_grad_()
        (Xr @ Wr).backward(G)
        dX, dW = got
        if isinstance(dW, torch.Tensor) and dW.shape == tuple(lead[:-1]) + W.shape \
                and len(lead) > 1:
            raise Wrong(f"dW has shape {tuple(dW.shape)} ({case}): one gradient per "
                        "batch element; W is shared by all rows, so their "
                        "contributions add up to one (n_in, n_out) gradient")
        if isinstance(dW, torch.Tensor) and dW.shape == W.T.shape and n_in != n_out:
            raise Wrong(f"dW has shape {tuple(dW.shape)} ({case}); a gradient has the "
                        f"shape of its tensor, W is {tuple(W.shape)}")
        if isinstance(dW, torch.Tensor) and dW.shape == W.shape and n_in == n_out \
                and torch.allclose(dW, Wr.grad.T, atol=1e-9) \
                and not torch.allclose(dW, Wr.grad, atol=1e-9):
            raise Wrong(f"dW is transposed ({case}): with a square W the shapes "
                        "cannot tell, the values can")
        expect(dX, Xr.grad, case=f"dL/dX, {case}", rtol=1e-7, atol=1e-9)
        expect(dW, Wr.grad, case=f"dL/dW, {case}", rtol=1e-7, atol=1e-9)
    return f"{len(cases)} cases, 1 to 3 leading axes, square W included"


@register("ch2_predict_grad", "x.grad: two backwards, one detach",
          chapter=2, build=False)
def _predict_grad(answer):
    g = _gen()
    for n in [3] + torch.randint(1, 8, (3,), generator=g).tolist():
        x0 = 2 * torch.randn(n, generator=g)
        x = x0.clone().requires_grad_()
        for _ in range(2):
            (x ** 3).sum().backward()
        (x * x.detach()).sum().backward()
        case = f"x of length {n}"
        got = call(answer, x0.clone(), case=case)
        expect(got, x.grad, case=case, rtol=1e-5, atol=1e-5)
    return "4 random x, each against what autograd accumulates"


# ------------------------------------------------------------ the micrograd project
def _random_program(rng: random.Random, n_inputs: int, n_ops: int):
    """A random expression as a list of steps over a pool of intermediate results;
    operands are drawn from the whole pool, so results are reused (shared)."""
    steps = []
    size = n_inputs
    for _ in range(n_ops):
        kind = rng.choice(["add", "mul", "sub", "pow", "tanh", "div", "radd", "rmul",
                           "rsub", "square"])
        a, b = rng.randrange(size), rng.randrange(size)
        c = round(rng.uniform(-2, 2), 2)
        steps.append((kind, a, b, c))
        size += 1
    return steps


def _run_program(steps, inputs):
    pool = list(inputs)
    for kind, a, b, c in steps:
        x, y = pool[a], pool[b]
        if kind == "add":
            r = x + y
        elif kind == "mul":
            r = x * y
        elif kind == "sub":
            r = x - y
        elif kind == "pow":
            r = (x * x + 1) ** 1.5
        elif kind == "tanh":
            r = (x * c).tanh()
        elif kind == "div":
            r = x / (y * y + 1)
        elif kind == "radd":
            r = c + x
        elif kind == "rmul":
            r = c * x
        elif kind == "rsub":
            r = c - x
        else:
            r = x ** 2
        pool.append(r)
    out = pool[-1]
    for extra in pool[-4:-1]:                    # several results feed the output
        out = out + extra
    return out


def _as_float(v, what: str) -> float:
    if isinstance(v, torch.Tensor) and v.numel() == 1:
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise Wrong(f"{what}: expected a number, got {type(v).__name__}")
    return float(v)


def _check_values(cls, name: str, build, n_inputs: int, rng: random.Random,
                  hint: str) -> None:
    """Run ``build`` on Values and on float64 tensors; compare value and gradients."""
    xs = [rng.uniform(-1.5, 1.5) for _ in range(n_inputs)]
    try:
        vals = [cls(x) for x in xs]
        out = build(vals)
        if out is None or out is Ellipsis:
            raise NotYet()
        out.backward()
    except (NotYet, Wrong):
        raise
    except TypeError as err:
        if "NoneType" in str(err) or "ellipsis" in str(err).lower():
            raise NotYet() from None
        raise Wrong(f"your Value raised TypeError on {name}: {err} (do plain numbers "
                    "work on either side, e.g. 2 * v and v + 1?)") from None
    except AttributeError as err:
        hint = (" (do plain numbers work on either side, e.g. 2 * v and v + 1?)"
                if "'float' object" in str(err) or "'int' object" in str(err) else "")
        raise Wrong(f"your Value raised AttributeError on {name}: "
                    f"{err}{hint}") from None
    except Exception as err:
        raise Wrong(f"your Value raised {type(err).__name__} on {name}: "
                    f"{err}") from None
    ts = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    ref = build(ts)
    ref.backward()
    if not hasattr(out, "data") or not hasattr(out, "grad"):
        raise Wrong(f"{name}: the result is not a Value (it has no .data and .grad)")
    got = _as_float(out.data, f"{name}, value")
    if not math.isclose(got, ref.item(), rel_tol=1e-9, abs_tol=1e-9):
        raise Wrong(f"{name}: the value {got:.6g} differs from PyTorch's (is the "
                    "forward computation of each operation right?)")
    if _as_float(out.grad, f"{name}, output grad") != 1.0:
        raise Wrong(f"{name}: after backward() the output's own grad is "
                    f"{out.grad!r}; backward() starts from d out/d out = 1")
    for i, (v, t) in enumerate(zip(vals, ts)):
        gv = _as_float(v.grad, f"{name}, grad of input {i}")
        gt = t.grad.item() if t.grad is not None else 0.0    # an unused input: 0
        if not math.isclose(gv, gt, rel_tol=1e-7, abs_tol=1e-9):
            if abs(gt) > 1e-6 and math.isclose(gv / gt, 0.5, rel_tol=1e-6):
                hint = ("yours is half of it: a Value used twice receives two "
                        "contributions; add them (+=), do not overwrite")
            elif abs(gt) > 1e-6 and math.isclose(gv / gt, 2.0, rel_tol=1e-6):
                hint = ("yours is twice it: a node passed its gradient on more than "
                        "once; visit each node once, in reverse topological order")
            raise Wrong(f"{name}: the gradient of input {i} ({gv:.6g}) differs from "
                        f"PyTorch's ({hint})")


_SINGLE = [
    ("a + b", lambda v: v[0] + v[1], "the gradient passes through + unchanged"),
    ("a * b", lambda v: v[0] * v[1], "each factor receives the other's value"),
    ("a ** 3", lambda v: v[0] ** 3, "d(a^n)/da = n a^(n-1)"),
    ("(a * a + 0.5) ** -1.5", lambda v: (v[0] * v[0] + 0.5) ** -1.5,
     "d(a^n)/da = n a^(n-1), for any number n"),
    ("a.tanh()", lambda v: v[0].tanh(),
     "d tanh(a)/da = 1 - tanh(a)^2: the output's value, not the input's"),
    ("2 * a + 1", lambda v: 2 * v[0] + 1, "numbers on either side"),
    ("1 - a / (b * b + 1)", lambda v: 1 - v[0] / (v[1] * v[1] + 1),
     "numbers on either side"),
]
_SHARED = [
    ("a * a", lambda v: v[0] * v[0],
     "a Value used twice receives two contributions: add, do not overwrite"),
    ("(a + b) * (a + b) with one a + b", lambda v: (lambda s: s * s)(v[0] + v[1]),
     "a Value used twice receives two contributions: add, do not overwrite"),
    ("d = a * b; d * d + d * a", lambda v: (lambda d: d * d + d * v[0])(v[0] * v[1]),
     "d must pass its gradient on only after both of its users have passed theirs: "
     "visit the nodes in reverse topological order"),
    ("a chain with a skip", lambda v: (lambda h: (h.tanh() * 3 + h) * v[1])(
        v[0] * v[1] + 1),
     "visit the nodes in reverse topological order, each once"),
]


@register("ch2_micrograd", "Value: autograd for scalars", chapter=2, build=True,
          project=True)
def _micrograd(answer):
    if not isinstance(answer, type):
        raise Wrong(f"expected the class Value, got {type(answer).__name__}")
    for name, member in vars(answer).items():          # each method, where readable
        if callable(member) and hasattr(member, "__code__"):
            try:
                forbid(member, ["torch.autograd", "requires_grad", "torch.func",
                                "jax", "autograd"],
                       "the exercise builds the engine itself, on plain numbers")
            except Wrong as err:
                if "could not read" not in str(err):
                    raise
    rng = random.Random(_gen().initial_seed())
    try:
        v = answer(2.0)
    except Exception as err:
        raise Wrong(f"Value(2.0) raised {type(err).__name__}: {err}") from None
    if not (hasattr(v, "data") and hasattr(v, "grad")):
        raise Wrong("a Value needs the attributes .data and .grad")
    for name, build, hint in _SINGLE:
        _check_values(answer, name, build, 2, rng, hint)
    for name, build, hint in _SHARED:
        _check_values(answer, name, build, 2, rng, hint)
    for k in range(6):
        steps = _random_program(rng, 3, 12)
        _check_values(answer, f"random expression {k + 1} (12 operations, 3 inputs)",
                      lambda v: _run_program(steps, v), 3, rng,
                      "a Value used by several others must add up every contribution "
                      "and pass it on only once all of them have")
    # the chapter's task: linear regression with two features, gradient descent
    g = _gen()
    X = torch.randn(20, 2, generator=g, dtype=torch.float64)
    y = X @ torch.tensor([2.0, -3.4], dtype=torch.float64) + 4.2 \
        + 0.1 * torch.randn(20, generator=g, dtype=torch.float64)
    rows = [(float(a), float(b), float(t)) for (a, b), t in zip(X.tolist(), y.tolist())]
    lr, steps = 0.1, 60
    w1, w2, b = answer(0.0), answer(0.0), answer(0.0)
    tw = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    first_loss = None
    for step in range(steps):
        try:
            loss = sum(((w1 * x1 + w2 * x2 + b - t) ** 2 for x1, x2, t in rows),
                       answer(0.0)) * (1 / len(rows))
            for p in (w1, w2, b):
                p.grad = 0.0
            loss.backward()
        except Exception as err:
            raise Wrong(f"training: your Value raised {type(err).__name__} at step "
                        f"{step}: {err}") from None
        ref = ((X @ tw[:2] + tw[2] - y) ** 2).mean()
        tw.grad = None
        ref.backward()
        if first_loss is None:
            first_loss = ref.item()
        got = [_as_float(p.grad, "training, a gradient") for p in (w1, w2, b)]
        if not all(math.isclose(a, r, rel_tol=1e-7, abs_tol=1e-9)
                   for a, r in zip(got, tw.grad.tolist())):
            raise Wrong(f"training, step {step}: your gradients of (w1, w2, b) "
                        "differ from PyTorch's (do the parameters' grads start at 0 "
                        "before each backward?)")
        with torch.no_grad():
            tw -= lr * tw.grad
        for p in (w1, w2, b):
            p.data -= lr * p.grad
    final = ((X @ tw.detach()[:2] + tw.detach()[2] - y) ** 2).mean().item()
    X1 = torch.cat([X, torch.ones(20, 1, dtype=X.dtype)], dim=1)
    best = torch.linalg.lstsq(X1, y[:, None]).solution[:, 0]
    floor = ((X1 @ best - y) ** 2).mean().item()
    return (f"{len(_SINGLE) + len(_SHARED)} small expressions and 6 random ones match "
            f"PyTorch; linear regression with your Values: mean squared error "
            f"{first_loss:.3g} -> {final:.3g} in {steps} steps (least squares "
            f"{floor:.3g}), equal to PyTorch's at every step")
