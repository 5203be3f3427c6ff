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


def test_random_draws_differ_across_workers_and_repeat_with_the_generator():
    import torch

    from helpers.datasets import RandomDraws, same_numpy_seed

    def draws(seed, **kwargs):
        loader = DataLoader(
            RandomDraws(4),
            batch_size=1,
            num_workers=2,
            generator=torch.Generator().manual_seed(seed),
            **kwargs,
        )
        return [tuple(float(v) for v in item) for item in loader]

    first = draws(0)
    assert {row[1] for row in first} == {0, 1}  # both workers served items
    by_worker = {w: [r for r in first if r[1] == w] for w in (0, 1)}
    assert by_worker[0][0][3] != by_worker[1][0][3], "NumPy is seeded per worker"
    assert draws(0) == first and draws(1) != first
    bugged = draws(0, worker_init_fn=same_numpy_seed)
    numpy_firsts = {w: next(r[3] for r in bugged if r[1] == w) for w in (0, 1)}
    assert numpy_firsts[0] == numpy_firsts[1], "the same NumPy seed in every worker"


def test_line_stream_shards_across_workers(tmp_path):
    from helpers.datasets import LineStream

    path = tmp_path / "lines.txt"
    path.write_text("".join(f"line {i}\n" for i in range(6)))
    for shard, expected in ((False, 12), (True, 6)):
        got = [
            s for b in DataLoader(LineStream(path, shard), batch_size=2, num_workers=2) for s in b
        ]
        assert len(got) == expected and set(got) == {f"line {i}" for i in range(6)}
    assert list(LineStream(path, shard=True)) == [f"line {i}" for i in range(6)]  # main process
