"""Checks for 11 · Memory's exercises: the reference answers live here, not in the notebook."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from helpers.exercises import report
from helpers.memory import checkpointing_problem, evaluation_problem


def exercise_1(
    mean_loss: Callable[[nn.Module, list], object] | Any,
    model: nn.Module,
    batches: list[tuple[torch.Tensor, torch.Tensor]],
) -> None:
    """``mean_loss(model, batches)``: the batches' mean cross-entropy as a float, with autograd
    saving nothing meanwhile (the model in evaluation mode, put back as it was)."""
    report(
        lambda: evaluation_problem(mean_loss, model, batches),
        done="mean_loss returns the mean loss as a float, and autograd saved nothing",
    )


def exercise_2(
    checkpointed_forward: Callable[[nn.Module, torch.Tensor], object] | Any,
    model: nn.Sequential,
    x: torch.Tensor,
    y: torch.Tensor,
) -> None:
    """``checkpointed_forward(model, x)``: the model's output and gradients, saving at most a
    quarter of the bytes the plain forward saves. It runs on a copy of ``model``: training-mode
    forwards update BatchNorm's running statistics, and the notebook's model stays as it was."""
    report(
        lambda: checkpointing_problem(checkpointed_forward, copy.deepcopy(model), x, y, 0.25),
        done="same output and gradients, at most a quarter of the saved bytes",
    )
