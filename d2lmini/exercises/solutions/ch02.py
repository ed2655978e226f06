"""Worked solutions of chapter 2's exercises (2. Autograd):
shown only when a learner asks, d2l.solution(name)."""
from __future__ import annotations

import math

import torch

from ..core import solution


def softmax_jacobian(x):
    p = torch.softmax(x, dim=0)
    # i == j: p_i (1 - p_i);  i != j: -p_i p_j;  together J_ij = p_i (delta_ij - p_j).
    # Columns sum to 0 because the p_i always sum to 1: sum_i dp_i/dx_j = d(1)/dx_j = 0.
    # Rows sum to 0 for another reason: adding the same c to every x_j changes no p_i
    # (shift invariance), so J @ (1, ..., 1) = 0. J is symmetric, so either fact also
    # gives the other, and J cannot be told apart from its transpose.
    return torch.diag(p) - torch.outer(p, p)


def softmax_vjp(x, u):
    p = torch.softmax(x, dim=-1)
    # (u^T J)_j = sum_i u_i p_i (delta_ij - p_j) = p_j (u_j - sum_i u_i p_i):
    # one weighted sum per row, no n x n matrix
    return p * (u - (u * p).sum(dim=-1, keepdim=True))


@solution("ch2_softmax_jacobian", value=True)
def answer_ch2_softmax_jacobian():
    return softmax_jacobian, softmax_vjp


@solution("ch2_linear_backward")
def linear_backward(X, W, G):
    # Y_k = sum_i X_i W_ik per row, so dL/dX_i = sum_k G_k W_ik: dX = G W^T (X's shape);
    # every row uses the same W, so dL/dW_ik = sum over all rows of X_i G_k:
    # dW = X^T G with the leading axes flattened into one (shape of W)
    dX = G @ W.T
    dW = X.reshape(-1, X.shape[-1]).T @ G.reshape(-1, G.shape[-1])
    return dX, dW


@solution("ch2_predict_grad")
def predicted_grad(x):
    # two accumulated 3x^2, plus x: in x * x.detach() the detached factor is a constant
    return 2 * (3 * x ** 2) + x


@solution("ch2_micrograd")
class Value:
    """A scalar that remembers how it was computed (micrograd-style)."""

    def __init__(self, data, parents=()):
        self.data, self.grad = float(data), 0.0
        self.parents = parents
        self.backward_step = lambda: None

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other))

        def step():                    # d(a + b)/da = d(a + b)/db = 1
            self.grad += out.grad      # += : a Value used twice gets both shares
            other.grad += out.grad
        out.backward_step = step
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other))

        def step():                    # each factor gets the other's value
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out.backward_step = step
        return out

    def __pow__(self, n):
        out = Value(self.data ** n, (self,))

        def step():
            self.grad += n * self.data ** (n - 1) * out.grad
        out.backward_step = step
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,))

        def step():
            self.grad += (1 - t ** 2) * out.grad
        out.backward_step = step
        return out

    def backward(self):
        # topological order: every node after all the nodes it was computed from
        order, seen = [], set()

        def visit(v):
            if id(v) not in seen:
                seen.add(id(v))
                for p in v.parents:
                    visit(p)
                order.append(v)
        visit(self)
        self.grad = 1.0                # d out / d out
        for v in reversed(order):      # each node passes its gradient on only after
            v.backward_step()          # all of its users have passed theirs

    __radd__ = __add__
    __rmul__ = __mul__

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return -self + other

    def __truediv__(self, other):
        return self * other ** -1
