"""Small Dataset wrappers the chapters use to show loader behaviour.

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
