"""Checks for lesson 09 · DDP and SyncBN's exercises: the reference answers live here, not in the
notebook."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from helpers.exercises import filled, report

TOLERANCE = 1e-5  # float32 rounding of sums of a few thousand terms stays far below this


def _flat(grads: Mapping[str, torch.Tensor], names: Sequence[str]) -> torch.Tensor:
    return torch.cat([grads[name].detach().double().flatten().cpu() for name in names])


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).norm() / b.norm()).item()


def exercise_1(
    combined: Any,
    rank_grads: Sequence[Mapping[str, torch.Tensor]],
    sizes: Sequence[int],
    whole: Mapping[str, torch.Tensor],
) -> None:
    """combined, made from the ranks' own gradients rank_grads (on sizes[r] images each), is the
    gradient on all the images together, whole: a dict of the same names and shapes."""
    names = list(whole)

    def form_problem() -> str | None:
        if not isinstance(combined, Mapping):
            return f"`combined` should be a dict like `whole`, got {type(combined).__name__}"
        if sorted(combined) != sorted(names):
            missing = sorted(set(names) - set(combined))
            extra = sorted(set(combined) - set(names))
            return (
                f"`combined` should have a gradient for each parameter of `whole`: "
                f"missing {missing[:3]}, extra {extra[:3]}"
            )
        for name in names:
            value = combined[name]
            if not isinstance(value, torch.Tensor) or value.shape != whole[name].shape:
                shape = tuple(value.shape) if isinstance(value, torch.Tensor) else None
                return (
                    f"`combined[{name!r}]` should be a tensor of shape "
                    f"{tuple(whole[name].shape)}, got {type(value).__name__} {shape or ''}"
                )
        return None

    def value_problem() -> str | None:
        mine, target = _flat(combined, names), _flat(whole, names)
        off = _relative(mine, target)
        if off <= TOLERANCE:
            return None
        plain = sum(_flat(g, names) for g in rank_grads) / len(rank_grads)
        if _relative(mine, plain) <= TOLERANCE:
            return (
                "that is the plain mean of the ranks' gradients, which counts a rank with "
                f"{min(sizes)} images as much as one with {max(sizes)}: weigh each rank"
            )
        summed = sum(_flat(g, names) for g in rank_grads)
        if _relative(mine, summed) <= TOLERANCE:
            return "that is the sum of the ranks' gradients: each one is a mean, not a sum"
        return (
            f"`combined` is off from the gradient on all {sum(sizes)} images by {off:.2g} "
            "(relative): each rank's loss is a mean over its own images"
        )

    report(
        filled(combined=combined),
        form_problem,
        value_problem,
        done=f"combined is the gradient on all {sum(sizes)} images: each rank weighs by its "
        "number of images",
    )
