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
DATA_COLOUR = "#ffffff"  # inputs that need no gradient (data, targets): drawn dashed
FONT = 10  # points: the figure is drawn no wider than a web page's text column
COLUMN, ROW = 2.3, 0.85  # inches between columns and between rows
BOX_W, BOX_H = 2.0, 0.62  # inches


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


def data_inputs(nodes: list[Any], names: Mapping[str, torch.Tensor]) -> list[tuple[str, Any, int]]:
    """Return ``(label, node, slot)`` for each input of a node that needs no gradient (a ``None``
    at position ``slot`` of its ``next_functions``): the data and targets. The label names the
    tensor, with its shape, when it is one of ``names`` and the node still holds it (saved for
    backward, so before ``backward()`` frees it); otherwise it reads ``"input"``.

    >>> X, w = torch.ones(4, 2), torch.ones(2, requires_grad=True)
    >>> [(label, node.name(), slot) for label, node, slot in data_inputs(
    ...     graph_nodes(X @ w)[0], {"X": X})]
    [('X (4, 2)', 'MvBackward0', 0)]
    """
    data = {id(t): (n, t) for n, t in names.items() if not t.requires_grad}
    found = []
    for node in nodes:
        slots = [i for i, (child, _) in enumerate(node.next_functions) if child is None]
        if not slots:
            continue
        labels = []
        for attr in sorted(dir(node)):
            if not attr.startswith("_saved_"):
                continue
            try:
                value = getattr(node, attr)
            except RuntimeError:  # freed by backward()
                continue
            if isinstance(value, torch.Tensor) and id(value) in data:
                name, tensor = data[id(value)]
                labels.append(f"{name} {tuple(tensor.shape)}")
        labels += ["input"] * (len(slots) - len(labels))
        found += [(label, node, slot) for label, slot in zip(labels, slots, strict=False)]
    return found


def _label(node: Any, names: Mapping[str, torch.Tensor]) -> str:
    """The text of a node's box: its function's name, and the tensor it stands for if named."""
    short = node.name().removeprefix("torch::autograd::")
    leaf = getattr(node, "variable", None)  # AccumulateGrad holds the leaf it fills
    if leaf is not None:
        name = next((n for n, t in names.items() if t is leaf), "leaf")
        return f"{name} {tuple(leaf.shape)}\n{short}"
    named = [n for n, t in names.items() if t.grad_fn is node]
    return f"{short}\n→ {', '.join(named)}" if named else short


def _depths(tensor: torch.Tensor, edges: list[tuple[Any, Any]]) -> dict[int, int]:
    """Each node's longest path to the output (0 for the output itself), so that every input
    sits above the operations that use it."""
    depth = {id(tensor.grad_fn): 0}
    changed = True
    while changed:
        changed = False
        for child, parent in edges:
            if depth.get(id(child), -1) < depth[id(parent)] + 1:
                depth[id(child)] = depth[id(parent)] + 1
                changed = True
    return depth


def draw_graph(
    tensor: torch.Tensor, names: Mapping[str, torch.Tensor] | None = None, title: str = ""
) -> Figure:
    """Return a figure of the autograd graph behind ``tensor``, drawn top to bottom as the forward
    pass ran: the leaves (their ``AccumulateGrad`` nodes, in green) at the top, one box per
    backward function below, ``tensor``'s own ``grad_fn`` (orange) at the bottom, and an arrow
    from each input to the operation that used it. Inputs that need no gradient (data, targets)
    are dashed boxes. ``names`` labels the tensors you pass by name: leaves, computed tensors,
    and data (found while the graph still holds it, that is before ``backward()``).

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
    depth = _depths(tensor, edges)
    # A box: (key, text, row, kind); rows count up from the output, at the bottom.
    boxes = {}
    for node in nodes:
        kind = "leaf" if getattr(node, "variable", None) is not None else "step"
        kind = "root" if node is tensor.grad_fn else kind
        boxes[id(node)] = (_label(node, names), depth[id(node)], kind)
    # An arrow: (input key, user key, the input's position among the user's inputs, dashed).
    slot_of = {}
    for node in nodes:
        for i, (child, _) in enumerate(node.next_functions):
            if child is not None:
                slot_of.setdefault((id(child), id(node)), i)
    arrows = [(id(c), id(p), slot_of[(id(c), id(p))], False) for c, p in edges]
    for i, (label, user, slot) in enumerate(data_inputs(nodes, names)):
        key = ("data", i)
        boxes[key] = (f"{label}\nno gradient", depth[id(user)] + 1, "data")
        arrows.append((key, id(user), slot, True))

    # Place the rows from the output up; in a row, order the boxes by where their users sit,
    # then by their position among the inputs (X before w in X @ w).
    last = max(row for _, row, _ in boxes.values())
    x: dict[Any, float] = {}
    for row in range(last + 1):
        here = [key for key, (_, r, _) in boxes.items() if r == row]

        def order(key: Any) -> tuple[float, int]:
            mine = [(x[user], slot) for child, user, slot, _ in arrows if child == key]
            if not mine:
                return 0.0, 0
            return sum(u for u, _ in mine) / len(mine), min(s for _, s in mine)

        here.sort(key=order)
        for i, key in enumerate(here):
            x[key] = i - (len(here) - 1) / 2
    widest = max(sum(r == row for _, r, _ in boxes.values()) for row in range(last + 1))

    fig = plt.figure(figsize=(COLUMN * widest, ROW * (last + 1) + 0.6), layout="constrained")
    ax = fig.add_subplot()
    w, h = BOX_W / COLUMN, BOX_H / ROW  # a box, in units of columns and rows
    for child, user, _, dashed in arrows:
        x0, y0, x1, y1 = x[child], boxes[child][1], x[user], boxes[user][1]
        ax.annotate(
            "",
            xy=(x1, y1 + h / 2),
            xytext=(x0, y0 - h / 2),
            arrowprops={
                "arrowstyle": "-|>",
                "color": "#888888" if dashed else "#444444",
                "linestyle": "--" if dashed else "-",
                "shrinkA": 0,
                "shrinkB": 0,
            },
        )
    colours = {"leaf": LEAF_COLOUR, "step": STEP_COLOUR, "root": ROOT_COLOUR, "data": DATA_COLOUR}
    for key, (text, row, kind) in boxes.items():
        box = FancyBboxPatch(
            (x[key] - w / 2, row - h / 2),
            w,
            h,
            boxstyle="round,pad=0.02",
            facecolor=colours[kind],
            edgecolor="#888888" if kind == "data" else "#333333",
            linestyle="--" if kind == "data" else "-",
        )
        ax.add_patch(box)
        ax.text(x[key], row, text, ha="center", va="center", fontsize=FONT)
    half = (widest - 1) / 2
    ax.set_xlim(-half - 0.5, half + 0.5)
    ax.set_ylim(-0.5, last + 0.5)
    ax.axis("off")
    ax.set_title(title or "forward pass: top to bottom · backward(): bottom to top", fontsize=FONT)
    return fig
