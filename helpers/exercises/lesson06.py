"""Checks for the exercises of lesson 06 · Losses: the reference answers live here, not in the
notebook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from helpers.exercises import filled, report, tensor_close, true

# What a cross-entropy "from scratch" may not call: the ready-made pieces it rebuilds.
READY_MADE = ("softmax", "log_softmax", "cross_entropy", "nll_loss", "CrossEntropyLoss", "NLLLoss")


def _called_names(fn: Any) -> set[str]:
    """The global and attribute names a function's code uses (``F.softmax`` gives ``softmax``)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return set()
    names = set(code.co_names)
    for const in code.co_consts:  # comprehensions and lambdas inside it have their own code
        if hasattr(const, "co_names"):
            names |= set(const.co_names)
    return names


def _still_placeholder(fn: Callable[..., Any], *args: Any) -> str | None:
    """A problem when ``fn`` still returns the starter's ``...``."""
    if fn(*args) is Ellipsis:
        return (
            f"fill in the body of `{getattr(fn, '__name__', 'your function')}` (it returns `...`)"
        )
    return None


def exercise_1(
    my_cross_entropy: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | Any,
    logits: torch.Tensor,
    y: torch.Tensor,
) -> None:
    """The mean cross-entropy of ``logits`` (N, C) against labels ``y`` (N,), built without a
    softmax or a ready-made loss, and finite for logits in the thousands."""
    logits = logits.detach()
    huge = logits * 1000  # the same logits, 1000 times as confident
    used = sorted(_called_names(my_cross_entropy) & set(READY_MADE))
    report(
        filled(my_cross_entropy=my_cross_entropy),
        true(callable(my_cross_entropy), "my_cross_entropy should be a function (logits, y)"),
        true(
            not used,
            f"my_cross_entropy calls {', '.join(used)}: build it from the logits themselves",
        ),
        lambda: _still_placeholder(my_cross_entropy, logits, y),
        lambda: tensor_close(
            "my_cross_entropy(logits, y)",
            my_cross_entropy(logits, y),
            F.cross_entropy(logits, y),
            hint="each image contributes minus its log-probability of its own label, and the "
            "batch is averaged",
        ),
        lambda: tensor_close(
            "my_cross_entropy(logits * 1000, y)",
            my_cross_entropy(huge, y),
            F.cross_entropy(huge, y),
            atol=1e-2,  # the losses are in the hundreds: float32 keeps about 7 digits
            hint="exp of a logit in the thousands overflows: use torch.logsumexp, or subtract "
            "each row's largest logit before exp",
        ),
        done="my_cross_entropy equals F.cross_entropy, also for logits 1000 times larger",
    )


def reference_smooth_targets(y: torch.Tensor, num_classes: int, eps: float) -> torch.Tensor:
    """(1 - eps) on each label's class plus eps / num_classes on every class, as floats."""
    return F.one_hot(y, num_classes).float() * (1 - eps) + eps / num_classes


def exercise_2(
    smooth_targets: Callable[[torch.Tensor, int, float], torch.Tensor] | Any,
    logits: torch.Tensor,
    y: torch.Tensor,
) -> None:
    """Label-smoothed targets for any number of classes and any eps: the targets that
    ``F.cross_entropy(..., label_smoothing=eps)`` trains towards (the lesson shows that the
    cross-entropy against them equals it), compared with the reference for C = 2 and C = 10."""
    del logits  # the targets depend on the labels only; the signature matches exercise_1's
    ten_y = torch.randint(0, 10, (16,), generator=torch.Generator().manual_seed(6))
    cases = [("2 classes, eps=0.1", y, 2, 0.1), ("10 classes, eps=0.2", ten_y, 10, 0.2)]

    def targets_problem(name: str, labels: torch.Tensor, classes: int, eps: float) -> str | None:
        return tensor_close(
            f"smooth_targets for {name}",
            smooth_targets(labels, classes, eps),
            reference_smooth_targets(labels, classes, eps),
            hint="every class gets eps / num_classes, and the true class 1 - eps on top",
        )

    report(
        filled(smooth_targets=smooth_targets),
        true(callable(smooth_targets), "smooth_targets should be a function (y, num_classes, eps)"),
        lambda: _still_placeholder(smooth_targets, y, 2, 0.1),
        *(lambda c=c: targets_problem(*c) for c in cases),
        done="smooth_targets builds the targets that label_smoothing trains towards, for any C",
    )
