"""The picture of an ``nn.Sequential`` model: one box per layer, with the index that reaches it
(``model[2][1]``) and the shape of a real batch after it.

>>> from torch import nn
>>> model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
>>> fig = draw_layers(model, torch.zeros(8, 4))
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch
from torch import nn

FONT = 10  # points: the figure is drawn no wider than a web page's text column
ROW = 0.42  # inches per layer
WIDTH = 6.6  # inches
COLOURS = {  # by what a layer does
    "prepare": "#f0f0f0",  # dtype and normalisation of the input
    "learn": "#deebf7",  # layers with parameters
    "pool": "#fdd0a2",  # layers that shrink height and width
    "other": "#ffffff",
}


def describe(layer: nn.Module) -> str:
    """Return a short name for a layer: its class, with channels or features for convolutions
    and linear layers.

    >>> describe(nn.Conv2d(3, 16, 3)), describe(nn.MaxPool2d(2)), describe(nn.ReLU())
    ('Conv2d 3→16', 'MaxPool2d 2×2', 'ReLU')
    """
    name = type(layer).__name__
    if isinstance(layer, nn.Conv2d):
        return f"{name} {layer.in_channels}→{layer.out_channels}"
    if isinstance(layer, nn.Linear):
        return f"{name} {layer.in_features}→{layer.out_features}"
    if isinstance(layer, nn.MaxPool2d | nn.AvgPool2d) and isinstance(layer.kernel_size, int):
        return f"{name} {layer.kernel_size}×{layer.kernel_size}"
    if isinstance(layer, nn.AdaptiveMaxPool2d | nn.AdaptiveAvgPool2d):
        size = layer.output_size
        return f"{name} to {size}×{size}" if isinstance(size, int) else name
    return name


def _kind(layer: nn.Module) -> str:
    if any(True for _ in layer.parameters()):
        return "learn"
    name = type(layer).__name__
    if "Pool" in name:
        return "pool"
    if name in ("ToDtype", "Normalize", "ToImage", "ConvertImageDtype"):
        return "prepare"
    return "other"


def _shape(x: torch.Tensor, dtype: torch.dtype | None) -> str:
    """``(8, 16, 32, 32)``, with the dtype in front where it changed."""
    shape = str(tuple(x.shape))
    return f"{str(x.dtype).removeprefix('torch.')} {shape}" if x.dtype != dtype else shape


def draw_layers(model: nn.Sequential, batch: torch.Tensor, title: str = "") -> Figure:
    """Return a figure of ``model``'s layers, top to bottom in the order they run: one row per
    layer, with its index (``[2]``), what it is (a nested ``nn.Sequential`` lists its layers with
    their own indices, so ``model[2][1]`` is the second layer in row ``[2]``), and the shape of
    ``batch`` after it (with the dtype where it changes). The batch really runs through the
    model, without gradients.

    Raises ``TypeError`` for a model that is not an ``nn.Sequential``.
    """
    if not isinstance(model, nn.Sequential):
        raise TypeError(
            f"draw_layers shows an nn.Sequential (indexable layers), got {type(model).__name__}"
        )
    if not isinstance(batch, torch.Tensor):
        raise TypeError(f"batch should be a tensor, got {type(batch).__name__}")
    rows = [("", "input", "other", _shape(batch, None))]
    h = batch
    with torch.no_grad():
        for i, layer in enumerate(model):
            dtype = h.dtype
            h = layer(h)
            if isinstance(layer, nn.Sequential):
                text = " · ".join(f"[{j}] {describe(part)}" for j, part in enumerate(layer))
                kind = "learn" if any(True for _ in layer.parameters()) else "other"
            else:
                text, kind = describe(layer), _kind(layer)
            rows.append((f"[{i}]", text, kind, _shape(h, dtype)))

    fig = plt.figure(figsize=(WIDTH, ROW * len(rows) + 0.5), layout="constrained")
    ax = fig.add_subplot()
    n = len(rows)
    index_x, box_x, box_w, shape_x = 0.0, 0.55, 3.9, 4.6  # inches from the left
    for r, (index, text, kind, shape) in enumerate(rows):
        y = n - 1 - r
        ax.text(index_x, y, index, ha="left", va="center", fontsize=FONT, family="monospace")
        box = FancyBboxPatch(
            (box_x, y - 0.34),
            box_w,
            0.68,
            boxstyle="round,pad=0.02",
            facecolor=COLOURS[kind],
            edgecolor="#333333",
        )
        ax.add_patch(box)
        ax.text(box_x + 0.1, y, text, ha="left", va="center", fontsize=FONT)
        ax.text(shape_x, y, shape, ha="left", va="center", fontsize=FONT, family="monospace")
        if r:
            ax.annotate(
                "",
                xy=(box_x + box_w / 2, y + 0.34),
                xytext=(box_x + box_w / 2, y + 0.66),
                arrowprops={"arrowstyle": "-|>", "color": "#444444", "shrinkA": 0, "shrinkB": 0},
            )
    ax.text(shape_x, n - 0.3, "batch after it", ha="left", va="bottom", fontsize=FONT)
    ax.set_xlim(-0.05, WIDTH - 0.1)
    ax.set_ylim(-0.6, n + 0.1)
    ax.axis("off")
    ax.set_title(title or "the layers in the order they run", fontsize=FONT)
    return fig
