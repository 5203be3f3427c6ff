"""Checks for 06 · Losses' exercises: the reference answers live here, not in the notebook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from helpers.exercises import close, filled, report, tensor_close, true


def exercise_1(
    my_cross_entropy: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | Any,
    huge: torch.Tensor,
    targets: torch.Tensor,
) -> None:
    """A mean cross-entropy from logits without softmax or a ready-made loss, stable for logits
    around 1,000."""
    gen = torch.Generator().manual_seed(3)
    x, y = torch.randn(8, 5, generator=gen), torch.randint(0, 5, (8,), generator=gen)
    report(
        filled(my_cross_entropy=my_cross_entropy),
        lambda: true(
            not any(
                "softmax" in n or "cross_entropy" in n or "nll" in n
                for n in getattr(getattr(my_cross_entropy, "__code__", None), "co_names", ())
            ),
            "my_cross_entropy calls a softmax or a ready-made loss: build it from a log-sum-exp",
        ),
        lambda: tensor_close(
            "my_cross_entropy(x, y)",
            my_cross_entropy(x, y),
            F.cross_entropy(x, y),
            hint="each row contributes minus its log-probability at its own label, and the "
            "batch is averaged",
        ),
        lambda: tensor_close(
            "my_cross_entropy(huge, targets)",
            my_cross_entropy(huge, targets),
            F.cross_entropy(huge, targets),
            atol=1e-4,  # float32 keeps about 7 significant digits of 1000
            hint="exp(1000) overflows in float32: stay in log space and never exponentiate "
            "a raw logit",
        ),
        done="my_cross_entropy equals F.cross_entropy, also for logits around 1,000",
    )


def exercise_2(
    counts: torch.Tensor,
    batch_logits: torch.Tensor,
    batch_labels: torch.Tensor,
    weights: Any,
    by_hand: Any,
) -> None:
    """Balanced class weights from the counts, and the weighted mean cross-entropy by hand."""
    balanced = counts.sum() / (len(counts) * counts)
    report(
        filled(weights=weights, by_hand=by_hand),
        lambda: tensor_close(
            "weights",
            weights,
            balanced,
            hint="N counts every image and C every class: the rarest class gets the largest weight",
        ),
        lambda: close(
            "by_hand",
            by_hand,
            F.cross_entropy(batch_logits, batch_labels, weight=balanced).item(),
            hint="each sample takes the weight of its own label, and the total is divided by "
            "the sum of those weights, not by the batch size",
        ),
        done="balanced weights, and weight= averages by the weights of the batch's labels",
    )


def exercise_3(
    masked_huber: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | Any,
    pred: torch.Tensor,
    truth: torch.Tensor,
) -> None:
    """The Huber loss over the values of truth that are not NaN, with a finite gradient that is
    zero at the missing ones."""
    observed = ~torch.isnan(truth)
    p = pred.detach().clone().requires_grad_()  # the learner's pred is left as it is

    def gradient_problem() -> str | None:
        masked_huber(p, truth).backward()
        if p.grad is None or not torch.isfinite(p.grad).all():
            got = None if p.grad is None else p.grad.double().round(decimals=4).tolist()
            return (
                f"the gradient is {got}: a NaN that enters the loss's computation reaches the "
                "gradient, even through a branch of torch.where that is not picked"
            )
        return true(
            (p.grad[~observed] == 0).all().item(),
            f"the gradient at the missing positions is {p.grad[~observed].tolist()}, not 0",
        )

    report(
        filled(masked_huber=masked_huber),
        lambda: tensor_close(
            "masked_huber(pred, truth)",
            masked_huber(p, truth),
            F.huber_loss(pred.detach()[observed], truth[observed]),
            hint="the mean runs over the observed values only, not over every position",
        ),
        gradient_problem,
        done="masked_huber averages over the observed values; missing ones get zero gradient",
    )
