"""Checks for lesson 02 · Contiguity and strides' exercises: the reference answers live here, not
in the notebook."""

from __future__ import annotations

from typing import Any

import torch

from helpers.exercises import equal, filled, report, true

HINTS = {
    "crops": "in the default order each stride is the product of the sizes to its right",
    "crops.permute(0, 2, 3, 1)": "permute reorders the dimensions, and each keeps its stride",
    "crops[:, 1]": "an integer index removes its dimension, and that dimension's stride",
    "crops[:, :, ::2, ::2]": "a step of 2 doubles the stride of its dimension",
    "crops.contiguous(memory_format=torch.channels_last)": "the three channels of a pixel are "
    "neighbours (stride 1), and a row holds 24 pixels of 3 values",
}


def _strides(crops: torch.Tensor) -> dict[str, tuple[int, ...]]:
    return {
        "crops": crops.stride(),
        "crops.permute(0, 2, 3, 1)": crops.permute(0, 2, 3, 1).stride(),
        "crops[:, 1]": crops[:, 1].stride(),
        "crops[:, :, ::2, ::2]": crops[:, :, ::2, ::2].stride(),
        "crops.contiguous(memory_format=torch.channels_last)": crops.contiguous(
            memory_format=torch.channels_last
        ).stride(),
    }


def _as_tuple(value: Any) -> tuple | None:
    try:
        return tuple(int(v) for v in value)
    except (TypeError, ValueError):
        return None


def exercise_1(crops: torch.Tensor, predicted: dict[str, Any] | Any) -> None:
    """The strides of five expressions on a default-order (N, C, H, W) batch, predicted."""
    if not crops.is_contiguous():
        raise ValueError("exercise_1 expects crops in the default (contiguous) order")
    actual = _strides(crops)
    report(
        filled(predicted=predicted),
        lambda: true(
            isinstance(predicted, dict), f"predicted should be a dict, got {type(predicted)}"
        ),
        lambda: equal("the keys of predicted", sorted(predicted), sorted(actual)),
        lambda: filled(**{f"predicted[{key!r}]": predicted[key] for key in actual}),
        *(
            lambda key=key: true(
                _as_tuple(predicted[key]) == actual[key],
                f"predicted[{key!r}] = {predicted[key]} is not its stride: {HINTS[key]}",
            )
            for key in actual
        ),
        done="all five strides predicted: views reorder, drop or scale strides; channels-last "
        "puts the channels' stride at 1",
    )


def _shares(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def exercise_2(batch: torch.Tensor, cl_by_hand: Any, pixel_rows: Any) -> None:
    """``batch`` in the channels-last layout built with permute and contiguous(), and its pixels
    as an (N·H·W, C) view of it."""
    n, c, h, w = batch.shape
    wanted = (c * h * w, 1, w * c, c)
    default = (c * h * w, h * w, w, 1)
    rows = batch.permute(0, 2, 3, 1).reshape(-1, c)
    report(
        filled(cl_by_hand=cl_by_hand, pixel_rows=pixel_rows),
        lambda: true(
            isinstance(cl_by_hand, torch.Tensor),
            f"`cl_by_hand` should be a tensor, got {type(cl_by_hand).__name__}",
        ),
        lambda: equal(
            "cl_by_hand.shape",
            tuple(cl_by_hand.shape),
            tuple(batch.shape),
            hint="permute back, so that the shape is (N, C, H, W) again",
        ),
        lambda: true(
            torch.equal(cl_by_hand, batch),
            "`cl_by_hand` has other values than `batch`: only the memory order should change",
        ),
        lambda: true(
            cl_by_hand.stride() != default,
            f"`cl_by_hand` has the default strides {default}: make it contiguous while its "
            "dimensions are in (N, H, W, C) order",
        ),
        lambda: equal(
            "cl_by_hand.stride()",
            cl_by_hand.stride(),
            wanted,
            hint="channels-last memory is the row-major memory of the (N, H, W, C) order",
        ),
        lambda: true(
            isinstance(pixel_rows, torch.Tensor),
            f"`pixel_rows` should be a tensor, got {type(pixel_rows).__name__}",
        ),
        lambda: equal(
            "pixel_rows.shape",
            tuple(pixel_rows.shape),
            (n * h * w, c),
            hint="one row per pixel, one column per channel",
        ),
        lambda: true(
            torch.equal(pixel_rows, rows),
            "`pixel_rows` has the right shape but other values: row k should be the (red, "
            "green, blue) of pixel k, in (N, H, W) order",
        ),
        lambda: true(
            _shares(pixel_rows, cl_by_hand),
            "`pixel_rows` does not share memory with `cl_by_hand`: it was copied. Reorder "
            "cl_by_hand's dimensions so that its memory is in row-major order, then a view fits",
        ),
        done=f"cl_by_hand has the channels-last strides {wanted}, and pixel_rows is a view of "
        "it: one row per pixel, no copy",
    )
