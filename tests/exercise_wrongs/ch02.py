"""Answers chapter 2's exercise checks must reject (WRONG) and accept (RIGHT)."""
import math

import torch



def _p(x):
    return torch.softmax(x, dim=0)


def _jac(x):
    return torch.diag(_p(x)) - torch.outer(_p(x), _p(x))


def _vjp(x, u):
    p = torch.softmax(x, dim=-1)
    return p * (u - (u * p).sum(dim=-1, keepdim=True))


def _vjp_full(x, u):                       # right values, but builds the n x n matrix
    p = torch.softmax(x, dim=-1)
    J = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)
    return (u.unsqueeze(-2) @ J).squeeze(-2)


def _vjp_unweighted(x, u):                 # forgot the weights p in the sum
    p = torch.softmax(x, dim=-1)
    return p * (u - u.sum(dim=-1, keepdim=True))


def _vjp_diagonal(x, u):                   # the diagonal of J only
    p = torch.softmax(x, dim=-1)
    return u * p * (1 - p)


def _vjp_axis0(x, u):                      # the sum over the batch axis
    p = torch.softmax(x, dim=-1)
    return p * (u - (u * p).sum(dim=0, keepdim=True))


def _vjp_autograd(x, u):
    xr = x.clone().requires_grad_()
    torch.softmax(xr, dim=-1).backward(u)
    return xr.grad


def _lb_rows_only(X, W, G):                # dW for a 2-D X only
    return G @ W.T, X.transpose(-2, -1) @ G


def _lb_transposed_dw(X, W, G):
    Xf, Gf = X.reshape(-1, X.shape[-1]), G.reshape(-1, G.shape[-1])
    return G @ W.T, Gf.T @ Xf


def _lb_dx_no_transpose(X, W, G):          # only runs when W is square
    Xf, Gf = X.reshape(-1, X.shape[-1]), G.reshape(-1, G.shape[-1])
    return G @ W, Xf.T @ Gf


def _lb_mean(X, W, G):                     # averaged over the rows instead of summed
    Xf, Gf = X.reshape(-1, X.shape[-1]), G.reshape(-1, G.shape[-1])
    return G @ W.T, Xf.T @ Gf / len(Xf)


def _lb_autograd(X, W, G):
    Xr, Wr = X.clone().requires_grad_(), W.clone().requires_grad_()
    (Xr @ Wr).backward(G)
    return Xr.grad, Wr.grad


class _Base:
    """A right engine written with type(self), so that a subclass with one method
    replaced by a near-miss builds every result of its own kind."""

    def __init__(self, data, parents=()):
        self.data, self.grad = float(data), 0.0
        self.parents = parents
        self.backward_step = lambda: None

    def _lift(self, other):
        return other if isinstance(other, _Base) else type(self)(other)

    def __add__(self, other):
        other = self._lift(other)
        out = type(self)(self.data + other.data, (self, other))

        def step():
            self.grad += out.grad
            other.grad += out.grad
        out.backward_step = step
        return out

    def __mul__(self, other):
        other = self._lift(other)
        out = type(self)(self.data * other.data, (self, other))

        def step():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out.backward_step = step
        return out

    def __pow__(self, n):
        out = type(self)(self.data ** n, (self,))

        def step():
            self.grad += n * self.data ** (n - 1) * out.grad
        out.backward_step = step
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = type(self)(t, (self,))

        def step():
            self.grad += (1 - t ** 2) * out.grad
        out.backward_step = step
        return out

    def backward(self):
        order, seen = [], set()

        def visit(v):
            if id(v) not in seen:
                seen.add(id(v))
                for p in v.parents:
                    visit(p)
                order.append(v)
        visit(self)
        self.grad = 1.0
        for v in reversed(order):
            v.backward_step()

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return -self + other

    def __truediv__(self, other):
        return self * other ** -1


def _variant(**changes):
    """The right engine with some methods replaced by a near-miss."""
    return type("Value", (_Base,), changes)


def _add_overwrites(self, other):          # = instead of +=
    other = other if isinstance(other, _Base) else type(self)(other)
    out = type(self)(self.data + other.data, (self, other))

    def step():
        self.grad = out.grad
        other.grad = out.grad
    out.backward_step = step
    return out


def _mul_overwrites(self, other):
    other = other if isinstance(other, _Base) else type(self)(other)
    out = type(self)(self.data * other.data, (self, other))

    def step():
        self.grad = other.data * out.grad
        other.grad = self.data * out.grad
    out.backward_step = step
    return out


def _backward_depth_first(self):           # no topological order: a node passes its
    self.grad = 1.0                        # gradient on once per path, while it grows

    def walk(v):
        v.backward_step()
        for p in v.parents:
            walk(p)
    walk(self)


def _backward_no_seed(self):               # forgets d out / d out = 1
    order, seen = [], set()

    def visit(v):
        if id(v) not in seen:
            seen.add(id(v))
            for p in v.parents:
                visit(p)
            order.append(v)
    visit(self)
    for v in reversed(order):
        v.backward_step()


