"""Checks for 01 · Tensors' exercises: the reference answers live here, not in the notebook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from helpers.exercises import close, equal, filled, report, tensor_close, true


def exercise_1(images: np.ndarray, x: Any, normalised: Any) -> None:
    """From a (4, 32, 32, 3) uint8 batch to a (4, 3, 32, 32) float batch in [0, 1], standardised
    per channel."""
    expected_x = torch.from_numpy(images.transpose(0, 3, 1, 2) / 255).float()
    by_channel = expected_x.transpose(0, 1).reshape(3, -1)  # (channels, all the other values)
    mu, sigma = by_channel.mean(dim=1), by_channel.std(dim=1)
    report(
        filled(x=x, normalised=normalised),
        lambda: equal("x.shape", tuple(x.shape), (4, 3, 32, 32), hint="channels come first"),
        lambda: equal("x.dtype", x.dtype, torch.float32, hint="uint8 needs a conversion"),
        lambda: true(x.max() <= 1, f"x goes up to {x.max():.4g}: bring the values into [0, 1]"),
        lambda: tensor_close(
            "x",
            x,
            expected_x,
            atol=1e-6,
            hint="right shape, wrong pixels: a reshape regroups the numbers, it does not "
            "reorder the dimensions",
        ),
        lambda: tensor_close(
            "normalised",
            normalised,
            (expected_x - mu.view(1, 3, 1, 1)) / sigma.view(1, 3, 1, 1),
            atol=1e-3,  # accepts the population std (unbiased=False) too
            hint="one mean and one std per channel, over the batch and both image dimensions",
        ),
        done="x is the batch in [0, 1], channels first; normalised is standardised per channel",
    )


def exercise_2(logits: torch.Tensor, targets: torch.Tensor, top3_accuracy: Any) -> None:
    """The share of targets among the three highest logits of their row."""
    own = logits.gather(1, targets.unsqueeze(1))  # (batch, 1): each target's logit
    expected = ((logits > own).sum(dim=1) < 3).float().mean().item()
    report(
        filled(top3_accuracy=top3_accuracy),
        lambda: close(
            "top3_accuracy",
            top3_accuracy,
            expected,
            hint="a target counts once, whichever of the three places it holds",
        ),
        done=f"top3_accuracy = {expected:.2f}, the share of targets among their 3 highest logits",
    )


def exercise_3(sq_dists: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | Any) -> None:
    """Squared distances by the expanded formula and broadcasting, never negative."""
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(5, 4, generator=gen), torch.randn(7, 4, generator=gen)
    many = torch.randn(100, 4, generator=gen)  # enough zeros on the diagonal to round below 0
    report(
        filled(sq_dists=sq_dists),
        lambda: true(callable(sq_dists), "sq_dists should be a function of (a, b)"),
        lambda: true(
            "cdist" not in getattr(getattr(sq_dists, "__code__", None), "co_names", ()),
            "sq_dists calls cdist: use the formula",
        ),
        lambda: tensor_close(
            "sq_dists(a, b)",
            sq_dists(a, b),
            torch.cdist(a, b) ** 2,
            atol=1e-4,
            hint="the three terms have shapes (n, 1), (m,) and (n, m): broadcasting does the rest",
        ),
        lambda: true(
            (sq_dists(many, many) >= 0).all().item(),
            f"sq_dists(c, c) has negative values (down to {sq_dists(many, many).min():.2g}): "
            "rounding makes a zero distance slightly negative",
        ),
        done="sq_dists equals cdist(a, b) ** 2, by broadcasting, and is never negative",
    )
