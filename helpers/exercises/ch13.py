"""Checks for 13 · Reproducibility and debugging's exercises: the reference answers live here,
not in the notebook. Each builds its own small models and data, so an answer is tried on cases
it has not seen."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from helpers.debug import finite_checks_problem, safe_step_problem, sample_noise_problem
from helpers.exercises import report


def exercise_1(add_finite_checks: Callable[[torch.nn.Module], Any] | Any) -> None:
    """``add_finite_checks(model)``: hooks that name the first layer with a non-finite output,
    stay quiet on a healthy model and go away with their handles' ``remove()``."""
    report(
        lambda: finite_checks_problem(add_finite_checks),
        done="the hooks name the first layer with a non-finite output ('body.0', then 'head'), "
        "stay quiet on a healthy model and go away with handle.remove()",
    )


def exercise_2(safe_step: Callable[..., Any] | Any) -> None:
    """``safe_step(model, optimizer, loss)``: steps on a finite loss and gradient, else leaves
    the weights alone, clears the gradients and returns False."""
    report(
        lambda: safe_step_problem(safe_step),
        done="safe_step steps on a finite loss and skips (weights unchanged, gradients "
        "cleared) on an infinite loss and on a NaN gradient",
    )


def exercise_3(noise: Callable[[int, int, int], Any] | Any) -> None:
    """``noise(seed, epoch, index)``: 4 floats that depend only on the three numbers. The check
    moves NumPy's and torch's global generators on purpose; it puts them back afterwards, so the
    notebook's own randomness is as it was."""
    numpy_state, torch_state = np.random.get_state(), torch.get_rng_state()
    try:
        report(
            lambda: sample_noise_problem(noise),
            done="the noise depends only on (seed, epoch, index): the same in any worker, new "
            "in each epoch",
        )
    finally:
        np.random.set_state(numpy_state)
        torch.set_rng_state(torch_state)
