"""Checks for lesson 09 · DDP and SyncBN's exercises: the reference answers live here, not in the
notebook."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from helpers.exercises import filled, report, true

TOLERANCE = 1e-5  # float32 rounding of a few sums of small gradients stays far below this
# The ranks the check makes, one problem per line: each rank's number of samples, and a seed.
PROBLEMS = (((5, 3, 9, 1), 1), ((2, 12), 2))

Grads = dict[str, torch.Tensor]


def ranks_problem(sizes: Sequence[int], seed: int) -> tuple[list[Grads], Grads]:
    """Each rank's own gradient of a small seeded model (mean cross-entropy over its shard of
    ``sizes[r]`` random samples), and the gradient on all the samples at once."""
    with torch.random.fork_rng(devices=[]):  # leave the notebook's random numbers alone
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3))
        x, y = torch.randn(sum(sizes), 6), torch.randint(0, 3, (sum(sizes),))

    def gradients(rows: slice) -> Grads:
        model.zero_grad()
        nn.functional.cross_entropy(model(x[rows]), y[rows]).backward()
        return {name: p.grad.clone() for name, p in model.named_parameters()}

    ends = torch.tensor(list(sizes)).cumsum(0).tolist()
    starts = [0, *ends[:-1]]
    own = [gradients(slice(a, b)) for a, b in zip(starts, ends, strict=True)]
    return own, gradients(slice(None))


def _listed(numbers: Sequence[int]) -> str:
    """``[5, 3, 9]`` as ``'5, 3 and 9'``."""
    words = [str(n) for n in numbers]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _flat(grads: Mapping[str, Any], names: Sequence[str]) -> torch.Tensor:
    return torch.cat([grads[name].detach().double().flatten().cpu() for name in names])


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).norm() / b.norm()).item()


def _form_problem(result: Any, whole: Grads) -> str | None:
    """A problem when ``result`` is not a dict of tensors with whole's names and shapes."""
    if result is Ellipsis:
        return "fill in `combined` inside combine (it still returns `...`)"
    if result is None:
        return "combine returned None: return the combined dict"
    if not isinstance(result, Mapping):
        return f"combine should return a dict like each of `grads`, got {type(result).__name__}"
    names = list(whole)
    if sorted(result) != sorted(names):
        if set(result).isdisjoint(names):
            return (
                f"combine returned gradients named {sorted(result)[:3]}, but the ranks' model "
                f"has {names[:3]}: build the dict from `grads` alone (the check passes in a "
                "model of its own), not from a gradient of the notebook"
            )
        missing = sorted(set(names) - set(result))
        extra = sorted(set(result) - set(names))
        return (
            "combine should return a gradient for each name in `grads[0]`: "
            f"missing {missing[:3]}, extra {extra[:3]}"
        )
    for name in names:
        value = result[name]
        if not isinstance(value, torch.Tensor) or value.shape != whole[name].shape:
            shape = tuple(value.shape) if isinstance(value, torch.Tensor) else ""
            return (
                f"combine's `[{name!r}]` should be a tensor of shape {tuple(whole[name].shape)}, "
                f"got {type(value).__name__} {shape}"
            )
    return None


def _value_problem(
    result: Mapping[str, Any], own: list[Grads], sizes: Sequence[int], whole: Grads
) -> str | None:
    """A problem when ``result`` is not ``whole``, naming the usual wrong combinations."""
    names = list(whole)
    mine, target = _flat(result, names), _flat(whole, names)
    off = _relative(mine, target)
    if off <= TOLERANCE:
        return None
    parts = [_flat(g, names) for g in own]
    wrong = {
        "plain mean": sum(parts) / len(parts),
        "sum": sum(parts),
        "weighted sum": sum(n * p for n, p in zip(sizes, parts, strict=True)),
    }
    counts = _listed(sizes)
    if _relative(mine, wrong["plain mean"]) <= TOLERANCE:
        return (
            f"with ranks of {counts} samples, that is the plain mean of the ranks' gradients: "
            f"it counts a rank with {min(sizes)} samples as much as one with {max(sizes)}. "
            "Weigh each rank by its number of samples"
        )
    if _relative(mine, wrong["sum"]) <= TOLERANCE:
        return "that is the sum of the ranks' gradients: each one is a mean, not a sum"
    if _relative(mine, wrong["weighted sum"]) <= TOLERANCE:
        return (
            f"that is each gradient times its size, summed: the sum over all {sum(sizes)} "
            "samples. The loss is their mean"
        )
    return (
        f"with ranks of {counts} samples, combine's result is off from the gradient on all "
        f"{sum(sizes)} samples by {off:.2g} (relative): each rank's loss is a mean over its "
        "own samples"
    )


def exercise_1(combine: Callable[[list[Grads], list[int]], Any] | Any) -> None:
    """combine(grads, sizes), from each rank's own gradient grads[r] (a dict of parameter name to
    gradient, the mean over its sizes[r] samples) returns the gradient on all the samples at
    once. The check makes its own ranks (a small model of its own, random samples, uneven
    shards: see PROBLEMS), so only the ranks' gradients and sizes can give the answer."""

    def answers() -> str | None:
        for sizes, seed in PROBLEMS:
            own, whole = ranks_problem(sizes, seed)
            copies = [{name: g.clone() for name, g in grads.items()} for grads in own]
            result = combine(copies, list(sizes))
            problem = _form_problem(result, whole) or _value_problem(result, own, sizes, whole)
            if problem:
                return problem
        return None

    held = [f"{len(sizes)} holding {_listed(sizes)}" for sizes, _ in PROBLEMS]
    shapes = ", then ".join(held)
    report(
        filled(combine=combine),
        true(callable(combine), "combine should be a function (grads, sizes), written with def"),
        answers,
        done=f"combine gives the gradient on all the samples (ranks: {shapes}): each rank "
        "counts by its number of samples",
    )
