"""Checks for the exercises of 10 · Speedups, measured (the first cookbook notebook): the
reference answers live here, not in the notebook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from helpers.exercises import equal, filled, report


def exercise_1(flip_each: Callable[[torch.Tensor, torch.Generator], Any] | Any) -> None:
    """``flip_each(images, generator)``: each image of the batch flipped left to right with
    probability ½, on its own, with random numbers from ``generator``. Tried on 512 distinct
    random images (none is its own mirror image) twice with the same seed, once with another,
    once with a batch of one image, and on the GPU where there is one."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        images = torch.randint(0, 256, (512, 3, 8, 8), dtype=torch.uint8)
        answers = {}

    def flipped(seed: int, batch: torch.Tensor = images) -> Any:
        return flip_each(batch.clone(), torch.Generator().manual_seed(seed))

    def each_is_itself_or_its_mirror() -> str | None:
        out = answers["first"] = flipped(1)
        if not isinstance(out, torch.Tensor):
            return f"flip_each should return a tensor, got {type(out).__name__}"
        if out.shape != images.shape or out.dtype != images.dtype:
            return (
                f"flip_each returned {tuple(out.shape)} {out.dtype}, expected the batch's "
                f"{tuple(images.shape)} {images.dtype}"
            )
        same = (out == images).flatten(1).all(1)
        mirrored = (out == images.flip(-1)).flatten(1).all(1)
        wrong = (~(same | mirrored)).sum().item()
        if wrong:
            return (
                f"{wrong} of 512 images are neither the image nor its left-right mirror: flip "
                "along the width, the last dimension"
            )
        answers["mirrored"] = mirrored
        return None

    def about_half_each_on_its_own() -> str | None:
        share = answers["mirrored"].float().mean().item()
        if share in (0.0, 1.0):
            return (
                f"{share:.0%} of the images were flipped: draw one random number per image, "
                "not one for the batch"
            )
        if not 0.4 <= share <= 0.6:  # 512 fair draws: 0.5 ± 0.022 (one standard deviation)
            return f"{share:.0%} of the images were flipped: each should be, with probability ½"
        return None

    def the_generator_decides() -> str | None:
        again, other = flipped(1), flipped(2)
        if not torch.equal(again, answers["first"]):
            return "the same seed gave another batch: draw the random numbers from `generator`"
        if torch.equal(other, answers["first"]):
            return "another seed gave the same batch: draw the random numbers from `generator`"
        return None

    def on_the_gpu_too() -> str | None:
        if not torch.cuda.is_available():
            return None
        on_gpu = images.cuda()
        out = flip_each(on_gpu.clone(), torch.Generator("cuda").manual_seed(1))
        if not isinstance(out, torch.Tensor) or out.device.type != "cuda":
            return "on a GPU batch, flip_each should return a batch on the GPU"
        ok = ((out == on_gpu) | (out == on_gpu.flip(-1))).flatten(1).all(1).all()
        return None if ok else "on a GPU batch some images are neither themselves nor mirrored"

    def one_image() -> str | None:
        out = flipped(1, images[:1])
        ok = torch.equal(out, images[:1]) or torch.equal(out, images[:1].flip(-1))
        return None if ok else "a batch of one image should come back as it is or mirrored"

    report(
        filled(flip_each=flip_each),
        each_is_itself_or_its_mirror,
        about_half_each_on_its_own,
        the_generator_decides,
        one_image,
        on_the_gpu_too,
        done="each image flipped on its own, about half of them, as the generator decides",
    )


def exercise_2(by_workers: dict[int, dict[str, float]] | Any) -> None:
    """``by_workers``: ``timed_training``'s results with 0 (the plain loop, measured again beside
    the others, so that all three meet the same load on the machine), 1 and 2 DataLoader workers;
    with 1 and with 2 the loop must wait for data a smaller share of the time than with 0."""

    def each_waits_less() -> str | None:
        plain = by_workers[0]["waiting"]
        for n in (1, 2):
            if by_workers[n]["waiting"] >= plain:
                return (
                    f"with {n} worker(s) the loop waits {by_workers[n]['waiting']:.0%} of the "
                    f"time, with none {plain:.0%}: does its DataLoader read with {n} worker "
                    "process(es)?"
                )
        return None

    report(
        filled(by_workers=by_workers),
        lambda: equal("sorted(by_workers)", sorted(by_workers), [0, 1, 2]),
        each_waits_less,
        done="with 1 and with 2 workers the loop waits less than with none",
    )
