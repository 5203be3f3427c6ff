"""Checks for 07 · The training loop's exercises: the reference answers live here, not in the
notebook."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from helpers.exercises import equal, filled, report, tensor_close, true

WARMUP, STEPS = 10, 100


def _lrs(make_scheduler: Callable[[torch.optim.Optimizer], Any]) -> list[float]:
    """The learning rate of each of the STEPS steps, for a base lr of 0.1 (as the notebook's
    `lrs`)."""
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    scheduler = make_scheduler(optimizer)
    values = []
    for _ in range(STEPS):
        values.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return values


def exercise_1(warmup_cosine: Callable[[int], float] | Any) -> None:
    """LambdaLR with the learner's factor gives SequentialLR's warm-up + cosine at every step."""
    sched = torch.optim.lr_scheduler
    reference = _lrs(
        lambda o: sched.SequentialLR(
            o,
            [
                sched.LinearLR(o, start_factor=0.01, total_iters=WARMUP),
                sched.CosineAnnealingLR(o, T_max=STEPS - WARMUP),
            ],
            milestones=[WARMUP],
        )
    )

    def schedule_problem() -> str | None:
        mine = _lrs(lambda o: sched.LambdaLR(o, warmup_cosine))
        wrong = [i for i in range(len(reference)) if abs(mine[i] - reference[i]) > 1e-6]
        if not wrong:
            return None
        step = wrong[0]
        hint = (
            "during the warm-up the factor grows in a straight line, from 0.01 at step 0 to 1 "
            "at step 10"
            if step < WARMUP
            else "after the warm-up, half a cosine period takes the factor from 1 at step 10 "
            "down to 0 at step 100"
        )
        return f"at step {step} the lr is {mine[step]:.6g}, expected {reference[step]:.6g}: {hint}"

    report(
        filled(warmup_cosine=warmup_cosine),
        lambda: true(callable(warmup_cosine), "warmup_cosine should be a function of the step"),
        schedule_problem,
        done="LambdaLR(warmup_cosine) gives SequentialLR's learning rate at all 100 steps",
    )


def exercise_2(net: nn.Module, xb: torch.Tensor, yb: torch.Tensor, accumulated: Any) -> None:
    """Gradients accumulated over 4 micro-batches equal the gradient of the whole batch's mean
    loss."""
    reference = copy.deepcopy(net)
    reference.zero_grad()
    F.mse_loss(reference(xb), yb).backward()
    full = [p.grad for p in reference.parameters()]

    def gradient_problem() -> str | None:
        if any(g is None for g in accumulated):
            return "a gradient in `accumulated` is None: call backward() on each micro-batch loss"
        if all(torch.allclose(a, 4 * b, atol=1e-6) for a, b in zip(accumulated, full, strict=True)):
            return (
                "the gradients are 4× too large: each micro-batch's loss is already a mean, "
                "and backward() adds the 4 of them up"
            )
        for i, (a, b) in enumerate(zip(accumulated, full, strict=True)):
            problem = tensor_close(
                f"accumulated[{i}]",
                a,
                b,
                atol=1e-6,
                hint="the 4 micro-batches should add up to the whole batch: nothing may reset "
                "the gradients in between, and each counts for a quarter",
            )
            if problem:
                return problem
        return None

    report(
        filled(accumulated=accumulated),
        lambda: equal("len(accumulated)", len(accumulated), 2, hint="weight and bias"),
        gradient_problem,
        done="4 accumulated micro-batch gradients equal the full batch's gradient",
    )


def _same(value: Any, wanted: Any) -> bool:
    """Whether value is the number or tensor wanted (as float64, of the same shape)."""
    try:
        got = torch.as_tensor(value, dtype=torch.float64)
        return got.shape == torch.as_tensor(wanted).shape and torch.allclose(
            got, torch.as_tensor(wanted, dtype=torch.float64)
        )
    except (TypeError, ValueError, RuntimeError):
        return False


def exercise_3(
    model_trained: nn.Module,
    mean: Any,
    std: Any,
    test_images: torch.Tensor,
    path: Path,
    fresh: Any,
) -> None:
    """A file at path that loads with weights_only=True and holds the state_dict, mean, std and
    width; fresh, a new model rebuilt from it, in eval mode, with model_trained's logits."""

    def file_problem() -> str | None:
        if not path.exists():
            return f"there is no {path}: save the dict there with atomic_save"
        try:
            saved = torch.load(path, weights_only=True)
        except Exception as err:
            return (
                f"the file does not load with weights_only=True ({type(err).__name__}): "
                "it may hold tensors and plain values, not a model object"
            )
        if not isinstance(saved, dict):
            return f"the file holds a {type(saved).__name__}, expected a dict"
        weights = model_trained.state_dict()
        if saved.keys() == weights.keys():
            return "the file holds only the state_dict: the mean, std and width are missing"
        if not any(
            isinstance(v, dict)
            and v.keys() == weights.keys()
            and all(torch.equal(v[k], weights[k]) for k in weights)
            for v in saved.values()
        ):
            return "the dict lacks model_trained's state_dict"
        for wanted, what in [(mean, "mean"), (std, "std"), (8, "width")]:
            if not any(_same(v, wanted) for v in saved.values()):
                return f"the dict has keys {sorted(saved)}, but not the {what}"
        return None

    def predictions_problem() -> str | None:
        model_trained.eval()
        with torch.inference_mode():
            return tensor_close(
                "fresh's logits",
                fresh(test_images[:500]),
                model_trained(test_images[:500]),
                atol=1e-5,
                hint="the model has to be built with the values the file holds before it takes "
                "the saved weights",
            )

    report(
        filled(fresh=fresh),
        file_problem,
        lambda: true(
            isinstance(fresh, nn.Module) and fresh is not model_trained,
            "fresh should be a new model, built from the file's values",
        ),
        lambda: true(not fresh.training, "fresh is in training mode, not ready for inference"),
        predictions_problem,
        done="the file loads with weights_only=True and rebuilds a model with the same logits",
    )
