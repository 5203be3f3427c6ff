"""Checks for 02 · Contiguity and strides' exercises: the reference answers live here, not in the
notebook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from helpers.exercises import equal, filled, report, tensor_close, true


def exercise_1(x: torch.Tensor, predicted: dict[str, Any] | Any) -> None:
    """The strides of five views of ``x``, predicted before running anything."""
    actual = {
        "x": x.stride(),
        "x.permute(2, 0, 1)": x.permute(2, 0, 1).stride(),
        "x[:, 1]": x[:, 1].stride(),
        "x[..., ::2]": x[..., ::2].stride(),
        "x.expand(5, 2, 3, 4)": x.expand(5, 2, 3, 4).stride(),
    }
    hints = {
        "x": "contiguous: each stride is the product of the sizes to its right",
        "x.permute(2, 0, 1)": "permute reorders the dimensions, and each keeps its stride",
        "x[:, 1]": "the indexed dimension disappears, with its stride",
        "x[..., ::2]": "a step multiplies the stride",
        "x.expand(5, 2, 3, 4)": "a new leading dimension reads the same memory again",
    }
    report(
        filled(predicted=predicted),
        lambda: equal("the keys of predicted", sorted(predicted), sorted(actual)),
        lambda: filled(**{f"predicted[{key!r}]": predicted[key] for key in actual}),
        *(
            lambda key=key: true(
                tuple(predicted[key]) == actual[key],
                f"predicted[{key!r}] = {predicted[key]} is not its stride: {hints[key]}",
            )
            for key in actual
        ),
        done="all five strides predicted: views only change the shape, strides and offset",
    )


def _kind(value: Any) -> str:
    """The type of ``value`` as a learner would look it up, e.g. ``torch.return_types.max``."""
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def exercise_2(signal: torch.Tensor, moving_max: torch.Tensor | Any) -> None:
    """The maximum of every window of 4 consecutive values of ``signal``, step 1."""
    looped = torch.stack([signal[i : i + 4].max() for i in range(len(signal) - 3)])
    report(
        filled(moving_max=moving_max),
        lambda: true(
            isinstance(moving_max, torch.Tensor),
            f"moving_max should be a tensor, got {_kind(moving_max)}"
            + (
                ": a reduction that also returns indices needs its values picked out"
                if hasattr(moving_max, "indices")
                else ""
            ),
        ),
        lambda: equal(
            "moving_max.shape",
            tuple(moving_max.shape),
            (len(signal) - 3,),
            hint="one maximum per window, and a window starts at every position that leaves "
            "room for 4 values",
        ),
        lambda: tensor_close(
            "moving_max",
            moving_max,
            looped,
            atol=0,
            hint="check the window size and step, and reduce along the dimension that runs "
            "inside a window",
        ),
        done="moving_max matches the maximum of every window of 4 values",
    )


def exercise_3(normalise_first_row: Callable[[torch.Tensor], torch.Tensor] | Any) -> None:
    """A function returning a new tensor whose first row sums to 1, leaving its input alone."""
    t = torch.tensor([[1.0, 3.0], [2.0, 2.0]])
    before = t.clone()
    expected = torch.cat([before[:1] / before[0].sum(), before[1:]])
    report(
        filled(normalise_first_row=normalise_first_row),
        lambda: true(callable(normalise_first_row), "normalise_first_row should be a function"),
        lambda: tensor_close(
            "normalise_first_row(t)",
            normalise_first_row(t),
            expected,
            atol=1e-6,
            hint="the first row should sum to 1 and the other rows stay as they are",
        ),
        lambda: true(
            torch.equal(t, before),
            f"the result is right but t changed to {t.tolist()}: writing through a view of t "
            "changes t, so write into new memory",
        ),
        done="normalise_first_row returns a new tensor and leaves its input alone",
    )
