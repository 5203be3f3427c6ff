"""helpers.datasets: the slow-disk wrapper."""

from __future__ import annotations

import time

import pytest
from torch.utils.data import DataLoader

from helpers.datasets import SlowReads


def test_slow_reads_returns_the_items_after_the_delay():
    slow = SlowReads(list(range(4)), delay=0.02)
    start = time.perf_counter()
    assert [slow[i] for i in range(4)] == [0, 1, 2, 3]
    assert time.perf_counter() - start >= 0.08
    assert len(slow) == 4


def test_slow_reads_works_in_spawned_workers():
    loader = DataLoader(
        SlowReads(list(range(6)), delay=0.0),
        batch_size=2,
        num_workers=1,
        multiprocessing_context="spawn",
    )
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3], [4, 5]]


def test_slow_reads_refuses_a_negative_delay():
    with pytest.raises(ValueError, match="delay"):
        SlowReads([1], delay=-1)
