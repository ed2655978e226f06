"""Two small drawings of chapters 2 and 3, by matplotlib: the graph autograd recorded
(``graph_diagram``) and a fully connected network as circles and lines
(``network_diagram``).  Widths stay within 5.2 inches and text at 10 pt or more, so a
phone shows them legibly.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Circle, FancyBboxPatch

__all__ = ["graph_diagram", "network_diagram"]

FS, EDGE, NOTE = 10, "#333333", "#555555"
LEAF, OP, LOSS = "#dcdcf5", "#fcdcb4", "#cdeccd"
_SYMBOLS = {"Mul": "×", "Add": "+", "Sub": "−", "Pow": "power", "Sum": "sum",
            "Mv": "@", "Mm": "@", "Div": "÷", "Neg": "negate", "Tanh": "tanh",
            "Relu": "relu", "Exp": "exp", "Log": "log", "Mean": "mean"}
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _canvas(width: float, height: float):
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    return fig, ax


def _op_name(node) -> str:
    name = type(node).__name__
    for suffix in ("Backward0", "Backward1", "Backward"):
        name = name.removesuffix(suffix)
    exponent = getattr(node, "_saved_exponent", None)
    if name == "Pow" and isinstance(exponent, (int, float)):
        return "square" if exponent == 2 else f"power {exponent:g}"
    return _SYMBOLS.get(name, name.lower())


def _fmt(x: float) -> str:
    return f"{x:.3g}".replace("-", "−")


def graph_diagram(output: torch.Tensor, names: dict[str, torch.Tensor],
                  box_width: float = 1.55, row_height: float = 0.82):
    """Draw the graph autograd recorded for the scalar ``output``, forward from the
    leaves (top) to ``output`` (bottom) -> matplotlib Figure.

    ``names`` maps a name to each tensor to show: the leaves (parameters) and the
    intermediate results.  Every box shows its name, the operation that made it, its
    value and its gradient (the adjoint ``∂output/∂tensor``): call
    ``t.retain_grad()`` on the intermediate tensors before ``output.backward()``.
    Inputs that need no gradient are not part of the graph; a grey "const" marks where
    they enter.  Scalars only (the values are printed).
    """
    if not isinstance(output, torch.Tensor) or output.grad_fn is None:
        raise ValueError("output must be a tensor computed from tensors that require "
                         "grad (it needs a grad_fn)")
    if output.numel() != 1:
        raise ValueError(f"graph_diagram draws scalar graphs, output has shape "
                         f"{tuple(output.shape)}")
    if not isinstance(names, dict) or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor)
            for k, v in names.items()):
        raise TypeError("names must be a dict {name: tensor}")
    by_fn = {id(t.grad_fn): (k, t) for k, t in names.items() if t.grad_fn is not None}
    by_leaf = {id(t): (k, t) for k, t in names.items() if t.grad_fn is None}
    # depth of every node: its longest distance from the output
    depth: dict[int, int] = {}
    nodes: dict[int, object] = {}
    order: list[int] = []

    def visit(fn, d):
        key = id(fn)
        if key not in nodes:
            nodes[key] = fn
            order.append(key)
        if depth.get(key, -1) >= d:
            return
        depth[key] = d
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                visit(nxt, d + 1)

    visit(output.grad_fn, 0)
    deepest = max(depth.values())
    row = {k: deepest - d for k, d in depth.items()}          # leaves at the top
    for k, fn in nodes.items():                               # a leaf sits just above
        if hasattr(fn, "variable"):                           # the op that uses it
            users = [row[u] for u, f in nodes.items() if any(
                n is fn for n, _ in getattr(f, "next_functions", ()))]
            row[k] = min(users) - 1
    top = min(row.values())
    row = {k: r - top for k, r in row.items()}
    n_rows = max(row.values()) + 1
    per_row: dict[int, list[int]] = {}
    for k in order:
        per_row.setdefault(row[k], []).append(k)
    widest = max(len(v) for v in per_row.values())
    width = min(5.2, max(2.6, widest * (box_width + 0.25) + 0.8))
    height = n_rows * row_height + 0.2
    fig, ax = _canvas(width, height)
    pos = {}
    for r, keys in per_row.items():
        step = (width - 0.8) / len(keys)
        for i, k in enumerate(keys):
            pos[k] = (0.4 + step * (i + 0.5), height - 0.1 - row_height * (r + 0.5))
    h = row_height * 0.72
    for k, fn in nodes.items():
        x, y = pos[k]
        if hasattr(fn, "variable"):
            name, t = by_leaf.get(id(fn.variable), ("leaf", fn.variable))
            lines, color = [name], LEAF
        else:
            name, t = by_fn.get(k, ("", None))
            label = f"{name} = {_op_name(fn)}" if name else _op_name(fn)
            lines, color = [label], (LOSS if fn is output.grad_fn else OP)
        if t is not None and t.numel() == 1:
            lines.append(f"value {_fmt(t.detach().item())}")
            g = t.grad
            lines.append("grad " + (_fmt(g.item()) if g is not None else "(not kept)"))
        ax.add_patch(FancyBboxPatch((x - box_width / 2, y - h / 2), box_width, h,
                                    boxstyle="round,pad=0,rounding_size=0.06",
                                    fc=color, ec=EDGE, lw=1.0, zorder=2))
        ax.text(x, y, "\n".join(lines), ha="center", va="center", fontsize=FS,
                color=EDGE, zorder=3, linespacing=1.15)
        for nxt, _ in getattr(fn, "next_functions", ()):
            if nxt is None:                                   # a constant input
                ax.annotate("const", xy=(x - box_width * 0.3, y + h / 2),
                            xytext=(x - box_width * 0.45, y + h / 2 + 0.2),
                            fontsize=FS, color=NOTE, ha="right", va="bottom",
                            arrowprops=dict(arrowstyle="-|>", color=NOTE, lw=0.8))
                continue
            x0, y0 = pos[id(nxt)]
            ax.annotate("", xy=(x, y + h / 2), xytext=(x0, y0 - h / 2), zorder=1,
                        arrowprops=dict(arrowstyle="-|>", color=EDGE, lw=1.1,
                                        shrinkA=0, shrinkB=0))
    return fig


def network_diagram(*nets, titles=None, height: float = 2.4):
    """Fully connected networks, inputs at the bottom -> matplotlib Figure.

    Each net is a list of layer sizes, e.g. ``[2, 1]`` (linear regression with two
    features), ``[2, 3]`` (softmax regression, three classes) or ``[2, 8, 1]`` (one
    hidden layer of 8).  Nodes are named x₁… (inputs), h₁… (hidden) and o₁…
    (outputs); every node of a layer connects to every node of the next.
    """
    if not nets or not all(isinstance(n, (list, tuple)) and len(n) >= 2 and all(
            isinstance(s, int) and s >= 1 for s in n) for n in nets):
        raise ValueError("each net must be a list of at least two positive layer "
                         f"sizes, e.g. [2, 1], got {nets!r}")
    if titles is not None and len(titles) != len(nets):
        raise ValueError(f"expected {len(nets)} titles, got {len(titles)}")
    widths = [max(max(n) * 0.5, 2.4) for n in nets]
    width = min(5.2, sum(widths) + 0.3 * (len(nets) - 1))
    scale = width / (sum(widths) + 0.3 * (len(nets) - 1))
    fig, ax = _canvas(width, height)
    r = 0.17
    left = 0.0
    for i, sizes in enumerate(nets):
        w = widths[i] * scale
        layers = len(sizes)
        ys = [0.35 + (height - 0.9) * j / (layers - 1) for j in range(layers)]
        centres = []
        for j, n in enumerate(sizes):
            letter = "x" if j == 0 else ("o" if j == layers - 1 else "h")
            xs = [left + w * (k + 0.5) / n for k in range(n)]
            centres.append([(x, ys[j]) for x in xs])
            for k, x in enumerate(xs):
                ax.add_patch(Circle((x, ys[j]), r, fc=LEAF if j == 0 else (
                    LOSS if j == layers - 1 else OP), ec=EDGE, lw=1.0, zorder=2))
                ax.text(x, ys[j], f"{letter}{k + 1}".translate(_SUB), ha="center",
                        va="center", fontsize=FS, zorder=3)
        for lower, upper in zip(centres, centres[1:]):
            for x0, y0 in lower:
                for x1, y1 in upper:
                    ax.plot([x0, x1], [y0 + r, y1 - r], color=NOTE, lw=0.8, zorder=1)
        if titles is not None:
            ax.text(left + w / 2, height - 0.15, titles[i], ha="center", va="top",
                    fontsize=FS, color=EDGE)
        left += w + 0.3 * scale
    return fig
