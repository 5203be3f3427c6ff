"""A toy model and one fixed global batch, shared by chapter 09's notebooks and the scripts they
launch with ``torchrun`` (every rank builds the same batch without reading a file).

>>> x, y = global_batch(16)
>>> tuple(toy_model()(x).shape), y.tolist()[:4] == global_batch(16)[1].tolist()[:4]
((16, 3), True)
"""

from __future__ import annotations

import torch
from torch import nn


def toy_model(seed: int = 0) -> nn.Sequential:
    """Return a small MLP (20 → 32 → 3) initialised from ``seed``."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(20, 32), nn.Tanh(), nn.Linear(32, 3))


def global_batch(size: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    """Return the same ``(inputs, labels)`` batch in every process."""
    g = torch.Generator().manual_seed(1)
    return torch.randn(size, 20, generator=g), torch.randint(0, 3, (size,), generator=g)
