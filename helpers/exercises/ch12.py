"""Checks for 12 · Deployment's exercises: the reference answers live here, not in the
notebook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helpers.exercises import filled, report
from helpers.serve import batch_bounds_problem, image_reader_problem


def exercise_1(read_image: Callable[[bytes, str], Any] | Any) -> None:
    """``read_image(body, content_type)``: a 32×32 PNG or JPEG as a uint8 (3, 32, 32) RGB array;
    HTTPException 415 for another content type, 400 for an empty body or bytes that are not an
    image."""
    report(
        filled(read_image=read_image),
        lambda: image_reader_problem(read_image),
        done="read_image accepts PNG and JPEG, and refuses the rest with 415 or 400",
    )


def exercise_2(bounded: Any) -> None:
    """``bounded``: the CNN exported so that it runs batches of 1 to 64 and its guard refuses 65."""
    report(
        filled(bounded=bounded),
        lambda: batch_bounds_problem(bounded, low=1, high=64),
        done="the program runs batches of 1 to 64 and refuses 65",
    )
