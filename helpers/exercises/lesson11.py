"""Checks for lesson 11 · Memory's exercises: the reference answers live here, not in the
notebook."""

from __future__ import annotations

import contextlib
import copy
import io
import sys
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from helpers.exercises import filled, report, true
from helpers.memory import checkpointing_problem, peak_bytes
from helpers.models import small_cnn

# The batch the first checker splits: 64 random images, in micro-batches of 40 and 24.
IMAGES, SIZES, SEED = 64, [40, 24], 11


def _accumulation_setup() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """A seeded small CNN with BatchNorm on its running statistics, and a batch for it."""
    with torch.random.fork_rng(devices=[]):  # leave the notebook's random numbers alone
        torch.manual_seed(SEED)
        model = small_cnn([0.5, 0.5, 0.5], [0.25, 0.25, 0.25], width=4).eval()
        images = torch.randint(0, 256, (IMAGES, 3, 32, 32), dtype=torch.uint8)
        labels = torch.randint(0, 2, (IMAGES,))
    return model, images, labels


def _report(*checks: Any, done: str) -> bool:
    """``report``, its verdict written in one piece: a ``print`` writes its text and its newline
    separately, and a notebook that sends the output between the two shows two outputs."""
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        right = report(*checks, done=done)
    sys.stdout.write(printed.getvalue())
    return right


def _gradients(model: nn.Module) -> list[torch.Tensor | None]:
    return [None if p.grad is None else p.grad.clone() for p in model.parameters()]


def _difference(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    """The largest difference between two lists of gradients, relative to the largest of b."""
    scale = max(v.abs().max().item() for v in b)
    return max((u - v).abs().max().item() for u, v in zip(a, b, strict=True)) / scale


def _proportional(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    """Whether the gradients a are those of b times one number (a loss scaled differently)."""
    u, v = torch.cat([t.flatten() for t in a]), torch.cat([t.flatten() for t in b])
    scaled = v * (u @ v) / (v @ v)
    return bool((u - scaled).abs().max() < 1e-4 * scaled.abs().max())


def _reference(
    model: nn.Module, images: torch.Tensor, labels: torch.Tensor, kind: str
) -> list[torch.Tensor]:
    """Gradients of the right answer (``"batch"``: the whole batch at once) and of two usual
    mistakes: each micro-batch's mean divided by their number (``"mean"``), and only the last
    micro-batch (``"last"``)."""
    model.zero_grad(set_to_none=True)
    if kind == "batch":
        F.cross_entropy(model(images), labels).backward()
    else:
        pieces = list(zip(images.split(SIZES), labels.split(SIZES), strict=True))
        if kind == "last":
            pieces = pieces[-1:]
        for part_images, part_labels in pieces:
            loss = F.cross_entropy(model(part_images), part_labels)
            (loss / len(SIZES) if kind == "mean" else loss).backward()
    grads = _gradients(model)
    model.zero_grad(set_to_none=True)
    return grads


def exercise_1(accumulate: Callable[..., Any] | Any) -> None:
    """accumulate(model, images, labels, sizes) leaves in every p.grad the gradient of the mean
    loss over all the images, computed in micro-batches of the given sizes, one backward each."""
    model, images, labels = _accumulation_setup()
    ran: dict[str, Any] = {}

    def run() -> str | None:
        if not callable(accumulate):
            return "accumulate should be a function, written with `def`"
        model.zero_grad(set_to_none=True)
        ran["peak"] = peak_bytes(lambda: accumulate(model, images, labels, list(SIZES)))
        ran["grads"] = _gradients(model)
        model.zero_grad(set_to_none=True)
        return None

    def some_gradients() -> str | None:
        return true(
            all(g is not None for g in ran["grads"]),
            "some parameters have no gradient: call backward() on each micro-batch's loss",
        )

    def right_gradients() -> str | None:
        expected = _reference(model, images, labels, "batch")
        if _difference(ran["grads"], expected) < 1e-4:
            return None
        if _proportional(ran["grads"], expected):
            ratio = ran["grads"][-1].abs().max().item() / expected[-1].abs().max().item()
            return (
                f"the gradients are the big batch's times {ratio:.3g}: the loss must be the "
                "mean over all the images of the batch, no more, no less"
            )
        if _proportional(ran["grads"], _reference(model, images, labels, "mean")):
            return (
                "dividing each micro-batch's mean loss by the number of micro-batches weighs "
                f"the {SIZES[1]} images of the small one as much as the {SIZES[0]} of the big "
                "one: weigh each micro-batch by its number of images"
            )
        if _proportional(ran["grads"], _reference(model, images, labels, "last")):
            return (
                "these are the gradients of the last micro-batch only: do not reset them "
                "between micro-batches, backward() adds them up"
            )
        return (
            "the gradients differ from those of the whole batch's mean loss (by up to "
            f"{_difference(ran['grads'], expected):.2g} of the largest): run every image "
            "once, and leave the model's mode as it is"
        )

    def one_micro_batch_at_a_time() -> str | None:
        model.zero_grad(set_to_none=True)
        whole = peak_bytes(lambda: _reference(model, images, labels, "batch"))
        return true(
            ran["peak"] < 0.85 * whole,
            "the gradients are right, but the memory peaked as high as for the whole batch: "
            "call backward() on each micro-batch's loss before the next forward, so that its "
            "activations are freed",
        )

    _report(
        filled(accumulate=accumulate),
        run,
        some_gradients,
        right_gradients,
        one_micro_batch_at_a_time,
        done="the big batch's gradient, one micro-batch in memory at a time, sizes weighed in",
    )


def exercise_2(
    checkpointed_with_pools: Callable[..., Any] | Any,
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
) -> None:
    """checkpointed_with_pools(model, images) returns the CNN's logits, each conv block
    checkpointed together with the pooling layer after it and the other layers run as usual:
    the same gradients as ``model``, and exactly the bytes that answer saves for backward. It
    runs on a copy of ``model``: its forwards in training mode update batch norm's running
    statistics, and the notebook's model stays as it was."""

    def works() -> str | None:
        if not callable(checkpointed_with_pools):
            return "checkpointed_with_pools should be a function, written with `def`"
        with torch.random.fork_rng(devices=[]):
            return checkpointing_problem(
                checkpointed_with_pools, copy.deepcopy(model), images, labels, 0.25
            )

    _report(
        filled(checkpointed_with_pools=checkpointed_with_pools),
        works,
        done="the same logits and gradients, one checkpoint per conv block with its pool",
    )
