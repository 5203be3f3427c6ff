"""Plots the notebooks share: a training history and a grid of images.

Each function draws a new pyplot figure and returns it; in a notebook, follow the call with
``plt.show()`` (it displays the figure once, in Jupyter and in scripts alike).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator


def plot_history(history: Mapping[str, Sequence[float]], title: str = "") -> Figure:
    """Return a figure with one panel per metric, train and validation curves over epochs.

    ``history`` maps column names to per-epoch values, like torchkeras' history DataFrame
    (``train_loss``, ``val_loss``, ``train_acc``, ...); ``epoch`` is the x axis when present.
    """
    columns = {name: list(values) for name, values in dict(history).items()}
    metrics = sorted({n.split("_", 1)[1] for n in columns if n.startswith(("train_", "val_"))})
    if not metrics:
        raise ValueError("history has no 'train_*' or 'val_*' columns")
    fig = plt.figure(figsize=(4.2 * len(metrics), 3.2), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics, strict=True):
        for stage in ("train", "val"):
            values = columns.get(f"{stage}_{metric}")
            if values:
                epochs = columns.get("epoch", range(1, len(values) + 1))
                ax.plot(list(epochs), values, marker="o", label=stage)
        ax.set(xlabel="epoch", title=metric)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend()
    if title:
        fig.suptitle(title)
    return fig


def show_images(
    images: torch.Tensor,
    labels: Sequence[int] | torch.Tensor | None = None,
    classes: Sequence[str] | None = None,
    ncols: int = 6,
) -> Figure:
    """Return a grid of images: ``(N, C, H, W)`` ``uint8``, or floats in ``[0, 1]``; titles
    stay readable where a web page shrinks the figure to its text column."""
    if images.ndim != 4 or images.shape[1] not in (1, 3):
        raise ValueError(f"expected images shaped (N, 1|3, H, W), got {tuple(images.shape)}")
    n = len(images)
    rows = math.ceil(n / ncols)
    fig = plt.figure(figsize=(1.3 * min(n, ncols), 1.45 * rows), layout="constrained")
    axes = fig.subplots(rows, min(n, ncols), squeeze=False).ravel()
    pixels = images.float() / 255 if images.dtype == torch.uint8 else images.float().clamp(0, 1)
    for ax in axes:
        ax.axis("off")
    for i in range(n):
        axes[i].imshow(pixels[i].permute(1, 2, 0).squeeze(-1).numpy(), cmap="gray")
        if labels is not None:
            label = int(labels[i])
            axes[i].set_title(classes[label] if classes else str(label), fontsize=10)
    return fig


def show_layout(tensors: Mapping[str, torch.Tensor]) -> Figure:
    """Return a figure with one panel per 2-D tensor: its elements as a grid, each labelled with
    the storage index it reads (``offset + i * stride[0] + j * stride[1]``), above its storage
    as a strip of cells, the ones it uses shaded.

    Every panel is drawn on the same scale, so the storage strips line up; panels that would
    not fit side by side in about 7 inches go on more rows.

    >>> base = torch.arange(6.0).reshape(2, 3)
    >>> fig = show_layout({"x": base, "x.t()": base.t()})
    """
    if not tensors:
        raise ValueError("show_layout needs at least one tensor")
    for name, t in tensors.items():
        if t.ndim != 2:
            raise ValueError(f"{name}: show_layout draws 2-D tensors, got {t.ndim}-D")
    sizes = {name: t.untyped_storage().nbytes() // t.element_size() for name, t in tensors.items()}
    width = max(max(sizes.values()), *(t.shape[1] for t in tensors.values())) + 0.4
    height = max(t.shape[0] for t in tensors.values())
    ncols = max(1, min(len(tensors), int(6.9 // (width * 0.26))))  # cells of 0.26 in or more
    nrows = -(-len(tensors) // ncols)
    cell = min(0.32, 6.9 / (ncols * width))  # inches per cell: a 10-pt number fits in one
    fig = plt.figure(
        figsize=(ncols * width * cell + 0.2, nrows * ((height + 1.7) * cell + 0.45) + 0.3),
        layout="constrained",
    )
    fig.get_layout_engine().set(h_pad=0.06)  # room between the title and the panels
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[len(tensors) :]:
        ax.remove()
    for ax, (name, t) in zip(axes, tensors.items(), strict=False):
        rows, cols = t.shape
        (s0, s1), offset = t.stride(), t.storage_offset()
        used = {offset + i * s0 + j * s1 for i in range(rows) for j in range(cols)}
        for k in range(sizes[name]):  # the storage strip along the bottom
            shade = "#9ecae1" if k in used else "#f0f0f0"
            ax.add_patch(plt.Rectangle((k, -1.6), 1, 1, facecolor=shade, edgecolor="k"))
            ax.text(k + 0.5, -1.1, str(k), ha="center", va="center", fontsize=10)
        left = (sizes[name] - cols) / 2 if sizes[name] >= cols else 0
        for i in range(rows):
            for j in range(cols):
                k = offset + i * s0 + j * s1
                box = plt.Rectangle((left + j, rows - 1 - i), 1, 1, facecolor="#9ecae1")
                box.set_edgecolor("k")
                ax.add_patch(box)
                ax.text(
                    left + j + 0.5, rows - 0.5 - i, str(k), ha="center", va="center", fontsize=11
                )
        ax.set_xlim(-0.2, width)
        ax.set_ylim(-1.7, height + 0.1)  # the same limits in every panel: strips line up
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(
            f"{name}\nshape {tuple(t.shape)} stride {t.stride()} offset {offset}", fontsize=10
        )
    fig.suptitle("each cell: the storage index it reads; the strip: the storage", fontsize=10)
    return fig
