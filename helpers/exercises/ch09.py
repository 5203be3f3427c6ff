"""Checks for 09 · DDP and SyncBN's exercises: the reference answers live here, not in the
notebook."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import Dataset, DistributedSampler

from helpers.exercises import filled, report, tensor_close

WORLD = 3


def _shards(dataset: Dataset, **kwargs: Any) -> list[list[int]]:
    """The indices each of the WORLD ranks' samplers yields, without shuffling."""
    return [
        list(DistributedSampler(dataset, num_replicas=WORLD, rank=rank, shuffle=False, **kwargs))
        for rank in range(WORLD)
    ]


def _as_list(name: str, value: Any) -> str | None:
    if not isinstance(value, list | tuple):
        return f"`{name}` should be a list, got {type(value).__name__}"
    return None


def _differs(name: str, value: Any, expected: list[int], hint: str) -> str | None:
    """A problem when value differs from expected, without showing expected: here the expected
    values are the answer itself."""
    if value == expected:
        return None
    return f"`{name}` is {value!r}, not what the samplers give: {hint}"


def exercise_1(numbers: Dataset, padded_sizes: Any, dropped_sizes: Any, repeated: Any) -> None:
    """The samples per rank of DistributedSampler on 3 ranks, padded and with drop_last, and the
    indices padding repeats."""
    padded = _shards(numbers)
    dropped = _shards(numbers, drop_last=True)
    flat = [i for shard in padded for i in shard]
    twice = sorted({i for i in flat if flat.count(i) > 1})
    report(
        filled(padded_sizes=padded_sizes, dropped_sizes=dropped_sizes, repeated=repeated),
        _as_list("padded_sizes", padded_sizes),
        _as_list("dropped_sizes", dropped_sizes),
        _as_list("repeated", repeated),
        lambda: _differs(
            "padded_sizes",
            list(padded_sizes),
            [len(s) for s in padded],
            hint="with padding, every rank runs the same number of steps, and no sample is left "
            "out",
        ),
        lambda: _differs(
            "dropped_sizes",
            list(dropped_sizes),
            [len(s) for s in dropped],
            hint="with drop_last, every rank runs the same number of steps, and no sample is "
            "repeated",
        ),
        lambda: _differs(
            "sorted(repeated)",
            sorted(repeated),
            twice,
            hint="padding repeats just enough indices to fill the ranks evenly: think about "
            "where in the data set it takes them from",
        ),
        done=f"padded: {len(padded[0])} samples per rank, indices {twice} twice; "
        f"drop_last: {len(dropped[0])} per rank",
    )


def exercise_2(ranks: list[torch.Tensor], global_mean: Any, global_var: Any) -> None:
    """The per-channel mean and biased variance of all ranks' data together."""
    everything = torch.cat(ranks)
    n = everything.numel() / everything.shape[1]  # values per channel
    biased = everything.var((0, 2, 3), correction=0)

    def var_problem() -> str | None:
        problem = tensor_close(
            "global_var",
            global_var,
            biased,
            atol=1e-4,
            hint="the variance follows from the summed squares, the count and global_mean (the "
            "section on BatchNorm with small batches gives the formula), not from the ranks' own "
            "variances",
        )
        comparable = isinstance(global_var, torch.Tensor) and global_var.shape == biased.shape
        unbiased = biased.double() * n / (n - 1)
        if problem and comparable and torch.allclose(global_var.double(), unbiased):
            return "global_var is the unbiased variance: BatchNorm divides by n, not n − 1"
        return problem

    report(
        filled(global_mean=global_mean, global_var=global_var),
        lambda: tensor_close(
            "global_mean",
            global_mean,
            everything.mean((0, 2, 3)),
            atol=1e-5,
            hint="one mean per channel: the ranks' sums over every other dimension, added up, "
            "over the total count",
        ),
        var_problem,
        done="mean and variance from summed statistics equal those of the whole batch",
    )
