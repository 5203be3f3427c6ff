"""A picture of broadcasting: shapes aligned from the right, the size-1 (or missing) dimensions
stretched, and the shape of the result."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

Shape = tuple[int, ...]
COLOURS = {
    "kept": "#9ecae1",  # the operand already has the result's size
    "stretched": "#fdae6b",  # size 1, read again along the result's size (no copy)
    "missing": "#ffffff",  # no such dimension: it counts as 1 and is stretched too
    "result": "#a1d99b",
}


def _shape_of(operand: torch.Tensor | Sequence[int], position: int) -> Shape:
    """The shape of a tensor, or a sequence of sizes checked to be non-negative ints."""
    if isinstance(operand, torch.Tensor):
        return tuple(operand.shape)
    if isinstance(operand, str) or not isinstance(operand, Sequence):
        raise ValueError(
            f"operand {position} should be a tensor or a shape such as (8, 3, 32, 32), "
            f"got {type(operand).__name__}"
        )
    for size in operand:
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"operand {position}: sizes are ints ≥ 0, got {tuple(operand)}")
    return tuple(int(size) for size in operand)


def broadcast_result(shapes: Sequence[Shape], names: Sequence[str]) -> Shape:
    """Return the shape ``shapes`` broadcast to, or raise ValueError naming the first dimension,
    counted from the right, where two sizes differ and neither is 1.

    >>> broadcast_result([(8, 3, 32, 32), (1, 3, 1, 1)], ["x", "mean"])
    (8, 3, 32, 32)
    """
    ndim = max(len(s) for s in shapes)
    result = []
    for k in range(ndim, 0, -1):  # dimension -k, the leftmost first
        sizes = {name: s[-k] for name, s in zip(names, shapes, strict=True) if len(s) >= k}
        big = {size for size in sizes.values() if size != 1}
        if len(big) > 1:
            listed = ", ".join(f"{name} {shape}" for name, shape in zip(names, shapes, strict=True))
            clash = " and ".join(f"{size} ({name})" for name, size in sizes.items() if size != 1)
            raise ValueError(
                f"these shapes do not broadcast: {listed}. Compared from the right, dimension "
                f"-{k} has sizes {clash}; sizes must be equal or 1"
            )
        result.append(big.pop() if big else 1)
    return tuple(result)


def show_broadcast(
    *operands: torch.Tensor | Sequence[int],
    names: Sequence[str] | None = None,
    dim_names: Sequence[str] | None = None,
) -> Figure:
    """Return a figure of how tensors (or shapes) broadcast: one row of boxes per operand, its
    sizes aligned from the right; a size 1 stretched to the result's size in orange, a missing
    dimension (it counts as 1) as a dashed box; the result's shape in the last row; a legend of
    the kinds of box drawn. Raise ValueError for fewer than two operands or shapes that do not
    broadcast.

    >>> fig = show_broadcast((8, 3, 32, 32), (1, 3, 1, 1), names=["x", "mean"])
    """
    if len(operands) < 2:
        raise ValueError(f"show_broadcast needs two or more tensors or shapes, got {len(operands)}")
    names = [f"operand {i}" for i in range(len(operands))] if names is None else list(names)
    if len(names) != len(operands):
        raise ValueError(f"{len(operands)} operands but {len(names)} names")
    shapes = [_shape_of(op, i) for i, op in enumerate(operands)]
    result = broadcast_result(shapes, names)
    ndim = len(result)
    if dim_names is not None and len(dim_names) != ndim:
        raise ValueError(f"the result has {ndim} dimensions but dim_names has {len(dim_names)}")
    headers = list(dim_names) if dim_names is not None else [f"dim {k}" for k in range(-ndim, 0)]

    box_w, box_h, gap = 1.3, 0.8, 0.35
    label_w = 3.4
    rows = [*zip(names, shapes, strict=True), ("result", result)]
    fig = plt.figure(figsize=(1.0 + 0.45 * (label_w + ndim * box_w), 1.6 + 0.5 * len(rows)))
    ax = fig.add_subplot()
    top = len(rows) * (box_h + gap)
    drawn = set()  # the kinds of box drawn: only those get a legend entry
    for j, header in enumerate(headers):
        ax.text(label_w + j * box_w + box_w / 2, top + 0.15, header, ha="center", fontsize=10)
    for r, (name, shape) in enumerate(rows):
        y = top - (r + 1) * (box_h + gap)
        if name == "result":
            ax.plot([0, label_w + ndim * box_w], [y + box_h + gap / 2] * 2, color="k", lw=0.8)
        ax.text(
            label_w - 0.2, y + box_h / 2, f"{name}  {shape}", ha="right", va="center", fontsize=10
        )
        for j in range(ndim):
            own = j - (ndim - len(shape))  # this operand's dimension in column j, or < 0
            x = label_w + j * box_w
            if name == "result":
                kind, text = "result", str(result[j])
            elif own < 0:
                kind, text = "missing", f"(1) → {result[j]}"
            elif shape[own] != result[j]:
                kind, text = "stretched", f"1 → {result[j]}"
            else:
                kind, text = "kept", str(shape[own])
            drawn.add(kind)
            ax.add_patch(
                Rectangle(
                    (x + 0.05, y),
                    box_w - 0.1,
                    box_h,
                    facecolor=COLOURS[kind],
                    edgecolor="k",
                    linestyle="--" if kind == "missing" else "-",
                )
            )
            ax.text(x + box_w / 2, y + box_h / 2, text, ha="center", va="center", fontsize=10)
    labels = {
        "kept": "size kept",
        "stretched": "size 1, stretched (no copy)",
        "missing": "missing: counts as 1",
        "result": "result",
    }
    legend = [
        Patch(
            facecolor=COLOURS[kind],
            edgecolor="k",
            ls="--" if kind == "missing" else "-",
            label=label,
        )
        for kind, label in labels.items()
        if kind in drawn
    ]
    ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=10)
    ax.set_xlim(0, label_w + ndim * box_w + 0.1)
    ax.set_ylim(-0.1, top + 0.5)
    ax.axis("off")
    ax.set_title("broadcasting: shapes compared from the right", fontsize=11)
    fig.tight_layout()
    return fig
