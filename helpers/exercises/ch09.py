"""Checks for the exercise of 09 · DDP that really runs (the chapter's first cookbook notebook):
the reference answers live here, not in the notebook."""

from __future__ import annotations

from typing import Any

from torch.utils.data import Dataset, DistributedSampler

from helpers.exercises import filled, report

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


BASE_BATCH, BASE_SGD_LR, BASE_ADAM_LR = 256, 0.1, 1e-3
MACHINES, GPUS, PER_GPU, ACCUMULATE = 4, 8, 32, 2


def _is_number(name: str, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"`{name}` should be a number, got {type(value).__name__}"
    return None


def exercise_2(global_batch: Any, sgd_lr: Any, adam_lr: Any) -> None:
    """The global batch of a 4 × 8-GPU job with accumulation, and its SGD and Adam learning
    rates scaled from a one-GPU recipe."""
    right_batch = MACHINES * GPUS * PER_GPU * ACCUMULATE
    factor = right_batch / BASE_BATCH

    def batch_problem() -> str | None:
        if global_batch == right_batch:
            return None
        if global_batch == MACHINES * GPUS * PER_GPU:
            return (
                "`global_batch` leaves out the accumulation: one optimizer step adds up 2 "
                "micro-batches on every GPU"
            )
        if global_batch in (GPUS * PER_GPU * ACCUMULATE, GPUS * PER_GPU):
            return "`global_batch` counts one machine's GPUs: every GPU of the job is a rank"
        return (
            "`global_batch` is not the number of samples one optimizer step sees: multiply "
            "what one GPU contributes per step by the number of ranks"
        )

    def near(value: float, target: float) -> bool:
        return abs(value - target) <= 1e-6 * max(1.0, abs(target))

    def sgd_problem() -> str | None:
        if near(sgd_lr, BASE_SGD_LR * factor):
            return None
        if near(sgd_lr, BASE_SGD_LR * MACHINES * GPUS):
            return (
                "`sgd_lr` scales with the number of GPUs; the rule scales with the global "
                "batch, which here is not the number of GPUs times 256"
            )
        if near(sgd_lr, BASE_SGD_LR * factor**0.5):
            return "`sgd_lr` follows the square-root rule; for SGD the rule is linear"
        return (
            "`sgd_lr`: multiply the recipe's rate by how many times larger the global batch is "
            "than the recipe's"
        )

    def adam_problem() -> str | None:
        if near(adam_lr, BASE_ADAM_LR * factor**0.5):
            return None
        if near(adam_lr, BASE_ADAM_LR * factor):
            return (
                "`adam_lr` follows the linear rule, which Adam does not: the recipe names a "
                "gentler one"
            )
        return "`adam_lr`: scale the recipe's Adam rate by the square root of the batch factor"

    report(
        filled(global_batch=global_batch, sgd_lr=sgd_lr, adam_lr=adam_lr),
        _is_number("global_batch", global_batch),
        _is_number("sgd_lr", sgd_lr),
        _is_number("adam_lr", adam_lr),
        batch_problem,
        sgd_problem,
        adam_problem,
        done=f"a global batch of {right_batch} ({factor:g}× the recipe's): SGD at "
        f"{BASE_SGD_LR * factor:g} with warm-up, Adam at about {BASE_ADAM_LR * factor**0.5:.2g}",
    )