def _tanh_of_input(self):                  # 1 - x^2 with the input x
    out = type(self)(math.tanh(self.data), (self,))

    def step():
        self.grad += (1 - self.data ** 2) * out.grad
    out.backward_step = step
    return out


def _pow_without_n(self, n):               # x^(n-1), the factor n forgotten
    out = type(self)(self.data ** n, (self,))

    def step():
        self.grad += self.data ** (n - 1) * out.grad
    out.backward_step = step
    return out


def _add_no_numbers(self, other):          # v + 1 fails
    out = type(self)(self.data + other.data, (self, other))

    def step():
        self.grad += out.grad
        other.grad += out.grad
    out.backward_step = step
    return out


def _mul_own_value(self, other):           # each factor gets its own value
    other = other if isinstance(other, _Base) else type(self)(other)
    out = type(self)(self.data * other.data, (self, other))

    def step():
        self.grad += self.data * out.grad
        other.grad += other.data * out.grad
    out.backward_step = step
    return out


WRONG = {
    "ch2_softmax_jacobian": [
        (lambda x: torch.diag(_p(x)), _vjp),                             # diagonal only
        (lambda x: torch.outer(_p(x), _p(x)) - torch.diag(_p(x)), _vjp),  # sign flipped
        (lambda x: _p(x) * (1 - _p(x)), _vjp),                           # a vector
        (lambda x: _jac(x).float(), _vjp),                               # dtype lost
        (_jac, _vjp_full),
        (_jac, _vjp_unweighted),
        (_jac, _vjp_diagonal),
        (_jac, _vjp_axis0),
        (_jac, _vjp_autograd),
    ],
    "ch2_linear_backward": [
        _lb_rows_only, _lb_transposed_dw, _lb_dx_no_transpose, _lb_mean, _lb_autograd,
        lambda X, W, G: (G @ W.T, (X.reshape(-1, X.shape[-1]).T
                                   @ G.reshape(-1, G.shape[-1])).T),   # dW^T
    ],
    "ch2_predict_grad": [
        lambda x: 3 * x ** 2 + x,            # accumulation forgotten
        lambda x: 6 * x ** 2 + 2 * x,        # detach ignored
        lambda x: 6 * x ** 2,                # last backward forgotten
        lambda x: torch.tensor([7.0, 26.0, 57.0]),   # one x only
    ],
    "ch2_micrograd": [
        _variant(__add__=_add_overwrites, __mul__=_mul_overwrites),
        _variant(backward=_backward_depth_first),
        _variant(backward=_backward_no_seed),
        _variant(tanh=_tanh_of_input),
        _variant(__pow__=_pow_without_n),
        _variant(__add__=_add_no_numbers),
        _variant(__mul__=_mul_own_value),
        _variant(__add__=_add_overwrites),
    ],
}


class _Node:
    """Another right engine: gradients pushed through an explicit list of
    (parent, local derivative) pairs."""

    def __init__(self, data, edges=()):
        self.data, self.grad, self.edges = float(data), 0.0, edges

    @staticmethod
    def _lift(x):
        return x if isinstance(x, _Node) else _Node(x)

    def __add__(self, o):
        o = self._lift(o)
        return _Node(self.data + o.data, ((self, 1.0), (o, 1.0)))

    def __mul__(self, o):
        o = self._lift(o)
        return _Node(self.data * o.data, ((self, o.data), (o, self.data)))

    def __pow__(self, n):
        return _Node(self.data ** n, ((self, n * self.data ** (n - 1)),))

    def tanh(self):
        t = math.tanh(self.data)
        return _Node(t, ((self, 1 - t * t),))

    def backward(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:                         # iterative post-order
            v, done = stack.pop()
            if done:
                order.append(v)
            elif id(v) not in seen:
                seen.add(id(v))
                stack.append((v, True))
                stack.extend((p, False) for p, _ in v.edges)
        self.grad = 1.0
        for v in reversed(order):
            for p, local in v.edges:
                p.grad += local * v.grad

    __radd__ = __add__
    __rmul__ = __mul__

    def __neg__(self):
        return self * -1

    def __sub__(self, o):
        return self + (-o)

    def __rsub__(self, o):
        return -self + o

    def __truediv__(self, o):
        return self * o ** -1


RIGHT = {
    "ch2_softmax_jacobian": [
        (lambda x: _p(x)[:, None] * (torch.eye(len(x), dtype=x.dtype) - _p(x)[None, :]),
         lambda x, u: torch.softmax(x, -1) * u
         - torch.softmax(x, -1) * (torch.softmax(x, -1) * u).sum(-1, keepdim=True)),
    ],
    "ch2_linear_backward": [
        lambda X, W, G: (torch.matmul(G, W.mT),
                         torch.tensordot(X, G, dims=(list(range(X.dim() - 1)),
                                                     list(range(G.dim() - 1))))),
    ],
    "ch2_predict_grad": [lambda x: x * (6 * x + 1)],
    "ch2_micrograd": [_Node],
}
