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


def test_image_tensors_apply_the_transform_per_sample():
    import torch

    from helpers.datasets import ImageTensors

    images = torch.arange(2 * 3 * 2 * 2, dtype=torch.uint8).reshape(2, 3, 2, 2)
    ds = ImageTensors(images, torch.tensor([0, 1]), transform=lambda x: x.flip(-1))
    x, y = ds[1]
    assert torch.equal(x, images[1].flip(-1)) and int(y) == 1 and len(ds) == 2
    with pytest.raises(ValueError, match="2 images but 3 labels"):
        ImageTensors(images, torch.tensor([0, 1, 0]))
