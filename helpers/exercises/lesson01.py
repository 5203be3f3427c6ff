"""Checks for lesson 01 · Tensors' exercises: the reference answers live here, not in the
notebook."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from helpers.exercises import equal, filled, report, tensor_close, true


def _per_channel(values: Sequence[float]) -> torch.Tensor:
    return torch.tensor([float(v) for v in values]).reshape(1, -1, 1, 1)


def _far(value: torch.Tensor, other: torch.Tensor, atol: float = 1e-4) -> bool:
    """Whether ``value`` is not within ``atol`` of ``other`` (same shape assumed)."""
    return (value.detach().double() - other.double()).abs().max().item() > atol


def exercise_1(
    test_images: torch.Tensor,
    train_mean: Sequence[float],
    train_std: Sequence[float],
    test_x: Any,
) -> None:
    """The test images as float32 in [0, 1], normalised per channel with the training set's
    mean and standard deviation."""
    pixels = test_images.float() / 255
    expected = (pixels - _per_channel(train_mean)) / _per_channel(train_std)
    own = (pixels - pixels.mean(dim=(0, 2, 3), keepdim=True)) / pixels.std(
        dim=(0, 2, 3), keepdim=True
    )
    unscaled = (test_images.float() - _per_channel(train_mean)) / _per_channel(train_std)
    report(
        filled(test_x=test_x),
        lambda: true(
            isinstance(test_x, torch.Tensor),
            f"`test_x` should be a tensor, got {type(test_x).__name__}",
        ),
        lambda: equal(
            "test_x.shape",
            tuple(test_x.shape),
            tuple(test_images.shape),
            hint="one value per pixel of every test image, in the same (N, C, H, W) order",
        ),
        lambda: equal(
            "test_x.dtype", test_x.dtype, torch.float32, hint="convert the uint8 pixels first"
        ),
        lambda: true(
            _far(test_x, unscaled),
            "the pixels were not brought into [0, 1] before subtracting the mean: the training "
            "statistics are on the [0, 1] scale",
        ),
        lambda: true(
            _far(test_x, own),
            "`test_x` is normalised with the test images' own mean and std: use the training "
            "set's (train_mean_list, train_std_list)",
        ),
        lambda: tensor_close(
            "test_x",
            test_x,
            expected,
            atol=1e-4,
            hint="subtract each channel's training mean, then divide by its training std",
        ),
        done="test_x is the test set normalised with the training statistics; its channel means "
        f"come out near 0 ({', '.join(f'{m:.2f}' for m in expected.mean(dim=(0, 2, 3)))}), not "
        "exactly 0: the test photos differ a little from the training ones",
    )


def _index_problem(brightest: Any) -> str | None:
    """A problem when ``brightest`` is not a whole number (an int or a one-element tensor)."""
    if isinstance(brightest, torch.Tensor):
        if brightest.numel() != 1:
            return (
                f"`brightest` should be one index, got a tensor of shape {tuple(brightest.shape)}"
            )
        if brightest.dtype.is_floating_point:
            return (
                "`brightest` is a brightness, not a position: which reduction returns where the "
                "largest value is?"
            )
        return None
    if isinstance(brightest, bool) or not isinstance(brightest, int):
        if isinstance(brightest, float):
            return (
                "`brightest` is a brightness, not a position: which reduction returns where the "
                "largest value is?"
            )
        return f"`brightest` should be an int, got {type(brightest).__name__}"
    return None


def exercise_2(images: torch.Tensor, brightness: Any, brightest: Any) -> None:
    """The mean pixel value of every image on the [0, 1] scale, and the index of the largest."""
    expected = (images.float() / 255).mean(dim=(1, 2, 3))
    index = int(expected.argmax())
    report(
        filled(brightness=brightness, brightest=brightest),
        lambda: true(
            isinstance(brightness, torch.Tensor),
            f"`brightness` should be a tensor, got {type(brightness).__name__}",
        ),
        lambda: true(
            tuple(brightness.shape) != tuple(images.shape[1:]),
            f"`brightness` has shape {tuple(brightness.shape)}: that is an average over the "
            "images; keep one number per image instead",
        ),
        lambda: equal(
            "brightness.shape",
            tuple(brightness.shape),
            (len(images),),
            hint="one number per image: reduce over every dimension but the first",
        ),
        lambda: true(
            brightness.dtype.is_floating_point,
            f"`brightness` has dtype {brightness.dtype}: a mean needs floats",
        ),
        lambda: true(
            brightness.max().item() <= 1,
            f"`brightness` goes up to {brightness.max().item():.4g}: bring the pixels into [0, 1]",
        ),
        lambda: tensor_close(
            "brightness", brightness, expected, atol=1e-5, hint="average all three channels"
        ),
        lambda: _index_problem(brightest),
        lambda: equal(
            "brightest",
            int(brightest),
            index,
            hint="the position of the largest brightness",
        ),
        done=f"image {index} is the brightest, with a mean pixel value of {expected[index]:.3f}",
    )
