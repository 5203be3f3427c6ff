"""Checks for the exercises of 09 · Sync BN, FSDP2 and split models (the chapter's second
cookbook notebook): the reference answers live here, not in the notebook."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from helpers.exercises import filled, report, tensor_close


def fsdp_shards(model: nn.Module, world: int) -> list[int]:
    """The values each of ``world`` ranks holds when FSDP2 shards every parameter of ``model``
    along dim 0: pieces of ceil(rows / world) rows, the last ones smaller or empty."""
    held = [0] * world
    for p in model.parameters():
        rows, per_row = p.shape[0], p[0].numel() if p.dim() > 1 else 1
        piece = -(-rows // world)
        for rank in range(world):
            held[rank] += max(0, min(piece, rows - rank * piece)) * per_row
    return held


def exercise_1(model: nn.Module, world: int, held: Any) -> None:
    """The number of parameter values each rank holds when FSDP2 shards ``model``."""
    right = fsdp_shards(model, world)
    total = sum(p.numel() for p in model.parameters())

    def problem() -> str | None:
        if list(held) == right:
            return None
        if len(held) != world:
            return f"`held` has {len(held)} entries: one per rank, {world} ranks"
        if sum(held) != total:
            return (
                "together the ranks hold every value of the model exactly once: add up the "
                "parameters' sizes"
            )
        if len(set(held)) == 1:
            return (
                "not every parameter divides evenly by the number of ranks: look at how the "
                "recipe splits the last layer's 3 rows over 2 ranks"
            )
        return (
            "the totals add up, but not the split: each parameter is cut along its first "
            "dimension, weight and bias alike, and a rank's share can be empty"
        )

    report(
        filled(held=held),
        None if isinstance(held, list | tuple) else "`held` should be a list, one number a rank",
        problem,
        done=f"{right} of {total} values: FSDP2 cuts each parameter's rows into pieces of "
        "ceil(rows / ranks), so the last rank can hold less, or nothing of a parameter",
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
