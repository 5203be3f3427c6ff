"""Small models that several chapters train."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torchvision.transforms import v2


def conv_block(c_in: int, c_out: int) -> nn.Sequential:
    """Return conv 3×3 → batch norm → ReLU, keeping the spatial size."""
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()
    )


def small_cnn(
    mean: Sequence[float], std: Sequence[float], width: int = 16, classes: int = 2
) -> nn.Sequential:
    """Return a 4-block CNN for 32×32 RGB images that takes ``uint8`` batches ``(N, 3, H, W)``.

    Its first two layers convert to float in [0, 1] and normalise with the data set's per-channel
    ``mean`` and ``std``, so a trained model accepts raw images. About 98k parameters at
    ``width=16``.

    >>> small_cnn([0.5] * 3, [0.25] * 3)(torch.zeros(1, 3, 32, 32, dtype=torch.uint8)).shape
    torch.Size([1, 2])
    """
    if len(mean) != 3 or len(std) != 3:
        raise ValueError("mean and std need one value per RGB channel")
    if width < 1 or classes < 1:
        raise ValueError("width and classes must be positive")
    return nn.Sequential(
        v2.ToDtype(torch.float32, scale=True),
        v2.Normalize(list(mean), list(std)),
        conv_block(3, width),
        nn.MaxPool2d(2),
        conv_block(width, 2 * width),
        nn.MaxPool2d(2),
        conv_block(2 * width, 4 * width),
        nn.MaxPool2d(2),
        conv_block(4 * width, 8 * width),
        nn.AdaptiveMaxPool2d(1),
        nn.Flatten(),
        nn.Linear(8 * width, classes),
    )
