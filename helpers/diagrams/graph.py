"""The graph autograd records for a tensor, drawn with matplotlib from ``grad_fn``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

LEAF_COLOUR = "#c7e9c0"  # the leaves, where gradients are stored
STEP_COLOUR = "#deebf7"  # the backward functions
ROOT_COLOUR = "#fdd0a2"  # the tensor backward() starts from


def graph_nodes(tensor: torch.Tensor) -> tuple[list[Any], list[tuple[Any, Any]]]:
    """Return the nodes of ``tensor``'s autograd graph, from ``tensor.grad_fn`` outwards, and its
    edges as ``(input node, node that uses it)`` pairs, found by walking ``next_functions``.

    >>> w = torch.ones(2, requires_grad=True)
    >>> nodes, edges = graph_nodes((w * 3).sum())
    >>> [n.name() for n in nodes]
    ['SumBackward0', 'MulBackward0', 'torch::autograd::AccumulateGrad']
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"expected a tensor, got {type(tensor).__name__}")
    if tensor.grad_fn is None:
        why = "a leaf" if tensor.requires_grad else "a tensor that does not require grad"
        raise ValueError(f"this tensor has no autograd graph: it is {why} (its grad_fn is None)")
    nodes, edges, seen = [], [], set()
    stack = [tensor.grad_fn]
    while stack:
        node = stack.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        for child, _ in node.next_functions:
            if child is not None:  # None: an input that needs no gradient (data, targets)
                edges.append((child, node))
                stack.append(child)
    return nodes, edges


def _label(node: Any, names: Mapping[str, torch.Tensor]) -> str:
    """The text of a node's box: its function's name, and the tensor it stands for if named."""
    short = node.name().removeprefix("torch::autograd::")
    leaf = getattr(node, "variable", None)  # AccumulateGrad holds the leaf it fills
    if leaf is not None:
        name = next((n for n, t in names.items() if t is leaf), "leaf")
        return f"{name}: shape {tuple(leaf.shape)}\n{short}"
    named = [n for n, t in names.items() if t.grad_fn is node]
    return f"{short}\n→ {', '.join(named)}" if named else short


def draw_graph(
    tensor: torch.Tensor, names: Mapping[str, torch.Tensor] | None = None, title: str = ""
) -> Figure:
    """Return a figure of the autograd graph behind ``tensor``: one box per backward function,
    the leaves (their ``AccumulateGrad`` nodes, in green) on the left, ``tensor``'s own
    ``grad_fn`` on the right, and an arrow from each input to the operation that used it.
    ``names`` labels the tensors you pass by name (leaves and computed ones alike).

    Raises ``ValueError`` for a tensor without a graph (a leaf, or one computed without
    gradient tracking).

    >>> w = torch.ones(3, requires_grad=True)
    >>> loss = (w * 2).sum()
    >>> fig = draw_graph(loss, {"w": w, "loss": loss})
    """
    names = dict(names or {})
    for name, value in names.items():
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"names[{name!r}] should be a tensor, got {type(value).__name__}")
    nodes, edges = graph_nodes(tensor)
    # Each node's column: its longest path to the output, so every input sits left of its users.
    depth = {id(tensor.grad_fn): 0}
    changed = True
    while changed:
        changed = False
        for child, parent in edges:
            if depth.get(id(child), -1) < depth.get(id(parent), -1) + 1:
                depth[id(child)] = depth[id(parent)] + 1
                changed = True
    last = max(depth.values())
    columns: dict[int, list[Any]] = {}
    for node in nodes:
        columns.setdefault(last - depth[id(node)], []).append(node)
    tallest = max(len(column) for column in columns.values())
    where = {}  # each node's (column, row), rows centred on 0
    for x, column in columns.items():
        for i, node in enumerate(column):
            where[id(node)] = (x, (len(column) - 1) / 2 - i)

    width, height = 0.8, 0.55  # a box, in units of the distance between columns and rows
    fig = plt.figure(figsize=(2.1 * (last + 1), 0.5 + 1.0 * tallest), layout="constrained")
    ax = fig.add_subplot()
    for child, parent in edges:
        (x0, y0), (x1, y1) = where[id(child)], where[id(parent)]
        ax.annotate(
            "",
            xy=(x1 - width / 2, y1),
            xytext=(x0 + width / 2, y0),
            arrowprops={"arrowstyle": "-|>", "color": "#555555", "shrinkA": 0, "shrinkB": 0},
        )
    for node in nodes:
        x, y = where[id(node)]
        is_leaf = getattr(node, "variable", None) is not None
        colour = LEAF_COLOUR if is_leaf else ROOT_COLOUR if node is tensor.grad_fn else STEP_COLOUR
        box = FancyBboxPatch(
            (x - width / 2, y - height / 2),
            width,
            height,
            boxstyle="round,pad=0.02",
            facecolor=colour,
            edgecolor="#333333",
        )
        ax.add_patch(box)
        ax.text(x, y, _label(node, names), ha="center", va="center", fontsize=8)
    ax.set_xlim(-0.6, last + 0.6)
    ax.set_ylim(-(tallest - 1) / 2 - 0.6, (tallest - 1) / 2 + 0.6)
    ax.axis("off")
    ax.set_title(
        title or "autograd graph: inputs on the left; backward() walks it from right to left",
        fontsize=9,
    )
    return fig
