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
    ncols: int = 8,
) -> Figure:
    """Return a grid of images: ``(N, C, H, W)`` ``uint8``, or floats in ``[0, 1]``."""
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
            axes[i].set_title(classes[label] if classes else str(label), fontsize=8)
    return fig
