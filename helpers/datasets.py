"""Small Datasets the chapters share: images held as tensors, and a slow-disk wrapper.

They live in a module, not in a notebook, so DataLoader workers can import them under every
start method (``spawn`` and ``forkserver`` re-import classes by name; a class defined in a
notebook's ``__main__`` cannot be found there).
"""

from __future__ import annotations

import time
from typing import Any

from torch.utils.data import Dataset


class SlowReads(Dataset):
    """Wrap a dataset so that every item waits ``delay`` seconds first, like a slow disk or a
    network file system. Waiting uses no CPU, so worker processes overlap it on any machine.

    >>> len(SlowReads(range(5), delay=0.001))
    5
    """

    def __init__(self, dataset: Any, delay: float) -> None:
        if delay < 0:
            raise ValueError(f"delay must be >= 0 seconds, got {delay}")
        self.dataset, self.delay = dataset, delay

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i: int) -> Any:
        time.sleep(self.delay)
        return self.dataset[i]


class ImageTensors(Dataset):
    """Images already decoded into one ``uint8`` tensor ``(N, C, H, W)``, with their labels and
    an optional transform applied per sample (the Dataset chapter 05 writes out).

    >>> import torch
    >>> ds = ImageTensors(torch.zeros(4, 3, 8, 8, dtype=torch.uint8), torch.tensor([0, 1, 0, 1]))
    >>> ds[1][0].shape, int(ds[1][1])
    (torch.Size([3, 8, 8]), 1)
    """

    def __init__(self, images: Any, labels: Any, transform: Any = None) -> None:
        if len(images) != len(labels):
            raise ValueError(f"{len(images)} images but {len(labels)} labels")
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> tuple[Any, Any]:
        image = self.images[i]
        return (self.transform(image) if self.transform else image), self.labels[i]
