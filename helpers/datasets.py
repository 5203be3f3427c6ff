"""Small Datasets the chapters share: images held as tensors, a slow-disk wrapper, and the
datasets of chapter 05's worker demos.

They live in a module, not in a notebook, so DataLoader workers can import them under every
start method (``spawn`` and ``forkserver`` re-import classes by name; a class defined in a
notebook's ``__main__`` cannot be found there).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from torch.utils.data import Dataset, IterableDataset


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


class RandomDraws(Dataset):
    """``n`` items; item ``i`` is ``(i, worker id, a torch draw, a NumPy draw, a random draw)``,
    drawn in the process that loads it: shows how DataLoader workers are seeded."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[int, int, float, float, float]:
        import random

        import numpy as np
        import torch
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        worker = -1 if info is None else info.id
        return i, worker, torch.rand(1).item(), float(np.random.rand()), random.random()


def same_numpy_seed(worker_id: int) -> None:
    """A ``worker_init_fn`` that gives every worker the same NumPy seed: the bug old PyTorch
    had by default (identical "random" NumPy augmentations in every worker), on purpose."""
    import numpy as np

    np.random.seed(0)


class GeneratorDraws(Dataset):
    """``n`` items drawn from a NumPy ``Generator`` the dataset holds (``self.rng``); item ``i``
    is ``(i, worker id, a draw)``. DataLoader does not reseed such a generator: each worker gets
    a copy in the same state."""

    def __init__(self, n: int, seed: int = 0) -> None:
        import numpy as np

        self.n, self.rng = n, np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[int, int, float]:
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        return i, -1 if info is None else info.id, float(self.rng.random())


def reseed_dataset_rng(worker_id: int) -> None:
    """A ``worker_init_fn`` that gives the worker's copy of the dataset a generator of its own,
    seeded from the worker's seed (the loader's base seed + the worker id)."""
    import numpy as np
    from torch.utils.data import get_worker_info

    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)


class LineStream(IterableDataset):
    """Yield the stripped lines of a text file. With ``shard=True`` each DataLoader worker yields
    only every ``num_workers``-th line, starting at its id, so together they yield each line
    once; without it every worker yields the whole file."""

    def __init__(self, path: Any, shard: bool) -> None:
        self.path, self.shard = path, shard

    def __iter__(self) -> Iterator[str]:
        from torch.utils.data import get_worker_info

        info = get_worker_info()  # None in the main process
        with open(self.path, encoding="utf-8") as f:
            for number, line in enumerate(f):
                if self.shard and info is not None and number % info.num_workers != info.id:
                    continue  # another worker's line
                yield line.strip()
